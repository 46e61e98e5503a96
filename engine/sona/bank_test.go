package sona

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func randomUnit(rng *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	u, _ := unit(v)
	return u
}

// TestHNSWRecall: the index finds at least 95 % of the true 10 nearest
// neighbours of random queries among 1000 random vectors.
func TestHNSWRecall(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, dim, k = 1000, 24, 10
	h := newHNSW(16, 100, 7)
	var vecs [][]float32
	for range n {
		v := randomUnit(rng, dim)
		vecs = append(vecs, v)
		h.add(v)
	}
	found, total := 0, 0
	for range 100 {
		q := randomUnit(rng, dim)
		exact := make([]hit, n)
		for i, v := range vecs {
			exact[i] = hit{int32(i), dot(q, v)}
		}
		slices.SortFunc(exact, cmpSim)
		got := h.search(q, k, 64)
		if len(got) != k || !slices.IsSortedFunc(got, cmpSim) {
			t.Fatalf("search returned %d hits, sorted %v", len(got), slices.IsSortedFunc(got, cmpSim))
		}
		for _, e := range exact[:k] {
			total++
			if slices.ContainsFunc(got, func(g hit) bool { return g.id == e.id }) {
				found++
			}
		}
	}
	if recall := float64(found) / float64(total); recall < 0.95 {
		t.Fatalf("recall@%d = %.3f", k, recall)
	}
}

// TestBankRoutes: requests near a domain go to the adapter rated well on
// it; without an installed adapter with good ratings nearby there is no
// route.
func TestBankRoutes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const dim = 16
	centre := [2][]float32{randomUnit(rng, dim), randomUnit(rng, dim)}
	near := func(c int) []float32 {
		v := slices.Clone(centre[c])
		for i := range v {
			v[i] += float32(rng.NormFloat64() * 0.15)
		}
		return v
	}
	b := NewBank(BankOptions{Seed: 1})
	names := [2]string{"code", "prose"}
	for range 200 {
		c := rng.IntN(2)
		// Each domain's adapter is rated well there, the other badly.
		for a := range 2 {
			r := -1.0
			if a == c {
				r = 1
			}
			if err := b.Add(Trajectory{Embedding: near(c), Adapter: names[a], Rating: r}); err != nil {
				t.Fatal(err)
			}
		}
	}
	right := 0
	for i := range 100 {
		c := i % 2
		r, ok := b.Route(near(c), names[:])
		if ok && r.Adapter == names[c] {
			right++
		}
	}
	if right < 95 {
		t.Fatalf("%d of 100 routed to the better adapter", right)
	}
	if _, ok := b.Route(near(0), []string{"other"}); ok {
		t.Fatal("routed to an adapter without trajectories")
	}
	if err := b.Add(Trajectory{Embedding: make([]float32, dim), Adapter: "x", Rating: 1}); err == nil {
		t.Fatal("zero embedding accepted")
	}
	if err := b.Add(Trajectory{Embedding: []float32{1, 2}, Adapter: "x", Rating: 1}); err == nil {
		t.Fatal("embedding of another length accepted")
	}
}

// TestBankCap: past MaxItems the oldest trajectories go and the index
// still answers.
func TestBankCap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	b := NewBank(BankOptions{MaxItems: 50})
	for range 120 {
		if err := b.Add(Trajectory{Embedding: randomUnit(rng, 8), Adapter: "a", Rating: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if b.Len() > 50 || b.Len() < 45 {
		t.Fatalf("%d trajectories kept, cap 50", b.Len())
	}
	if _, ok := b.Route(randomUnit(rng, 8), []string{"a"}); !ok {
		t.Fatal("no route after the rebuild")
	}
}
