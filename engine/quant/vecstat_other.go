//go:build !amd64 || noasm

package quant

// The vector paths of MaxMin, ExpShift, IndexAbove and IndexEqual: none
// here.
func maxMinVector(x []float32, hi, lo *float32, special *bool) int { return 0 }

func expShiftVector(dst, src []float32, scale, m float32, lanes *[8]float64) int { return 0 }

func indexAboveVector(x []float32, v float32) (int, bool) { return 0, false }

func indexEqualVector(x []float32, v float32) (int, bool) { return 0, false }

func setWhereClearVector(x []float32, bits []uint64, v float32) int { return 0 }
