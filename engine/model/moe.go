package model

import (
	"fmt"
	"math"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// moeConfig is the mixture-of-experts layout of a family's layers.
type moeConfig struct {
	experts, used int
	ff            int // feed-forward width of one expert
	// normalize divides the chosen experts' probabilities by their sum
	// (Mixtral, Qwen3 MoE); Qwen2 MoE uses them as they are.
	normalize bool
	// sharedFF is the width of Qwen2 MoE's shared expert (0: none).
	sharedFF int
}

// moeKeys says how a family reads its moeConfig.
type moeKeys struct {
	required  bool // expert_count must be there (qwen2moe, qwen3moe)
	expertFF  bool // expert_feed_forward_length is read (default FF/used)
	normalize bool
	shared    bool // expert_shared_feed_forward_length (default FF)
}

// moeConfig reads and bounds the expert counts and widths; it returns nil
// for a dense model (no expert_count) when experts are optional.
func (l *loader) moeConfig(c Config, k moeKeys) (*moeConfig, error) {
	n, err := l.uintKey("expert_count", 0, k.required)
	if err != nil {
		return nil, err
	}
	if n == 0 && !k.required {
		return nil, nil
	}
	mc := &moeConfig{experts: n, normalize: k.normalize, ff: c.FF}
	if err := checkInt(l.arch+".expert_count", n, 1, maxExperts); err != nil {
		return nil, err
	}
	if mc.used, err = l.uintKey("expert_used_count", 0, true); err != nil {
		return nil, err
	}
	if err := checkInt(l.arch+".expert_used_count", mc.used, 1, min(n, maxExpertsUsed)); err != nil {
		return nil, err
	}
	if k.expertFF {
		if mc.ff, err = l.uintKey("expert_feed_forward_length", c.FF/mc.used, false); err != nil {
			return nil, err
		}
	}
	if err := checkInt(l.arch+".expert_feed_forward_length", mc.ff, 1, maxFF); err != nil {
		return nil, err
	}
	if k.shared {
		if mc.sharedFF, err = l.uintKey("expert_shared_feed_forward_length", c.FF, false); err != nil {
			return nil, err
		}
		if err := checkInt(l.arch+".expert_shared_feed_forward_length", mc.sharedFF, 1, maxFF); err != nil {
			return nil, err
		}
	}
	return mc, nil
}

// moeWeights are one layer's experts: the router (experts×dim), each
// expert's gate, up and down matrices (slices of the file's 3-D tensors,
// not copies), and Qwen2 MoE's shared expert with its 1×dim gate.
type moeWeights struct {
	cfg            *moeConfig
	router         compute.Tensor
	gate, up, down []compute.Tensor
	shared         ffnWeights
	sharedGate     compute.Tensor
}

// loadMoE loads layer i's experts.
func (l *loader) loadMoE(c Config, i int, mc *moeConfig) (*moeWeights, error) {
	w := &moeWeights{cfg: mc}
	var err error
	if w.router, err = l.matrix(blk(i, "ffn_gate_inp.weight"), mc.experts, c.Dim); err != nil {
		return nil, err
	}
	if w.gate, err = l.experts(blk(i, "ffn_gate_exps.weight"), mc.experts, mc.ff, c.Dim); err != nil {
		return nil, err
	}
	if w.up, err = l.experts(blk(i, "ffn_up_exps.weight"), mc.experts, mc.ff, c.Dim); err != nil {
		return nil, err
	}
	if w.down, err = l.experts(blk(i, "ffn_down_exps.weight"), mc.experts, c.Dim, mc.ff); err != nil {
		return nil, err
	}
	if mc.sharedFF == 0 {
		return w, nil
	}
	for _, m := range []struct {
		dst     *compute.Tensor
		name    string
		out, in int
	}{
		{&w.shared.gate, "ffn_gate_shexp.weight", mc.sharedFF, c.Dim},
		{&w.shared.up, "ffn_up_shexp.weight", mc.sharedFF, c.Dim},
		{&w.shared.down, "ffn_down_shexp.weight", c.Dim, mc.sharedFF},
	} {
		if *m.dst, err = l.matrix(blk(i, m.name), m.out, m.in); err != nil {
			return nil, err
		}
	}
	// The shared expert's gate is a 1-D tensor multiplied like a 1×dim
	// matrix.
	name := blk(i, "ffn_gate_inp_shexp.weight")
	t, ok := l.f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("missing tensor %s", name)
	}
	if len(t.Shape) != 1 || int(t.Shape[0]) != c.Dim {
		return nil, fmt.Errorf("tensor %s has shape %v, want [%d]", name, t.Shape, c.Dim)
	}
	data, err := l.f.TensorData(name)
	if err != nil {
		return nil, err
	}
	if w.sharedGate, err = l.weight(name, t.Type, 1, c.Dim, data); err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	return w, nil
}

// experts splits the 3-D expert tensor name (GGML shape [in, out, n]) into
// n out×in matrices over the file's memory.
func (l *loader) experts(name string, n, out, in int) ([]compute.Tensor, error) {
	t, ok := l.f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("missing tensor %s", name)
	}
	if len(t.Shape) != 3 || int(t.Shape[0]) != in || int(t.Shape[1]) != out || int(t.Shape[2]) != n {
		return nil, fmt.Errorf("tensor %s has shape %v, want [%d %d %d]", name, t.Shape, in, out, n)
	}
	data, err := l.f.TensorData(name)
	if err != nil {
		return nil, err
	}
	rb, err := t.Type.RowBytes(in)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	per := rb * out
	ws := make([]compute.Tensor, n)
	for e := range ws {
		if ws[e], err = l.weight(name, t.Type, out, in, data[e*per:(e+1)*per]); err != nil {
			return nil, fmt.Errorf("tensor %s expert %d: %w", name, e, err)
		}
	}
	return ws, nil
}

// moeState is the routing plan of the current batch and the buffers the
// experts run in, reused while the batch size stays the same.
type moeState struct {
	n, k int // batch rows and experts per row the buffers are sized for
	// Host side: router probabilities (n×experts), the chosen experts and
	// their weights (n×k, best first), and the rows grouped by expert:
	// expert e's rows are rows[start[e]:start[e]+count[e]], and at[j·n+t]
	// is where row t's j-th choice landed in that order.
	probs         []float32
	chosen        []int32
	weights       []float32
	slotW         []float32 // weights by slot: slotW[j·n+t]
	sortedW       []float32 // weights in grouped order
	taken         []bool
	count, start  []int
	rows, at, seq []int32
	zeroIDs       []int32
	// Device side: router logits (n×experts); the grouped inputs, gate,
	// up, activations and outputs of all n·k expert rows; one row for
	// the combination; a zero row; the shared expert's buffers.
	logits, xs, gate, up, act, down, tmp, zero compute.Tensor
	shGate, shUp, shAct, shOut, shLogit        compute.Tensor
	shScale                                    []float32
	// views of the device buffers, by (buffer, offset, rows), or without
	// compute.Viewer whole tensors by (buffer, rows).
	views map[[4]int]compute.Tensor
}

// size prepares st for n rows of experts of mc.
func (m *base) moeSize(n int, mc *moeConfig) *moeState {
	st := &m.moe
	k := mc.used
	if st.n == n && st.k == k && len(st.count) == mc.experts && st.xs != nil && st.xs.Cols() == m.cfg.Dim && st.gate.Cols() == mc.ff {
		return st
	}
	b, c := m.b, m.cfg
	*st = moeState{n: n, k: k}
	st.probs = make([]float32, n*mc.experts)
	st.chosen = make([]int32, n*k)
	st.weights = make([]float32, n*k)
	st.slotW = make([]float32, n*k)
	st.sortedW = make([]float32, n*k)
	st.taken = make([]bool, mc.experts)
	st.count, st.start = make([]int, mc.experts), make([]int, mc.experts+1)
	st.rows, st.at = make([]int32, n*k), make([]int32, n*k)
	st.seq, st.zeroIDs = make([]int32, n), make([]int32, n)
	for i := range st.seq {
		st.seq[i] = int32(i)
	}
	st.logits = b.New(n, mc.experts)
	if _, ok := b.(compute.Viewer); ok {
		st.xs, st.down = b.New(n*k, c.Dim), b.New(n*k, c.Dim)
		st.gate, st.up, st.act = b.New(n*k, mc.ff), b.New(n*k, mc.ff), b.New(n*k, mc.ff)
	} else {
		// Only the shapes are read: each expert gets tensors of its own.
		st.xs, st.gate = b.New(1, c.Dim), b.New(1, mc.ff)
	}
	st.tmp, st.zero = b.New(n, c.Dim), b.New(1, c.Dim)
	if mc.sharedFF > 0 {
		st.shGate, st.shUp, st.shAct = b.New(n, mc.sharedFF), b.New(n, mc.sharedFF), b.New(n, mc.sharedFF)
		st.shOut, st.shLogit = b.New(n, c.Dim), b.New(n, 1)
		st.shScale = make([]float32, n)
	}
	st.views = map[[4]int]compute.Tensor{}
	return st
}

// moeView returns rows [row, row+rows) of buffer t (numbered id for the
// cache), through compute.Viewer; without views it returns a tensor of
// its own of that shape, shared by every caller asking for the same id
// and row count. Views of small batches (decoding) are kept, so that a
// decode step allocates nothing once their few offsets have been seen;
// a prompt's offsets hardly repeat, and its views are made afresh.
func (m *base) moeView(id int, t compute.Tensor, row, rows int) compute.Tensor {
	st := &m.moe
	v, ok := m.b.(compute.Viewer)
	if ok && st.n > maxCachedViewRows {
		return v.View(t, row*t.Cols(), rows, t.Cols())
	}
	key := [4]int{id, row, rows, 0}
	if !ok {
		key[1] = 0
	}
	if x := st.views[key]; x != nil {
		return x
	}
	if len(st.views) >= 4096 {
		clear(st.views)
	}
	var x compute.Tensor
	if ok {
		x = v.View(t, row*t.Cols(), rows, t.Cols())
	} else {
		x = m.b.New(rows, t.Cols())
	}
	st.views[key] = x
	return x
}

// maxCachedViewRows is the largest batch whose expert views moeView keeps.
const maxCachedViewRows = 16

// moeFFN runs layer w's experts on s.h into s.ffOut: the router's softmax
// picks each row's k best experts (weights renormalised where the family
// does), the rows are grouped by expert so that each expert multiplies
// all of its rows at once, and each row's outputs are summed in the order
// of its choices, best first, as llama.cpp sums them. Qwen2 MoE adds its
// shared expert scaled by sigmoid(gate·x).
func (m *base) moeFFN(s *buffers, w *moeWeights) {
	b, mc := m.b, w.cfg
	n := s.n
	st := m.moeSize(n, mc)
	b.MatMul(st.logits, s.h, w.router)
	b.Download(st.logits, st.probs)
	st.route(n, mc)
	b.GetRows(s.ffOut, st.zero, st.zeroIDs)
	if _, ok := b.(compute.Viewer); ok {
		m.expertsGrouped(s, w, st)
	} else {
		m.expertsOneByOne(s, w, st)
	}
	if mc.sharedFF > 0 {
		m.matmuls(s.h, [3]compute.Tensor{st.shGate, st.shUp}, [3]compute.Tensor{w.shared.gate, w.shared.up}, [3]string{}, 2)
		b.SwiGLU(st.shAct, st.shGate, st.shUp)
		b.MatMul(st.shOut, st.shAct, w.shared.down)
		b.MatMul(st.shLogit, s.h, w.sharedGate)
		b.Download(st.shLogit, st.shScale)
		for i, x := range st.shScale {
			st.shScale[i] = sigmoidGGML(x)
		}
		b.AddRowsScaled(s.ffOut, st.shOut, st.seq, st.shScale)
	}
}

// expertsGrouped runs the experts over views of one buffer per stage:
// one gather, two products per expert for gate and up, one SwiGLU over
// all rows, a product per expert for down, then the weighted sum of each
// row's k outputs in choice order.
func (m *base) expertsGrouped(s *buffers, w *moeWeights, st *moeState) {
	b, n, k := m.b, st.n, st.k
	b.GetRows(st.xs, s.h, st.rows)
	for e, r := range st.count {
		if r == 0 {
			continue
		}
		off := st.start[e]
		xe := m.moeView(0, st.xs, off, r)
		ge, ue := m.moeView(1, st.gate, off, r), m.moeView(2, st.up, off, r)
		m.matmuls(xe, [3]compute.Tensor{ge, ue}, [3]compute.Tensor{w.gate[e], w.up[e]}, [3]string{}, 2)
	}
	b.SwiGLU(st.act, st.gate, st.up)
	for e, r := range st.count {
		if r == 0 {
			continue
		}
		off := st.start[e]
		b.MatMul(m.moeView(4, st.down, off, r), m.moeView(3, st.act, off, r), w.down[e])
	}
	for j := range k {
		b.GetRows(st.tmp, st.down, st.at[j*n:(j+1)*n])
		b.AddRowsScaled(s.ffOut, st.tmp, st.seq, st.slotW[j*n:(j+1)*n])
	}
}

// expertsOneByOne is expertsGrouped for backends without views: each
// expert's rows get tensors of their own, and its weighted outputs are
// added as soon as they are ready (so a row's sum runs in expert order).
func (m *base) expertsOneByOne(s *buffers, w *moeWeights, st *moeState) {
	b := m.b
	for e, r := range st.count {
		if r == 0 {
			continue
		}
		off := st.start[e]
		rows := st.rows[off : off+r]
		xe := m.moeView(0, st.xs, 0, r)
		b.GetRows(xe, s.h, rows)
		ge, ue, ae := m.moeView(1, st.gate, 0, r), m.moeView(2, st.gate, 0, r), m.moeView(3, st.gate, 0, r)
		m.matmuls(xe, [3]compute.Tensor{ge, ue}, [3]compute.Tensor{w.gate[e], w.up[e]}, [3]string{}, 2)
		b.SwiGLU(ae, ge, ue)
		de := m.moeView(4, st.xs, 0, r)
		b.MatMul(de, ae, w.down[e])
		b.AddRowsScaled(s.ffOut, de, rows, st.sortedW[off:off+r])
	}
}

// route turns the router logits in st.probs into each row's choices and
// weights, as llama.cpp's build_moe_ffn does with softmax gating: a
// softmax over all experts (expf of x − max, summed in float64, times
// the float32 inverse of the sum), the k most probable experts (the lower
// index first among equals), their probabilities as weights, divided by
// their float64 sum (clamped at 2⁻¹⁴) where the family normalises. Then
// it groups the rows by expert.
func (st *moeState) route(n int, mc *moeConfig) {
	E, k := mc.experts, mc.used
	for t := 0; t < n; t++ {
		p := st.probs[t*E : (t+1)*E]
		mx := float32(math.Inf(-1))
		for _, v := range p {
			mx = max(mx, v)
		}
		var sum float64
		for i, v := range p {
			p[i] = quant.Expf(v - mx)
			sum += float64(p[i])
		}
		inv := float32(1 / sum)
		for i := range p {
			p[i] *= inv
		}
		chosen, wts := st.chosen[t*k:(t+1)*k], st.weights[t*k:(t+1)*k]
		clear(st.taken)
		for j := range chosen {
			best := -1
			for e, v := range p {
				if !st.taken[e] && (best < 0 || v > p[best]) {
					best = e
				}
			}
			st.taken[best] = true
			chosen[j], wts[j] = int32(best), p[best]
		}
		if mc.normalize {
			var s float64
			for _, v := range wts {
				s += float64(v)
			}
			d := max(float32(s), 6.103515625e-5)
			for j := range wts {
				wts[j] /= d
			}
		}
	}
	clear(st.count)
	for _, e := range st.chosen {
		st.count[e]++
	}
	st.start[0] = 0
	for e, c := range st.count {
		st.start[e+1] = st.start[e] + c
	}
	next := st.start[:E] // reused as fill cursors, restored below
	for t := 0; t < n; t++ {
		for j := 0; j < k; j++ {
			e := st.chosen[t*k+j]
			p := next[e]
			next[e]++
			st.rows[p], st.at[j*n+t] = int32(t), int32(p)
			st.slotW[j*n+t], st.sortedW[p] = st.weights[t*k+j], st.weights[t*k+j]
		}
	}
	for e := E - 1; e >= 0; e-- {
		st.start[e] = next[e] - st.count[e]
	}
}

// sigmoidGGML is the shared-expert gate of llama.cpp's qwen2moe graph:
// silu(x)/x in float32, silu(x) = x/(1+expf(−x)); at 0, where that is
// 0/0, the sigmoid's value ½.
func sigmoidGGML(x float32) float32 {
	if x == 0 {
		return 0.5
	}
	return x / (1 + quant.Expf(-x)) / x
}
