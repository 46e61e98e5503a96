//go:build !amd64 || noasm

package quant

// The kernels of the repacked layouts are nil: only amd64 with AVX-512
// VNNI has them.
var q4x16Kernel, q4kx16Kernel, q8x16Kernel, q4x16AccKernel, q5x16Kernel, q6kx16Kernel, q5kx16Kernel, q51x16Kernel PackedKernel

// The four-stream kernels are nil: none here.
var q4x16Streams, q4kx16Streams, q6kx16Streams StreamKernel
