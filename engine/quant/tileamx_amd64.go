//go:build amd64 && !noasm

package quant

import "golang.org/x/sys/cpu"

// hasTileF16 selects tileF16F32x16, whose reductions use AVX-512VL forms
// on the upper registers.
var hasTileF16 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL

//go:noescape
func tileF16F32x16(n int, w *uint16, wstride int, a *float32, astride int, rows int, dst *float32, dstride int)
