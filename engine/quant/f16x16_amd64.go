//go:build amd64 && !noasm

package quant

import (
	"fmt"

	"golang.org/x/sys/cpu"
)

// The F16x16 and BF16x16 kernels, set by useHalf16 (nil: none here).
var f16x16Kernel, f16x16AccKernel, bf16x16Kernel, bf16x16AccKernel PackedKernel

// useHalf16 selects the kernels of the F16x16 and BF16x16 layouts for isa:
// AVX-512F, and AVX512-BF16 for BF16.
func useHalf16(isa string) {
	f16x16Kernel, f16x16AccKernel, bf16x16Kernel, bf16x16AccKernel = nil, nil, nil, nil
	if isa == isaAVX512VNNI && cpu.X86.HasAVX512F {
		defer func() {
			if !cpu.X86.HasAVX512BF16 { // VDPBF16PS
				bf16x16Kernel, bf16x16AccKernel = nil, nil
			}
		}()
		f16x16Kernel = func(nb int, w, a []byte, astride int, aux []uint32, auxstride, rows int, dst []float32, dstride int) {
			half16(false, false, nb, w, a, astride, rows, dst, dstride)
		}
		f16x16AccKernel = func(nb int, w, a []byte, astride int, aux []uint32, auxstride, rows int, dst []float32, dstride int) {
			half16(false, true, nb, w, a, astride, rows, dst, dstride)
		}
		bf16x16Kernel = func(nb int, w, a []byte, astride int, aux []uint32, auxstride, rows int, dst []float32, dstride int) {
			half16(true, false, nb, w, a, astride, rows, dst, dstride)
		}
		bf16x16AccKernel = func(nb int, w, a []byte, astride int, aux []uint32, auxstride, rows int, dst []float32, dstride int) {
			half16(true, true, nb, w, a, astride, rows, dst, dstride)
		}
	}
}

// half16DecodeGroups is the number of groups the decode kernels take.
const half16DecodeGroups = 4

// f16x16Decode and bf16x16Decode are Packed.Decode of the F16x16 and
// BF16x16 layouts.
func f16x16Decode(nb int, w []byte, groupBytes int, a []byte, dst []float32, accumulate bool) {
	half16Decode(false, nb, w, groupBytes, a, dst, accumulate)
}

func bf16x16Decode(nb int, w []byte, groupBytes int, a []byte, dst []float32, accumulate bool) {
	half16Decode(true, nb, w, groupBytes, a, dst, accumulate)
}

func half16Decode(bf bool, nb int, w []byte, groupBytes int, a []byte, dst []float32, accumulate bool) {
	if nb < 1 || groupBytes < nb*F16x16BlockBytes {
		panic(fmt.Sprintf("quant: F16x16 decode of %d blocks in groups of %d bytes", nb, groupBytes))
	}
	_ = w[(half16DecodeGroups-1)*groupBytes+nb*F16x16BlockBytes-1]
	if bf {
		_ = a[nb*QK*2-1]
	} else {
		_ = a[nb*QK*4-1]
	}
	_ = dst[half16DecodeGroups*Q4x16Rows-1]
	if bf {
		bf16x16G4AVX512(nb*QK, &w[0], groupBytes, &a[0], &dst[0], accumulate)
	} else {
		f16x16G4AVX512(nb*QK, &w[0], groupBytes, &a[0], &dst[0], accumulate)
	}
}

// f16x16DecodeRows and bf16x16DecodeRows are the most activation rows
// f16x16DecodeMulti and bf16x16DecodeMulti take.
const f16x16DecodeRows, bf16x16DecodeRows = 7, 7

// half16RowsKernel is the type of the kernels for 2 to 7 activation rows
// against four groups.
type half16RowsKernel func(n int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool)

// f16x16G4Rows and bf16x16G4Rows are those kernels, for 2 to 7 and 2 to
// 6 rows. BF16 takes seven rows as four and three (the second call reads
// the weights again, from L2): seven rows' 28 accumulators leave four
// registers, and with the weights of two groups at a time and each
// activation broadcast twice (as f16x16G4R7AVX512 does) a Zen 5 core took
// 6850 ns for a four-group block of 2048 columns, with VDPBF16PS reading
// broadcast memory operands 11734, against 3892–3946 for the two calls.
var (
	f16x16G4Rows  = [...]half16RowsKernel{f16x16G4R2AVX512, f16x16G4R3AVX512, f16x16G4R4AVX512, f16x16G4R5AVX512, f16x16G4R6AVX512, f16x16G4R7AVX512}
	bf16x16G4Rows = [...]half16RowsKernel{bf16x16G4R2AVX512, bf16x16G4R3AVX512, bf16x16G4R4AVX512, bf16x16G4R5AVX512, bf16x16G4R6AVX512}
)

// f16x16DecodeMulti and bf16x16DecodeMulti are Packed.DecodeMulti of the
// F16x16 and BF16x16 layouts: rows (1 to 7) activation rows against four
// consecutive groups, 4·rows independent chains of fused multiply-adds
// (F16) or VDPBF16PS (BF16).
func f16x16DecodeMulti(nb int, w []byte, groupBytes int, a []byte, astride, rows int, dst []float32, dstride int, accumulate bool) {
	half16DecodeMulti(false, nb, w, groupBytes, a, astride, rows, dst, dstride, accumulate)
}

func bf16x16DecodeMulti(nb int, w []byte, groupBytes int, a []byte, astride, rows int, dst []float32, dstride int, accumulate bool) {
	half16DecodeMulti(true, nb, w, groupBytes, a, astride, rows, dst, dstride, accumulate)
}

func half16DecodeMulti(bf bool, nb int, w []byte, groupBytes int, a []byte, astride, rows int, dst []float32, dstride int, accumulate bool) {
	name, act := "F16x16", 4 // bytes of an activation
	if bf {
		name, act = "BF16x16", 2
	}
	if nb < 1 || groupBytes < nb*F16x16BlockBytes || rows < 1 || rows > len(f16x16G4Rows)+1 || astride < nb*QK*act || dstride < half16DecodeGroups*Q4x16Rows {
		panic(fmt.Sprintf("quant: %s decode of %d blocks in groups of %d bytes, %d rows of stride %d, outputs of stride %d", name, nb, groupBytes, rows, astride, dstride))
	}
	_ = w[(half16DecodeGroups-1)*groupBytes+nb*F16x16BlockBytes-1]
	_ = a[(rows-1)*astride+nb*QK*act-1]
	_ = dst[(rows-1)*dstride+half16DecodeGroups*Q4x16Rows-1]
	switch {
	case rows == 1 && bf:
		bf16x16G4AVX512(nb*QK, &w[0], groupBytes, &a[0], &dst[0], accumulate)
	case rows == 1:
		f16x16G4AVX512(nb*QK, &w[0], groupBytes, &a[0], &dst[0], accumulate)
	case bf && rows == 7:
		bf16x16G4R4AVX512(nb*QK, &w[0], groupBytes, &a[0], astride, &dst[0], dstride, accumulate)
		bf16x16G4R3AVX512(nb*QK, &w[0], groupBytes, &a[4*astride], astride, &dst[4*dstride], dstride, accumulate)
	case bf:
		bf16x16G4Rows[rows-2](nb*QK, &w[0], groupBytes, &a[0], astride, &dst[0], dstride, accumulate)
	default:
		f16x16G4Rows[rows-2](nb*QK, &w[0], groupBytes, &a[0], astride, &dst[0], dstride, accumulate)
	}
}

// f16x16Pair and bf16x16Pair are Packed.Pair of the F16x16 and BF16x16
// layouts: PackedRows activation rows against two consecutive groups at
// once (f16x16PairR8AVX512, bf16x16PairR8AVX512).
func f16x16Pair(nb int, w []byte, groupBytes int, a []byte, astride int, dst []float32, dstride int, accumulate bool) {
	half16Pair(false, nb, w, groupBytes, a, astride, dst, dstride, accumulate)
}

func bf16x16Pair(nb int, w []byte, groupBytes int, a []byte, astride int, dst []float32, dstride int, accumulate bool) {
	half16Pair(true, nb, w, groupBytes, a, astride, dst, dstride, accumulate)
}

func half16Pair(bf bool, nb int, w []byte, groupBytes int, a []byte, astride int, dst []float32, dstride int, accumulate bool) {
	name, act := "F16x16", 4 // bytes of an activation
	if bf {
		name, act = "BF16x16", 2
	}
	if nb < 1 || groupBytes < nb*F16x16BlockBytes || astride < nb*QK*act || dstride < 2*Q4x16Rows {
		panic(fmt.Sprintf("quant: %s pair of %d blocks in groups of %d bytes, rows of stride %d, outputs of stride %d", name, nb, groupBytes, astride, dstride))
	}
	_ = w[groupBytes+nb*F16x16BlockBytes-1]
	_ = a[(PackedRows-1)*astride+nb*QK*act-1]
	_ = dst[(PackedRows-1)*dstride+2*Q4x16Rows-1]
	if bf {
		bf16x16PairR8AVX512(nb*QK, &w[0], groupBytes, &a[0], astride, &dst[0], dstride, accumulate)
	} else {
		f16x16PairR8AVX512(nb*QK, &w[0], groupBytes, &a[0], astride, &dst[0], dstride, accumulate)
	}
}

// half16 checks the buffers and runs the kernels of 8, 4, 2 and 1
// activation rows over rows.
func half16(bf, accumulate bool, nb int, w, a []byte, astride, rows int, dst []float32, dstride int) {
	checkHalf16(nb, w, a, astride, rows, dst, dstride, bf)
	n := nb * QK
	for r := 0; r < rows; {
		ap, dp := &a[r*astride], &dst[r*dstride]
		switch k := rows - r; {
		case k >= 8:
			if bf {
				bf16x16R8AVX512(n, &w[0], ap, astride, dp, dstride, accumulate)
			} else {
				f16x16R8AVX512(n, &w[0], ap, astride, dp, dstride, accumulate)
			}
			r += 8
		case k >= 4:
			if bf {
				bf16x16R4AVX512(n, &w[0], ap, astride, dp, dstride, accumulate)
			} else {
				f16x16R4AVX512(n, &w[0], ap, astride, dp, dstride, accumulate)
			}
			r += 4
		case k >= 2:
			if bf {
				bf16x16R2AVX512(n, &w[0], ap, astride, dp, dstride, accumulate)
			} else {
				f16x16R2AVX512(n, &w[0], ap, astride, dp, dstride, accumulate)
			}
			r += 2
		default:
			if bf {
				bf16x16R1AVX512(n, &w[0], ap, astride, dp, dstride, accumulate)
			} else {
				f16x16R1AVX512(n, &w[0], ap, astride, dp, dstride, accumulate)
			}
			r++
		}
	}
}

//go:noescape
func f16x16R8AVX512(n int, w *byte, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func f16x16R4AVX512(n int, w *byte, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func f16x16R2AVX512(n int, w *byte, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func f16x16R1AVX512(n int, w *byte, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func f16x16PairR8AVX512(n int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func bf16x16PairR8AVX512(n int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func bf16x16R8AVX512(n int, w *byte, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func bf16x16R4AVX512(n int, w *byte, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func bf16x16R2AVX512(n int, w *byte, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func bf16x16R1AVX512(n int, w *byte, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func f16x16G4AVX512(n int, w *byte, gstride int, a *byte, dst *float32, accumulate bool)

//go:noescape
func bf16x16G4AVX512(n int, w *byte, gstride int, a *byte, dst *float32, accumulate bool)

//go:noescape
func bf16x16G4R2AVX512(n int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func bf16x16G4R3AVX512(n int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func bf16x16G4R4AVX512(n int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func bf16x16G4R5AVX512(n int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func bf16x16G4R6AVX512(n int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func f16x16G4R2AVX512(n int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func f16x16G4R3AVX512(n int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func f16x16G4R4AVX512(n int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func f16x16G4R5AVX512(n int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func f16x16G4R6AVX512(n int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func f16x16G4R7AVX512(n int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool)
