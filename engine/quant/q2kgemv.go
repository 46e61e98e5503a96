package quant

import "encoding/binary"

// DotQ2_KRepacked returns the product of a Q2_K row w and a Q8_K row a (n
// elements) in the order of llama.cpp's repacked Q2_K kernels for x86
// (AVX-512: it repacks Q2_K matrices of a multiple of 8 rows): per part
// of a super-block, the integer sums of the scaled quant products (Σ
// scale·q·q8 over the part's groups of 16) and of the minimums (Σ
// min·Σq8), each fused-multiply-added into one float accumulator with the
// weight's d (or dmin) times the activation's d, and at the end the second
// accumulator subtracted from the first. The GEMV (a pass of fewer than
// four rows, and the rows past the last multiple of four) takes the whole
// super-block as one part (gemm false); the GEMM two 128-element halves.
func DotQ2_KRepacked(n int, w, a []byte, gemm bool) float32 {
	parts := 1
	if gemm {
		parts = 2
	}
	per := 16 / parts // groups of 16 per part
	var acc, accMin float32
	for b := 0; b < n/QKK; b++ {
		x := w[b*q2_KBytes : (b+1)*q2_KBytes]
		y := a[b*q8_KBytes : (b+1)*q8_KBytes]
		d8 := f32At(y)
		scales, qs := x[:16], x[16:80]
		dw, dmin := f16At(x[80:]), f16At(x[82:])
		for p := range parts {
			var isum, imin int32
			for g := p * per; g < (p+1)*per; g++ {
				half, j, second := g/8, (g%8)/2, g%2
				q := qs[32*half+16*second : 32*half+16*second+16]
				yq := y[4+16*g : 4+16*g+16]
				var s int32
				for l := range 16 {
					s += int32((q[l]>>(2*j))&3) * int32(int8(yq[l]))
				}
				isum += int32(scales[g]&0xf) * s
				imin += int32(scales[g]>>4) * int32(int16(binary.LittleEndian.Uint16(y[260+2*g:])))
			}
			acc = fma32(float32(isum), dw*d8, acc)
			accMin = fma32(float32(imin), dmin*d8, accMin)
		}
	}
	return acc - accMin
}
