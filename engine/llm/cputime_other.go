//go:build !unix

package llm

// processCPU is unknown here.
func processCPU() (float64, bool) { return 0, false }
