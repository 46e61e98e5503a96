//go:build !amd64 || noasm

package quant

// quantizeActQ8_0Vector has no vector path here.
func quantizeActQ8_0Vector(dst []byte, src []float32, nb int) int { return 0 }

// quantizeQ8_KVector has no vector path here.
func quantizeQ8_KVector(qs []byte, x []float32) float32 { return 0 }
