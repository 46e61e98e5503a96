package llm

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestLoadOpenFailureIsNotInvalidModel: a file that cannot be opened
// (gone, unreadable: out of descriptors does the same) is no verdict on
// the file, so the error does not wrap ErrInvalidModel, which the daemon
// answers with 422 "invalid model file"; a file that opens and is not a
// model still does.
func TestLoadOpenFailureIsNotInvalidModel(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.gguf")
	if err := os.WriteFile(text, []byte("not a model at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(dir, "unreadable.gguf")
	if err := os.WriteFile(unreadable, []byte("GGUF"), 0o000); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		path        string
		invalid     bool
		is          error
		skipForRoot bool
	}{
		{name: "missing", path: filepath.Join(dir, "gone.gguf"), is: fs.ErrNotExist},
		{name: "unreadable", path: unreadable, is: fs.ErrPermission, skipForRoot: true},
		{name: "not a model", path: text, invalid: true},
		{name: "directory", path: dir, invalid: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skipForRoot && os.Getuid() == 0 {
				t.Skip("root reads files whatever their mode")
			}
			_, err := Load(context.Background(), tc.path, Options{Threads: 1, ContextLength: 64})
			if err == nil {
				t.Fatal("loaded")
			}
			if got := errors.Is(err, ErrInvalidModel); got != tc.invalid {
				t.Fatalf("Load: %v; wraps ErrInvalidModel: %v, want %v", err, got, tc.invalid)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("Load: %v; want it to wrap %v", err, tc.is)
			}
		})
	}
}
