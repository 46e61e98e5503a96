//go:build !amd64 || noasm

package quant

// decodeRowsHalfVector has no vector form here.
func decodeRowsHalfVector(t Type, dst []uint16, src []byte, stride, rows, n int) bool { return false }
