package daemon

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/daemon/store"
)

// TestNewSetsCorruptStoreAside: a daemon whose state.db is corrupt starts
// with an empty store and keeps the old file beside it. It started, and
// died at the first request that read the bad page, then at every start.
func TestNewSetsCorruptStoreAside(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(state, "state.db")
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if err := db.Put("things", fmt.Sprintf("key-%04d", i), strings.Repeat("v", 100)); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The first record of every leaf page holding key-0030 (older copies
	// too) gets a value past the file.
	ps, found := os.Getpagesize(), false
	for at := 0; ; {
		i := bytes.Index(b[at:], []byte("key-0030"))
		if i < 0 {
			break
		}
		page := (at + i) / ps * ps
		at = page + ps
		if binary.LittleEndian.Uint16(b[page+8:]) == 0x02 { // a leaf page
			binary.LittleEndian.PutUint32(b[page+16+4:], 0x7fffff00)
			found = true
		}
	}
	if !found {
		t.Fatal("key-0030 is on no leaf page")
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}

	s, err := New(Config{SocketPath: filepath.Join(dir, "ruvllm.sock"), StateDir: state, Logger: quietLogger()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer s.Store().Close()
	if err := s.Store().Put("things", "new", "works"); err != nil {
		t.Fatalf("the new store: %v", err)
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("set aside: %v, want one file", aside)
	}
	if got, err := os.ReadFile(aside[0]); err != nil || !bytes.Equal(got, b) {
		t.Errorf("the file set aside is not the corrupt store (%v)", err)
	}
}
