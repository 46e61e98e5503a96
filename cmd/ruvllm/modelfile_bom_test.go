package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadModelfileByteOrderMark: create finds the FROM path of a
// Modelfile's first line behind a byte order mark (made absolute from the
// Modelfile's directory), and sends the text without the mark.
func TestReadModelfileByteOrderMark(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "m.gguf"), []byte("GGUF"), 0o600); err != nil {
		t.Fatal(err)
	}
	mf := filepath.Join(dir, "Modelfile")
	if err := os.WriteFile(mf, []byte("\ufeffFROM ./m.gguf\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := readModelfile(mf)
	if err != nil {
		t.Fatal(err)
	}
	if want := "FROM " + filepath.Join(dir, "m.gguf"); strings.TrimSpace(got) != want {
		t.Errorf("read %q, want %q", got, want)
	}
}
