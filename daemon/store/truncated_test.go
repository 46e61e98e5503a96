package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenTruncatedOrInvalidFile: a state store cut short before its
// freelist page (a partial copy, a crash of the file system), or whose
// meta pages are both damaged, is refused with ErrCorrupt, which the
// daemon answers by setting it aside. The truncated one killed the
// daemon at every start with "fatal error: fault" (SIGBUS in bbolt's
// Open); the damaged one was "invalid database" at every start.
func TestOpenTruncatedOrInvalidFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, b []byte) []byte
	}{
		{"truncated before the freelist", func(t *testing.T, b []byte) []byte {
			ps, freelist := newestMeta(t, b)
			if freelist*ps >= uint64(len(b)) || freelist < 3 {
				t.Fatalf("freelist page %d of a %d-byte file", freelist, len(b))
			}
			return b[:freelist*ps]
		}},
		{"both meta pages zeroed", func(t *testing.T, b []byte) []byte {
			ps, _ := newestMeta(t, b)
			clear(b[:2*ps])
			return b
		}},
		{"both meta checksums wrong", func(t *testing.T, b []byte) []byte {
			ps, _ := newestMeta(t, b)
			for _, at := range []uint64{0, ps} {
				b[at+16+48] ^= 0xff // the meta's txid, under its checksum
			}
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			db, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 200 {
				if err := db.Put(Settings, fmt.Sprintf("key-%04d", i), strings.Repeat("v", 200)); err != nil {
					t.Fatal(err)
				}
			}
			db.Close()
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tc.damage(t, b), 0o600); err != nil {
				t.Fatal(err)
			}
			db, err = Open(path)
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open: %v, want ErrCorrupt", err)
			}
		})
	}
}

// newestMeta returns the page size and the freelist page id of the meta
// page of b with the higher transaction id (bbolt's file format: a
// 16-byte page header, then magic, version, page size, flags, root
// bucket, freelist, page count, txid and checksum).
func newestMeta(t *testing.T, b []byte) (pageSize, freelist uint64) {
	t.Helper()
	var txid uint64
	ps := uint64(binary.LittleEndian.Uint32(b[16+8:]))
	for _, at := range []uint64{0, ps} {
		m := b[at+16:]
		if binary.LittleEndian.Uint32(m) != 0xED0CDAED {
			t.Fatalf("no meta page at %d", at)
		}
		if tx := binary.LittleEndian.Uint64(m[48:]); tx >= txid {
			txid, freelist = tx, binary.LittleEndian.Uint64(m[32:])
		}
	}
	return ps, freelist
}
