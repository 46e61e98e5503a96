package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenLockedNamesHolder: a second Open of a store another process
// holds names that process's pid. "locked by another ruvllmd" alone left
// a user whose daemon no client reached (its socket removed) no way to
// find it: `ruvllm stop` said none was running.
func TestOpenLockedNamesHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// flock locks belong to an open file: this process's second open
	// waits as another process's would, and the holder is this process.
	second, err := Open(path)
	if err == nil {
		second.Close()
		t.Fatal("a second Open of a locked store succeeded")
	}
	if want := fmt.Sprintf("locked by another ruvllmd (pid %d;", os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Fatalf("Open: %v, want %q", err, want)
	}
}
