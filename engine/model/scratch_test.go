package model

import (
	"testing"

	"github.com/ruvllm/ruvllm/engine/compute/cpu"
)

// TestScratchKeepsSmallSets: alternating small batch sizes (verification
// passes between single-token steps) reuses their buffer sets, the least
// recently used small set is dropped beyond keptSmall, and a large set is
// not kept once another size runs.
func TestScratchKeepsSmallSets(t *testing.T) {
	be := cpu.New(cpu.Options{Threads: 1})
	defer be.Close()
	m := &base{b: be, cfg: Config{Dim: 8, Heads: 2, KVHeads: 1, HeadDim: 4, FF: 16, Vocab: 32}}
	one, four := m.scratch(1), m.scratch(4)
	if one == four || one.n != 1 || four.n != 4 {
		t.Fatalf("sets for 1 and 4 tokens: %p (n %d), %p (n %d)", one, one.n, four, four.n)
	}
	for range 3 {
		if m.scratch(1) != one || m.scratch(4) != four {
			t.Fatal("alternating sizes allocated new sets")
		}
	}
	// Fill the cache past keptSmall: 1 is now the least recently used.
	for n := 5; n < 5+keptSmall-1; n++ {
		m.scratch(n)
	}
	if len(m.small) != keptSmall {
		t.Fatalf("%d small sets kept, want %d", len(m.small), keptSmall)
	}
	if m.scratch(4) != four {
		t.Fatal("a recently used set was dropped")
	}
	if m.scratch(1) == one {
		t.Fatal("the least recently used set was kept beyond keptSmall")
	}
	// A large set's logits go to the next set (a prompt's pass, then its
	// decode), which keeps them; a small set's stay its own.
	big := m.scratch(smallBatch + 1)
	big.logits, big.logitRows = be.New(1, m.cfg.Vocab), 1
	two := m.scratch(2)
	if two.logits != big.logits {
		t.Fatal("the set after a prompt's did not take its logits")
	}
	if m.scratch(smallBatch+1) == big {
		t.Fatal("a large set was kept")
	}
	if m.scratch(2) != two {
		t.Fatal("the set for 2 tokens was not kept")
	}
	if three := m.scratch(3); three.logits != nil {
		t.Fatal("a set took the logits of a small set")
	}
	if len(m.small) > keptSmall {
		t.Fatalf("%d small sets kept", len(m.small))
	}
}
