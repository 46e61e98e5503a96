//go:build linux || darwin

package disk

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRemoveTempSkipsFilesBeingWritten: RemoveTemp removes the temporary
// files a kill -9 left behind, not one a writer still holds locked. A
// daemon with a state directory of its own shares the models, cache and
// adapters directories, and its start removed another daemon's
// quantization under way (which failed at its rename: "no such file or
// directory").
func TestRemoveTempSkipsFilesBeingWritten(t *testing.T) {
	dir := t.TempDir()
	leftover, err := os.CreateTemp(dir, ".quantize-*.gguf")
	if err != nil {
		t.Fatal(err)
	}
	leftover.WriteString("cut off")
	leftover.Close()
	// Written by another daemon: locked as CreateTemp locks.
	writing, err := os.CreateTemp(dir, ".quantize-*.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer writing.Close()
	if err := unix.Flock(int(writing.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	// Made with CreateTemp and still open.
	mine, err := CreateTemp(dir, ".upload-*")
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()

	RemoveTemp(dir, ".quantize-", ".upload-")
	for _, tc := range []struct {
		path string
		kept bool
	}{
		{leftover.Name(), false},
		{writing.Name(), true},
		{mine.Name(), true},
	} {
		if _, err := os.Lstat(tc.path); (err == nil) != tc.kept {
			t.Errorf("%s: kept %v, want %v", filepath.Base(tc.path), err == nil, tc.kept)
		}
	}
	// Once closed (the writer ended, however it ended) it is a leftover.
	writing.Close()
	mine.Close()
	RemoveTemp(dir, ".quantize-", ".upload-")
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("after the writers closed: %d files left", len(ents))
	}
}
