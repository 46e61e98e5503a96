package quant

// HalfToFloat converts the half-precision values of src to float32 in dst
// (len(dst) ≥ len(src)). The conversion is exact, so it gives the same
// values as FP16ToFP32 element by element (signalling NaNs may come out
// quieted); on amd64 with F16C it converts
// eight at a time, which is what the attention over an f16 KV cache needs.
func HalfToFloat(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	i := halfToFloatVector(dst, src)
	for ; i < len(src); i++ {
		dst[i] = halfTable[src[i]]
	}
}

// FloatToHalf converts the float32 values of src to half precision in dst
// (len(dst) ≥ len(src)), rounding like FP32ToFP16 element by element; on
// amd64 with F16C it converts eight at a time.
func FloatToHalf(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	i := floatToHalfVector(dst, src)
	for ; i < len(src); i++ {
		dst[i] = FP32ToFP16(src[i])
	}
}

// RoundToHalf rounds every value of x to the nearest half-precision value
// (FP16ToFP32(FP32ToFP16(v))), in place: what a float32 is worth once
// stored in an f16 KV cache or multiplied in f16.
func RoundToHalf(x []float32) {
	i := roundToHalfVector(x)
	for ; i < len(x); i++ {
		x[i] = halfTable[FP32ToFP16(x[i])]
	}
}
