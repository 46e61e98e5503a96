//go:build !amd64 || noasm

package quant

// q4x16Kernel is nil: only amd64 with AVX-512 VNNI has a Q4_0x16 kernel.
var q4x16Kernel Q4x16Func
