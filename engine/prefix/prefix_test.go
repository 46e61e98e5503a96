package prefix

import (
	"math/rand/v2"
	"slices"
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
		{"same system prompt, new question: to the token", "m", append(append([]int32(nil), system...), 1, 2), 10},
		{"diverges inside a block", "m", append(append([]int32(nil), a[:6]...), 999, 998, 997), 6},
		{"identical prompt leaves the last token", "m", a, 12},
		{"other namespace (model or adapter) misses", "other", a, 0},
		{"diverges in first block", "m", append([]int32{999}, a[1:]...), 0},
		{"shorter than a block", "m", a[:3], 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := c.Lookup(tc.ns, tc.tokens)
			defer c.Done(m)
			if m.Tokens != tc.want {
				t.Fatalf("matched %d tokens, want %d", m.Tokens, tc.want)
			}
			if len(m.Blocks) != (m.Tokens+3)/4 {
				t.Fatalf("%d blocks for %d tokens", len(m.Blocks), m.Tokens)
			}
		})
	}
}

// TestCachedPeeks checks Cached against the same cases as Lookup, whole
// to the token (the last one included), and that it neither counts a
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
		{"m", a, 13}, // unlike Lookup, the last token counts
		{"m", a[:12], 12},
		{"m", a[:7], 7},
		{"m", append(append([]int32(nil), a[:4]...), 999, 998, 997, 996), 4},
		{"m", append(append([]int32(nil), a[:6]...), 999), 6},
		{"other", a, 0},
		{"m", a[:3], 3},
		{"m", []int32{999}, 0},
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

// kvSim is a KV store that holds, for every position of every block, the
// token written there: what a sequence reads back shows whether the cache
// gave it the right keys and values, and whether anything wrote into a
// block the cache shares.
type kvSim struct {
	bs   int
	data map[int32][]int32
}

func (k *kvSim) CopyBlock(dst, src int32) {
	k.data[dst] = append([]int32(nil), k.data[src]...)
}

func (k *kvSim) write(s *kv.Sequence, from int, tokens []int32) {
	for p := from; p < from+len(tokens); p++ {
		b := s.Blocks()[p/k.bs]
		if k.data[b] == nil {
			k.data[b] = make([]int32, k.bs)
		}
		k.data[b][p%k.bs] = tokens[p-from]
	}
}

func (k *kvSim) read(s *kv.Sequence, n int) []int32 {
	out := make([]int32, n)
	for p := range n {
		out[p] = k.data[s.Blocks()[p/k.bs]][p%k.bs]
	}
	return out
}

// TestTokenGranularReuse runs a random workload of prompts that diverge at
// any token from shared prefixes, with sequences left running while others
// adopt their blocks, and checks every sequence reads back exactly its own
// tokens: adopted partial blocks hold the prompt's tokens, and the
// copy-on-write keeps every write out of shared blocks. It also checks
// that warm prompts compute only their new tokens.
func TestTokenGranularReuse(t *testing.T) {
	const bs = 4
	r := rand.New(rand.NewPCG(3, 9))
	pool := kv.NewPool(256, bs)
	c := New(pool)
	sim := &kvSim{bs: bs, data: map[int32][]int32{}}
	prefixes := [][]int32{seqTokens(23, 10), seqTokens(9, 11), seqTokens(3, 12)}
	var live []*kv.Sequence
	exact := 0
	for i := range 2000 {
		p := prefixes[r.IntN(len(prefixes))]
		cut := r.IntN(len(p)) + 1
		toks := append(append([]int32(nil), p[:cut]...), seqTokens(1+r.IntN(9), uint64(i))...)
		if pool.Free() < (len(toks)+bs-1)/bs+1 {
			c.Evict(len(toks)/bs + 2)
		}
		if pool.Free() < (len(toks)+bs-1)/bs+1 {
			for _, s := range live {
				s.Release()
			}
			live = nil
			c.Evict(len(toks)/bs + 2)
		}
		cachedBefore := c.Cached("m", toks)
		m := c.Lookup("m", toks)
		if want := min(cachedBefore, len(toks)-1); m.Tokens != want {
			t.Fatalf("step %d: Lookup matched %d tokens, Cached said %d", i, m.Tokens, cachedBefore)
		}
		if m.Tokens >= cut && cut < len(toks)-1 {
			exact++
		}
		s := kv.NewSequence(pool)
		s.Adopt(m.Blocks, m.Tokens)
		c.Done(m)
		if got := sim.read(s, m.Tokens); !slices.Equal(got, toks[:m.Tokens]) {
			t.Fatalf("step %d: adopted positions hold %v, want %v", i, got, toks[:m.Tokens])
		}
		if err := s.Reserve(len(toks)-m.Tokens, sim); err != nil {
			t.Fatal(err)
		}
		sim.write(s, m.Tokens, toks[m.Tokens:])
		s.Advance(len(toks) - m.Tokens)
		c.Insert("m", toks, s.Blocks())
		if got := sim.read(s, len(toks)); !slices.Equal(got, toks) {
			t.Fatalf("step %d: sequence holds %v, want %v", i, got, toks)
		}
		if r.IntN(4) == 0 {
			live = append(live, s)
		} else {
			s.Release()
		}
	}
	if exact == 0 {
		t.Fatal("no prompt reused a prefix to the token")
	}
	for _, s := range live {
		s.Release()
	}
	c.Clear()
	if pool.Free() != pool.Blocks() {
		t.Fatalf("leak: %d of %d blocks free", pool.Free(), pool.Blocks())
	}
}

// TestPartialLeaves checks the partly filled last block of a finished
// sequence: it is cached, a longer sequence's block over the same tokens
// replaces it, and a partial block whose tokens the tree holds is not
// added.
func TestPartialLeaves(t *testing.T) {
	pool := kv.NewPool(16, 4)
	c := New(pool)
	a := seqTokens(6, 1) // one block and a partial one of 2 tokens
	s, _ := fill(t, c, pool, "m", a)
	s.Release()
	if st := c.Stats(); st.Blocks != 2 || st.PartialBlocks != 1 {
		t.Fatalf("%d blocks cached (%d partial), want 2 (the partial one included)", st.Blocks, st.PartialBlocks)
	}
	longer := append(append([]int32(nil), a...), 7, 8, 9)
	if m := c.Lookup("m", longer); m.Tokens != 6 {
		t.Fatalf("matched %d tokens, want 6", m.Tokens)
	} else {
		c.Done(m)
	}
	s, _ = fill(t, c, pool, "m", longer)
	s.Release()
	// Blocks: a[0:4], then the full block a[4:6]+7,8 replaced the partial
	// leaf, then a partial 9.
	if st := c.Stats(); st.Blocks != 3 || st.PartialBlocks != 1 {
		t.Fatalf("%d blocks cached (%d partial), want 3 (the partial leaf replaced, a new one)", st.Blocks, st.PartialBlocks)
	}
	s, _ = fill(t, c, pool, "m", a[:5]) // its partial block is covered
	s.Release()
	if st := c.Stats(); st.Blocks != 3 {
		t.Fatalf("%d blocks cached after a covered prefix, want 3", st.Blocks)
	}
	c.Clear()
	if pool.Free() != pool.Blocks() {
		t.Fatalf("leak: %d of %d blocks free", pool.Free(), pool.Blocks())
	}
}

// TestNamespacesMostRecentFirst: Namespaces lists the namespaces that hold
// blocks, the most recently used first whatever their size, so that a
// snapshot's budget goes to the prefixes in use; by size, an adapter's old
// version kept its blocks and crowded the current one out (soak H).
func TestNamespacesMostRecentFirst(t *testing.T) {
	pool := kv.NewPool(64, 4)
	c := New(pool)
	big, small := seqTokens(24, 1), seqTokens(6, 2)
	s1, _ := fill(t, c, pool, "m|lora:old", big)
	s1.Release()
	s2, _ := fill(t, c, pool, "m|lora:new", small)
	s2.Release()
	if got := c.Namespaces(); !slices.Equal(got, []string{"m|lora:new", "m|lora:old"}) {
		t.Fatalf("Namespaces = %v, want the one used last first", got)
	}
	c.Done(c.Lookup("m|lora:old", big)) // used again
	if got := c.Namespaces(); !slices.Equal(got, []string{"m|lora:old", "m|lora:new"}) {
		t.Fatalf("after a lookup: Namespaces = %v", got)
	}
	c.Clear()
	if got := c.Namespaces(); len(got) != 0 {
		t.Fatalf("after Clear: Namespaces = %v", got)
	}
}
