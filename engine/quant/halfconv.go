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
