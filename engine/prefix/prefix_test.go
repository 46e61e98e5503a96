package prefix

import (
	"math/rand/v2"
	"testing"

	"github.com/ruvllm/ruvllm/engine/kv"
)

type nopCopier struct{}

func (nopCopier) CopyBlock(dst, src int32) {}

// fill runs a sequence over tokens the way the engine does: adopt the
// cached prefix, reserve the rest, and insert on completion.
func fill(t *testing.T, c *Cache, pool *kv.Pool, ns string, tokens []int32) (*kv.Sequence, Match) {
	t.Helper()
	m := c.Lookup(ns, tokens)
	s := kv.NewSequence(pool)
	s.Adopt(m.Blocks, m.Tokens)
	c.Done(m)
	if err := s.Reserve(len(tokens)-m.Tokens, nopCopier{}); err != nil {
		t.Fatal(err)
	}
	s.Advance(len(tokens) - m.Tokens)
	c.Insert(ns, tokens, s.Blocks())
	return s, m
}

func seqTokens(n int, seed uint64) []int32 {
	r := rand.New(rand.NewPCG(seed, 0))
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(r.IntN(1000))
	}
	return out
}

func TestLookupLongestPrefix(t *testing.T) {
	pool := kv.NewPool(64, 4)
	c := New(pool)
	system := seqTokens(10, 1)
	a := append(append([]int32(nil), system...), 7, 8, 9)
	s, m := fill(t, c, pool, "m", a)
	if m.Tokens != 0 {
		t.Fatalf("cold lookup matched %d tokens", m.Tokens)
	}
	s.Release()

	for _, tc := range []struct {
		name   string
		ns     string
		tokens []int32
		want   int
	}{
		{"same system prompt, new question", "m", append(append([]int32(nil), system...), 1, 2), 8},
		{"identical prompt leaves the last token", "m", a, 12},
		{"other namespace (model or adapter) misses", "other", a, 0},
		{"diverges in first block", "m", append([]int32{999}, a[1:]...), 0},
		{"shorter than a block", "m", a[:3], 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := c.Lookup(tc.ns, tc.tokens)
			defer c.Done(m)
			if m.Tokens != tc.want {
				t.Fatalf("matched %d tokens, want %d", m.Tokens, tc.want)
			}
			if len(m.Blocks)*4 != m.Tokens {
				t.Fatalf("%d blocks for %d tokens", len(m.Blocks), m.Tokens)
			}
		})
	}
}

// TestCachedPeeks checks Cached against the same cases as Lookup, whole
// blocks only (the last token included), and that it neither counts a
// lookup nor holds blocks.
func TestCachedPeeks(t *testing.T) {
	pool := kv.NewPool(64, 4)
	c := New(pool)
	a := seqTokens(13, 2)
	s, _ := fill(t, c, pool, "m", a)
	s.Release()
	before, free := c.Stats(), pool.Free()
	for _, tc := range []struct {
		ns     string
		tokens []int32
		want   int
	}{
		{"m", a, 12},
		{"m", a[:12], 12}, // unlike Lookup, the last whole block counts
		{"m", a[:7], 4},
		{"m", append(append([]int32(nil), a[:4]...), 999, 998, 997, 996), 4},
		{"other", a, 0},
		{"m", a[:3], 0},
	} {
		if got := c.Cached(tc.ns, tc.tokens); got != tc.want {
			t.Errorf("Cached(%q, %d tokens) = %d, want %d", tc.ns, len(tc.tokens), got, tc.want)
		}
	}
	if after := c.Stats(); after.Lookups != before.Lookups || pool.Free() != free {
		t.Errorf("Cached counted lookups (%d → %d) or held blocks (%d → %d free)", before.Lookups, after.Lookups, free, pool.Free())
	}
}

func TestEvictOnlyUnreferencedLRU(t *testing.T) {
	pool := kv.NewPool(8, 4)
	c := New(pool)
	old, _ := fill(t, c, pool, "m", seqTokens(8, 1)) // 2 blocks
	old.Release()
	live, _ := fill(t, c, pool, "m", seqTokens(8, 2)) // 2 blocks, still in use
	recent, _ := fill(t, c, pool, "m", seqTokens(8, 3))
	recent.Release()
	if pool.Free() != 2 {
		t.Fatalf("free = %d, want 2", pool.Free())
	}
	if got := c.Evict(4); got != 2 {
		t.Fatalf("evicted %d blocks, want 2", got)
	}
	if m := c.Lookup("m", append(seqTokens(8, 3), 0)); m.Tokens != 8 {
		t.Fatalf("recently used prefix was evicted (matched %d)", m.Tokens)
	} else {
		c.Done(m)
	}
	if got := c.Evict(8); got != 2 {
		t.Fatalf("second eviction freed %d, want 2 (the live sequence's blocks must stay)", got)
	}
	live.Release()
	c.Clear()
	if pool.Free() != 8 {
		t.Fatalf("leak: %d of 8 free after Clear", pool.Free())
	}
	st := c.Stats()
	if st.Blocks != 0 || st.Evictions != 6 {
		t.Fatalf("stats %+v: want 0 blocks and 6 evictions", st)
	}
}

func TestRandomWorkloadNoLeak(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	pool := kv.NewPool(128, 4)
	c := New(pool)
	prefixes := [][]int32{seqTokens(20, 10), seqTokens(33, 11), seqTokens(7, 12)}
	var live []*kv.Sequence
	for i := 0; i < 500; i++ {
		p := prefixes[r.IntN(len(prefixes))]
		toks := append(append([]int32(nil), p[:r.IntN(len(p))+1]...), seqTokens(1+r.IntN(12), uint64(i))...)
		need := (len(toks) + 3) / 4
		if pool.Free() < need {
			c.Evict(need)
		}
		if pool.Free() < need {
			for _, s := range live {
				s.Release()
			}
			live = nil
			continue
		}
		s, _ := fill(t, c, pool, "m", toks)
		if r.IntN(3) == 0 {
			live = append(live, s)
		} else {
			s.Release()
		}
	}
	for _, s := range live {
		s.Release()
	}
	if st := c.Stats(); st.HitTokens == 0 {
		t.Fatalf("no hits in a workload of shared prefixes: %+v", st)
	}
	c.Clear()
	if pool.Free() != pool.Blocks() {
		t.Fatalf("leak: %d of %d blocks free", pool.Free(), pool.Blocks())
	}
}
