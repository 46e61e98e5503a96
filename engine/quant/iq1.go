package quant

// The 1-bit i-quants: super-blocks of 256 weights; every group of 8
// weights is a point of an 8-dimensional grid with coordinates -1, 0, 1
// (iq1sGrid, 2048 points, 11-bit indexes), shifted by ±1/8 (the delta).
//
// IQ1_S (50 bytes): f16 d, 32 low index bytes, then per 32-weight chunk a
// little-endian uint16 qh: bits 3k..3k+2 are bits 8-10 of group k's
// index, bits 12-14 the chunk's scale s, bit 15 the sign of its delta:
// weight = d·(2s+1)·(g ± 1/8).
//
// IQ1_M (56 bytes): 32 low index bytes, 16 qh bytes (two per chunk: the
// low nibble of each holds bits 8-10 of a group's index and the delta
// sign of that group in bit 3, the high nibble the same for the next
// group), then 8 bytes read as four little-endian uint16: bits 0-11 of
// word w are the 3-bit scales of 16-weight halves 4w..4w+3, bits 12-15 of
// the four words (word 0 lowest) the f16 d: weight = d·(2s+1)·(g ± 1/8).
const (
	iq1_SBytes = 50
	iq1_MBytes = 56
)

// iq1Delta is the shift of the IQ1 grids (IQ1S_DELTA, IQ1M_DELTA).
const iq1Delta = 0.125

// iq1Group returns the 8 coordinates (-1, 0 or 1) of grid point i.
func iq1Group(i int) (g [8]int8) {
	p := iq1sGrid[i&2047]
	for j := range g {
		g[j] = int8(p >> (8 * j))
	}
	return g
}

func dequantizeIQ1_S(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QKK; i++ {
		x := src[i*iq1_SBytes : (i+1)*iq1_SBytes]
		d := f16At(x)
		qs, qh := x[2:34], x[34:50]
		y := dst[i*QKK : (i+1)*QKK]
		for c := 0; c < 8; c++ {
			h := le.Uint16(qh[2*c:])
			dl := d * float32(2*(h>>12&7)+1)
			delta := float32(iq1Delta)
			if h&0x8000 != 0 {
				delta = -iq1Delta
			}
			for k := 0; k < 4; k++ {
				g := iq1Group(int(qs[4*c+k]) | int(h>>(3*k)&7)<<8)
				for j, v := range g {
					y[32*c+8*k+j] = dl * float32(float32(v)+delta)
				}
			}
		}
	}
}

// iq1MScale returns the f16 d of an IQ1_M block (the top nibbles of its
// four scale words) and the words.
func iq1MScale(x []byte) (d float32, sc [4]uint16) {
	for w := range sc {
		sc[w] = le.Uint16(x[48+2*w:])
	}
	h := sc[0]>>12 | sc[1]>>8&0x00f0 | sc[2]>>4&0x0f00 | sc[3]&0xf000
	return FP16ToFP32(h), sc
}

// iq1MGroup returns group k (0..3) of chunk c of an IQ1_M block: its grid
// index and whether its delta is negative.
func iq1MGroup(x []byte, c, k int) (idx int, neg bool) {
	h := x[32+2*c+k/2] >> (4 * (k % 2))
	return int(x[4*c+k]) | int(h&7)<<8, h&8 != 0
}

func dequantizeIQ1_M(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QKK; i++ {
		x := src[i*iq1_MBytes : (i+1)*iq1_MBytes]
		d, sc := iq1MScale(x)
		y := dst[i*QKK : (i+1)*QKK]
		for c := 0; c < 8; c++ {
			for k := 0; k < 4; k++ {
				s := sc[c/2] >> (6*(c%2) + 3*(k/2)) & 7
				dl := d * float32(2*s+1)
				idx, neg := iq1MGroup(x, c, k)
				delta := float32(iq1Delta)
				if neg {
					delta = -iq1Delta
				}
				for j, v := range iq1Group(idx) {
					y[32*c+8*k+j] = dl * float32(float32(v)+delta)
				}
			}
		}
	}
}

// dotIQ1_SQ8_K mirrors llama.cpp's AVX2 ggml_vec_dot_iq1_s_q8_K: the grid
// part in the 8 lanes (scales 2s+1) fused-multiply-added with d = d_w·d_a;
// the delta part, Σ ±(2s+1)·(the chunk's activation sum from bsums), an
// exact integer per super-block fused-multiply-added with d into one
// float (the C compiler fuses accum1 += d*sumi1); at the end
// hsum8 + 1/8·that (fused as well).
func dotIQ1_SQ8_K(n int, w, a []byte) float32 {
	var b iqBlock
	var acc [8]float32
	var acc1 float32
	for i := 0; i < n/QKK; i++ {
		x := w[i*iq1_SBytes : (i+1)*iq1_SBytes : (i+1)*iq1_SBytes]
		y := a[i*q8_KBytes : (i+1)*q8_KBytes : (i+1)*q8_KBytes]
		var sum1 int32
		for c := 0; c < 8; c++ {
			h := le.Uint16(x[34+2*c:])
			s := int32(2*(h>>12&7) + 1)
			b.sc[2*c], b.sc[2*c+1] = s, s
			for k := 0; k < 4; k++ {
				g := iq1Group(int(x[2+4*c+k]) | int(h>>(3*k)&7)<<8)
				copy(b.q[32*c+8*k:32*c+8*k+8], g[:])
			}
			bs := q8KBsum(y, 2*c) + q8KBsum(y, 2*c+1)
			if h&0x8000 != 0 {
				bs = -bs
			}
			sum1 += bs * s
		}
		d := f32At(y) * f16At(x)
		for u, l := range b.lanes(y) {
			acc[u] = fma32(d, float32(l), acc[u])
		}
		acc1 = fma32(d, float32(sum1), acc1)
	}
	return fma32(iq1Delta, acc1, hsum8(&acc))
}

// dotIQ1_MQ8_K mirrors llama.cpp's AVX2 ggml_vec_dot_iq1_m_q8_K: the
// grid part and the delta part (±activation, the sign per group of 8)
// each in 8 lanes scaled by 2s+1 per 16 weights and fused-multiply-added
// with d = d_w·d_a; at the end hsum8 of the first plus 1/8·hsum8 of the
// second (fused).
func dotIQ1_MQ8_K(n int, w, a []byte) float32 {
	var b, delta iqBlock
	var acc, accD [8]float32
	for i := 0; i < n/QKK; i++ {
		x := w[i*iq1_MBytes : (i+1)*iq1_MBytes : (i+1)*iq1_MBytes]
		y := a[i*q8_KBytes : (i+1)*q8_KBytes : (i+1)*q8_KBytes]
		d16, sc := iq1MScale(x)
		for c := 0; c < 8; c++ {
			for k := 0; k < 4; k++ {
				idx, neg := iq1MGroup(x, c, k)
				g := iq1Group(idx)
				copy(b.q[32*c+8*k:32*c+8*k+8], g[:])
				sgn := int8(1)
				if neg {
					sgn = -1
				}
				for j := 0; j < 8; j++ {
					delta.q[32*c+8*k+j] = sgn
				}
			}
			for h := 0; h < 2; h++ {
				s := int32(2*(sc[c/2]>>(6*(c%2)+3*h)&7) + 1)
				b.sc[2*c+h], delta.sc[2*c+h] = s, s
			}
		}
		d := f32At(y) * d16
		for u, l := range b.lanes(y) {
			acc[u] = fma32(d, float32(l), acc[u])
		}
		for u, l := range delta.lanes(y) {
			accD[u] = fma32(d, float32(l), accD[u])
		}
	}
	return fma32(iq1Delta, hsum8(&accD), hsum8(&acc))
}

func init() {
	formats[IQ1_S] = &format{dequant: dequantizeIQ1_S, vecDot: Q8_K, dot: dotIQ1_SQ8_K}
	formats[IQ1_M] = &format{dequant: dequantizeIQ1_M, quant: quantizeIQ1_M, vecDot: Q8_K, dot: dotIQ1_MQ8_K}
}
