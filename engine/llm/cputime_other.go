//go:build !unix

package llm

import "time"

// processCPU is unknown here.
func processCPU() (float64, bool) { return 0, false }

// cpuClock is nil here: speculation weighs wall time.
func cpuClock() func() time.Duration { return nil }
