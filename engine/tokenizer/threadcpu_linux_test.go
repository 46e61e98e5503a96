//go:build linux

package tokenizer

import "syscall"

// threadCPU returns the CPU time the calling OS thread has used, in
// nanoseconds (getrusage with RUSAGE_THREAD), for benchmarks that must
// not count the time other processes of a loaded machine take.
func threadCPU() (int64, bool) {
	const rusageThread = 1
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
