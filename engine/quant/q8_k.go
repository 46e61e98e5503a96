package quant

import "math"

// Q8_K: the activation format of the K-quants, 256 int8 values with a
// float32 scale d and the sums of each 16 quants (int16 bsums[16]) that
// the dot products with a per-group minimum need; x = q·d. Layout:
// d (4 bytes), qs (256), bsums (32). llama.cpp has no dot product with
// Q8_K weights, and neither does this package.
const q8_KBytes = 292

// quantizeQ8_K is llama.cpp's quantize_row_q8_K_ref, which its x86 CPU
// backend also uses for activations: the value of largest magnitude maps
// to -127, rounding half to even.
func quantizeQ8_K(dst []byte, src []float32) {
	for b := 0; b < len(src)/QKK; b++ {
		x := src[b*QKK : (b+1)*QKK]
		out := dst[b*q8_KBytes : (b+1)*q8_KBytes]
		qs := out[4:260]
		iscale := quantizeQ8_KVector(qs, x)
		if iscale == 0 {
			vmax, amax := absMax(x)
			if amax == 0 {
				clear(out)
				continue
			}
			iscale = -127 / vmax
			for i, v := range x {
				qs[i] = byte(int8(min(127, nearestInt(iscale*v))))
			}
		}
		for j := 0; j < 16; j++ { // the group sums, eight quants at a time
			s := sum8(le.Uint64(qs[16*j:])) + sum8(le.Uint64(qs[16*j+8:]))
			le.PutUint16(out[260+2*j:], uint16(int16(s)))
		}
		le.PutUint32(out, math.Float32bits(1/iscale))
	}
}

func dequantizeQ8_K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/QKK; b++ {
		in := src[b*q8_KBytes : (b+1)*q8_KBytes]
		d := math.Float32frombits(le.Uint32(in))
		for i := 0; i < QKK; i++ {
			dst[b*QKK+i] = float32(int8(in[4+i])) * d
		}
	}
}

func init() {
	formats[Q8_K] = &format{dequant: dequantizeQ8_K, quant: quantizeQ8_K, vecDot: Q8_K}
}
