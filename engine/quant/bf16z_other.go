//go:build !amd64 || noasm

package quant

// bf16zPacked returns nil: the BF16x16Z expansion has a kernel on amd64
// alone.
func bf16zPacked() *Packed { return nil }
