package quant

// The 2-bit i-quants, super-blocks of 256 weights with an f16 d; every
// group of 8 weights is a point of an 8-dimensional grid whose
// coordinates are 8, 25 or 43, with a sign per weight. A 32-weight chunk
// (or each half of one) has a 4-bit scale s, and weight = d·(2s+1)/8·q.
//
// IQ2_XXS (66 bytes): d, then per chunk two little-endian uint32: the
// first holds 4 grid indexes (iq2xxsGrid, one byte each), the second
// four 7-bit sign codes (iqSigns, bits 7k..7k+6) and s in bits 28-31.
//
// IQ2_XS (74 bytes): d, 32 uint16 (bits 0-8 an iq2xsGrid index, bits
// 9-15 a sign code), then 8 scale bytes: chunk c's low nibble scales its
// first 16 weights, the high nibble the last 16.
//
// IQ2_S (82 bytes): d, 32 low index bytes, 32 sign bytes (one bit per
// weight, no implied sign), 8 qh bytes (bits 2k..2k+1 of chunk c's byte
// are bits 8-9 of its group k's iq2sGrid index), then 8 scale bytes as
// IQ2_XS's.
const (
	iq2_XXSBytes = 66
	iq2_XSBytes  = 74
	iq2_SBytes   = 82
)

func decodeIQ2_XXS(x []byte, b *iqBlock) float32 {
	qs := x[2:66]
	for c := 0; c < 8; c++ {
		idx, aux := le.Uint32(qs[8*c:]), le.Uint32(qs[8*c+4:])
		s := int32(2*(aux>>28) + 1)
		b.sc[2*c], b.sc[2*c+1] = s, s
		for k := 0; k < 4; k++ {
			putGrid8(b.q[32*c+8*k:], iq2xxsGrid[idx>>(8*k)&0xff], iqSigns[aux>>(7*k)&127])
		}
	}
	return f16At(x)
}

func decodeIQ2_XS(x []byte, b *iqBlock) float32 {
	qs, scales := x[2:66], x[66:74]
	for c := 0; c < 8; c++ {
		b.sc[2*c] = 2*int32(scales[c]&0xf) + 1
		b.sc[2*c+1] = 2*int32(scales[c]>>4) + 1
		for k := 0; k < 4; k++ {
			v := le.Uint16(qs[8*c+2*k:])
			putGrid8(b.q[32*c+8*k:], iq2xsGrid[v&511], iqSigns[v>>9])
		}
	}
	return f16At(x)
}

func decodeIQ2_S(x []byte, b *iqBlock) float32 {
	qs, signs, qh, scales := x[2:34], x[34:66], x[66:74], x[74:82]
	for c := 0; c < 8; c++ {
		b.sc[2*c] = 2*int32(scales[c]&0xf) + 1
		b.sc[2*c+1] = 2*int32(scales[c]>>4) + 1
		for k := 0; k < 4; k++ {
			idx := int(qs[4*c+k]) | int(qh[c])>>(2*k)&3<<8
			putGrid8(b.q[32*c+8*k:], iq2sGrid[idx], signs[4*c+k])
		}
	}
	return f16At(x)
}

func dequantizeIQ2_XXS(src []byte, dst []float32) {
	iqGridDequant(src, dst, iq2_XXSBytes, 0.125, decodeIQ2_XXS)
}

func dequantizeIQ2_XS(src []byte, dst []float32) {
	iqGridDequant(src, dst, iq2_XSBytes, 0.125, decodeIQ2_XS)
}

func dequantizeIQ2_S(src []byte, dst []float32) {
	iqGridDequant(src, dst, iq2_SBytes, 0.125, decodeIQ2_S)
}

// The dot products are llama.cpp's AVX2 kernels': lanes scaled by 2s+1,
// the float sum times 1/8.

func dotIQ2_XXSQ8_K(n int, w, a []byte) float32 {
	return iqGridDot(n, w, a, iq2_XXSBytes, 0.125, decodeIQ2_XXS)
}

func dotIQ2_XSQ8_K(n int, w, a []byte) float32 {
	return iqGridDot(n, w, a, iq2_XSBytes, 0.125, decodeIQ2_XS)
}

func dotIQ2_SQ8_K(n int, w, a []byte) float32 {
	return iqGridDot(n, w, a, iq2_SBytes, 0.125, decodeIQ2_S)
}

func init() {
	formats[IQ2_XXS] = &format{dequant: dequantizeIQ2_XXS, vecDot: Q8_K, dot: dotIQ2_XXSQ8_K}
	formats[IQ2_XS] = &format{dequant: dequantizeIQ2_XS, vecDot: Q8_K, dot: dotIQ2_XSQ8_K}
	formats[IQ2_S] = &format{dequant: dequantizeIQ2_S, quant: quantizeIQ2_S, vecDot: Q8_K, dot: dotIQ2_SQ8_K}
}
