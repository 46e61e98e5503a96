package spec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestDraftAddMergeKeep(t *testing.T) {
	var d Draft
	if got := d.AddChain(-1, []int32{5, 6, 7}, SrcLookup, 16); got != 3 {
		t.Fatalf("AddChain walked %d tokens, want 3", got)
	}
	d.AddChain(-1, []int32{5, 6, 9}, SrcModel, 16) // shares 5, 6
	d.AddChain(-1, []int32{4}, SrcModel, 16)
	if want := []int32{5, 6, 7, 9, 4}; !slices.Equal(d.Tokens, want) {
		t.Fatalf("tokens %v, want %v", d.Tokens, want)
	}
	if want := []int32{-1, 0, 1, 1, -1}; !slices.Equal(d.Parents, want) {
		t.Fatalf("parents %v, want %v", d.Parents, want)
	}
	if want := []uint8{0, 0, 0, 1, 1}; !slices.Equal(d.Rank, want) {
		t.Fatalf("ranks %v, want %v", d.Rank, want)
	}
	if d.Chain() {
		t.Fatal("a tree reported as a chain")
	}
	if c := d.Child(1, 9); c != 3 {
		t.Fatalf("Child(1, 9) = %d, want 3", c)
	}
	if c := d.Child(-1, 6); c != -1 {
		t.Fatalf("Child(-1, 6) = %d, want -1 (6 is not a root token)", c)
	}
	if d.Depth(3) != 3 || d.Depth(4) != 1 {
		t.Fatalf("depths %d, %d; want 3, 1", d.Depth(3), d.Depth(4))
	}
	// Drop 7 and the root-level 4: 9 becomes 6's only child, rank 0.
	d.Keep([]bool{true, true, false, true, false})
	if want := []int32{5, 6, 9}; !slices.Equal(d.Tokens, want) || !d.Chain() || !slices.Equal(d.Rank, []uint8{0, 0, 0}) {
		t.Fatalf("after Keep: tokens %v parents %v ranks %v", d.Tokens, d.Parents, d.Rank)
	}
	if d.Src[2] != SrcModel {
		t.Fatalf("after Keep the source of 9 is %v", d.Src[2])
	}
	// The node budget stops a chain.
	d.Reset()
	if got := d.AddChain(-1, []int32{1, 2, 3, 4}, SrcLookup, 2); got != 2 || d.Len() != 2 {
		t.Fatalf("AddChain under a budget of 2 walked %d, holds %d", got, d.Len())
	}
}

func TestLookupPropose(t *testing.T) {
	const (
		one  = SrcLookupOne
		two  = SrcLookup
		mid  = SrcLookupMid
		long = SrcLookupLong
	)
	for _, tc := range []struct {
		name     string
		l        Lookup
		tokens   []int32
		depth    int
		nodes    int
		want     []int32 // tokens
		parents  []int32
		srcs     []Source
		matchLen int
	}{
		{"no match", Lookup{}, []int32{1, 2, 3, 4, 5}, 4, 8, nil, nil, nil, 0},
		// Each drafted token lengthens the match it continues.
		{"single token", Lookup{}, []int32{1, 9, 2, 3, 1}, 4, 8, []int32{9, 2, 3, 1}, []int32{-1, 0, 1, 2}, []Source{one, two, two, mid}, 1},
		{"single token too weak for MinNgram 2", Lookup{MinNgram: 2}, []int32{1, 9, 2, 3, 1}, 4, 8, nil, nil, nil, 0},
		{"bigram", Lookup{}, []int32{1, 2, 3, 4, 5, 1, 2}, 3, 8, []int32{3, 4, 5}, []int32{-1, 0, 1}, []Source{two, two, mid}, 2},
		// The occurrence runs into the end: the chain goes on through the
		// tokens it drafted.
		{"a repeating span goes on past the end", Lookup{}, []int32{7, 8, 7, 8}, 5, 8, []int32{7, 8, 7, 8, 7}, []int32{-1, 0, 1, 2, 3}, []Source{two, two, mid, mid, mid}, 2},
		{"long match", Lookup{}, []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7}, 2, 8, []int32{8, 9}, []int32{-1, 0}, []Source{mid, long}, 7},
		// 1 2 3 is followed by 4 at 0 and by 6 later; 2 3 alone (length 2)
		// by 9: the longest wins, the most recent among equals.
		{"longest then most recent", Lookup{MinNgram: 2, MaxNgram: 3}, []int32{1, 2, 3, 4, 0, 1, 2, 3, 6, 0, 2, 3, 9, 0, 1, 2, 3}, 2, 8, []int32{6, 0}, []int32{-1, 0}, []Source{two, two}, 3},
		{"branches", Lookup{MinNgram: 2, MaxNgram: 3, Branches: 3}, []int32{1, 2, 3, 4, 0, 1, 2, 3, 6, 0, 2, 3, 9, 0, 1, 2, 3}, 2, 8,
			[]int32{6, 0, 4, 0, 9, 0}, []int32{-1, 0, -1, 2, -1, 4}, []Source{two, two, two, two, two, two}, 3},
		{"node budget", Lookup{MinNgram: 2, MaxNgram: 3, Branches: 3}, []int32{1, 2, 3, 4, 0, 1, 2, 3, 6, 0, 2, 3, 9, 0, 1, 2, 3}, 2, 3,
			[]int32{6, 0, 4}, []int32{-1, 0, -1}, []Source{two, two, two}, 3},
		{"scan window", Lookup{MaxScan: 3}, []int32{1, 2, 3, 4, 5, 6, 1, 2}, 3, 8, nil, nil, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d Draft
			got := tc.l.Propose(&d, tc.tokens, tc.depth, tc.nodes)
			if got != tc.matchLen || !slices.Equal(d.Tokens, tc.want) || !slices.Equal(d.Parents, tc.parents) || !slices.Equal(d.Src, tc.srcs) {
				t.Fatalf("Propose = %d, tokens %v parents %v sources %v; want %d, %v, %v, %v", got, d.Tokens, d.Parents, d.Src, tc.matchLen, tc.want, tc.parents, tc.srcs)
			}
		})
	}
}

// refLookupChain is Propose's first choice by its definition: at every
// depth the longest (then most recent) match of the suffix of the tokens
// with the chain so far appended, found by a fresh scan.
func refLookupChain(tokens []int32, minN, maxN, scan, depth int) ([]int32, []Source) {
	ctx := slices.Clone(tokens)
	var toks []int32
	var srcs []Source
	for range depth {
		var best [1]lookupMatch
		if findMatches(best[:], ctx, nil, search{minN, maxN, scan, len(ctx), -1}) == 0 {
			break
		}
		tok := ctx[best[0].next]
		toks, srcs = append(toks, tok), append(srcs, lookupSource(best[0].n))
		ctx = append(ctx, tok)
	}
	return toks, srcs
}

// TestLookupChainMatchesRescan checks that following an occurrence (and
// rescanning only at MaxNgram) gives what a fresh scan at every depth
// gives, on random sequences over small alphabets (many repeats).
func TestLookupChainMatchesRescan(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for i := range 3000 {
		tokens := make([]int32, 2+rng.IntN(60))
		alphabet := 2 + rng.IntN(6)
		for j := range tokens {
			tokens[j] = int32(rng.IntN(alphabet))
		}
		l := Lookup{MinNgram: 1 + rng.IntN(3), MaxNgram: 1 + rng.IntN(8), MaxScan: 1 + rng.IntN(70)}
		depth := 1 + rng.IntN(12)
		checkLookupChain(t, fmt.Sprint("case ", i), l, tokens, depth)
	}
}

func checkLookupChain(t *testing.T, name string, l Lookup, tokens []int32, depth int) {
	t.Helper()
	minN, maxN, _, scan := l.defaults()
	l.Branches = 1
	var d Draft
	l.Propose(&d, tokens, depth, depth)
	want, srcs := refLookupChain(tokens, minN, maxN, scan, min(depth, maxLookupDepth))
	if len(tokens) < minN+1 {
		want, srcs = nil, nil
	}
	if !slices.Equal(d.Tokens, want) || !slices.Equal(d.Src, srcs) {
		t.Fatalf("%s: %+v on %v, depth %d: chain %v sources %v, a rescan at every depth gives %v %v", name, l, tokens, depth, d.Tokens, d.Src, want, srcs)
	}
}

func FuzzLookupPropose(f *testing.F) {
	f.Add([]byte{1, 2, 3, 1, 2}, uint8(4), uint8(8), uint8(2))
	f.Add([]byte{7, 8, 7, 8}, uint8(9), uint8(9), uint8(1))
	f.Fuzz(func(t *testing.T, raw []byte, depth, nodes, branches uint8) {
		tokens := make([]int32, len(raw))
		for i, b := range raw {
			tokens[i] = int32(b % 7)
		}
		l := Lookup{Branches: int(branches % 10), MaxNgram: int(branches % 5)}
		var d Draft
		l.Propose(&d, tokens, int(depth%20), int(nodes%20))
		if d.Len() > int(nodes%20) {
			t.Fatalf("%d tokens over a budget of %d", d.Len(), nodes%20)
		}
		for i, p := range d.Parents {
			if p >= int32(i) || p < -1 {
				t.Fatalf("parent %d of token %d", p, i)
			}
			if d.Depth(i) > int(depth%20) {
				t.Fatalf("token %d at depth %d over %d", i, d.Depth(i), depth%20)
			}
		}
		if depth%20 > 0 {
			checkLookupChain(t, "fuzz", Lookup{MaxNgram: int(branches % 5)}, tokens, int(depth%20))
		}
	})
}

func TestParseKinds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Kinds
		err  bool
	}{
		{"", 0, false},
		{"off", 0, false},
		{"none", 0, false},
		{"all", KindsAll, false},
		{"lookup", KindLookup, false},
		{"lookup+tree", KindLookup | KindTree, false},
		{"Draft, Tree", KindDraft | KindTree, false},
		{"lookup+bogus", 0, true},
		{"medusa", 0, true},
	} {
		got, err := ParseKinds(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("ParseKinds(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
		if !tc.err {
			if back, err := ParseKinds(got.String()); err != nil || back != got {
				t.Errorf("ParseKinds(%q.String() = %q) = %v, %v", tc.in, got.String(), back, err)
			}
		}
	}
}

func FuzzParseKinds(f *testing.F) {
	for _, s := range []string{"all", "lookup+tree", "draft,tree", "off", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKinds(s)
		if err != nil {
			return
		}
		if k&^KindsAll != 0 {
			t.Fatalf("ParseKinds(%q) = %b: unknown bits", s, k)
		}
		if back, err := ParseKinds(k.String()); err != nil || back != k {
			t.Fatalf("round trip of %q: %v -> %q -> %v, %v", s, k, k.String(), back, err)
		}
	})
}

func TestTop2AndHesitant(t *testing.T) {
	// softmaxTop is the reference: the largest probability, in float64.
	softmaxTop := func(l []float32) float64 {
		mx := l[0]
		for _, v := range l {
			mx = max(mx, v)
		}
		var s float64
		for _, v := range l {
			s += math.Exp(float64(v - mx))
		}
		return 1 / s
	}
	flat := make([]float32, 8192) // p1 = 1/8192 with a tie everywhere
	peaked := make([]float32, 8192)
	for i := range peaked {
		peaked[i] = -float32(i%97) / 10
	}
	peaked[4000] = 30
	tests := []struct {
		name          string
		logits        []float32
		first, second int32
	}{
		{"two", []float32{1, 3}, 1, 0},
		{"ties take the lowest id", []float32{2, 5, 5, 1}, 1, 2},
		{"one", []float32{7}, 0, -1},
		{"flat", flat, 0, 1},
		{"peaked", peaked, 4000, 0},
		{"close pair", []float32{0, 10, 9.9, -50}, 1, 2},
	}
	for _, tt := range tests {
		first, second := top2(tt.logits)
		if first != tt.first || second != tt.second {
			t.Errorf("%s: top2 = %d, %d; want %d, %d", tt.name, first, second, tt.first, tt.second)
		}
		p1 := softmaxTop(tt.logits)
		for _, below := range []float32{0.05, 0.3, 0.5, 0.51, 0.9, 0.999} {
			if got, want := hesitant(tt.logits, first, below), p1 < float64(below); got != want {
				t.Errorf("%s: hesitant(p1 %.6f < %v) = %v, want %v", tt.name, p1, below, got, want)
			}
		}
		if hesitant(tt.logits, first, 0) {
			t.Errorf("%s: hesitant below 0 says yes", tt.name)
		}
		if !hesitant(tt.logits, first, 1) {
			t.Errorf("%s: hesitant below 1 says no", tt.name)
		}
	}
}

// TestProposePrediction: a predicted output drafts what follows its match
// of the sequence's last tokens, nearest where the output has got to among
// matches as long, never past the prediction's end nor from the sequence
// itself, every token SrcPrediction.
func TestProposePrediction(t *testing.T) {
	p := SrcPrediction
	// A repeated line: "5 6 7" occurs at 0 and at 6.
	pred := []int32{5, 6, 7, 1, 2, 3, 5, 6, 7, 8, 9}
	for _, tc := range []struct {
		name           string
		tokens         []int32
		expect, depth  int
		want, parents  []int32
		srcs           []Source
		matchLen, bufN int
	}{
		{"the first occurrence, near the output's start", []int32{40, 41, 5, 6}, 1, 3, []int32{7, 1, 2}, []int32{-1, 0, 1}, []Source{p, p, p}, 2, 11 + 4},
		{"the second, further on", []int32{40, 41, 5, 6}, 7, 3, []int32{7, 8, 9}, []int32{-1, 0, 1}, []Source{p, p, p}, 2, 11 + 4},
		{"stops at the prediction's end", []int32{40, 41, 8}, 9, 5, []int32{9}, []int32{-1}, []Source{p}, 1, 11 + 3},
		{"a match of the sequence alone is no prediction", []int32{4, 40, 4}, 0, 3, nil, nil, nil, 0, 11 + 3},
		{"nothing follows the prediction's last token", []int32{40, 9}, 0, 3, nil, nil, nil, 0, 11 + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d Draft
			var l Lookup
			got, buf := l.ProposePrediction(&d, nil, pred, tc.tokens, tc.expect, tc.depth, 8)
			if got != tc.matchLen || !slices.Equal(d.Tokens, tc.want) || !slices.Equal(d.Parents, tc.parents) || !slices.Equal(d.Src, tc.srcs) || len(buf) != tc.bufN {
				t.Fatalf("match %d, drafted %v (parents %v, sources %v), buffer of %d; want %d, %v (%v, %v), %d",
					got, d.Tokens, d.Parents, d.Src, len(buf), tc.matchLen, tc.want, tc.parents, tc.srcs, tc.bufN)
			}
		})
	}
}
