//go:build !linux

package maskbench

import "time"

var epoch = time.Now()

// threadCPU falls back to wall time where thread CPU time is not read.
func threadCPU() time.Duration { return time.Since(epoch) }
