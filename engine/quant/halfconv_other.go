//go:build !amd64 || noasm

package quant

// halfToFloatVector has no vector path here: HalfToFloat converts every
// element through the table.
func halfToFloatVector(dst []float32, src []uint16) int { return 0 }

// floatToHalfVector has no vector path here.
func floatToHalfVector(dst []uint16, src []float32) int { return 0 }

// roundToHalfVector has no vector path here.
func roundToHalfVector(x []float32) int { return 0 }
