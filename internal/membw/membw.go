// Package membw measures main-memory bandwidth, the bound on decode speed:
// a decode step reads every weight once, so weight bytes per token divided
// by bandwidth is the fastest a token can be produced.
//
// Two probes run. The read probe is the bound: each thread streams through
// its own buffer, far larger than any cache, with the loads decode's
// kernels use (the widest vector loads the CPU has) and writes nothing,
// once without software prefetch and once at each of several distances
// ahead; the fastest pass is the bound. The copy probe (STREAM's copy)
// is kept as a second figure: its writes cost read-for-ownership traffic
// and share the memory bus with the reads, so the read half of a copy is
// well below what a read-only stream gets, and decode ran at 130–200 % of
// the bound it set.
package membw

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/ruvllm/ruvllm/internal/hostmem"
)

// Options configures Measure.
type Options struct {
	// Threads reading (and copying) in parallel (default 2).
	Threads int
	// BufferBytes is the size of each thread's source and of its
	// destination buffer for the copy probe (default 64 MiB).
	BufferBytes int
	// ReadBytes is the read probe's buffer size, all threads together,
	// each streaming its share (default 1 GiB: well beyond the last-level
	// cache, which is 480 MiB on some servers, or the probe measures the
	// cache).
	ReadBytes int
	// Reps is the number of timed passes of each probe; the fastest
	// counts (default 5).
	Reps int
}

// Result is a bandwidth measurement.
type Result struct {
	Threads     int `json:"threads"`
	BufferBytes int `json:"buffer_bytes"`
	ReadBytes   int `json:"read_buffer_bytes"` // all threads together
	// ReadBytesPerSecond is the read probe's figure: the bandwidth a
	// decode step's weight stream can get, the figure to divide weight
	// bytes per token by.
	ReadBytesPerSecond float64 `json:"read_bytes_per_second"`
	// ReadPrefetchBytes is the software prefetch distance of the fastest
	// read pass (0: none), of those the probe tries.
	ReadPrefetchBytes int `json:"read_prefetch_bytes"`
	// CopyBytesPerSecond counts bytes read plus bytes written by the copy
	// probe, as STREAM's copy does.
	CopyBytesPerSecond float64 `json:"copy_bytes_per_second"`
	// CopyReadBytesPerSecond is the read half of the copy traffic (the
	// figure this package reported as the read bandwidth before the read
	// probe).
	CopyReadBytesPerSecond float64 `json:"copy_read_bytes_per_second"`
}

// Measure runs the read probe (Threads buffers of ReadBytes/Threads read
// in parallel) and the copy probe (Threads buffers of BufferBytes copied in
// parallel), Reps passes each, and reports each probe's best pass. The
// buffers are written once before timing so that page faults are not
// counted; the read buffers are freed before the copy probe allocates.
func Measure(ctx context.Context, o Options) (Result, error) {
	if o.Threads <= 0 {
		o.Threads = 2
	}
	if o.BufferBytes <= 0 {
		o.BufferBytes = 64 << 20
	}
	if o.ReadBytes <= 0 {
		o.ReadBytes = 1 << 30
	}
	share := max(readGrain, o.ReadBytes/o.Threads&^(readGrain-1))
	o.ReadBytes = share * o.Threads
	if o.Reps <= 0 {
		o.Reps = 5
	}
	res := Result{Threads: o.Threads, BufferBytes: o.BufferBytes, ReadBytes: o.ReadBytes}

	// The read buffers live where the engine keeps weights (hostmem: huge
	// pages where the kernel offers them), so the bound is that of the
	// memory decode actually streams.
	bufs := make([][]byte, o.Threads)
	defer func() {
		for _, b := range bufs {
			_ = hostmem.Free(b)
		}
	}()
	for i := range bufs {
		b, err := hostmem.Alloc(share)
		if err != nil {
			return Result{}, fmt.Errorf("memory bandwidth: %w", err)
		}
		bufs[i] = b
		for j := 0; j < len(b); j += 4096 {
			b[j] = byte(j >> 12)
		}
	}
	sums := make([]uint64, o.Threads)
	for _, pfd := range prefetchDistances {
		d, err := timePasses(ctx, o.Reps, o.Threads, func(i int) { sums[i] = readStream(bufs[i], pfd) })
		if err != nil {
			return Result{}, err
		}
		if bps := float64(o.ReadBytes) / d.Seconds(); bps > res.ReadBytesPerSecond {
			res.ReadBytesPerSecond, res.ReadPrefetchBytes = bps, pfd
		}
	}
	for i, b := range bufs { // the read buffers go before the copy's come
		_ = hostmem.Free(b)
		bufs[i] = nil
	}

	src, dst := make([][]byte, o.Threads), make([][]byte, o.Threads)
	for i := range src {
		src[i], dst[i] = make([]byte, o.BufferBytes), make([]byte, o.BufferBytes)
		for j := range src[i] {
			src[i][j] = byte(j)
		}
		copy(dst[i], src[i])
	}
	best, err := timePasses(ctx, o.Reps, o.Threads, func(i int) { copy(dst[i], src[i]) })
	if err != nil {
		return Result{}, err
	}
	read := float64(o.Threads*o.BufferBytes) / best.Seconds()
	res.CopyBytesPerSecond, res.CopyReadBytesPerSecond = 2*read, read
	return res, nil
}

// timePasses runs pass(i) on threads goroutines at once, each locked to
// an OS thread, reps times, and returns the fastest run's duration.
func timePasses(ctx context.Context, reps, threads int, pass func(i int)) (time.Duration, error) {
	best := time.Duration(0)
	for range reps {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("memory bandwidth: %w", err)
		}
		var ready, wg sync.WaitGroup
		start := make(chan struct{})
		ready.Add(threads)
		wg.Add(threads)
		for i := range threads {
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				ready.Done()
				<-start
				pass(i)
			}()
		}
		ready.Wait()
		t0 := time.Now()
		close(start)
		wg.Wait()
		if d := time.Since(t0); best == 0 || d < best {
			best = d
		}
	}
	return best, nil
}

// readGrain is the granule of the read probe's buffers: the assembly loop
// reads 256 bytes per iteration.
const readGrain = 256

// readStreamGo is the portable read loop: eight independent sums of
// 64-bit words, so that the adds do not bound the loads.
func readStreamGo(b []byte) uint64 {
	var s [8]uint64
	for len(b) >= 64 {
		w := b[:64:64]
		for k := range s {
			s[k] += uint64(w[8*k]) | uint64(w[8*k+1])<<8 | uint64(w[8*k+2])<<16 | uint64(w[8*k+3])<<24 |
				uint64(w[8*k+4])<<32 | uint64(w[8*k+5])<<40 | uint64(w[8*k+6])<<48 | uint64(w[8*k+7])<<56
		}
		b = b[64:]
	}
	var t uint64
	for _, v := range s {
		t += v
	}
	for _, c := range b {
		t += uint64(c)
	}
	return t
}
