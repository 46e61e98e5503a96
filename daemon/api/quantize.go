package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/modelinfo"
	"github.com/ruvllm/ruvllm/engine/quantize"
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
	tmp, err := os.CreateTemp(dir, ".quantize-*.gguf")
	if err != nil {
		return "", fmt.Errorf("quantize: %w", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name()) // gone once renamed
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
	st, err := quantize.File(ctx, f, tmp.Name(), o)
	if err != nil {
		return "", fmt.Errorf("quantize %s to %s: %w", filepath.Base(path), o.Type.Name, err)
	}
	digest, err := contentDigest(tmp.Name())
	if err != nil {
		return "", fmt.Errorf("quantize: %w", err)
	}
	blob := filepath.Join(dir, "sha256-"+digest)
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

// contentDigest returns the hex SHA-256 of the file at path.
func contentDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return strings.ToLower(hex.EncodeToString(h.Sum(nil))), nil
}

// inheritManifest gives man what base (the merged manifests of the model it
// is made from) sets and man does not: a quantized model's From is its own
// file, so the chain that would have supplied them ends there.
func inheritManifest(man, base *ipc.ModelManifest) {
	if man.System == "" {
		man.System = base.System
	}
	if man.Template == "" {
		man.Template = base.Template
	}
	params := maps.Clone(base.Parameters)
	if params == nil {
		params = map[string]any{}
	}
	maps.Copy(params, man.Parameters)
	if len(params) > 0 {
		man.Parameters = params
	}
	man.Adapters = append(slices.Clone(base.Adapters), man.Adapters...)
	if len(man.Messages) == 0 {
		man.Messages = base.Messages
	}
	if len(man.License) == 0 {
		man.License = base.License
	}
}
