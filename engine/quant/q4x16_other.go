//go:build !amd64 || noasm

package quant

// The kernels of the repacked layouts are nil: only amd64 with AVX-512
// VNNI has them.
var q4x16Kernel, q4kx16Kernel, q8x16Kernel, q4x16AccKernel, q5x16Kernel, q6kx16Kernel, q5kx16Kernel, q51x16Kernel PackedKernel

// Nor do the F16x16 and BF16x16 layouts.
var f16x16Kernel, f16x16AccKernel, bf16x16Kernel, bf16x16AccKernel PackedKernel

// f16x16Decode and bf16x16Decode are never called here (their layouts
// have no kernel); half16DecodeGroups is their group count elsewhere.
var f16x16Decode, bf16x16Decode func(nb int, w []byte, groupBytes int, a []byte, dst []float32, accumulate bool)

const half16DecodeGroups = 4
