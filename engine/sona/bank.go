package sona

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Trajectory is one rated exchange, as the bank keeps it: the prompt's
// embedding, the adapter that answered ("" for none) and the rating
// (+1 good, −1 bad).
type Trajectory struct {
	Embedding []float32
	Adapter   string
	Rating    float64
	At        time.Time
}

// BankOptions configures a Bank. Zero fields take defaults.
type BankOptions struct {
	MaxItems int // trajectories kept, oldest dropped (default 20000)
	M        int // HNSW links per node (default 16)
	EfBuild  int // HNSW construction breadth (default 100)
	EfSearch int // HNSW search breadth (default 64)
	K        int // neighbours a route weighs (default 8)
	Seed     uint64
}

// Bank stores trajectories and answers "which installed adapter did best
// on requests like this one" through an HNSW index of their embeddings.
// It is safe for concurrent use.
//
// A language model's embeddings share a large common direction (every
// prompt's mean hidden state looks alike), which crowds cosine
// similarities near 1; the index therefore holds each embedding minus the
// mean of the bank's embeddings, taken when the index was last built. It
// is rebuilt whenever the bank has doubled since (and up to 16 items at
// every addition), so the mean follows the bank at O(log n) rebuilds.
type Bank struct {
	mu      sync.Mutex
	o       BankOptions
	items   []Trajectory // embeddings of length 1, as given
	dim     int
	idx     *hnsw
	mean    []float32 // subtracted before indexing (nil: none yet)
	builtAt int       // items when the index was built
}

// NewBank returns an empty bank.
func NewBank(o BankOptions) *Bank {
	if o.MaxItems <= 0 {
		o.MaxItems = 20000
	}
	if o.M <= 1 {
		o.M = 16
	}
	if o.EfBuild <= 0 {
		o.EfBuild = 100
	}
	if o.EfSearch <= 0 {
		o.EfSearch = 64
	}
	if o.K <= 0 {
		o.K = 8
	}
	return &Bank{o: o, idx: newHNSW(o.M, o.EfBuild, o.Seed)}
}

// maxDim bounds an embedding's length.
const maxDim = 1 << 16

// unit returns v scaled to length 1.
func unit(v []float32) ([]float32, error) {
	var n float64
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, errors.New("embedding has a non-finite value")
		}
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return nil, errors.New("embedding is zero")
	}
	inv := float32(1 / math.Sqrt(n))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * inv
	}
	return out, nil
}

// Add stores t. Every embedding of a bank has the same length.
func (b *Bank) Add(t Trajectory) error {
	if len(t.Embedding) == 0 || len(t.Embedding) > maxDim {
		return fmt.Errorf("embedding of %d values", len(t.Embedding))
	}
	if math.IsNaN(t.Rating) || math.IsInf(t.Rating, 0) {
		return errors.New("rating is not finite")
	}
	u, err := unit(t.Embedding)
	if err != nil {
		return err
	}
	t.Embedding = u
	return b.addUnit(t)
}

// addUnit stores t, whose embedding is already of length 1 (a decoded
// bank's: normalising again could change its last bits).
func (b *Bank) addUnit(t Trajectory) error {
	u := t.Embedding
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dim != 0 && len(u) != b.dim {
		return fmt.Errorf("embedding of %d values, the bank's have %d", len(u), b.dim)
	}
	b.dim = len(u)
	t.Embedding = u
	b.items = append(b.items, t)
	if len(b.items) > b.o.MaxItems {
		// HNSW has no deletion: drop the oldest tenth and rebuild.
		b.items = append([]Trajectory(nil), b.items[len(b.items)-b.o.MaxItems*9/10:]...)
		b.rebuild()
		return nil
	}
	if len(b.items) <= 16 || len(b.items) >= 2*b.builtAt {
		b.rebuild()
		return nil
	}
	b.idx.add(b.key(u))
	return nil
}

// key is what the index holds for unit embedding u: u minus the mean,
// normalised (u itself where that leaves nothing).
func (b *Bank) key(u []float32) []float32 {
	if b.mean == nil {
		return u
	}
	d := make([]float32, len(u))
	for i, v := range u {
		d[i] = v - b.mean[i]
	}
	if k, err := unit(d); err == nil {
		return k
	}
	return u
}

// rebuild takes the mean of b.items and indexes them anew; the caller
// holds the lock.
func (b *Bank) rebuild() {
	b.mean = nil
	if len(b.items) > 1 {
		sum := make([]float64, b.dim)
		for _, t := range b.items {
			for i, v := range t.Embedding {
				sum[i] += float64(v)
			}
		}
		b.mean = make([]float32, b.dim)
		for i, v := range sum {
			b.mean[i] = float32(v / float64(len(b.items)))
		}
	}
	b.idx = newHNSW(b.o.M, b.o.EfBuild, b.o.Seed)
	for _, t := range b.items {
		b.idx.add(b.key(t.Embedding))
	}
	b.builtAt = len(b.items)
}

// Len is the number of trajectories.
func (b *Bank) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.items)
}

// Route is a routing decision.
type Route struct {
	Adapter string
	// Score is the similarity-weighted mean rating of the adapter's
	// neighbours; Support how many of the K neighbours it answered.
	Score   float64
	Support int
}

// Route picks, among installed adapter names, the one whose trajectories
// nearest to emb were rated best (similarity-weighted mean rating over
// the K nearest trajectories). ok is false when no neighbour used an
// installed adapter or none scored above zero: the caller then uses its
// default.
func (b *Bank) Route(emb []float32, installed []string) (r Route, ok bool) {
	u, err := unit(emb)
	if err != nil {
		return r, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(u) != b.dim {
		return r, false
	}
	hits := b.idx.search(b.key(u), b.o.K, b.o.EfSearch)
	type acc struct{ w, s float64 }
	sums := map[string]*acc{}
	support := map[string]int{}
	for _, name := range installed {
		sums[name] = &acc{}
	}
	for _, h := range hits {
		t := b.items[h.id]
		a := sums[t.Adapter]
		if a == nil {
			continue
		}
		w := math.Max(float64(h.sim), 0) + 1e-6
		a.w += w
		a.s += w * t.Rating
		support[t.Adapter]++
	}
	best := Route{Score: math.Inf(-1)}
	for _, name := range installed {
		a := sums[name]
		if a.w == 0 {
			continue
		}
		if s := a.s / a.w; s > best.Score {
			best = Route{Adapter: name, Score: s, Support: support[name]}
		}
	}
	if best.Support == 0 || best.Score <= 0 {
		return Route{}, false
	}
	return best, true
}

func (e *encoder) bank(b *Bank) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e.u64(uint64(len(b.items)))
	for _, t := range b.items {
		e.f32s(t.Embedding)
		e.str(t.Adapter)
		e.f64(t.Rating)
		e.u64(uint64(t.At.UnixNano()))
	}
}

func (d *decoder) bank() *Bank {
	b := NewBank(BankOptions{})
	n := d.count(maxItems, 24)
	for range n {
		t := Trajectory{Embedding: d.f32s(), Adapter: d.str(), Rating: d.f64(), At: time.Unix(0, int64(d.u64()))}
		if d.err != nil {
			return nil
		}
		if _, err := unit(t.Embedding); err != nil || len(t.Embedding) > maxDim {
			d.fail("trajectory embedding: %v", err)
			return nil
		}
		if err := b.addUnit(t); err != nil {
			d.fail("trajectory: %v", err)
			return nil
		}
	}
	return b
}
