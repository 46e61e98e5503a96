package train

import (
	"context"
	"math"
	"sync/atomic"

	"github.com/ruvllm/ruvllm/engine/gemm"
	"github.com/ruvllm/ruvllm/engine/mapfault"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// span is one sequence of a packed batch: rows [row, row+n), positions
// 0..n-1. Attention never crosses spans.
type span struct{ row, n int }

// term is one loss term on the logits of a row: cross-entropy
// (-w·log p(token)), when ul unlikelihood (-w·log(1-p(token))), or, with
// a teacher, distillation (w·KL(q ‖ p), q the teacher's distribution).
type term struct {
	row   int
	token int32
	w     float64
	ul    bool
	ex    int // example of the batch, for per-example figures
	// teacher is the teacher's final hidden state for this row (its
	// logits are teacher·outputᵀ), nil for the other terms.
	teacher []float32
}

// batch is a packed batch: the examples' tokens one after another.
type batch struct {
	tokens []int32
	spans  []span
	terms  []term
	// examples is how many examples the batch holds (terms' ex < it).
	examples int
}

// layerSave holds what the backward pass needs of one layer.
type layerSave[F Float] struct {
	x0, h1, q, k, v, att, x1, h2, g, u, act []F
	r1, r2, lse                             []F
}

// pass is one forward pass over a batch, with the activations the
// backward pass reads.
type pass[F Float] struct {
	n *net[F]
	// ctx and err: yields between products (gives way to serving) keep
	// the first error, which the layer loops return.
	ctx    context.Context
	err    error
	bt     *batch
	set    *adapterSet[F]
	T      int
	layers []*layerSave[F] // nil below the lowest trainable layer
	xL, hN []F             // final residual stream and its norm
	rN     []F
	scr    []F // dequantization scratch
}

func (s *layerSave[F]) alloc(T int, c dims) {
	s.x0, s.h1, s.x1, s.h2 = make([]F, T*c.D), make([]F, T*c.D), make([]F, T*c.D), make([]F, T*c.D)
	s.q, s.att = make([]F, T*c.QD), make([]F, T*c.QD)
	s.k, s.v = make([]F, T*c.KVD), make([]F, T*c.KVD)
	s.g, s.u, s.act = make([]F, T*c.FF), make([]F, T*c.FF), make([]F, T*c.FF)
	s.r1, s.r2, s.lse = make([]F, T), make([]F, T), make([]F, T*c.H)
}

// dims are the sizes a pass uses.
type dims struct {
	D, QD, KVD, FF, H, KVH, HD, Rot int
	mode                            int // 0 normal, 1 neox
	eps                             float64
}

func (b *Base) dims() dims {
	c := b.cfg
	return dims{D: c.Dim, QD: c.Heads * c.HeadDim, KVD: c.KVHeads * c.HeadDim, FF: c.FF,
		H: c.Heads, KVH: c.KVHeads, HD: c.HeadDim, Rot: c.RoPE.Dims, mode: int(c.RoPE.Mode), eps: float64(c.NormEps)}
}

// forward runs the batch through the model. With train, it keeps the
// activations of the layers from the lowest trainable one up.
func (n *net[F]) forward(ctx context.Context, bt *batch, set *adapterSet[F], train bool) (*pass[F], error) {
	b := n.b
	c := b.dims()
	T := len(bt.tokens)
	p := &pass[F]{n: n, ctx: ctx, bt: bt, set: set, T: T, layers: make([]*layerSave[F], len(b.layers))}
	x := make([]F, T*c.D)
	row := make([]float32, c.D)
	for i, tok := range bt.tokens {
		_ = b.embd.dequantize(int(tok), int(tok)+1, row)
		for j, v := range row {
			x[i*c.D+j] = F(v)
		}
	}
	tmp := &layerSave[F]{}
	tmpAlloc := false
	out := make([]F, T*c.D)
	for l := range b.layers {
		if p.err != nil {
			return nil, p.err
		}
		if err := n.pause(ctx); err != nil {
			return nil, err
		}
		L := &b.layers[l]
		s := tmp
		if train && l >= set.lowest {
			s = &layerSave[F]{}
			s.alloc(T, c)
			p.layers[l] = s
		} else if !tmpAlloc {
			tmp.alloc(T, c)
			tmpAlloc = true
		}
		uses := &set.uses[l]
		keep := p.layers[l] != nil
		copy(s.x0, x)
		rmsNorm(s.h1, s.r1, x, n.vec(L.attnNorm), T, c.D, c.eps)
		n.linear(p, s.q, s.h1, L.w[kQ], n.vec(L.bq), uses[kQ], keep)
		n.linear(p, s.k, s.h1, L.w[kK], n.vec(L.bk), uses[kK], keep)
		n.linear(p, s.v, s.h1, L.w[kV], n.vec(L.bv), uses[kV], keep)
		n.rope(s.q, bt.spans, c.H, c, false)
		n.rope(s.k, bt.spans, c.KVH, c, false)
		n.attend(s, bt.spans, c)
		n.linear(p, out, s.att, L.w[kO], nil, uses[kO], keep)
		for i := range x {
			x[i] += out[i]
		}
		copy(s.x1, x)
		rmsNorm(s.h2, s.r2, x, n.vec(L.ffnNorm), T, c.D, c.eps)
		n.linear(p, s.g, s.h2, L.w[kGate], nil, uses[kGate], keep)
		n.linear(p, s.u, s.h2, L.w[kUp], nil, uses[kUp], keep)
		sigmoids(s.act, s.g)
		for i, g := range s.g {
			s.act[i] *= g * s.u[i]
		}
		n.linear(p, out, s.act, L.w[kDown], nil, uses[kDown], keep)
		for i := range x {
			x[i] += out[i]
		}
	}
	if p.err != nil {
		return nil, p.err
	}
	p.xL = x
	p.hN, p.rN = make([]F, T*c.D), make([]F, T)
	rmsNorm(p.hN, p.rN, x, n.vec(b.norm), T, c.D, c.eps)
	return p, nil
}

// backward runs the gradient of the loss with respect to the final
// hidden state, dhN (T×D), down to the lowest trainable layer,
// accumulating the trainable pairs' gradients.
func (n *net[F]) backward(ctx context.Context, p *pass[F], dhN []F) error {
	b := n.b
	c := b.dims()
	T := p.T
	dx := make([]F, T*c.D)
	rmsNormBack(dx, dhN, p.xL, p.rN, n.vec(b.norm), T, c.D)
	dh := make([]F, T*c.D)
	datt := make([]F, T*c.QD)
	dq, dk, dv := make([]F, T*c.QD), make([]F, T*c.KVD), make([]F, T*c.KVD)
	dact, dg, du := make([]F, T*c.FF), make([]F, T*c.FF), make([]F, T*c.FF)
	for l := len(b.layers) - 1; l >= p.set.lowest; l-- {
		if p.err != nil {
			return p.err
		}
		if err := n.pause(ctx); err != nil {
			return err
		}
		L := &b.layers[l]
		s := p.layers[l]
		uses := &p.set.uses[l]
		// Feed-forward: x2 = x1 + down(silu(gate(h2))·up(h2)).
		clear(dact)
		n.linearBack(p, dact, dx, s.act, L.w[kDown], uses[kDown], true)
		sigmoids(dg, s.g)
		for i, g := range s.g {
			sg := dg[i]
			du[i] = dact[i] * g * sg
			dg[i] = dact[i] * s.u[i] * sg * (1 + g*(1-sg))
		}
		clear(dh)
		n.linearBack(p, dh, dg, s.h2, L.w[kGate], uses[kGate], true)
		n.linearBack(p, dh, du, s.h2, L.w[kUp], uses[kUp], true)
		rmsNormBack(dx, dh, s.x1, s.r2, n.vec(L.ffnNorm), T, c.D)
		// Attention: x1 = x0 + o(attend(rope(q(h1)), rope(k(h1)), v(h1))).
		clear(datt)
		n.linearBack(p, datt, dx, s.att, L.w[kO], uses[kO], true)
		clear(dq)
		clear(dk)
		clear(dv)
		n.attendBack(s, datt, dq, dk, dv, p.bt.spans, c)
		n.rope(dq, p.bt.spans, c.H, c, true)
		n.rope(dk, p.bt.spans, c.KVH, c, true)
		below := l > p.set.lowest
		clear(dh)
		n.linearBack(p, dh, dq, s.h1, L.w[kQ], uses[kQ], below)
		n.linearBack(p, dh, dk, s.h1, L.w[kK], uses[kK], below)
		n.linearBack(p, dh, dv, s.h1, L.w[kV], uses[kV], below)
		if below {
			rmsNormBack(dx, dh, s.x0, s.r1, n.vec(L.attnNorm), T, c.D)
		}
	}
	return p.err
}

// between gives way to serving before a weight product (a layer has
// seven forward, up to seven backward): a request that arrives during a
// pass shares the machine with at most one product. The first error is
// kept for the layer loop.
func (p *pass[F]) between() {
	if p.err != nil || p.n.yield == nil {
		return
	}
	p.err = p.n.yield(p.ctx)
}

// pause checks ctx and gives way to serving between layers.
func (n *net[F]) pause(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if n.yield != nil {
		return n.yield(ctx)
	}
	return nil
}

// linear sets dst = x·Wᵀ (+ bias) plus the adapters' scale·(x·Aᵀ)·Bᵀ,
// keeping x·Aᵀ of the trainable pairs when keep.
func (n *net[F]) linear(p *pass[F], dst, x []F, w *matrix, bias []F, uses []use[F], keep bool) {
	T, out, in := p.T, w.rows, w.cols
	dst = dst[:T*out]
	clear(dst)
	p.between()
	W := n.weight(w, 0, out, &p.scr)
	n.par(out, 32, func(lo, hi int) {
		gemm.NT(T, hi-lo, in, x, in, W[lo*in:], in, dst[lo:], out)
	})
	if bias != nil {
		for t := range T {
			r := dst[t*out : (t+1)*out]
			for j, v := range bias {
				r[j] += v
			}
		}
	}
	for i := range uses {
		u := &uses[i]
		r := u.p.rank
		z := make([]F, T*r)
		gemm.NT(T, r, in, x, in, u.p.a, in, z, r)
		if keep && u.grad != nil {
			u.z = z
		}
		zs := make([]F, T*r)
		for j, v := range z {
			zs[j] = v * u.scale
		}
		bt := make([]F, r*out)
		gemm.Transpose(out, r, u.p.b, r, bt, out)
		gemm.NN(T, out, r, zs, r, bt, out, dst, out)
	}
}

// linearBack takes dy, the gradient of linear's output, adds the
// trainable pairs' gradients and, when needDX, adds the gradient of the
// input to dx.
func (n *net[F]) linearBack(p *pass[F], dx, dy, x []F, w *matrix, uses []use[F], needDX bool) {
	T, out, in := p.T, w.rows, w.cols
	for i := range uses {
		u := &uses[i]
		r := u.p.rank
		if u.grad == nil && !needDX {
			continue
		}
		// dz = scale·dy·B, through Bᵀ so the long sum runs in the kernel.
		bt := make([]F, r*out)
		gemm.Transpose(out, r, u.p.b, r, bt, out)
		dz := make([]F, T*r)
		gemm.NT(T, r, out, dy, out, bt, out, dz, r)
		for j := range dz {
			dz[j] *= u.scale
		}
		if u.grad != nil {
			// dB += scale·dyᵀ·z, computed transposed: dBᵀ = zsᵀ·dy.
			zs := make([]F, T*r)
			for j, v := range u.z {
				zs[j] = v * u.scale
			}
			gbt := make([]F, r*out)
			gemm.TN(r, out, T, zs, r, dy, out, gbt, out)
			gb := u.grad.b
			for o := range out {
				for j := range r {
					gb[o*r+j] += gbt[j*out+o]
				}
			}
			// dA += dzᵀ·x.
			gemm.TN(r, in, T, dz, r, x, in, u.grad.a, in)
		}
		if needDX {
			gemm.NN(T, in, r, dz, r, u.p.a, in, dx, in)
		}
	}
	if !needDX {
		return
	}
	p.between()
	W := n.weight(w, 0, out, &p.scr)
	n.par(in, 32, func(lo, hi int) {
		gemm.NN(T, hi-lo, out, dy, out, W[lo:], in, dx[lo:], in)
	})
}

// rmsNorm sets h = x/rms(x)·g row by row and r = 1/rms(x).
func rmsNorm[F Float](h, r, x, g []F, T, D int, eps float64) {
	for t := range T {
		xr := x[t*D : (t+1)*D]
		var ss float64
		for _, v := range xr {
			ss += float64(v) * float64(v)
		}
		inv := F(1 / math.Sqrt(ss/float64(D)+eps))
		r[t] = inv
		hr := h[t*D : (t+1)*D]
		for j, v := range xr {
			hr[j] = v * inv * g[j]
		}
	}
}

// rmsNormBack adds to dx the gradient of rmsNorm's input, given dh:
// dx = r·(g⊙dh) − x·r³·Σ(g⊙dh⊙x)/D.
func rmsNormBack[F Float](dx, dh, x, r, g []F, T, D int) {
	for t := range T {
		xr, dr, out := x[t*D:(t+1)*D], dh[t*D:(t+1)*D], dx[t*D:(t+1)*D]
		var dot float64
		for j, v := range xr {
			dot += float64(dr[j]) * float64(g[j]) * float64(v)
		}
		inv := r[t]
		k := F(float64(inv) * float64(inv) * float64(inv) * dot / float64(D))
		for j, v := range xr {
			out[j] += inv*g[j]*dr[j] - v*k
		}
	}
}

// sigmoids sets dst[i] = 1/(1+e^(−x[i])).
func sigmoids[F Float](dst, x []F) {
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = -v
	}
	exps(dst)
	for i, e := range dst {
		dst[i] = 1 / (1 + e)
	}
}

// exps sets x[i] = e^x[i]: the vector exponential of engine/quant for
// float32, math.Exp for float64.
func exps[F Float](x []F) {
	if f, ok := any(x).([]float32); ok {
		quant.Exp(f, f)
		return
	}
	for i, v := range x {
		x[i] = F(math.Exp(float64(v)))
	}
}

// rope rotates (or, with inverse, rotates back: the gradient of the
// rotation is its transpose) the heads of x in place, at each span's
// positions.
func (n *net[F]) rope(x []F, spans []span, heads int, c dims, inverse bool) {
	b := n.b
	half := c.Rot / 2
	width := heads * c.HD
	for _, sp := range spans {
		for i := range sp.n {
			cs, sn := b.cos[i*half:(i+1)*half], b.sin[i*half:(i+1)*half]
			row := x[(sp.row+i)*width : (sp.row+i+1)*width]
			for h := range heads {
				v := row[h*c.HD : (h+1)*c.HD]
				for j := range half {
					var i0, i1 int
					if c.mode == 1 { // neox: halves
						i0, i1 = j, j+half
					} else { // normal: adjacent pairs
						i0, i1 = 2*j, 2*j+1
					}
					co, si := F(cs[j]), F(sn[j])
					if inverse {
						si = -si
					}
					x0, x1 := v[i0], v[i1]
					v[i0] = x0*co - x1*si
					v[i1] = x0*si + x1*co
				}
			}
		}
	}
}

// tasks runs fn(i) for i in [0, count) on the net's threads.
func (n *net[F]) tasks(count int, fn func(i int)) {
	workers := min(n.threads, count)
	if workers <= 1 {
		for i := range count {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var faults mapfault.Group
	done := make(chan struct{}, workers)
	for range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			defer faults.Catch(mapfault.Arm())
			for {
				i := int(next.Add(1) - 1)
				if i >= count {
					return
				}
				fn(i)
			}
		}()
	}
	for range workers {
		<-done
	}
	faults.Raise()
}

// scores fills P (n×n) with head h's attention probabilities over span
// sp: the softmax of causal, scaled q·k. Unless recompute, it stores the
// rows' log-sum-exps in s.lse; with recompute it uses the stored ones.
func scores[F Float](s *layerSave[F], sp span, h, g int, c dims, P []F, recompute bool) {
	nn := sp.n
	clear(P)
	gemm.NT(nn, nn, c.HD, s.q[sp.row*c.QD+h*c.HD:], c.QD, s.k[sp.row*c.KVD+g*c.HD:], c.KVD, P, nn)
	scale := F(1 / math.Sqrt(float64(c.HD)))
	for i := range nn {
		row := P[i*nn : i*nn+i+1]
		clear(P[i*nn+i+1 : (i+1)*nn])
		lsei := &s.lse[(sp.row+i)*c.H+h]
		if recompute {
			l := *lsei
			for j, v := range row {
				row[j] = v*scale - l
			}
			exps(row)
			continue
		}
		m := F(math.Inf(-1))
		for j, v := range row {
			row[j] = v * scale
			m = max(m, row[j])
		}
		for j, v := range row {
			row[j] = v - m
		}
		exps(row)
		var sum float64
		for _, v := range row {
			sum += float64(v)
		}
		inv := F(1 / sum)
		for j := range row {
			row[j] *= inv
		}
		*lsei = m + F(math.Log(sum))
	}
}

// attend computes s.att from s.q, s.k, s.v, span by span and KV head by
// KV head (the query heads of a KV head run together, so the tasks'
// writes never overlap), storing the log-sum-exp of every row.
func (n *net[F]) attend(s *layerSave[F], spans []span, c dims) {
	group := c.H / c.KVH
	clear(s.att)
	n.tasks(len(spans)*c.KVH, func(i int) {
		sp, g := spans[i/c.KVH], i%c.KVH
		P := make([]F, sp.n*sp.n)
		for h := g * group; h < (g+1)*group; h++ {
			scores(s, sp, h, g, c, P, false)
			gemm.NN(sp.n, c.HD, sp.n, P, sp.n, s.v[sp.row*c.KVD+g*c.HD:], c.KVD, s.att[sp.row*c.QD+h*c.HD:], c.QD)
		}
	})
}

// attendBack adds the gradients of q, k and v (after rotation) given
// datt, recomputing the probabilities from the stored log-sum-exps.
func (n *net[F]) attendBack(s *layerSave[F], datt, dq, dk, dv []F, spans []span, c dims) {
	group := c.H / c.KVH
	scale := F(1 / math.Sqrt(float64(c.HD)))
	n.tasks(len(spans)*c.KVH, func(i int) {
		sp, g := spans[i/c.KVH], i%c.KVH
		nn := sp.n
		P, dP := make([]F, nn*nn), make([]F, nn*nn)
		kg, vg := s.k[sp.row*c.KVD+g*c.HD:], s.v[sp.row*c.KVD+g*c.HD:]
		for h := g * group; h < (g+1)*group; h++ {
			scores(s, sp, h, g, c, P, true)
			dO := datt[sp.row*c.QD+h*c.HD:]
			// dV += Pᵀ·dO
			gemm.TN(nn, c.HD, nn, P, nn, dO, c.QD, dv[sp.row*c.KVD+g*c.HD:], c.KVD)
			// dP = dO·Vᵀ; dS = P⊙(dP − rowsum(P⊙dP)), times the scale.
			clear(dP)
			gemm.NT(nn, nn, c.HD, dO, c.QD, vg, c.KVD, dP, nn)
			for r := range nn {
				pr, dr := P[r*nn:r*nn+r+1], dP[r*nn:(r+1)*nn]
				var d F
				for j, v := range pr {
					d += v * dr[j]
				}
				for j := range dr {
					if j > r {
						dr[j] = 0
						continue
					}
					dr[j] = pr[j] * (dr[j] - d) * scale
				}
			}
			// dQ += dS·K; dK += dSᵀ·Q.
			gemm.NN(nn, c.HD, nn, dP, nn, kg, c.KVD, dq[sp.row*c.QD+h*c.HD:], c.QD)
			gemm.TN(nn, c.HD, nn, dP, nn, s.q[sp.row*c.QD+h*c.HD:], c.QD, dk[sp.row*c.KVD+g*c.HD:], c.KVD)
		}
	})
}
