//go:build unix

package llm

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the process has used,
// in seconds, and whether it is known.
func processCPU() (float64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9, true
}

// cpuClock returns the process's CPU time as a clock for speculation's
// cost model (sched.Options.CostClock).
func cpuClock() func() time.Duration {
	if _, ok := processCPU(); !ok {
		return nil
	}
	return func() time.Duration {
		s, _ := processCPU()
		return time.Duration(s * 1e9)
	}
}
