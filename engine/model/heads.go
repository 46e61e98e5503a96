package model

import (
	"math"

	"github.com/ruvllm/ruvllm/engine/compute"
)

// headNorm RMS-normalises every head of x (rows of heads×HeadDim) in place
// with the per-head weight w (1×HeadDim), as llama.cpp normalises its 3-D
// view of q and k (Qwen3, Gemma 3). Through a compute.Viewer this is one
// RMSNorm over x viewed as one row per head; *view keeps that view with
// the buffers, so decoding allocates nothing. Backends without views take
// a host round trip with the CPU backend's arithmetic.
func (m *base) headNorm(x compute.Tensor, view *compute.Tensor, w compute.Tensor, heads int) {
	hd, eps := m.cfg.HeadDim, m.cfg.NormEps
	if v, ok := m.b.(compute.Viewer); ok {
		if *view == nil {
			*view = v.View(x, 0, x.Rows()*heads, hd)
		}
		m.b.RMSNorm(*view, *view, w, eps)
		return
	}
	data := make([]float32, x.Rows()*x.Cols())
	m.b.Download(x, data)
	wv := make([]float32, hd)
	m.b.Download(w, wv)
	for h := 0; h < len(data); h += hd {
		rmsNormHost(data[h:h+hd], wv, eps)
	}
	m.b.Upload(x, data)
}

// rmsNormHost normalises v in place as the CPU backend's RMSNorm does: the
// sum of squares in float64, the scale through float32 sqrt.
func rmsNormHost(v, w []float32, eps float32) {
	var sum float64
	for _, e := range v {
		sum += float64(e * e)
	}
	scale := 1 / float32(math.Sqrt(float64(float32(sum/float64(len(v)))+eps)))
	for i, e := range v {
		v[i] = e * scale * w[i]
	}
}
