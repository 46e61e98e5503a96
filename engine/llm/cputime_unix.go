//go:build unix

package llm

import "syscall"

// processCPU returns the CPU time (user and system) the process has used,
// in seconds, and whether it is known.
func processCPU() (float64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9, true
}
