package quant

import "unsafe"

// Prefetch asks the CPU to start loading the lines of s into its caches
// (to L2: PREFETCHT2 on amd64), so that a pass over them soon after finds
// them there instead of waiting on memory line by line. It changes no
// value, reads nothing itself and never faults; where no prefetch
// instruction is in use it does nothing.
func Prefetch[T any](s []T) {
	if len(s) == 0 || !hasPrefetch {
		return
	}
	prefetchLines(unsafe.Pointer(&s[0]), len(s)*int(unsafe.Sizeof(s[0])))
}
