//go:build !amd64 || noasm

package quant

// ropePairsVector has no vector path here.
func ropePairsVector(v, cs []float32) int { return 0 }

// ropeHalvesVector has no vector path here.
func ropeHalvesVector(lo, hi, cos, sin []float32) int { return 0 }
