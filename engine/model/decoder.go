package model

import (
	"math"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/lora"
)

// attnWeights are one layer's attention projections; biases are nil when
// the family has none.
type attnWeights struct {
	q, k, v, o  compute.Tensor
	bq, bk, bv  compute.Tensor
	window      int // sliding window of this layer (0: full attention)
	softcap     float32
	scale       float32
	ropeFactors compute.Tensor
	// qNorm and kNorm, when set, RMS-normalise each query and key head
	// before the rotation (Qwen3, Gemma 3).
	qNorm, kNorm compute.Tensor
	// rope, when set, replaces the model's rotary parameters in this layer
	// (Gemma 3's local layers have a base of their own and no scaling).
	rope *compute.RoPE
	// qScale, when set, multiplies the rotated queries before attention,
	// whose scale is then 1 (Gemma 3 scales q as llama.cpp does).
	qScale float32
	// names are the LoRA target names of q, k, v, o ("" when the
	// projection cannot be adapted, e.g. split from a fused matrix).
	names [4]string
}

// ffnWeights are one layer's gated feed-forward projections.
type ffnWeights struct {
	gate, up, down compute.Tensor
	names          [3]string // LoRA target names of gate, up, down
}

// buffers are the activations of one forward pass over n tokens, reused
// while the batch size stays the same so decoding does not allocate.
type buffers struct {
	n                            int
	x, h, q, k, v, attn, attnOut compute.Tensor
	gate, up, ff, ffOut, out     compute.Tensor
	logits                       compute.Tensor
	logitRows                    int
	sel                          compute.Tensor
	// qh and kh view q and k as one row per head (per-head norms).
	qh, kh compute.Tensor
}

// base holds what every family shares: the backend, the configuration, the
// embedding, final norm and output projection, and the scratch buffers.
type base struct {
	b       compute.Backend
	cfg     Config
	embd    compute.Tensor
	outNorm compute.Tensor
	output  compute.Tensor
	buf     *buffers
	// small are the buffers of the last few small batch sizes, most
	// recent first (scratch).
	small []*buffers
	lora  loraState
	moe   moeState
	// outBuf holds the activations of lastFFN's rows.
	outBuf *buffers
	// mmDst and mmW hold matmuls' operands, so that passing them as
	// slices allocates nothing.
	mmDst, mmW [3]compute.Tensor
}

func (m *base) Config() Config { return m.cfg }

// scratch returns activation buffers for n tokens. The sets of the last
// few small batch sizes are kept: speculative decoding alternates
// verification passes of a few tokens with single-token steps, and
// allocating a set (and its logits) at every change of size made
// garbage at every step.
func (m *base) scratch(n int) *buffers {
	if m.buf != nil && m.buf.n == n {
		return m.buf
	}
	for i, c := range m.small {
		if c.n == n {
			// Most recently used first.
			copy(m.small[1:i+1], m.small[:i])
			m.small[0] = c
			m.buf = c
			return c
		}
	}
	s := m.newBuffers(n)
	if m.buf != nil && m.buf.n > smallBatch { // keep the logits buffer across batch sizes
		s.logits, s.logitRows, s.sel = m.buf.logits, m.buf.logitRows, m.buf.sel
	}
	if n <= smallBatch {
		if len(m.small) < keptSmall {
			m.small = append(m.small, nil)
		}
		copy(m.small[1:], m.small)
		m.small[0] = s
	}
	m.buf = s
	return s
}

// smallBatch is the largest batch whose buffers scratch keeps, and
// keptSmall how many such sets it keeps.
const (
	smallBatch = 16
	keptSmall  = 4
)

// newBuffers allocates activation buffers for n tokens.
func (m *base) newBuffers(n int) *buffers {
	c, b := m.cfg, m.b
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	return &buffers{
		n: n, x: b.New(n, c.Dim), h: b.New(n, c.Dim),
		q: b.New(n, qd), k: b.New(n, kvd), v: b.New(n, kvd), attn: b.New(n, qd), attnOut: b.New(n, c.Dim),
		gate: b.New(n, c.FF), up: b.New(n, c.FF), ff: b.New(n, c.FF), ffOut: b.New(n, c.Dim), out: b.New(n, c.Dim),
	}
}

// lastFFN reports whether the last layer's feed-forward network of
// batch.Outputs must be computed on those rows alone (model.Batch.Outputs):
// the backend's products depend on the number of rows, fewer rows than
// the batch's are wanted, and no adapter changes the products.
func (m *base) lastFFN(batch *Batch) bool {
	f, ok := m.b.(compute.OutputRowsFollower)
	return ok && f.FollowsOutputRows() && len(batch.Outputs) > 0 && len(batch.Outputs) < len(batch.Tokens) && batch.Adapters == nil
}

// outputFFN recomputes the residual stream of batch.Outputs' rows after
// the feed-forward network ffn, as llama.cpp does in the last layer: from
// s.x before the network (x, the rows as they were), normalised with norm,
// through ffn on those rows alone, added back and written into those
// rows of s.x (which the caller has already brought through ffn for every
// row).
func (m *base) outputFFN(s *buffers, x []float32, rows []int32, norm compute.Tensor, ffn *ffnWeights) {
	b, c := m.b, m.cfg
	if m.outBuf == nil || m.outBuf.n != len(rows) {
		m.outBuf = m.newBuffers(len(rows))
	}
	o := m.outBuf
	sel := make([]float32, len(rows)*c.Dim)
	for i, r := range rows {
		copy(sel[i*c.Dim:(i+1)*c.Dim], x[int(r)*c.Dim:(int(r)+1)*c.Dim])
	}
	b.Upload(o.x, sel)
	b.RMSNorm(o.h, o.x, norm, c.NormEps)
	m.swiglu(o, ffn)
	b.Add(o.x, o.x, o.ffOut)
	b.Download(o.x, sel)
	b.Download(s.x, x)
	for i, r := range rows {
		copy(x[int(r)*c.Dim:(int(r)+1)*c.Dim], sel[i*c.Dim:(i+1)*c.Dim])
	}
	b.Upload(s.x, x)
}

// attention runs self-attention of the normalised input s.h into
// s.attnOut: project, add biases, rotate, attend over the cache, project.
func (m *base) attention(s *buffers, w *attnWeights, layer int, batch *Batch, kv compute.KVStore) {
	b, c := m.b, m.cfg
	m.matmuls(s.h, [3]compute.Tensor{s.q, s.k, s.v}, [3]compute.Tensor{w.q, w.k, w.v}, [3]string(w.names[:3]), 3)
	if w.bq != nil {
		b.AddRow(s.q, w.bq)
		b.AddRow(s.k, w.bk)
		b.AddRow(s.v, w.bv)
	}
	if w.qNorm != nil {
		m.headNorm(s.q, &s.qh, w.qNorm, c.Heads)
		m.headNorm(s.k, &s.kh, w.kNorm, c.KVHeads)
	}
	rope := c.RoPE
	if w.rope != nil {
		rope = *w.rope
	}
	rope.Factors = w.ropeFactors
	b.RoPE(s.q, batch.Spans, c.Heads, c.HeadDim, rope)
	b.RoPE(s.k, batch.Spans, c.KVHeads, c.HeadDim, rope)
	if w.qScale != 0 {
		b.Scale(s.q, w.qScale)
	}
	scale := w.scale
	if scale == 0 {
		scale = float32(1 / math.Sqrt(float64(c.HeadDim)))
	}
	b.Attend(s.attn, s.q, s.k, s.v, kv, batch.Spans, compute.Attention{
		Layer: layer, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim,
		Scale: scale, Softcap: w.softcap, Window: w.window,
	})
	m.matmul(s.attnOut, s.attn, w.o, w.names[3])
}

// swiglu runs the gated feed-forward network with SiLU on s.h into s.ffOut.
func (m *base) swiglu(s *buffers, w *ffnWeights) {
	m.matmuls(s.h, [3]compute.Tensor{s.gate, s.up}, [3]compute.Tensor{w.gate, w.up}, w.names, 2)
	m.b.SwiGLU(s.ff, s.gate, s.up)
	m.matmul(s.ffOut, s.ff, w.down, w.names[2])
}

// Logits implements Model: gather the wanted rows, project to the
// vocabulary, and cap when the family says so.
func (m *base) Logits(hidden compute.Tensor, rows []int32) compute.Tensor {
	b := m.b
	s := m.buf
	if s.logitRows != len(rows) {
		s.logits = b.New(len(rows), m.cfg.Vocab)
		s.sel = b.New(len(rows), m.cfg.Dim)
		s.logitRows = len(rows)
	}
	b.GetRows(s.sel, hidden, rows)
	b.MatMul(s.logits, s.sel, m.output)
	if m.cfg.FinalSoftcap > 0 {
		b.Softcap(s.logits, m.cfg.FinalSoftcap)
	}
	return s.logits
}

// loadAttn loads the separate q/k/v/o projections of layer i, with biases
// when withBias.
func (l *loader) loadAttn(c Config, i int, withBias bool) (attnWeights, error) {
	var w attnWeights
	var err error
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	w.names = [4]string{lora.Key(i, "attn_q"), lora.Key(i, "attn_k"), lora.Key(i, "attn_v"), lora.Key(i, "attn_output")}
	for _, m := range []struct {
		dst     *compute.Tensor
		name    string
		out, in int
	}{
		{&w.q, "attn_q.weight", qd, c.Dim},
		{&w.k, "attn_k.weight", kvd, c.Dim},
		{&w.v, "attn_v.weight", kvd, c.Dim},
		{&w.o, "attn_output.weight", c.Dim, qd},
	} {
		if *m.dst, err = l.matrix(blk(i, m.name), m.out, m.in); err != nil {
			return w, err
		}
	}
	if withBias {
		if w.bq, err = l.vector(blk(i, "attn_q.bias"), qd); err != nil {
			return w, err
		}
		if w.bk, err = l.vector(blk(i, "attn_k.bias"), kvd); err != nil {
			return w, err
		}
		if w.bv, err = l.vector(blk(i, "attn_v.bias"), kvd); err != nil {
			return w, err
		}
	}
	return w, nil
}

// loadFFN loads the separate gate/up/down projections of layer i.
func (l *loader) loadFFN(c Config, i int) (ffnWeights, error) {
	var w ffnWeights
	var err error
	w.names = [3]string{lora.Key(i, "ffn_gate"), lora.Key(i, "ffn_up"), lora.Key(i, "ffn_down")}
	if w.gate, err = l.matrix(blk(i, "ffn_gate.weight"), c.FF, c.Dim); err != nil {
		return w, err
	}
	if w.up, err = l.matrix(blk(i, "ffn_up.weight"), c.FF, c.Dim); err != nil {
		return w, err
	}
	if w.down, err = l.matrix(blk(i, "ffn_down.weight"), c.Dim, c.FF); err != nil {
		return w, err
	}
	return w, nil
}

// loadBase loads the embedding, final norm and output projection.
func (l *loader) loadBase(c Config) (base, error) {
	m := base{b: l.b, cfg: c}
	var err error
	if m.embd, err = l.matrix("token_embd.weight", c.Vocab, c.Dim); err != nil {
		return m, err
	}
	if m.outNorm, err = l.vector("output_norm.weight", c.Dim); err != nil {
		return m, err
	}
	if m.output, err = l.output(c); err != nil {
		return m, err
	}
	return m, nil
}
