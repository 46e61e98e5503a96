package cpu

import (
	"math"

	"github.com/ruvllm/ruvllm/engine/compute"
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
	thetaScale := float32(math.Pow(float64(p.FreqBase), -2.0/float64(dims)))
	type row struct{ r, pos int }
	var rows []row
	for _, s := range spans {
		for i := 0; i < s.N; i++ {
			rows = append(rows, row{s.Row + i, s.Pos + i})
		}
	}
	half := dims / 2
	b.w.run(len(rows), 1, func(lo, hi int) {
		cos := make([]float32, half)
		sin := make([]float32, half)
		for _, rw := range rows[lo:hi] {
			theta := float32(rw.pos)
			for i := 0; i < half; i++ {
				ff := float32(1)
				if factors != nil {
					ff = factors[i]
				}
				extrap := theta / ff
				interp := freqScale * extrap
				t, mscale := interp, attnFactor
				if p.ExtFactor != 0 {
					y := (float32(i) - corrLo) / max(0.001, corrHi-corrLo)
					ramp := (1 - min(1, max(0, y))) * p.ExtFactor
					t = interp*(1-ramp) + extrap*ramp
					mscale *= 1 + 0.1*float32(math.Log(float64(1/freqScale)))
				}
				cos[i] = float32(math.Cos(float64(t))) * mscale
				sin[i] = float32(math.Sin(float64(t))) * mscale
				theta *= thetaScale
			}
			data := xs.f32[rw.r*xs.cols : (rw.r+1)*xs.cols]
			for h := 0; h < heads; h++ {
				v := data[h*headDim : h*headDim+headDim]
				if p.Mode == compute.RoPENeox {
					for i := 0; i < half; i++ {
						x0, x1 := v[i], v[i+half]
						v[i] = x0*cos[i] - x1*sin[i]
						v[i+half] = x0*sin[i] + x1*cos[i]
					}
				} else {
					for i := 0; i < half; i++ {
						x0, x1 := v[2*i], v[2*i+1]
						v[2*i] = x0*cos[i] - x1*sin[i]
						v[2*i+1] = x0*sin[i] + x1*cos[i]
					}
				}
			}
		}
	})
}
