package store

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// chunkBytes sums the bytes of the stored chunks and counts them.
func chunkBytes(t *testing.T, d *DB) (n, size int) {
	t.Helper()
	d.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(learningChunks)).ForEach(func(_, v []byte) error {
			n++
			size += len(v)
			return nil
		})
	})
	return n, size
}

// randomState is size pseudo-random bytes (adapter values look so).
func randomState(seed uint64, size int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, size)
	for i := 0; i+8 <= size; i += 8 {
		v := r.Uint64()
		for k := range 8 {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	return b
}

// TestLearningStateChunks: saving a scope's state again after a change in
// its middle (a MicroLoRA step) and a record inserted before the rest
// (feedback queued) writes only the chunks around the changes, loads back
// byte for byte, and releases the chunks no state uses any more; the
// chunks of a state set aside are released too.
func TestLearningStateChunks(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	const size = 24 << 20
	state := randomState(1, size)
	load := func(key string) []byte {
		t.Helper()
		sts, err := d.LearningStates(ctx, "m")
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range sts {
			if st.Key == key {
				return st.State
			}
		}
		t.Fatalf("%q not stored", key)
		return nil
	}
	key := LearningKey("m", "user")
	if written, err := d.saveLearning(ctx, key, state, nil, nil); err != nil || written != size {
		t.Fatalf("first save wrote %d bytes (err %v), want %d", written, err, size)
	}
	if !bytes.Equal(load(key), state) {
		t.Fatal("the state read back differs")
	}
	_, first := chunkBytes(t, d)
	if first != size {
		t.Fatalf("first save stored %d chunk bytes, want %d", first, size)
	}

	// A step rewrites 512 KiB in the middle; a record of 3 KiB is
	// inserted at 2 MiB.
	next := bytes.Clone(state)
	copy(next[12<<20:], randomState(2, 512<<10))
	next = append(next[:2<<20:2<<20], append(randomState(3, 3<<10), next[2<<20:]...)...)
	written, err := d.saveLearning(ctx, key, next, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(load(key), next) {
		t.Fatal("the changed state read back differs")
	}
	// At most the chunks around the two changes: each at most chunkMax,
	// and a change near a boundary touches two.
	if written > 4*chunkMax {
		t.Fatalf("after a 515 KiB change of a %d-byte state the save wrote %d bytes", size, written)
	}
	if _, held := chunkBytes(t, d); held != len(next) {
		t.Fatalf("the chunks hold %d bytes after the second save, want the state's %d (the replaced chunks released)", held, len(next))
	}
	t.Logf("second save wrote %d of %d bytes", written, len(next))

	// A second scope with the same state shares its chunks; setting one
	// aside keeps the other's.
	other := LearningKey("m", "app:x")
	if err := d.SaveLearning(ctx, other, next, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.SetLearningAside(ctx, key, "test"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(load(other), next) {
		t.Fatal("the other scope's state was damaged when the first was set aside")
	}
	if _, kept := chunkBytes(t, d); kept != len(next) {
		t.Fatalf("after setting one of two equal scopes aside %d chunk bytes are kept, want %d", kept, len(next))
	}
	if err := d.SetLearningAside(ctx, other, "test"); err != nil {
		t.Fatal(err)
	}
	if n, _ := chunkBytes(t, d); n != 0 {
		t.Fatalf("%d chunks left when no state uses them", n)
	}
}

// TestLearningStateStoredWhole: a state saved whole by an earlier version
// loads as it is, and its next save is chunked.
func TestLearningStateStoredWhole(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	key := LearningKey("m", "user")
	old := []byte("RVSONA-state stored whole")
	if err := d.db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte(Learning)).Put([]byte(key), old) }); err != nil {
		t.Fatal(err)
	}
	sts, err := d.LearningStates(ctx, "m")
	if err != nil || len(sts) != 1 || !bytes.Equal(sts[0].State, old) {
		t.Fatalf("states %v, err %v: want the whole record", sts, err)
	}
	if err := d.SaveLearning(ctx, key, old, nil, nil); err != nil {
		t.Fatal(err)
	}
	if n, _ := chunkBytes(t, d); n != 1 {
		t.Fatalf("%d chunks after saving again, want 1", n)
	}
	sts, _ = d.LearningStates(ctx, "m")
	if len(sts) != 1 || !bytes.Equal(sts[0].State, old) {
		t.Fatal("the state saved again reads back otherwise")
	}
}

// TestChunkEndsFollowContent: the same bytes cut at the same places
// wherever they start (an insertion moves the boundaries after it with
// it), and no chunk outside [chunkMin, chunkMax] but the last.
func TestChunkEndsFollowContent(t *testing.T) {
	gear := gearTable()
	data := randomState(9, 20<<20)
	ends := chunkEnds(data, gear)
	start := 0
	for i, e := range ends {
		if n := e - start; n > chunkMax || (n < chunkMin && i != len(ends)-1) {
			t.Fatalf("chunk %d of %d bytes", i, n)
		}
		start = e
	}
	if ends[len(ends)-1] != len(data) {
		t.Fatal("the chunks do not cover the data")
	}
	shifted := append(randomState(10, 1000), data...)
	moved := map[int]bool{}
	for _, e := range chunkEnds(shifted, gear) {
		moved[e-1000] = true
	}
	same := 0
	for _, e := range ends {
		if moved[e] {
			same++
		}
	}
	if same < len(ends)-2 {
		t.Fatalf("after a 1000-byte insertion at the start %d of %d boundaries stayed with the content", same, len(ends))
	}
}

// FuzzChunkedState: any bytes cut into chunks and listed in a record read
// back as themselves; any record parses without a panic.
func FuzzChunkedState(f *testing.F) {
	f.Add([]byte("state"), []byte("RVLCHNK1"))
	f.Add(randomState(3, 200<<10), append([]byte("RVLCHNK1"), make([]byte, 31)...))
	f.Fuzz(func(t *testing.T, state, rec []byte) {
		c := cutState(state)
		var back []byte
		hashes, chunked, err := recordChunks(c.record())
		if !chunked || err != nil {
			t.Fatalf("own record: chunked %v, err %v", chunked, err)
		}
		for _, h := range hashes {
			back = append(back, c.chunks[h]...)
		}
		if !bytes.Equal(back, state) {
			t.Fatal("chunks do not put the state back together")
		}
		recordChunks(rec)
	})
}

// TestSetAsidePruned: setting a scope's state aside keeps the newest
// MaxAsidePerScope of that scope (a model file replaced back and forth
// set a whole state aside every time, never pruned) and leaves other
// scopes' alone.
func TestSetAsidePruned(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	other := LearningKey("m", "user2")
	if err := d.SaveLearning(ctx, other, []byte("other"), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.SetLearningAside(ctx, other, "test"); err != nil {
		t.Fatal(err)
	}
	key := LearningKey("m", "user")
	for i := range 5 {
		if err := d.SaveLearning(ctx, key, []byte{byte(i)}, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := d.SetLearningAside(ctx, key, "test"); err != nil {
			t.Fatal(err)
		}
	}
	if n := d.LearningAside(); n != MaxAsidePerScope+1 {
		t.Fatalf("%d states aside, want %d of the scope and the other scope's", n, MaxAsidePerScope+1)
	}
	var kept []byte
	d.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(learningAside)).ForEach(func(k, v []byte) error {
			var rec struct{ State []byte }
			if json.Unmarshal(v, &rec) == nil && bytes.HasPrefix(k, []byte(key+"\x00")) {
				kept = append(kept, rec.State...)
			}
			return nil
		})
	})
	if !bytes.Equal(kept, []byte{3, 4}) {
		t.Fatalf("kept states %v, want the newest two [3 4]", kept)
	}
}
