//go:build !amd64 || noasm

package quant

// The kernels of the repacked layouts are nil: only amd64 with AVX-512
// VNNI has them.
var q4x16Kernel, q4kx16Kernel, q8x16Kernel, q4x16AccKernel PackedKernel

// Nor do the F16x16 and BF16x16 layouts.
var f16x16Kernel, f16x16AccKernel, bf16x16Kernel, bf16x16AccKernel PackedKernel
