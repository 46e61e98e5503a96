package quant

import "golang.org/x/sys/cpu"

// halfDotLanes follows the llama.cpp CPU build this machine would load:
// an AVX-512 one where there is AVX-512F.
var halfDotLanes = func() int {
	if cpu.X86.HasAVX512F {
		return 16
	}
	return 8
}()
