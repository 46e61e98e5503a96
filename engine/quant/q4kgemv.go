package quant

import "encoding/binary"

// DotQ4_KGEMV returns the product of a Q4_K row w and a Q8_K row a (n
// elements) in the order of llama.cpp's repacked Q4_K vector kernel for
// x86 (its GEMV, which it runs for a pass of fewer than four rows and for
// the rows past the last multiple of four): for each super-block, the
// integer sums of the scaled quant products (Σ scale·q·q8 over its eight
// groups) and of the minimums (Σ min·Σq8), each fused-multiply-added into
// one float accumulator with the weight's d (or dmin) times the
// activation's d, and at the end the second accumulator subtracted from
// the first. Its GEMM (four rows and more) sums per 64-element half of a
// block instead (Q4Kx16Reference), so the two orders differ.
func DotQ4_KGEMV(n int, w, a []byte) float32 {
	var acc, accMin float32
	for b := 0; b < n/QKK; b++ {
		x := w[b*q4_KBytes : (b+1)*q4_KBytes]
		y := a[b*q8_KBytes : (b+1)*q8_KBytes]
		d8 := f32At(y)
		var isum, imin int32
		for j := 0; j < 4; j++ {
			qs := x[16+32*j : 48+32*j]
			lo, hi := y[4+64*j:36+64*j], y[36+64*j:68+64*j]
			sa, ma := scaleMinK4(2*j, x[4:16])
			sb, mb := scaleMinK4(2*j+1, x[4:16])
			var sl, sh int32
			for k := range 32 {
				sl += int32(qs[k]&0xf) * int32(int8(lo[k]))
				sh += int32(qs[k]>>4) * int32(int8(hi[k]))
			}
			isum += int32(sa)*sl + int32(sb)*sh
			bs := func(i int) int32 { return int32(int16(binary.LittleEndian.Uint16(y[260+2*i:]))) }
			imin += int32(ma)*(bs(4*j)+bs(4*j+1)) + int32(mb)*(bs(4*j+2)+bs(4*j+3))
		}
		acc = fma32(float32(isum), f16At(x)*d8, acc)
		accMin = fma32(float32(imin), f16At(x[2:])*d8, accMin)
	}
	return acc - accMin
}
