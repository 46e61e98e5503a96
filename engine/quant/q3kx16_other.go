//go:build !amd64 || noasm

package quant

// q3kx16Kernel is nil: only amd64 with AVX-512 VNNI has the Q3_Kx16
// kernel, as the other repacked layouts of quantized weights.
var q3kx16Kernel PackedKernel
