//go:build !amd64 || noasm

package quant

// addScaledRowsVector has no vector path here.
func addScaledRowsVector(dst, coef, m []float32, stride int) int { return 0 }

// scaleMulVector has no vector path here.
func scaleMulVector(dst, x, w []float32, s float32) int { return 0 }

// addVector has no vector path here.
func addVector(dst, x, y []float32) int { return 0 }

// squareSums8Vector has no vector path here.
func squareSums8Vector(s *[8]float64, in []float32) bool { return false }
