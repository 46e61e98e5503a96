//go:build !amd64 || noasm

package quant

// bf16zPacked returns nil: the BF16x16Z expansion has a kernel on amd64
// alone.
func bf16zPacked() *Packed { return nil }

// bf16zEncodeFast returns false: the caller encodes in Go.
func bf16zEncodeFast(words *[F16x16BlockBytes / 2]uint16, codes *[128]byte, out []byte) bool {
	return false
}
