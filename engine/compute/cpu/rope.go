package cpu

import (
	"math"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// ropeCorrDims returns the YaRN ramp bounds, as ggml_rope_yarn_corr_dims.
func ropeCorrDims(nDims, nCtxOrig int, base, betaFast, betaSlow float32) (lo, hi float32) {
	corr := func(nRot float32) float64 {
		return float64(nDims) * math.Log(float64(nCtxOrig)/(float64(nRot)*2*math.Pi)) / (2 * math.Log(float64(base)))
	}
	start := math.Floor(corr(betaFast))
	end := math.Ceil(corr(betaSlow))
	return float32(math.Max(0, start)), float32(math.Min(float64(nDims-1), end))
}

// RoPE implements compute.Backend. The per-pair angle is built by repeated
// float32 multiplication, like ggml's rope cache, so positions far into the
// context round the same way llama.cpp's do.
func (b *Backend) RoPE(x compute.Tensor, spans []compute.Span, heads, headDim int, p compute.RoPE) {
	xs := ct(x)
	if xs.cols != heads*headDim {
		panic("RoPE: row is not heads×headDim")
	}
	dims := p.Dims
	if dims == 0 || dims > headDim {
		dims = headDim
	}
	freqScale := p.FreqScale
	if freqScale == 0 {
		freqScale = 1
	}
	attnFactor := p.AttnFactor
	if attnFactor == 0 {
		attnFactor = 1
	}
	var factors []float32
	if p.Factors != nil {
		factors = ct(p.Factors).f32
	}
	var corrLo, corrHi float32
	if p.ExtFactor != 0 {
		corrLo, corrHi = ropeCorrDims(dims, p.OrigCtx, p.FreqBase, p.BetaFast, p.BetaSlow)
	}
	// powf(base, -2.0f/dims) with the exponent rounded to float32 first.
	thetaScale := float32(math.Pow(float64(p.FreqBase), float64(float32(-2)/float32(dims))))
	j := &b.rope
	j.rows = j.rows[:0]
	for _, s := range spans {
		if s.Tree != nil { // a token tree: each token at its depth (tree.go)
			if !compute.ValidTree(s.Tree, s.N) {
				panic("RoPE: invalid tree")
			}
			for i := 0; i < s.N; i++ {
				j.rows = append(j.rows, ropeRow{s.Row + i, s.Pos + treeDepth(s.Tree, i)})
			}
			continue
		}
		for i := 0; i < s.N; i++ {
			j.rows = append(j.rows, ropeRow{s.Row + i, s.Pos + i})
		}
	}
	j.x, j.p, j.factors = xs, p, factors
	j.heads, j.headDim, j.half = heads, headDim, dims/2
	j.freqScale, j.attnFactor, j.thetaScale = freqScale, attnFactor, thetaScale
	j.corrLo, j.corrHi = corrLo, corrHi
	// A row's cost is its rotations plus a sincosf per pair of
	// dimensions (about eight rotations' worth).
	b.w.run(len(j.rows), rowGrain(heads*headDim+8*j.half), j)
	j.x, j.factors, j.p.Factors = nil, nil, nil
}

// ropeRow is a row of the batch and its position.
type ropeRow struct{ r, pos int }

// ropeJob holds the parameters of one RoPE call and per-worker cos and sin
// tables.
type ropeJob struct {
	rows                              []ropeRow
	x                                 *tensor
	p                                 compute.RoPE
	factors                           []float32
	heads, headDim, half              int
	freqScale, attnFactor, thetaScale float32
	corrLo, corrHi                    float32
	cos, sin                          [][]float32
}

func (j *ropeJob) do(wk, lo, hi int) {
	half, headDim, p := j.half, j.headDim, &j.p
	cos, sin := grow(j.cos[wk], half), grow(j.sin[wk], half)
	j.cos[wk], j.sin[wk] = cos, sin
	sin = sin[:len(cos)]
	xs := j.x
	for _, rw := range j.rows[lo:hi] {
		theta := float32(rw.pos)
		for i := range cos {
			ff := float32(1)
			if j.factors != nil {
				ff = j.factors[i]
			}
			extrap := theta / ff
			interp := j.freqScale * extrap
			t, mscale := interp, j.attnFactor
			if p.ExtFactor != 0 {
				y := (float32(i) - j.corrLo) / max(0.001, j.corrHi-j.corrLo)
				ramp := (1 - min(1, max(0, y))) * p.ExtFactor
				t = interp*(1-ramp) + extrap*ramp
				mscale *= 1 + 0.1*float32(math.Log(float64(1/j.freqScale)))
			}
			// sincosf's rounding, as llama.cpp's rope cache.
			sn, cs := quant.Sincosf(t)
			cos[i], sin[i] = cs*mscale, sn*mscale
			theta *= j.thetaScale
		}
		data := xs.f32[rw.r*xs.cols : (rw.r+1)*xs.cols]
		for h := 0; h < j.heads; h++ {
			v := data[h*headDim : h*headDim+headDim]
			if p.Mode == compute.RoPENeox {
				lo, hi := v[:half], v[half:2*half]
				lo, hi = lo[:len(cos)], hi[:len(cos)]
				for i, c := range cos {
					x0, x1 := lo[i], hi[i]
					lo[i] = fmaf(x0, c, -(x1 * sin[i]))
					hi[i] = fmaf(x0, sin[i], x1*c)
				}
			} else {
				v = v[:2*len(cos)]
				for i, c := range cos {
					x0, x1 := v[2*i], v[2*i+1]
					v[2*i] = fmaf(x0, c, -(x1 * sin[i]))
					v[2*i+1] = fmaf(x0, sin[i], x1*c)
				}
			}
		}
	}
}

// fmaf returns a·b+c with one rounding, as the FMA instructions llama.cpp's
// compiler contracts the rotation into (float64 holds the exact product;
// the double rounding left differs from a float32 FMA about once in 2^29).
func fmaf(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}
