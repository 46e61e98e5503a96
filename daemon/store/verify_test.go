package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corruptLeaf writes a state store at path with a bucket of many records,
// then overwrites one field of the first element of the leaf pages holding
// the key "key-0030": the element header's field at byte off (4 the
// value's position, 8 the key's size, 12 the value's size) becomes v.
func corruptLeaf(t *testing.T, path string, off int, v uint32) {
	t.Helper()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if err := db.Put("things", fmt.Sprintf("key-%04d", i), strings.Repeat("v", 100)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Every copy of the page: the transactions before the last left
	// older ones in pages now free.
	ps, found := os.Getpagesize(), false
	const leafPage = 0x02
	for at := 0; ; {
		i := bytes.Index(b[at:], []byte("key-0030"))
		if i < 0 {
			break
		}
		page := (at + i) / ps * ps
		at = page + ps
		if binary.LittleEndian.Uint16(b[page+8:]) != leafPage {
			continue
		}
		// A page header is 16 bytes; each leaf element header 16 more.
		binary.LittleEndian.PutUint32(b[page+16+off:], v)
		found = true
	}
	if !found {
		t.Fatal("key-0030 is on no leaf page")
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestOpenCorruptFile: a state store whose page points past the file is
// refused with ErrCorrupt when opened. It opened, and the first request
// to read that page killed the daemon with "fatal error: fault" (or
// panicked in its handler, the connection closed without an answer).
func TestOpenCorruptFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		off  int
		v    uint32
	}{
		{"position", 4, 0x7fffff00},
		{"key size", 8, 0x00ffffff},
		{"value size", 12, 0x7fffffff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			corruptLeaf(t, path, tc.off, tc.v)
			db, err := Open(path)
			if err == nil {
				db.Close()
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open: %v, want ErrCorrupt", err)
			}
		})
	}
}
