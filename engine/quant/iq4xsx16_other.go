//go:build !amd64 || noasm

package quant

// The IQ4_XSx16 and IQ4_NLx16 kernels are nil: only amd64 with AVX-512 VNNI has them,
// as the other repacked layouts of quantized weights.
var iq4xsx16Kernel, iq4xsx16AccKernel, iq4nlx16Kernel, iq4nlx16AccKernel PackedKernel
