//go:build amd64 && !noasm

package quant

// decodeRowsHalfVector is DecodeRowsHalf with AVX-512, where the CPU has
// it.
func decodeRowsHalfVector(t Type, dst []uint16, src []byte, stride, rows, n int) bool {
	if !hasAVX512F {
		return false
	}
	switch t {
	case Q8_0:
		decodeQ8Half(&dst[0], &src[0], stride, rows, n/QK)
	case Q4_0:
		decodeQ4Half(&dst[0], &src[0], stride, rows, n/QK)
	default:
		return false
	}
	return true
}

//go:noescape
func decodeQ8Half(dst *uint16, src *byte, stride, rows, blocks int)

//go:noescape
func decodeQ4Half(dst *uint16, src *byte, stride, rows, blocks int)
