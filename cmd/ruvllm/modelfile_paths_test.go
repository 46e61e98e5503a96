package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadModelfilePaths: FROM and ADAPTER name files as ollama create
// finds them: a bare file name next to the Modelfile (FROM model.gguf) and
// a path under "~/" are made absolute, where the daemon looked for them
// in its own working directory; a model name stays a name.
func TestReadModelfilePaths(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	for _, p := range []string{filepath.Join(dir, "model.gguf"), filepath.Join(dir, "lora.gguf"), filepath.Join(home, "m2.gguf")} {
		if err := os.WriteFile(p, []byte("GGUF"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ line, want string }{
		{"FROM model.gguf", "FROM " + filepath.Join(dir, "model.gguf")},
		{"FROM ./model.gguf", "FROM " + filepath.Join(dir, "model.gguf")},
		{"ADAPTER lora.gguf", "ADAPTER " + filepath.Join(dir, "lora.gguf")},
		{"FROM ~/m2.gguf", "FROM " + filepath.Join(home, "m2.gguf")},
		{"FROM llama3.1", "FROM llama3.1"},
		{"FROM missing.gguf", "FROM missing.gguf"},
	} {
		t.Run(c.line, func(t *testing.T) {
			mf := filepath.Join(dir, "Modelfile")
			if err := os.WriteFile(mf, []byte(c.line+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := readModelfile(mf)
			if err != nil {
				t.Fatal(err)
			}
			if got = strings.TrimSpace(got); got != c.want {
				t.Errorf("read %q, want %q", got, c.want)
			}
		})
	}
}
