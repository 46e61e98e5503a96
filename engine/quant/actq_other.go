//go:build !amd64 || noasm

package quant

// quantizeActQ8_0Vector has no vector path here.
func quantizeActQ8_0Vector(dst []byte, src []float32, nb int) int { return 0 }
