package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/modelinfo"
	"github.com/ruvllm/ruvllm/engine/quantize"
	"github.com/ruvllm/ruvllm/internal/disk"
	"github.com/ruvllm/ruvllm/ipc"
)

// quantizePlan checks that the GGUF file at path can be converted to the
// file type named typ (Ollama's /api/create "quantize": Q4_K_M, Q8_0, ...)
// before anything is written, and returns the conversion's options.
func quantizePlan(path, typ string) (quantize.Options, error) {
	ft, err := quantize.ParseFileType(typ)
	if err != nil {
		return quantize.Options{}, badParam("quantize", "%v", err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		return quantize.Options{}, badParam("from", "%s: %v", path, err)
	}
	defer f.Close()
	o := quantize.Options{Type: ft}
	if _, err := quantize.Plan(f, o); err != nil {
		return quantize.Options{}, badParam("quantize", "%s: %v", filepath.Base(path), err)
	}
	return o, nil
}

// quantizeToBlob converts the GGUF file at path with o into the blob store
// (models/blobs/sha256-<digest>, as an upload would be stored) and returns
// the blob's path. progress receives Ollama's status lines with the
// weights done and their total; a cancelled ctx stops the conversion and
// leaves nothing behind.
func (a *API) quantizeToBlob(ctx context.Context, path string, o quantize.Options, progress func(ipc.ProgressStatus)) (string, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return "", badParam("from", "%s: %v", path, err)
	}
	defer f.Close()
	dir := filepath.Join(a.srv.Config().ModelsDir, "blobs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("quantize: %w", err)
	}
	tmp, err := disk.CreateTemp(dir, ".quantize-*.gguf")
	if err != nil {
		return "", fmt.Errorf("quantize: %w", err)
	}
	defer os.Remove(tmp.Name()) // gone once renamed
	defer tmp.Close()
	status := fmt.Sprintf("quantizing %s model to %s", fileTypeOf(f), o.Type.Name)
	progress(ipc.ProgressStatus{Status: status})
	last := int64(-1)
	o.Threads = a.srv.Config().Threads
	o.Progress = func(done, total int64, _ string) {
		// One line per percent at most: a 1B model has a few hundred
		// tensors, a client needs no more.
		if pct := done * 100 / max(total, 1); pct != last {
			last = pct
			progress(ipc.ProgressStatus{Status: status, Total: total, Completed: done})
		}
	}
	w, st, err := quantize.Writer(ctx, f, o)
	if err != nil {
		return "", fmt.Errorf("quantize %s to %s: %w", filepath.Base(path), o.Type.Name, err)
	}
	// The blob's name is its digest, hashed as it is written rather than
	// read back.
	h := sha256.New()
	if _, err := w.WriteTo(io.MultiWriter(tmp, h)); err != nil {
		return "", fmt.Errorf("quantize %s to %s: %w", filepath.Base(path), o.Type.Name, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return "", fmt.Errorf("quantize: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return "", fmt.Errorf("quantize: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("quantize: %w", err)
	}
	blob := filepath.Join(dir, "sha256-"+hex.EncodeToString(h.Sum(nil)))
	if err := os.Rename(tmp.Name(), blob); err != nil {
		return "", fmt.Errorf("quantize: %w", err)
	}
	a.log.Info("model quantized", "from", path, "type", o.Type.Name, "tensors", st.Tensors, "bytes_in", st.BytesIn, "bytes_out", st.BytesOut, "blob", blob)
	return blob, nil
}

// fileTypeOf names the file type a GGUF file declares (general.file_type),
// or "unknown".
func fileTypeOf(f *gguf.File) string {
	if id, ok := f.Uint("general.file_type"); ok {
		return modelinfo.FileTypeName(id)
	}
	return "unknown"
}

// inheritManifest gives man what base (the merged manifests of the model it
// is made from) sets, under man's own settings: a quantized model's From
// is its own file, so the chain that would have supplied them ends there.
func inheritManifest(man, base *ipc.ModelManifest) {
	merged := &ipc.ModelManifest{Parameters: map[string]any{}}
	overlayManifest(merged, base)
	overlayManifest(merged, man)
	man.System, man.Template, man.Adapters, man.Messages, man.License =
		merged.System, merged.Template, merged.Adapters, merged.Messages, merged.License
	if len(merged.Parameters) > 0 {
		man.Parameters = merged.Parameters
	}
}
