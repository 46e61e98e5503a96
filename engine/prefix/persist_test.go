package prefix

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"

	"github.com/ruvllm/ruvllm/engine/kv"
)

type memKV struct{ blocks [][]byte }

func newMemKV(n, size int) *memKV {
	m := &memKV{}
	for i := 0; i < n; i++ {
		m.blocks = append(m.blocks, make([]byte, size))
	}
	return m
}

func (m *memKV) BlockBytes() int { return len(m.blocks[0]) }
func (m *memKV) ReadBlock(b int32, dst []byte) error {
	copy(dst, m.blocks[b])
	return nil
}
func (m *memKV) WriteBlock(b int32, src []byte) error {
	copy(m.blocks[b], src)
	return nil
}

func TestSaveLoadRoundTrip(t *testing.T) {
	pool := kv.NewPool(32, 4)
	c := New(pool)
	store := newMemKV(32, 8)
	toks := seqTokens(13, 5)
	s, _ := fill(t, c, pool, "model-a", toks)
	for i, b := range s.Blocks() {
		copy(store.blocks[b], fmt.Sprintf("block%03d", i))
	}
	s.Release()
	hit := c.Lookup("model-a", toks) // give it hits so it ranks first
	c.Done(hit)

	var buf bytes.Buffer
	n, err := c.Save(&buf, "model-a", store, 100)
	if err != nil || n != 3 {
		t.Fatalf("Save = %d, %v; want 3 blocks", n, err)
	}

	// A fresh cache, as after a restart.
	pool2 := kv.NewPool(32, 4)
	c2 := New(pool2)
	store2 := newMemKV(32, 8)
	got, err := c2.Load(bytes.NewReader(buf.Bytes()), "model-a", store2)
	if err != nil || got != 3 {
		t.Fatalf("Load = %d, %v; want 3", got, err)
	}
	m := c2.Lookup("model-a", toks)
	defer c2.Done(m)
	if m.Tokens != 12 {
		t.Fatalf("after restore matched %d tokens, want 12", m.Tokens)
	}
	for i, b := range m.Blocks {
		if want := fmt.Sprintf("block%03d", i); string(store2.blocks[b]) != want {
			t.Fatalf("block %d holds %q, want %q", i, store2.blocks[b], want)
		}
	}
}

func TestLoadRejectsBadSnapshots(t *testing.T) {
	pool := kv.NewPool(8, 4)
	c := New(pool)
	store := newMemKV(8, 8)
	s, _ := fill(t, c, pool, "m", seqTokens(9, 1))
	s.Release()
	var buf bytes.Buffer
	if _, err := c.Save(&buf, "m", store, 10); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/2] ^= 1
	// The last byte of the last block's values: caught only by the checksum,
	// after every block was restored, which must then all be given back.
	lastFlipped := append([]byte(nil), good...)
	lastFlipped[len(lastFlipped)-sha256.Size-1] ^= 1
	for _, tc := range []struct {
		name  string
		data  []byte
		ns    string
		store KVData
	}{
		{"corrupt byte", flipped, "m", newMemKV(8, 8)},
		{"truncated", good[:len(good)-5], "m", newMemKV(8, 8)},
		{"truncated mid-record", good[:len(good)-sha256.Size-3], "m", newMemKV(8, 8)},
		{"last value byte", lastFlipped, "m", newMemKV(8, 8)},
		{"data after the checksum", append(append([]byte(nil), good...), 0), "m", newMemKV(8, 8)},
		{"other model", good, "other", newMemKV(8, 8)},
		{"other block layout", good, "m", newMemKV(8, 16)},
		{"empty", nil, "m", newMemKV(8, 8)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := kv.NewPool(8, 4)
			c := New(p)
			n, err := c.Load(bytes.NewReader(tc.data), tc.ns, tc.store)
			if !errors.Is(err, ErrBadSnapshot) || n != 0 {
				t.Fatalf("Load = %d, %v; want ErrBadSnapshot", n, err)
			}
			if p.Free() != 8 {
				t.Fatalf("a rejected snapshot took %d blocks", 8-p.Free())
			}
		})
	}
}

func FuzzLoad(f *testing.F) {
	pool := kv.NewPool(8, 4)
	c := New(pool)
	store := newMemKV(8, 8)
	s := kv.NewSequence(pool)
	if err := s.Reserve(9, nopCopier{}); err != nil {
		f.Fatal(err)
	}
	s.Advance(9)
	c.Insert("m", seqTokens(9, 1), s.Blocks())
	s.Release()
	var buf bytes.Buffer
	if _, err := c.Save(&buf, "m", store, 10); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(snapshotMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := kv.NewPool(8, 4)
		c := New(p)
		n, err := c.Load(bytes.NewReader(data), "m", newMemKV(8, 8))
		if err == nil && n > 8 {
			t.Fatalf("restored %d blocks into a pool of 8", n)
		}
		c.Clear()
		if p.Free() != 8 {
			t.Fatalf("leak after Load+Clear: %d free", p.Free())
		}
	})
}

// TestFailedLoadKeepsCachedPrefixes checks that a snapshot rejected after
// its records were restored gives back exactly what it added: prefixes
// the cache held before, some of them shared with the snapshot, stay.
func TestFailedLoadKeepsCachedPrefixes(t *testing.T) {
	pool := kv.NewPool(16, 4)
	c := New(pool)
	store := newMemKV(16, 8)
	s, _ := fill(t, c, pool, "m", seqTokens(13, 1))
	s.Release()
	var buf bytes.Buffer
	if _, err := c.Save(&buf, "m", store, 10); err != nil {
		t.Fatal(err)
	}
	bad := buf.Bytes()
	bad[len(bad)-sha256.Size-1] ^= 1

	p2 := kv.NewPool(16, 4)
	c2 := New(p2)
	// The first 8 tokens are already cached (two blocks the snapshot shares),
	// and another prefix besides.
	s2, _ := fill(t, c2, p2, "m", seqTokens(9, 1))
	s2.Release()
	s3, _ := fill(t, c2, p2, "m", seqTokens(9, 100))
	s3.Release()
	before, free := c2.Stats().Blocks, p2.Free()
	if n, err := c2.Load(bytes.NewReader(bad), "m", newMemKV(16, 8)); !errors.Is(err, ErrBadSnapshot) || n != 0 {
		t.Fatalf("Load = %d, %v; want ErrBadSnapshot", n, err)
	}
	if got := c2.Stats().Blocks; got != before || p2.Free() != free {
		t.Fatalf("after a rejected load: %d cached blocks and %d free, want %d and %d", got, p2.Free(), before, free)
	}
	for _, start := range []uint64{1, 100} {
		m := c2.Lookup("m", seqTokens(13, start))
		if m.Tokens != 9 { // two whole blocks and a partial one
			t.Errorf("prefix from %d: %d tokens cached after the rejected load, want 9", start, m.Tokens)
		}
		c2.Done(m)
	}
}
