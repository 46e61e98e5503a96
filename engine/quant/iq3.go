package quant

// The 3-bit i-quants: super-blocks of 256 weights with an f16 d; every
// group of 4 weights is a point of a 4-dimensional grid (coordinates 4 to
// 62), with a sign per weight.
//
// IQ3_XXS (98 bytes): d, 64 iq3xxsGrid index bytes (4 weights each), then
// per 32-weight chunk a little-endian uint32 of four 7-bit sign codes
// (iqSigns, one per 8 weights) and the chunk's scale s in bits 28-31:
// weight = d·(2s+1)/4·q.
//
// IQ3_S (110 bytes): d, 64 low index bytes, 8 qh bytes (bit k of chunk
// c's byte is bit 8 of its k-th iq3sGrid index), 32 sign bytes (one bit
// per weight), then 4 scale bytes whose nibbles scale chunks 2j (low) and
// 2j+1 (high): weight = d·(2s+1)·q.
const (
	iq3_XXSBytes = 98
	iq3_SBytes   = 110
)

func decodeIQ3_XXS(x []byte, b *iqBlock) float32 {
	qs, ss := x[2:66], x[66:98]
	for c := 0; c < 8; c++ {
		aux := le.Uint32(ss[4*c:])
		s := int32(2*(aux>>28) + 1)
		b.sc[2*c], b.sc[2*c+1] = s, s
		for k := 0; k < 4; k++ {
			m := iqSigns[aux>>(7*k)&127]
			putGrid8(b.q[32*c+8*k:], uint64(iq3xxsGrid[qs[8*c+2*k]])|uint64(iq3xxsGrid[qs[8*c+2*k+1]])<<32, m)
		}
	}
	return f16At(x)
}

func decodeIQ3_S(x []byte, b *iqBlock) float32 {
	qs, qh, signs := x[2:66], x[66:74], x[74:106]
	iq3sScales(x, b)
	for c := 0; c < 8; c++ {
		for k := 0; k < 4; k++ {
			m := signs[4*c+k]
			i0 := int(qs[8*c+2*k]) | int(qh[c])>>(2*k)&1<<8
			i1 := int(qs[8*c+2*k+1]) | int(qh[c])>>(2*k+1)&1<<8
			putGrid8(b.q[32*c+8*k:], uint64(iq3sGrid[i0])|uint64(iq3sGrid[i1])<<32, m)
		}
	}
	return f16At(x)
}

// iq3sScales sets b's 16 group scales from the IQ3_S block x: 2s+1 for
// each 4-bit s, two groups of 16 a run of 32.
func iq3sScales(x []byte, b *iqBlock) {
	scales := x[106:110]
	for c := 0; c < 8; c++ {
		s := 2*int32(scales[c/2]>>(4*(c%2))&0xf) + 1
		b.sc[2*c], b.sc[2*c+1] = s, s
	}
}

func dequantizeIQ3_XXS(src []byte, dst []float32) {
	iqGridDequant(src, dst, iq3_XXSBytes, 0.25, decodeIQ3_XXS)
}

func dequantizeIQ3_S(src []byte, dst []float32) {
	iqGridDequant(src, dst, iq3_SBytes, 1, decodeIQ3_S)
}

// The dot products are llama.cpp's AVX2 kernels': lanes scaled by 2s+1,
// the float sum times 1/4 (IQ3_XXS) or 1 (IQ3_S).

func dotIQ3_XXSQ8_K(n int, w, a []byte) float32 {
	return iqGridDot(n, w, a, iq3_XXSBytes, 0.25, decodeIQ3_XXS)
}

func dotIQ3_SQ8_K(n int, w, a []byte) float32 {
	return iqGridDot(n, w, a, iq3_SBytes, 1, decodeIQ3_S)
}

func init() {
	formats[IQ3_XXS] = &format{dequant: dequantizeIQ3_XXS, quant: quantizeIQ3_XXS, vecDot: Q8_K, dot: dotIQ3_XXSQ8_K}
	formats[IQ3_S] = &format{dequant: dequantizeIQ3_S, quant: quantizeIQ3_S, vecDot: Q8_K, dot: dotIQ3_SQ8_K}
}
