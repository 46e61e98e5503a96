//go:build !amd64 || noasm

package quant

// iqPanelKernel is nil: only amd64 with AVX-512 VNNI has the i-quant
// panel kernel.
var iqPanelKernel func(nb int, panel []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int, factor float32)

// iqPanelTranspose is panelTransposeGo: without the kernel only the tests
// decode panels.
func iqPanelTranspose(q []byte, stride int, p []byte) { panelTransposeGo(q, stride, p) }
