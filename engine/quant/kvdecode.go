package quant

import "fmt"

// DecodeRowsHalf decodes rows rows of n values (a multiple of QK) of type
// t, Q8_0 or Q4_0, the r-th starting at src[r·stride:], into dst[r·n:]
// as f16: each value is Dequantize's float32 (scale times quant) rounded
// to the nearest f16, ties to even. It is how attention reads a quantized
// KV block, one KV head's part of its rows at a time, and has an AVX-512
// form, since a decode step reads every old position of the context.
func DecodeRowsHalf(t Type, dst []uint16, src []byte, stride, rows, n int) {
	if n%QK != 0 || rows < 0 {
		panic(fmt.Sprintf("quant: DecodeRowsHalf of %d rows of %d values", rows, n))
	}
	bb := 0
	switch t {
	case Q8_0:
		bb = q8_0Bytes
	case Q4_0:
		bb = q4_0Bytes
	default:
		panic(fmt.Sprintf("quant: DecodeRowsHalf of %s", t))
	}
	if rows == 0 || n == 0 {
		return
	}
	_ = dst[rows*n-1]
	_ = src[(rows-1)*stride+n/QK*bb-1]
	if decodeRowsHalfVector(t, dst, src, stride, rows, n) {
		return
	}
	var f [QK]float32
	for r := range rows {
		row := src[r*stride:]
		for b := range n / QK {
			in := row[b*bb : (b+1)*bb]
			d := f16At(in)
			if t == Q8_0 {
				for i := range f {
					f[i] = float32(int8(in[2+i])) * d
				}
			} else {
				for i := range 16 {
					f[i] = float32(int(in[2+i]&0xf)-8) * d
					f[i+16] = float32(int(in[2+i]>>4)-8) * d
				}
			}
			out := dst[r*n+b*QK : r*n+(b+1)*QK]
			for i, v := range f {
				out[i] = FP32ToFP16(v)
			}
		}
	}
}
