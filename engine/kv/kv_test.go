package kv

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

type copyLog struct{ copies [][2]int32 }

func (c *copyLog) CopyBlock(dst, src int32) { c.copies = append(c.copies, [2]int32{dst, src}) }

func TestPoolAllocRelease(t *testing.T) {
	p := NewPool(4, 16)
	a, err := p.Alloc(3)
	if err != nil || len(a) != 3 {
		t.Fatalf("Alloc(3) = %v, %v", a, err)
	}
	if _, err := p.Alloc(2); !errors.Is(err, ErrPoolExhausted) {
		t.Fatalf("Alloc beyond capacity: err = %v, want ErrPoolExhausted", err)
	}
	if p.Free() != 1 {
		t.Fatalf("Free() = %d after all-or-nothing failure, want 1", p.Free())
	}
	p.Retain(a[:1])
	p.Release(a)
	if p.Free() != 3 || p.Refs(a[0]) != 1 {
		t.Fatalf("after release: free %d, refs %d; want 3 and 1", p.Free(), p.Refs(a[0]))
	}
	p.Release(a[:1])
	if p.Free() != 4 {
		t.Fatalf("Free() = %d, want 4", p.Free())
	}
}

func TestSequenceReserveAndCopyOnWrite(t *testing.T) {
	p := NewPool(8, 4)
	var c copyLog
	a := NewSequence(p)
	if err := a.Reserve(6, &c); err != nil {
		t.Fatal(err)
	}
	a.Advance(6)
	if got := len(a.Blocks()); got != 2 {
		t.Fatalf("6 positions in blocks of 4 use %d blocks, want 2", got)
	}
	// b shares a's blocks (a prefix-cache hit) and then appends: the shared,
	// partly filled last block must be copied, the full first one not.
	b := NewSequence(p)
	b.Adopt(a.Blocks(), a.Len())
	shared := append([]int32(nil), a.Blocks()...)
	if err := b.Reserve(1, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.copies) != 1 || c.copies[0][1] != shared[1] {
		t.Fatalf("copies = %v, want one copy of block %d", c.copies, shared[1])
	}
	if b.Blocks()[0] != shared[0] || b.Blocks()[1] == shared[1] {
		t.Fatalf("b blocks %v: first must stay shared %d, last must be private", b.Blocks(), shared[0])
	}
	b.Advance(1)
	a.Release()
	b.Release()
	if p.Free() != 8 {
		t.Fatalf("leak: %d of 8 blocks free", p.Free())
	}
}

func TestSequenceRandomNoLeak(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	p := NewPool(64, 16)
	var c copyLog
	var live []*Sequence
	for step := 0; step < 2000; step++ {
		switch r.IntN(4) {
		case 0:
			s := NewSequence(p)
			if len(live) > 0 && r.IntN(2) == 0 {
				src := live[r.IntN(len(live))]
				if src.Len() > 0 {
					n := 1 + r.IntN(src.Len())
					s.Adopt(src.Blocks()[:(n+15)/16], n)
				}
			}
			live = append(live, s)
		case 1, 2:
			if len(live) == 0 {
				continue
			}
			s := live[r.IntN(len(live))]
			n := 1 + r.IntN(40)
			if err := s.Reserve(n, &c); err == nil {
				s.Advance(n)
			} else if !errors.Is(err, ErrPoolExhausted) {
				t.Fatal(err)
			}
		case 3:
			if len(live) == 0 {
				continue
			}
			i := r.IntN(len(live))
			if r.IntN(2) == 0 {
				live[i].Truncate(live[i].Len() / 2)
			} else {
				live[i].Release()
				live = append(live[:i], live[i+1:]...)
			}
		}
	}
	for _, s := range live {
		s.Release()
	}
	if p.Free() != 64 {
		t.Fatalf("leak: %d of 64 blocks free after releasing everything", p.Free())
	}
}

func TestSequenceTrimAfterPartialAdvance(t *testing.T) {
	p := NewPool(8, 4)
	var c copyLog
	s := NewSequence(p)
	if err := s.Reserve(3, &c); err != nil {
		t.Fatal(err)
	}
	s.Advance(3)
	// A draft of 7 more positions reserves up to position 10 (3 blocks).
	if err := s.Reserve(7, &c); err != nil {
		t.Fatal(err)
	}
	if len(s.Blocks()) != 3 || p.Free() != 5 {
		t.Fatalf("after reserving 10 positions: %d blocks held, %d free", len(s.Blocks()), p.Free())
	}
	s.Advance(2) // two accepted: 5 positions
	s.Trim()
	if s.Len() != 5 || len(s.Blocks()) != 2 || p.Free() != 6 {
		t.Fatalf("after Trim: len %d, %d blocks, %d free; want 5, 2, 6", s.Len(), len(s.Blocks()), p.Free())
	}
	s.Trim() // nothing more to free
	if len(s.Blocks()) != 2 {
		t.Fatalf("second Trim freed a used block")
	}
	s.Release()
	if p.Free() != 8 {
		t.Fatalf("leak: %d of 8 free", p.Free())
	}
}

type demoteLog struct {
	copyLog
	demotes [][2]int32
}

func (d *demoteLog) DemoteBlock(dst, src int32) { d.demotes = append(d.demotes, [2]int32{dst, src}) }

func TestDemoteTiers(t *testing.T) {
	p := NewTieredPool(6, 3, 4)
	if p.Blocks() != 9 || p.HotBlocks() != 6 || p.ColdBlocks() != 3 || p.Free() != 6 || p.FreeCold() != 3 {
		t.Fatalf("pool: %d blocks, %d hot, %d cold, %d/%d free", p.Blocks(), p.HotBlocks(), p.ColdBlocks(), p.Free(), p.FreeCold())
	}
	var d demoteLog
	s := NewSequence(p)
	if err := s.Reserve(18, &d); err != nil { // 5 blocks, the last partly filled
		t.Fatal(err)
	}
	s.Advance(18)
	// A window of 8: blocks ending at or before position 10 move (blocks 0
	// and 1, ending at 4 and 8); block 2 ends at 12 > 10.
	hot := append([]int32(nil), s.Blocks()...)
	if n, err := s.Demote(8, &d); n != 2 || err != nil {
		t.Fatalf("Demote(8) = %d, %v; want 2 moved", n, err)
	}
	for i, b := range s.Blocks() {
		if cold := i < 2; p.Cold(b) != cold {
			t.Fatalf("block %d (id %d) cold = %v", i, b, p.Cold(b))
		}
	}
	if len(d.demotes) != 2 || d.demotes[0][1] != hot[0] || d.demotes[1][1] != hot[1] {
		t.Fatalf("demotions %v of hot blocks %v", d.demotes, hot)
	}
	if p.Free() != 3 || p.FreeCold() != 1 {
		t.Fatalf("after demoting: %d hot, %d cold free; want 3 and 1", p.Free(), p.FreeCold())
	}
	// Nothing more within the window; a second call is a no-op.
	if n, _ := s.Demote(8, &d); n != 0 {
		t.Fatalf("second Demote moved %d", n)
	}
	// A shared block stays hot; the cold tier running out stops Demote.
	other := NewSequence(p)
	other.Adopt(s.Blocks()[:3], 12)
	s.Advance(0)
	if err := s.Reserve(6, &d); err != nil {
		t.Fatal(err)
	}
	s.Advance(6) // 24 positions
	n, err := s.Demote(0, &d)
	if n != 1 || !errors.Is(err, ErrPoolExhausted) {
		t.Fatalf("Demote(0) with block 2 shared and one cold block left = %d, %v", n, err)
	}
	if p.Cold(s.Blocks()[2]) || !p.Cold(s.Blocks()[3]) {
		t.Fatalf("shared block 2 moved or block 3 did not: %v", s.Blocks())
	}
	// Reusing a prefix that ends inside a cold block copies it hot before
	// writing.
	third := NewSequence(p)
	other.Release()
	s.Release()
	if p.Free() != 6 || p.FreeCold() != 3 {
		t.Fatalf("leak: %d hot, %d cold free", p.Free(), p.FreeCold())
	}
	cold, _ := p.AllocCold(1)
	third.Adopt(cold, 3)
	p.Release(cold)
	d.copies = nil
	if err := third.Reserve(1, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.copies) != 1 || d.copies[0][1] != cold[0] || p.Cold(third.Blocks()[0]) {
		t.Fatalf("writing after a cold partial block: copies %v, blocks %v", d.copies, third.Blocks())
	}
	third.Release()
	if p.Free() != 6 || p.FreeCold() != 3 {
		t.Fatalf("leak: %d hot, %d cold free", p.Free(), p.FreeCold())
	}
}

func TestBudgetSharedByTiers(t *testing.T) {
	p := NewTieredPool(10, 20, 4)
	p.SetBudget(100, 10, 5) // ten hot blocks' worth
	var d demoteLog
	s := NewSequence(p)
	if err := s.Reserve(40, &d); err != nil { // ten hot blocks: the whole budget
		t.Fatal(err)
	}
	s.Advance(40)
	if p.Free() != 0 || p.FreeCold() != 0 || p.UsedBytes() != 100 {
		t.Fatalf("full budget: %d hot, %d cold free, %d bytes used", p.Free(), p.FreeCold(), p.UsedBytes())
	}
	if _, err := p.Alloc(1); !errors.Is(err, ErrPoolExhausted) {
		t.Fatalf("Alloc over the budget: %v", err)
	}
	// Demoting needs no free bytes: each cold block replaces a hot one.
	if n, err := s.Demote(8, &d); n != 8 || err != nil {
		t.Fatalf("Demote = %d, %v; want 8", n, err)
	}
	// 2 hot (20) + 8 cold (40) bytes: 40 free, room for 4 hot or 8 cold.
	if p.UsedBytes() != 60 || p.Free() != 4 || p.FreeCold() != 8 {
		t.Fatalf("after demoting: %d bytes used, %d hot, %d cold free", p.UsedBytes(), p.Free(), p.FreeCold())
	}
	s.Release()
	if p.UsedBytes() != 0 || p.Free() != 10 || p.FreeCold() != 20 {
		t.Fatalf("after release: %d bytes, %d hot, %d cold free", p.UsedBytes(), p.Free(), p.FreeCold())
	}
}

// TestDemoteWindow checks which full blocks Demote moves for windows
// from none to the int's maximum: a window of math.MaxInt (or any near
// it) overflowed the block's end plus the window and moved every block,
// where it must move none.
func TestDemoteWindow(t *testing.T) {
	for _, tc := range []struct {
		window int
		moved  int
	}{
		{0, 4},           // every full block of 18 positions (4 of 4)
		{2, 4},           // block 3 ends at 16, 2 before 18
		{3, 3},           // block 3 ends within the window
		{14, 1},          // block 0 ends at 4, 14 before 18
		{15, 0},          // no block ends 15 before 18
		{1 << 40, 0},     // a window past any context
		{math.MaxInt, 0}, // "keep everything hot"
		{math.MaxInt - 3, 0},
	} {
		p := NewTieredPool(6, 6, 4)
		var d demoteLog
		s := NewSequence(p)
		if err := s.Reserve(18, &d); err != nil {
			t.Fatal(err)
		}
		s.Advance(18)
		if n, err := s.Demote(tc.window, &d); n != tc.moved || err != nil {
			t.Errorf("Demote(%d) over 18 positions = %d, %v; want %d moved", tc.window, n, err, tc.moved)
		}
		s.Release()
	}
}
