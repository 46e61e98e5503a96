//go:build amd64 && !noasm

package quant

import (
	"fmt"

	"golang.org/x/sys/cpu"
)

// bf16zExpand expands nb BF16x16Z blocks of one group (bf16zExpandAVX512),
// nil where this CPU lacks AVX-512BW or the BF16x16 kernels.
var bf16zExpand func(dst, src []byte, nb int)

// useBF16Z selects the BF16x16Z expansion, after useHalf16.
func useBF16Z() {
	bf16zExpand = nil
	if bf16x16Kernel != nil && cpu.X86.HasAVX512BW {
		bf16zExpand = bf16zExpandChecked
	}
}

// bf16zExpandChecked checks the buffers and expands nb blocks.
func bf16zExpandChecked(dst, src []byte, nb int) {
	if nb < 1 {
		return
	}
	_ = src[nb*BF16x16ZBlockBytes-1]
	_ = dst[nb*bf16zExpanded-1]
	bf16zExpandAVX512(nb, &src[0], &dst[0])
}

//go:noescape
func bf16zExpandAVX512(nb int, src *byte, dst *byte)

// bf16zCheck panics unless w holds nb blocks of groups groups, groupBytes
// apart.
func bf16zCheck(nb int, w []byte, groupBytes, groups int) {
	if nb < 1 || groupBytes < nb*BF16x16ZBlockBytes {
		panic(fmt.Sprintf("quant: BF16x16Z product of %d blocks in groups of %d bytes", nb, groupBytes))
	}
	_ = w[(groups-1)*groupBytes+nb*BF16x16ZBlockBytes-1]
}

// bf16zDecode is Packed.Decode of BF16x16Z: bf16zDecodeMulti of one row.
func bf16zDecode(nb int, w []byte, groupBytes int, a []byte, dst []float32, accumulate bool) {
	bf16zDecodeMulti(nb, w, groupBytes, a, nb*BF16x16ZBlockSize*2, 1, dst, half16DecodeGroups*Q4x16Rows, accumulate)
}

//go:noescape
func bf16zG4AVX512(nb int, w *byte, gstride int, a *byte, dst *float32, accumulate bool) (done int)

// bf16zDecodeMulti is Packed.DecodeMulti of BF16x16Z: the decode kernels
// of 1 to 4 rows against the four groups (bf16zG4AVX512, bf16zG4R2AVX512
// ..R4), and of 5 to 7 against two groups at a time (bf16zG2R5AVX512..R7:
// four groups' accumulators would not fit the registers), each run
// expanded in registers once for all the rows. A kernel stops before a
// block with patches (it finds them in the header line it reads anyway: a
// scan ahead of it would wait for each block's first line from memory),
// which is expanded into L1 here and multiplied by the BF16x16 kernel;
// each call continues the previous one's sums (the same chains, so the
// same bits).
func bf16zDecodeMulti(nb int, w []byte, groupBytes int, a []byte, astride, rows int, dst []float32, dstride int, accumulate bool) {
	bf16zCheck(nb, w, groupBytes, half16DecodeGroups)
	if rows < 1 || rows > bf16x16DecodeRows || astride < nb*BF16x16ZBlockSize*2 || dstride < half16DecodeGroups*Q4x16Rows {
		panic(fmt.Sprintf("quant: BF16x16Z decode of %d rows of stride %d, outputs of stride %d", rows, astride, dstride))
	}
	_ = a[(rows-1)*astride+nb*BF16x16ZBlockSize*2-1]
	_ = dst[(rows-1)*dstride+half16DecodeGroups*Q4x16Rows-1]
	switch {
	case rows > 4:
		bf16zRun(bf16zG2Rows[rows-5], 2, rows, nb, w, groupBytes, a, astride, dst, dstride, accumulate)
		bf16zRun(bf16zG2Rows[rows-5], 2, rows, nb, w[2*groupBytes:], groupBytes, a, astride, dst[2*Q4x16Rows:], dstride, accumulate)
	case rows == 1:
		bf16zRun(bf16zG4One, half16DecodeGroups, 1, nb, w, groupBytes, a, astride, dst, dstride, accumulate)
	default:
		bf16zRun(bf16zG4Rows[rows-2], half16DecodeGroups, rows, nb, w, groupBytes, a, astride, dst, dstride, accumulate)
	}
}

// bf16zRowsKernel is the type of the BF16x16Z decode kernels: rows activation
// rows against a few groups, over at most nb blocks, stopping before a
// block with patches; done is the blocks multiplied.
type bf16zRowsKernel func(nb int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool) (done int)

// bf16zRun multiplies rows activation rows by groups groups of w
// (groupBytes apart) with kern, and each block with patches by the
// BF16x16 kernels after expanding it, a group at a time (a buffer handed
// to the BF16x16 decode kernels, which are called through a table, would
// move to the heap). The caller has checked the buffers.
func bf16zRun(kern bf16zRowsKernel, groups, rows, nb int, w []byte, groupBytes int, a []byte, astride int, dst []float32, dstride int, accumulate bool) {
	for b := 0; b < nb; {
		b += kern(nb-b, &w[b*BF16x16ZBlockBytes], groupBytes, &a[b*BF16x16ZBlockSize*2], astride, &dst[0], dstride, accumulate || b > 0)
		if b < nb { // block b has patches
			var s [bf16zExpanded]byte
			for g := range groups {
				bf16zExpandChecked(s[:], w[g*groupBytes+b*BF16x16ZBlockBytes:], 1)
				half16(true, accumulate || b > 0, 4, s[:], a[b*BF16x16ZBlockSize*2:], astride, rows, dst[g*Q4x16Rows:], dstride)
			}
			b++
		}
	}
}

// bf16zG4One is bf16zG4AVX512 as a bf16zRowsKernel.
func bf16zG4One(nb int, w *byte, gstride int, a *byte, _ int, dst *float32, _ int, accumulate bool) int {
	return bf16zG4AVX512(nb, w, gstride, a, dst, accumulate)
}

// bf16zG2Rows are the kernels of 5 to 8 rows against two groups.
var bf16zG2Rows = [...]bf16zRowsKernel{
	bf16zG2R5AVX512, bf16zG2R6AVX512, bf16zG2R7AVX512, bf16zG2R8AVX512,
}

//go:noescape
func bf16zG2R5AVX512(nb int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool) (done int)

//go:noescape
func bf16zG2R6AVX512(nb int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool) (done int)

//go:noescape
func bf16zG2R7AVX512(nb int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool) (done int)

//go:noescape
func bf16zG2R8AVX512(nb int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool) (done int)

// bf16zG4Rows are the decode kernels of 2 to 4 rows.
var bf16zG4Rows = [...]bf16zRowsKernel{
	bf16zG4R2AVX512, bf16zG4R3AVX512, bf16zG4R4AVX512,
}

//go:noescape
func bf16zG4R2AVX512(nb int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool) (done int)

//go:noescape
func bf16zG4R3AVX512(nb int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool) (done int)

//go:noescape
func bf16zG4R4AVX512(nb int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool) (done int)

// bf16zPair is Packed.Pair of BF16x16Z: bf16zG2R8AVX512.
func bf16zPair(nb int, w []byte, groupBytes int, a []byte, astride int, dst []float32, dstride int, accumulate bool) {
	bf16zCheck(nb, w, groupBytes, 2)
	if astride < nb*BF16x16ZBlockSize*2 || dstride < 2*Q4x16Rows {
		panic(fmt.Sprintf("quant: BF16x16Z pair of rows of stride %d, outputs of stride %d", astride, dstride))
	}
	_ = a[(PackedRows-1)*astride+nb*BF16x16ZBlockSize*2-1]
	_ = dst[(PackedRows-1)*dstride+2*Q4x16Rows-1]
	bf16zRun(bf16zG2Rows[PackedRows-5], 2, PackedRows, nb, w, groupBytes, a, astride, dst, dstride, accumulate)
}

// bf16zKernel and bf16zAccKernel are Packed.Kernel and Packed.Accumulate
// of BF16x16Z.
func bf16zKernel(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride, rows int, dst []float32, dstride int) {
	bf16zRows(false, nb, w, a, astride, rows, dst, dstride)
}

func bf16zAccKernel(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride, rows int, dst []float32, dstride int) {
	bf16zRows(true, nb, w, a, astride, rows, dst, dstride)
}

// bf16zRows expands the group's blocks into L1, eight at a time, and runs
// the BF16x16 kernels there: the layout's kernel of last resort (the
// backend takes the decode kernels and, for larger batches, expands whole
// tiles once).
func bf16zRows(accumulate bool, nb int, w []byte, a []byte, astride, rows int, dst []float32, dstride int) {
	bf16zCheck(nb, w, nb*BF16x16ZBlockBytes, 1)
	var s [8 * bf16zExpanded]byte
	const n = len(s) / bf16zExpanded
	for b0 := 0; b0 < nb; b0 += n {
		m := min(n, nb-b0)
		bf16zExpandChecked(s[:], w[b0*BF16x16ZBlockBytes:], m)
		half16(true, accumulate || b0 > 0, 4*m, s[:m*bf16zExpanded], a[b0*BF16x16ZBlockSize*2:], astride, rows, dst, dstride)
	}
}

// bf16zPacked returns the BF16x16Z layout, nil where this CPU has no
// expansion kernel.
func bf16zPacked() *Packed {
	if bf16zExpand == nil {
		return nil
	}
	return &Packed{Name: "BF16x16Z", Act: BF16, BlockSize: BF16x16ZBlockSize, BlockBytes: BF16x16ZBlockBytes,
		Repack: RepackBF16x16Z, Kernel: bf16zKernel, Accumulate: bf16zAccKernel,
		Decode: bf16zDecode, DecodeGroups: half16DecodeGroups,
		DecodeMulti: bf16zDecodeMulti, DecodeRows: bf16x16DecodeRows, Pair: bf16zPair,
		Expand: bf16zExpand, Expanded: bf16x16Packed()}
}

// bf16zEncodeFast encodes a sub-block's runs (out: its 768 bytes) with
// bf16zEncodeAVX512 where this CPU has AVX512-VBMI; false where it has not
// or a word's exponent pair is not in codes (the caller encodes it then).
func bf16zEncodeFast(words *[F16x16BlockBytes / 2]uint16, codes *[128]byte, out []byte) bool {
	if !cpu.X86.HasAVX512VBMI || !cpu.X86.HasAVX512BW {
		return false
	}
	_ = out[bf16zSubBytes-1]
	return bf16zEncodeAVX512(&words[0], codes, &out[0])
}

//go:noescape
func bf16zEncodeAVX512(words *uint16, codes *[128]byte, out *byte) (ok bool)
