package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/ruvllm/ruvllm/engine/lora"
)

// Adapter is a trainable LoRA adapter: for each target weight W (Out×In)
// a pair A (Rank×In) and B (Out×Rank) of float32, so that the adapted
// weight is W + (Alpha/Rank)·B·A. A fresh adapter has B = 0 and changes
// nothing. Targets are keyed by lora.Key ("blk.3.attn_q"). An Adapter is
// plain data: the trainer reads it during a step and the optimizer
// writes it between steps, so the caller owns its synchronisation.
type Adapter struct {
	Rank  int
	Alpha float32
	// Targets maps a target key to its pair.
	Targets map[string]*Pair
}

// Pair is one adapted weight's matrices.
type Pair struct {
	Layer   int
	Kind    string // one of lora.Kinds
	In, Out int
	A, B    []float32
}

// AdapterConfig describes a new adapter.
type AdapterConfig struct {
	Rank int // 1 to 64
	// Alpha sets the scale Alpha/Rank (0: Alpha = Rank, scale 1).
	Alpha float32
	// Kinds are the projections to adapt (default all of lora.Kinds).
	Kinds []string
	// Layers are the layers to adapt (default all). Gradients flow only
	// down to the lowest adapted layer, so adapting the top layers only
	// makes a step cheaper.
	Layers []int
	// Seed draws A (uniform in ±1/√In, as PEFT's Kaiming initialisation
	// of LoRA's A); B starts at zero.
	Seed uint64
}

// MaxRank bounds an adapter's rank.
const MaxRank = 64

// NewAdapter returns a fresh adapter for b.
func NewAdapter(b *Base, c AdapterConfig) (*Adapter, error) {
	if c.Rank < 1 || c.Rank > MaxRank {
		return nil, fmt.Errorf("adapter rank %d out of range [1,%d]", c.Rank, MaxRank)
	}
	if c.Alpha < 0 || math.IsNaN(float64(c.Alpha)) || math.IsInf(float64(c.Alpha), 0) {
		return nil, fmt.Errorf("adapter alpha %v out of range", c.Alpha)
	}
	if c.Alpha == 0 {
		c.Alpha = float32(c.Rank)
	}
	kinds := c.Kinds
	if kinds == nil {
		kinds = lora.Kinds
	}
	layers := c.Layers
	if layers == nil {
		for i := range b.cfg.Layers {
			layers = append(layers, i)
		}
	}
	a := &Adapter{Rank: c.Rank, Alpha: c.Alpha, Targets: map[string]*Pair{}}
	rng := rand.New(rand.NewPCG(c.Seed, 0x7a1a))
	for _, l := range layers {
		if l < 0 || l >= b.cfg.Layers {
			return nil, fmt.Errorf("adapter layer %d out of range [0,%d)", l, b.cfg.Layers)
		}
		for _, kind := range kinds {
			k := slices.Index(lora.Kinds, kind)
			if k < 0 {
				return nil, fmt.Errorf("%w: %q (adaptable: %v)", lora.ErrUnsupportedTarget, kind, lora.Kinds)
			}
			w := b.layers[l].w[k]
			p := &Pair{Layer: l, Kind: kind, In: w.cols, Out: w.rows,
				A: make([]float32, c.Rank*w.cols), B: make([]float32, w.rows*c.Rank)}
			bound := 1 / math.Sqrt(float64(w.cols))
			for i := range p.A {
				p.A[i] = float32((rng.Float64()*2 - 1) * bound)
			}
			a.Targets[lora.Key(l, kind)] = p
		}
	}
	if len(a.Targets) == 0 {
		return nil, fmt.Errorf("adapter has no targets")
	}
	return a, nil
}

// Scale is Alpha/Rank, the factor of B·A.
func (a *Adapter) Scale() float32 { return a.Alpha / float32(a.Rank) }

// Names returns the target keys in layer order, then lora.Kinds order.
func (a *Adapter) Names() []string {
	names := make([]string, 0, len(a.Targets))
	for n := range a.Targets {
		names = append(names, n)
	}
	slices.SortFunc(names, func(x, y string) int {
		px, py := a.Targets[x], a.Targets[y]
		if px.Layer != py.Layer {
			return px.Layer - py.Layer
		}
		return slices.Index(lora.Kinds, px.Kind) - slices.Index(lora.Kinds, py.Kind)
	})
	return names
}

// Params is the number of trainable values.
func (a *Adapter) Params() int {
	n := 0
	for _, p := range a.Targets {
		n += len(p.A) + len(p.B)
	}
	return n
}

// Clone returns a deep copy.
func (a *Adapter) Clone() *Adapter {
	c := &Adapter{Rank: a.Rank, Alpha: a.Alpha, Targets: make(map[string]*Pair, len(a.Targets))}
	for k, p := range a.Targets {
		q := *p
		q.A, q.B = slices.Clone(p.A), slices.Clone(p.B)
		c.Targets[k] = &q
	}
	return c
}

// ZeroLike returns an adapter of a's shape with every value zero (a
// gradient buffer, an optimizer moment).
func (a *Adapter) ZeroLike() *Adapter {
	c := &Adapter{Rank: a.Rank, Alpha: a.Alpha, Targets: make(map[string]*Pair, len(a.Targets))}
	for k, p := range a.Targets {
		q := *p
		q.A, q.B = make([]float32, len(p.A)), make([]float32, len(p.B))
		c.Targets[k] = &q
	}
	return c
}

// SameShape reports whether b has a's targets with the same shapes.
func (a *Adapter) SameShape(b *Adapter) bool {
	if a.Rank != b.Rank || len(a.Targets) != len(b.Targets) {
		return false
	}
	for k, p := range a.Targets {
		q := b.Targets[k]
		if q == nil || q.In != p.In || q.Out != p.Out || len(q.A) != len(p.A) || len(q.B) != len(p.B) {
			return false
		}
	}
	return true
}

// Vectors returns the adapter's value slices in a fixed order (Names,
// A then B): optimizers and penalties walk parameters and their
// statistics side by side through it.
func (a *Adapter) Vectors() [][]float32 {
	var out [][]float32
	for _, n := range a.Names() {
		p := a.Targets[n]
		out = append(out, p.A, p.B)
	}
	return out
}

// IsZero reports whether the adapter changes nothing (every B·A is 0).
func (a *Adapter) IsZero() bool {
	for _, p := range a.Targets {
		zeroA, zeroB := true, true
		for _, v := range p.A {
			if v != 0 {
				zeroA = false
				break
			}
		}
		for _, v := range p.B {
			if v != 0 {
				zeroB = false
				break
			}
		}
		if !zeroA && !zeroB {
			return false
		}
	}
	return true
}

// LoRA returns the adapter as an engine/lora adapter (float32 matrices
// on the host) named name, validated against b's file: what the serving
// path uploads to its backend and what GGUF export writes.
func (a *Adapter) LoRA(name string, b *Base) (*lora.Adapter, error) {
	targets := make(map[string]lora.Dense, len(a.Targets))
	for k, p := range a.Targets {
		targets[k] = lora.Dense{In: p.In, Out: p.Out, Rank: a.Rank, A: p.A, B: p.B}
	}
	la, err := lora.FromDense(name, b.cfg.Arch, a.Alpha, targets, b.f)
	if err != nil {
		return nil, fmt.Errorf("adapter %s: %w", name, err)
	}
	return la, nil
}

// FromLoRA makes a trainable adapter of an engine/lora adapter (any
// matrix type), for example a consolidated adapter exported earlier.
// All its pairs must share one rank.
func FromLoRA(la *lora.Adapter, b *Base) (*Adapter, error) {
	a := &Adapter{Rank: la.Rank, Alpha: la.Alpha, Targets: map[string]*Pair{}}
	if a.Alpha == 0 {
		a.Alpha = float32(a.Rank) // llama.cpp: no alpha means scale 1
	}
	for k, p := range la.Targets {
		if p.Rank != a.Rank {
			return nil, fmt.Errorf("adapter %s: %s has rank %d, others %d", la.Name, k, p.Rank, a.Rank)
		}
		layer, kind, err := splitKey(k, b.cfg.Layers)
		if err != nil {
			return nil, fmt.Errorf("adapter %s: %w", la.Name, err)
		}
		w := b.layers[layer].w[slices.Index(lora.Kinds, kind)]
		if p.In != w.cols || p.Out != w.rows {
			return nil, fmt.Errorf("%w: %s is %d×%d, base weight %d×%d", lora.ErrMismatch, k, p.Out, p.In, w.rows, w.cols)
		}
		q := &Pair{Layer: layer, Kind: kind, In: p.In, Out: p.Out}
		if q.A, err = p.HostA.Floats(); err != nil {
			return nil, fmt.Errorf("adapter %s: %s lora_a: %w", la.Name, k, err)
		}
		if q.B, err = p.HostB.Floats(); err != nil {
			return nil, fmt.Errorf("adapter %s: %s lora_b: %w", la.Name, k, err)
		}
		a.Targets[k] = q
	}
	if len(a.Targets) == 0 {
		return nil, fmt.Errorf("adapter %s has no targets", la.Name)
	}
	return a, nil
}

// splitKey parses "blk.N.kind" for a model of layers layers.
func splitKey(key string, layers int) (int, string, error) {
	for l := range layers {
		for _, kind := range lora.Kinds {
			if key == lora.Key(l, kind) {
				return l, kind, nil
			}
		}
	}
	return 0, "", fmt.Errorf("%w: %q", lora.ErrUnsupportedTarget, key)
}

// Applied is an adapter used with a scale (1 = as trained).
type Applied struct {
	Adapter *Adapter
	Scale   float32
}

// keyOf is the target key of p.
func keyOf(p *Pair) string { return lora.Key(p.Layer, p.Kind) }
