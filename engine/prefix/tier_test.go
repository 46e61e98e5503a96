package prefix

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/ruvllm/ruvllm/engine/kv"
)

// tieredKV is memKV with a cold tier of smaller blocks (ids from hot on).
type tieredKV struct {
	memKV
	hot  int
	cold [][]byte
}

func newTieredKV(hot, cold, hotSize, coldSize int) *tieredKV {
	m := &tieredKV{memKV: *newMemKV(hot, hotSize), hot: hot}
	for range cold {
		m.cold = append(m.cold, make([]byte, coldSize))
	}
	return m
}

func (m *tieredKV) ColdBlockBytes() int { return len(m.cold[0]) }
func (m *tieredKV) DemoteBlock(dst, src int32) {
	copy(m.cold[int(dst)-m.hot], m.blocks[src]) // "quantized": the first bytes
}
func (m *tieredKV) CopyBlock(dst, src int32) {}
func (m *tieredKV) ReadBlock(b int32, dst []byte) error {
	if int(b) >= m.hot {
		if len(dst) != len(m.cold[0]) {
			return errors.New("cold buffer size")
		}
		copy(dst, m.cold[int(b)-m.hot])
		return nil
	}
	return m.memKV.ReadBlock(b, dst)
}
func (m *tieredKV) WriteBlock(b int32, src []byte) error {
	if int(b) >= m.hot {
		copy(m.cold[int(b)-m.hot], src)
		return nil
	}
	return m.memKV.WriteBlock(b, src)
}

// TestTiers caches a sequence whose old blocks went cold: Evict frees
// only hot blocks and EvictCold only cold ones, a snapshot restores each
// block to its tier with its bytes, and Clear empties both tiers.
func TestTiers(t *testing.T) {
	pool := kv.NewTieredPool(8, 8, 4)
	c := New(pool)
	store := newTieredKV(8, 8, 8, 4)
	toks := seqTokens(16, 9) // 4 full blocks (no partial leaf)
	s := kv.NewSequence(pool)
	if err := s.Reserve(len(toks), store); err != nil {
		t.Fatal(err)
	}
	s.Advance(len(toks))
	for i, b := range s.Blocks() {
		copy(store.blocks[b], fmt.Sprintf("blk%d....", i))
	}
	if n, err := s.Demote(8, store); n != 2 || err != nil { // blocks 0, 1
		t.Fatalf("Demote = %d, %v", n, err)
	}
	c.Insert("m", toks, s.Blocks())
	s.Release()
	if st := c.Stats(); st.Blocks != 4 || st.ColdBlocks != 2 {
		t.Fatalf("stats %+v: want 4 blocks, 2 cold", st)
	}
	var snap bytes.Buffer
	if n, err := c.Save(&snap, "m", store, 100); n != 4 || err != nil {
		t.Fatalf("Save = %d, %v", n, err)
	}
	// Hot room: only the two hot leaves can go (the cold ones would give
	// no hot room), and a cold need evicts nothing hot.
	if freed := c.Evict(pool.HotBlocks()); freed != 2 || pool.Free() != 8 {
		t.Fatalf("Evict freed %d, %d hot free", freed, pool.Free())
	}
	if st := c.Stats(); st.Blocks != 2 || st.ColdBlocks != 2 {
		t.Fatalf("after Evict: %+v", st)
	}
	if freed := c.EvictCold(pool.ColdBlocks()); freed != 2 || pool.FreeCold() != 8 {
		t.Fatalf("EvictCold freed %d, %d cold free", freed, pool.FreeCold())
	}
	// Restore: every block in its tier with its bytes.
	pool2 := kv.NewTieredPool(8, 8, 4)
	c2 := New(pool2)
	store2 := newTieredKV(8, 8, 8, 4)
	if n, err := c2.Load(bytes.NewReader(snap.Bytes()), "m", store2); n != 4 || err != nil {
		t.Fatalf("Load = %d, %v", n, err)
	}
	m := c2.Lookup("m", append(toks, 0))
	if m.Tokens != 16 {
		t.Fatalf("restored match of %d tokens", m.Tokens)
	}
	for i, b := range m.Blocks {
		var want string
		var got []byte
		if i < 2 {
			if !pool2.Cold(b) {
				t.Fatalf("block %d restored hot", i)
			}
			got, want = store2.cold[int(b)-8], fmt.Sprintf("blk%d", i)
		} else {
			if pool2.Cold(b) {
				t.Fatalf("block %d restored cold", i)
			}
			got, want = store2.blocks[b], fmt.Sprintf("blk%d....", i)
		}
		if string(got) != want {
			t.Fatalf("block %d bytes %q, want %q", i, got, want)
		}
	}
	c2.Done(m)
	// A cache without a cold tier rejects the snapshot.
	plain := New(kv.NewPool(8, 4))
	if _, err := plain.Load(bytes.NewReader(snap.Bytes()), "m", newMemKV(8, 8)); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("loading a tiered snapshot without a cold tier: %v", err)
	}
	c2.Clear()
	if pool2.Free() != 8 || pool2.FreeCold() != 8 {
		t.Fatalf("Clear left %d hot, %d cold free", pool2.Free(), pool2.FreeCold())
	}
}

// TestBudgetEviction: where the tiers share a byte budget, evicting cold
// prefixes makes room for hot blocks.
func TestBudgetEviction(t *testing.T) {
	pool := kv.NewTieredPool(4, 8, 4)
	pool.SetBudget(60, 10, 5)
	c := New(pool)
	store := newTieredKV(4, 8, 8, 4)
	for seed := range uint64(2) {
		toks := seqTokens(16, 20+seed)
		s := kv.NewSequence(pool)
		if err := s.Reserve(16, store); err != nil {
			t.Fatal(err)
		}
		s.Advance(16)
		if _, err := s.Demote(0, store); err != nil {
			t.Fatal(err)
		}
		c.Insert("m", toks, s.Blocks())
		s.Release()
	}
	// 8 cold blocks of 5 bytes leave room for 2 hot ones.
	if pool.Free() != 2 || c.Stats().ColdBlocks != 8 {
		t.Fatalf("%d hot free, %+v", pool.Free(), c.Stats())
	}
	if freed := c.Evict(4); freed != 4 || pool.Free() != 4 {
		t.Fatalf("Evict(4) freed %d cold blocks, %d hot free; want 4 and 4", freed, pool.Free())
	}
}
