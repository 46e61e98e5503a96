package cpu

import (
	"testing"
	"unsafe"
)

func TestDecodeChainPrefetchesTheNextProduct(t *testing.T) {
	w := newWorkers(2)
	defer w.close()
	const gb = 1024 // bytes a group
	mk := func(groups int) packedPart { return packedPart{w: make([]byte, groups*gb), out: groups * 16} }
	a, b1, b2, c := mk(64), mk(600), mk(600), mk(8)
	type product struct {
		name  string
		parts []packedPart
	}
	prods := []product{{"a", []packedPart{a}}, {"b", []packedPart{b1, b2}}, {"c", []packedPart{c}}}
	groups := func(p product) (n int) {
		for _, pt := range p.parts {
			n += pt.out / 16
		}
		return n
	}
	var ch decodeChain
	for round := range 3 {
		for i, p := range prods {
			got := ch.step(p.parts, gb, groups(p), 1, w)
			if round == 0 {
				if got != nil {
					t.Fatalf("round 0, %s: prefetch %d bytes of a product never seen after it", p.name, len(got))
				}
				continue
			}
			next := prods[(i+1)%len(prods)]
			off := w.firstClaim(groups(next), 1) * gb
			var want []byte
			for _, pt := range next.parts {
				if off < len(pt.w) {
					want = pt.w[off:min(len(pt.w), off+aheadBytes)]
					break
				}
				off -= len(pt.w)
			}
			if unsafe.SliceData(got) != unsafe.SliceData(want) || len(got) != len(want) {
				t.Fatalf("round %d, after %s: prefetch %p+%d, want %p+%d (%s)", round, p.name, unsafe.SliceData(got), len(got), unsafe.SliceData(want), len(want), next.name)
			}
		}
	}
	// b's second part holds the groups from the caller's first claim on:
	// after a, the helpers prefetch from its start.
	if got := ch.step(prods[0].parts, gb, 64, 1, w); unsafe.SliceData(got) != unsafe.SliceData(b2.w) || len(got) != aheadBytes {
		t.Fatalf("after a: prefetch %p+%d, want b's second part %p+%d", unsafe.SliceData(got), len(got), unsafe.SliceData(b2.w), aheadBytes)
	}
	// A new order replaces the link; one worker prefetches nothing.
	ch.reset()
	ch.step(prods[0].parts, gb, 64, 1, w)
	ch.step(prods[2].parts, gb, 8, 1, w)
	if l := ch.next[unsafe.Pointer(unsafe.SliceData(a.w))]; unsafe.SliceData(l.parts[0]) != unsafe.SliceData(c.w) {
		t.Fatal("a's successor is not c after a ran before c")
	}
	one := newWorkers(1)
	defer one.close()
	var ch1 decodeChain
	for range 3 {
		for _, p := range prods {
			if got := ch1.step(p.parts, gb, groups(p), 1, one); got != nil {
				t.Fatalf("one worker: prefetch %d bytes", len(got))
			}
		}
	}
}

func TestAheadShare(t *testing.T) {
	ahead := make([]byte, 1000)
	for _, n := range []int{2, 3, 4, 7} {
		total := 0
		for id := 1; id < n; id++ {
			s := aheadShare(ahead, id, n)
			if len(s) > 0 && unsafe.SliceData(s) != &ahead[total] {
				t.Fatalf("n=%d helper %d: share does not follow the previous one", n, id)
			}
			total += len(s)
		}
		if total != len(ahead) {
			t.Fatalf("n=%d: shares cover %d of %d bytes", n, total, len(ahead))
		}
	}
	if aheadShare(ahead, 1, 1) != nil || aheadShare(nil, 1, 2) != nil {
		t.Fatal("a share without helpers or memory")
	}
}

// A loop run while the helpers prefetch a large region ahead (and
// abandon it for the next loop) still runs every item once.
func TestRunAheadRunsEveryItem(t *testing.T) {
	w := newWorkers(3)
	defer w.close()
	ahead := make([]byte, 64<<20)
	for round := range 200 {
		n := 1 + round%97
		seen := make([]int32, n)
		w.runAhead(n, 1, funcJob(func(lo, hi int) {
			for i := lo; i < hi; i++ {
				seen[i]++
			}
		}), ahead)
		for i, s := range seen {
			if s != 1 {
				t.Fatalf("round %d: item %d of %d ran %d times", round, i, n, s)
			}
		}
	}
}
