package llm

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quantize"
)

// SelfDraftPrefix starts an Options.Draft that names a quantization of the
// model itself instead of a file: "self:Q4_0" drafts with the model
// converted to Q4_0, which needs no second download.
const SelfDraftPrefix = "self:"

// selfDraft returns the path of the model at path converted to the file
// type typ (llama-quantize's rules and quantizers; a quantized model is
// dequantized and quantized again), kept in dir: made on first use, then
// reused as long as the model file keeps its path, size and modification
// time, and as long as it parses (one truncated or corrupted since is made
// again). Making one removes the drafts of that name and type made before,
// and the temporary files of conversions to them that were cut off.
func selfDraft(ctx context.Context, path, typ, dir string, log *slog.Logger) (string, error) {
	ft, err := quantize.ParseFileType(typ)
	if err != nil {
		return "", err
	}
	if dir == "" {
		return "", fmt.Errorf("no directory to keep the converted model in (llm.Options.DraftDir)")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", err
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%d\x00%d", abs, st.Size(), st.ModTime().UnixNano())
	prefix := NameFromPath(abs) + "." + ft.Name + "." // then the key and .gguf
	out := filepath.Join(dir, fmt.Sprintf("%s%016x.gguf", prefix, h.Sum64()))
	if reusable(out, log) {
		return out, nil
	}
	f, err := gguf.Open(abs)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if id, ok := f.Uint("general.file_type"); ok {
		if uint32(id) == ft.ID {
			return "", fmt.Errorf("the model is %s already: a draft must be a cheaper quantization", ft.Name)
		}
		// A draft no smaller than the model (self:F32 of a Q8_0 model)
		// costs more than the steps it is meant to save, and its file
		// and memory are wasted: refuse it as the model's own type is.
		if cur, known := quantize.FileTypeByID(uint32(id)); known && ft.BitsPerWeight() >= cur.BitsPerWeight() {
			return "", fmt.Errorf("the model is %s (%.3g bits per weight): a draft must be a cheaper quantization, not %s (%.3g)",
				cur.Name, cur.BitsPerWeight(), ft.Name, ft.BitsPerWeight())
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// A conversion that a crash or kill -9 cut off left its temporary file
	// (gguf.Writer.WriteFile's "."+name+".tmp*"), which nothing else
	// removes: each one cut off kept its part of the model on disk for ever.
	cutOff, _ := filepath.Glob(filepath.Join(dir, "."+prefix+"*.gguf.tmp*"))
	for _, p := range cutOff {
		if err := os.Remove(p); err != nil {
			log.Warn("removing a cut-off draft conversion", "path", p, "err", err)
		}
	}
	log.Info("making the draft model", "from", abs, "type", ft.Name, "to", out)
	if _, err := quantize.File(ctx, f, out, quantize.Options{Type: ft, AllowRequantize: true}); err != nil {
		return "", err
	}
	// Drafts of an earlier version of the model (or of another file of
	// the same name) are not reused: remove them, so that the directory
	// holds one draft per model name and type.
	stale, _ := filepath.Glob(filepath.Join(dir, prefix+"*.gguf"))
	for _, p := range stale {
		if p != out {
			if err := os.Remove(p); err != nil {
				log.Warn("removing an old draft model", "path", p, "err", err)
			}
		}
	}
	return out, nil
}

// reusable reports whether the draft made before at out can be used again:
// it exists and parses. A draft truncated or corrupted since it was made
// (its file cut short under a running daemon) is removed, so that it is
// made again: kept, it was refused at every load, and the model served
// without speculation until someone deleted the cache dir.
func reusable(out string, log *slog.Logger) bool {
	if _, err := os.Stat(out); err != nil {
		return false
	}
	f, err := gguf.Open(out)
	if err == nil {
		f.Close()
		return true
	}
	log.Warn("making again a draft model that no longer parses", "path", out, "err", err)
	if err := os.Remove(out); err != nil {
		log.Warn("removing a broken draft model", "path", out, "err", err)
	}
	return false
}
