//go:build !amd64 || noasm

package quant

// addScaledRowsVector has no vector path here.
func addScaledRowsVector(dst, coef, m []float32, stride int) int { return 0 }
