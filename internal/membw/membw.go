// Package membw measures main-memory bandwidth, the bound on decode speed:
// a decode step reads every weight once, so weight bytes per token divided
// by bandwidth is the fastest a token can be produced.
package membw

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Options configures Measure.
type Options struct {
	// Threads copying in parallel (default 2).
	Threads int
	// BufferBytes is the size of each thread's source and of its
	// destination buffer (default 64 MiB): far larger than any cache, so
	// every pass goes to DRAM.
	BufferBytes int
	// Reps is the number of timed passes; the fastest counts (default 5).
	Reps int
}

// Result is a bandwidth measurement.
type Result struct {
	Threads     int `json:"threads"`
	BufferBytes int `json:"buffer_bytes"`
	// CopyBytesPerSecond counts bytes read plus bytes written, as STREAM's
	// copy does.
	CopyBytesPerSecond float64 `json:"copy_bytes_per_second"`
	// ReadBytesPerSecond is the read half of the copy traffic, the figure to
	// divide weight bytes by (a matmul reads weights and writes almost
	// nothing). It is a lower bound of pure read bandwidth.
	ReadBytesPerSecond float64 `json:"read_bytes_per_second"`
}

// Measure copies Threads buffers of BufferBytes in parallel, Reps times,
// and reports the best pass. The buffers are touched once before timing so
// page faults are not counted.
func Measure(ctx context.Context, o Options) (Result, error) {
	if o.Threads <= 0 {
		o.Threads = 2
	}
	if o.BufferBytes <= 0 {
		o.BufferBytes = 64 << 20
	}
	if o.Reps <= 0 {
		o.Reps = 5
	}
	src, dst := make([][]byte, o.Threads), make([][]byte, o.Threads)
	for i := range src {
		src[i], dst[i] = make([]byte, o.BufferBytes), make([]byte, o.BufferBytes)
		for j := range src[i] {
			src[i][j] = byte(j)
		}
		copy(dst[i], src[i])
	}
	best := time.Duration(0)
	for r := 0; r < o.Reps; r++ {
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("memory bandwidth: %w", err)
		}
		var wg sync.WaitGroup
		start := time.Now()
		for i := range src {
			wg.Add(1)
			go func() {
				defer wg.Done()
				copy(dst[i], src[i])
			}()
		}
		wg.Wait()
		if d := time.Since(start); best == 0 || d < best {
			best = d
		}
	}
	read := float64(o.Threads*o.BufferBytes) / best.Seconds()
	return Result{Threads: o.Threads, BufferBytes: o.BufferBytes, CopyBytesPerSecond: 2 * read, ReadBytesPerSecond: read}, nil
}
