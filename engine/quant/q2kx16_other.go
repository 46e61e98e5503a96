//go:build !amd64 || noasm

package quant

// q2kx16Kernel is nil: only amd64 with AVX-512 VNNI has the Q2_Kx16
// kernel, as the other repacked layouts of quantized weights.
var q2kx16Kernel PackedKernel
