//go:build unix

package train

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used: on a shared machine the
// benchmarks report it beside wall time, which other processes inflate.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
