package quant

import (
	"math/bits"
	"unsafe"
)

// The i-quants (IQ4_NL, IQ4_XS, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S,
// IQ1_S, IQ1_M) store each group of 4 or 8 weights as an index into a
// fixed grid of points (iqgrids_data.go, generated from llama.cpp's
// tables, which every file of these types indexes) or, for IQ4_*, as
// 4-bit indexes into a non-linear 16-value table, plus signs and block
// scales. Every type but IQ4_NL (Q8_0) multiplies with Q8_K activations.
//
// The dot products reproduce llama.cpp's AVX2 kernels (ggml-cpu's
// arch/x86/quants.c), as the K-quants do: the weights decode to signed
// integers and integer sub-block scales; integer lane u of a super-block
// adds scale·w·a over the elements 32c+4u .. 32c+4u+3 of each 32-element
// chunk c (the lanes of VPMADDUBSW then VPMADDWD); each lane is
// fused-multiply-added in float32 with d = d_w·d_a into one of 8 float
// lanes, added at the end as hsum8 does, and multiplied by the type's
// constant factor. The lane sums are exact integers, so only the
// assignment of elements to lanes and the float steps matter, and every
// SIMD kernel reproduces them bit for bit.

// iqSigns[i] is the sign mask of 8 values coded as the 7-bit index i:
// bits 0-6 are i, and bit 7 is set when that makes the number of set
// bits even (the IQ2_XXS/IQ2_XS/IQ3_XXS codes keep an even number of
// negative values, so the eighth sign is implied). A set bit negates.
var iqSigns = func() (t [128]uint8) {
	for i := range t {
		t[i] = uint8(i)
		if bits.OnesCount8(uint8(i))%2 == 1 {
			t[i] |= 0x80
		}
	}
	return t
}()

// iqSignsPairs[i] is iqSigns[i] as 8 bytes of +1 or -1 (0xff), the form
// the kernels multiply with (VPSIGNB's second operand).
var iqSignsBytes = func() (t [128]uint64) {
	for i := range t {
		for j := 0; j < 8; j++ {
			b := uint64(1)
			if iqSigns[i]>>j&1 != 0 {
				b = 0xff
			}
			t[i] |= b << (8 * j)
		}
	}
	return t
}()

// iqSignBits8[b] is the byte b of 8 explicit signs (IQ2_S, IQ3_S: bit j
// negates weight j) as 8 bytes of +1 or -1, for the arm64 kernels.
var iqSignBits8 = func() (t [256]uint64) {
	for i := range t {
		for j := 0; j < 8; j++ {
			b := uint64(1)
			if i>>j&1 != 0 {
				b = 0xff
			}
			t[i] |= b << (8 * j)
		}
	}
	return t
}()

// iqBlock is one super-block of a grid type decoded to what the dot
// product multiplies: 256 signed weights and 16 integer scales, one per
// 16 weights (types with one scale per 32 repeat it).
type iqBlock struct {
	q  [QKK]int8
	sc [16]int32
}

// putGrid8 writes the 8 bytes of grid point g, negated where mask has a
// bit set, to q. Negating the bytes as one word, (g^m)+(m&1…1) with m
// 0xff in each negated byte, carries from none: no grid byte is zero
// (TestGridBytesNonZero).
func putGrid8(q []int8, g uint64, mask uint8) {
	m := signBytes[mask]
	le.PutUint64(int8Bytes(q[:8]), (g^m)+(m&0x0101010101010101))
}

// int8Bytes is q's memory as bytes, so that a word is stored at once (a
// later load of the word is then forwarded from the store, where byte
// stores would make it wait).
func int8Bytes(q []int8) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(q))), len(q))
}

// signBytes spreads the bits of a byte over the bytes of a word: byte j
// of signBytes[m] is 0xff where bit j of m is set.
var signBytes = func() (t [256]uint64) {
	for m := range t {
		for j := range 8 {
			if m>>j&1 != 0 {
				t[m] |= 0xff << (8 * j)
			}
		}
	}
	return t
}()

// lanes returns the 8 integer lanes of b against the Q8_K block y.
func (b *iqBlock) lanes(y []byte) (l [8]int32) {
	q8 := y[4:260:260]
	for c := 0; c < 8; c++ {
		for u := 0; u < 8; u++ {
			e := 32*c + 4*u
			s := int32(b.q[e])*int32(int8(q8[e])) + int32(b.q[e+1])*int32(int8(q8[e+1])) +
				int32(b.q[e+2])*int32(int8(q8[e+2])) + int32(b.q[e+3])*int32(int8(q8[e+3]))
			l[u] += b.sc[2*c+u/4] * s
		}
	}
	return l
}

// iqGridDot is the dot product of n elements of a grid type (blocks of
// size bytes, decoded by decode, which returns the block's f16 scale)
// with Q8_K activations, as llama.cpp's AVX2 kernels compute it, times
// factor.
func iqGridDot(n int, w, a []byte, size int, factor float32, decode func(x []byte, b *iqBlock) float32) float32 {
	var b iqBlock
	var acc [8]float32
	for i := 0; i < n/QKK; i++ {
		x := w[i*size : (i+1)*size : (i+1)*size]
		y := a[i*q8_KBytes : (i+1)*q8_KBytes : (i+1)*q8_KBytes]
		d := decode(x, &b) * f32At(y)
		for u, l := range b.lanes(y) {
			acc[u] = fma32(d, float32(l), acc[u])
		}
	}
	return factor * hsum8(&acc)
}

// iqGridDequant writes the n values of blocks of size bytes: each is
// d·m·q with m the block's scale multiplier (the integer scale times
// mul, as llama.cpp's dequantizers round it: d·(0.5+s)·0.25 for IQ2 is
// d·(2s+1)/8 rounded once, the multiplications by a power of two
// being exact).
func iqGridDequant(src []byte, dst []float32, size int, mul float32, decode func(x []byte, b *iqBlock) float32) {
	var b iqBlock
	for i := 0; i < len(dst)/QKK; i++ {
		d := decode(src[i*size:(i+1)*size], &b)
		y := dst[i*QKK : (i+1)*QKK]
		for g := 0; g < 16; g++ {
			dl := d * float32(float32(b.sc[g])*mul)
			for j := 16 * g; j < 16*g+16; j++ {
				y[j] = dl * float32(b.q[j])
			}
		}
	}
}
