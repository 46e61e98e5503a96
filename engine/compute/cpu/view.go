package cpu

import (
	"fmt"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// View implements compute.Viewer for F32 tensors: the view shares t's
// memory, so it stays valid as long as t's memory does.
func (b *Backend) View(t compute.Tensor, off, rows, cols int) compute.Tensor {
	s := ct(t)
	if s.typ != quant.F32 || s.f32 == nil {
		panic("View of a non-F32 tensor")
	}
	if off < 0 || rows < 0 || cols <= 0 || off+rows*cols > len(s.f32) {
		panic(fmt.Sprintf("View: [%d, %d+%dx%d) of a %dx%d tensor", off, off, rows, cols, s.rows, s.cols))
	}
	f := s.f32[off : off+rows*cols : off+rows*cols]
	return &tensor{rows: rows, cols: cols, typ: quant.F32, f32: f, raw: f32Bytes(f), rowBytes: 4 * cols}
}
