//go:build amd64 && !noasm

package quant

//go:noescape
func tileF16F32x16(n int, w *uint16, wstride int, a *float32, astride int, rows int, acc *float32)
