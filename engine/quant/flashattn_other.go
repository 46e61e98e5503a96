//go:build !amd64

package quant

// halfDotLanes is 8 off amd64: llama.cpp's NEON build multiplies f16 in
// f16 arithmetic, which DotHalf does not reproduce; the AVX2 order is the
// closest portable choice.
var halfDotLanes = 8
