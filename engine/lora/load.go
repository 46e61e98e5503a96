package lora

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/gguf"
)

// Load reads the adapter at path — a PEFT directory or a GGUF LoRA file —
// validates it against base and places it on b (when non-nil). Its Name
// defaults to the file or directory name without extension.
func Load(path string, base *gguf.File, b compute.Backend) (*Adapter, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("load adapter: %w", err)
	}
	var a *Adapter
	if st.IsDir() {
		a, err = LoadPEFT(path, base, b)
	} else {
		var f *gguf.File
		if f, err = gguf.Open(path); err != nil {
			return nil, fmt.Errorf("load adapter %s: %w", filepath.Base(path), err)
		}
		a, err = LoadGGUF(f, base, b)
		f.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("load adapter %s: %w", filepath.Base(path), err)
	}
	if a.Name == "" {
		a.Name = NameFromPath(path)
	}
	return a, nil
}

// NameFromPath derives an adapter name from its path: the base name without
// extension, lower-cased.
func NameFromPath(path string) string {
	base := filepath.Base(filepath.Clean(path))
	return strings.ToLower(strings.TrimSuffix(base, filepath.Ext(base)))
}
