package quant

// The 4-bit non-linear i-quants: each weight is a 4-bit index into the 16
// values of iq4nlValues (-127..113), times a block scale.
//
// IQ4_NL (18 bytes per 32 weights, Q4_0's layout): f16 d, then 16 bytes
// whose low nibbles are weights 0-15 and high nibbles weights 16-31:
// weight = d·v. Activations are Q8_0.
//
// IQ4_XS (136 bytes per 256): f16 d, uint16 scales_h, 4 bytes scales_l,
// 128 bytes of nibbles laid out as IQ4_NL's per 32-weight chunk. Chunk
// c's 6-bit scale is nibble c%2 of scales_l[c/2] plus bits 2c..2c+1 of
// scales_h as its top bits: weight = d·(s-32)·v. Activations are Q8_K.
const (
	iq4_NLBytes = 18
	iq4_XSBytes = 136
)

func dequantizeIQ4_NL(src []byte, dst []float32) {
	for b := 0; b < len(dst)/QK; b++ {
		x := src[b*iq4_NLBytes : (b+1)*iq4_NLBytes]
		d := f16At(x)
		y := dst[b*QK : (b+1)*QK]
		for j := 0; j < 16; j++ {
			y[j] = d * float32(iq4nlValues[x[2+j]&0xf])
			y[j+16] = d * float32(iq4nlValues[x[2+j]>>4])
		}
	}
}

// iq4XSScale returns the scale s-32 of chunk c of an IQ4_XS block.
func iq4XSScale(x []byte, c int) int32 {
	sh := le.Uint16(x[2:])
	lo := int32(x[4+c/2]>>(4*(c%2))) & 0xf
	return lo | int32(sh>>(2*c)&3)<<4 - 32
}

func dequantizeIQ4_XS(src []byte, dst []float32) {
	for b := 0; b < len(dst)/QKK; b++ {
		x := src[b*iq4_XSBytes : (b+1)*iq4_XSBytes]
		d := f16At(x)
		for c := 0; c < 8; c++ {
			dl := d * float32(iq4XSScale(x, c))
			qs := x[8+16*c : 24+16*c]
			y := dst[b*QKK+32*c : b*QKK+32*c+32]
			for j := 0; j < 16; j++ {
				y[j] = dl * float32(iq4nlValues[qs[j]&0xf])
				y[j+16] = dl * float32(iq4nlValues[qs[j]>>4])
			}
		}
	}
}

// iq4Lanes returns the 8 integer lanes of one 32-weight chunk of nibbles
// qs against the 32 activation quants q8: lane u adds the products of
// weights 4u..4u+3.
func iq4Lanes(qs, q8 []byte) (l [8]int32) {
	qs, q8 = qs[:16], q8[:32]
	for u := 0; u < 8; u++ {
		var s int32
		for e := 4 * u; e < 4*u+4; e++ {
			var v int8
			if e < 16 {
				v = iq4nlValues[qs[e]&0xf]
			} else {
				v = iq4nlValues[qs[e-16]>>4]
			}
			s += int32(v) * int32(int8(q8[e]))
		}
		l[u] = s
	}
	return l
}

// dotIQ4_NLQ8_0 mirrors llama.cpp's AVX2 ggml_vec_dot_iq4_nl_q8_0: blocks
// in pairs, the even ones' lanes fused-multiply-added with d = d_w·d_a
// into one set of 8 float lanes and the odd ones' into another; the two
// added lane by lane, then hsum8; a last unpaired block adds its whole
// integer sum times d (fused) to that.
func dotIQ4_NLQ8_0(n int, w, a []byte) float32 {
	var acc [2][8]float32
	nb := n / QK
	b := 0
	for ; b+1 < nb; b += 2 {
		for k := 0; k < 2; k++ {
			x := w[(b+k)*iq4_NLBytes : (b+k+1)*iq4_NLBytes : (b+k+1)*iq4_NLBytes]
			y := a[(b+k)*q8_0Bytes : (b+k+1)*q8_0Bytes : (b+k+1)*q8_0Bytes]
			d := f16At(y) * f16At(x)
			for u, l := range iq4Lanes(x[2:], y[2:]) {
				acc[k][u] = fma32(d, float32(l), acc[k][u])
			}
		}
	}
	var sum [8]float32
	for u := range sum {
		sum[u] = acc[0][u] + acc[1][u]
	}
	s := hsum8(&sum)
	if b < nb {
		x := w[b*iq4_NLBytes : (b+1)*iq4_NLBytes : (b+1)*iq4_NLBytes]
		y := a[b*q8_0Bytes : (b+1)*q8_0Bytes : (b+1)*q8_0Bytes]
		var t int32
		for _, l := range iq4Lanes(x[2:], y[2:]) {
			t += l
		}
		s = fma32(f16At(y)*f16At(x), float32(t), s)
	}
	return s
}

// DotIQ4_NLInterleaved is the order of llama.cpp's kernels for repacked
// IQ4_NL matrices (the IQ4_NL 8×8 layout, built on every AVX2 machine for
// weights of a multiple of 8 rows), the order of DotQ4_0Interleaved: each
// block's whole integer sum times d_w·d_a fused-multiply-added into one
// float32, block after block.
func DotIQ4_NLInterleaved(n int, w, a []byte) float32 {
	var acc float32
	for b := 0; b < n/QK; b++ {
		x := w[b*iq4_NLBytes : (b+1)*iq4_NLBytes : (b+1)*iq4_NLBytes]
		y := a[b*q8_0Bytes : (b+1)*q8_0Bytes : (b+1)*q8_0Bytes]
		var sum int32
		for _, l := range iq4Lanes(x[2:], y[2:]) {
			sum += l
		}
		acc = fma32(float32(sum), f16At(x)*f16At(y), acc)
	}
	return acc
}

// dotIQ4_XSQ8_K mirrors llama.cpp's AVX2 ggml_vec_dot_iq4_xs_q8_K: lanes
// scaled by s-32 per chunk, fused-multiply-added with d = d_w·d_a, then
// hsum8.
func dotIQ4_XSQ8_K(n int, w, a []byte) float32 {
	var acc [8]float32
	for b := 0; b < n/QKK; b++ {
		x := w[b*iq4_XSBytes : (b+1)*iq4_XSBytes : (b+1)*iq4_XSBytes]
		y := a[b*q8_KBytes : (b+1)*q8_KBytes : (b+1)*q8_KBytes]
		var lanes [8]int32
		for c := 0; c < 8; c++ {
			s := iq4XSScale(x, c)
			for u, l := range iq4Lanes(x[8+16*c:], y[4+32*c:]) {
				lanes[u] += s * l
			}
		}
		d := f16At(x) * f32At(y)
		for u, l := range lanes {
			acc[u] = fma32(d, float32(l), acc[u])
		}
	}
	return hsum8(&acc)
}

func init() {
	formats[IQ4_NL] = &format{dequant: dequantizeIQ4_NL, quant: quantizeIQ4_NL, vecDot: Q8_0, dot: dotIQ4_NLQ8_0}
	formats[IQ4_XS] = &format{dequant: dequantizeIQ4_XS, quant: quantizeIQ4_XS, vecDot: Q8_K, dot: dotIQ4_XSQ8_K}
}
