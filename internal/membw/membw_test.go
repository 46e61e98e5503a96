package membw

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestMeasure(t *testing.T) {
	r, err := Measure(context.Background(), Options{Threads: 2, BufferBytes: 1 << 20, ReadBytes: 1<<20 + 300, Reps: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Threads != 2 || r.BufferBytes != 1<<20 || r.ReadBytes != 1<<20 {
		t.Errorf("options not echoed (each thread's read share rounded down to %d bytes): %+v", readGrain, r)
	}
	if !(r.ReadBytesPerSecond > 0) || !(r.CopyReadBytesPerSecond > 0) || r.CopyBytesPerSecond != 2*r.CopyReadBytesPerSecond {
		t.Errorf("bandwidth %+v: want read > 0, copy read > 0 and copy = 2·copy read", r)
	}
	if !slices.Contains(prefetchDistances, r.ReadPrefetchBytes) {
		t.Errorf("fastest read at prefetch distance %d, not one the probe tries (%v)", r.ReadPrefetchBytes, prefetchDistances)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Measure(ctx, Options{BufferBytes: 1 << 10, ReadBytes: 1 << 10}); err == nil {
		t.Error("cancelled context: no error")
	}
}

// TestReadStream checks that the read probe's loop reads every byte: its
// sum equals the portable loop's for lengths around its 256-byte grain.
func TestReadStream(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for _, n := range []int{0, 1, 63, 64, 255, 256, 257, 4096, 3*256 + 77, 64 << 10} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if got, want := readStream(b, 576), readStreamGo(b); got != want {
			t.Errorf("%d bytes: read probe sums %#x, portable loop %#x", n, got, want)
		}
	}
}

// BenchmarkRead reports the read probe's bandwidth with two threads.
func BenchmarkRead(b *testing.B) {
	for b.Loop() {
		r, err := Measure(context.Background(), Options{Threads: 2, BufferBytes: 1 << 20, Reps: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(r.ReadBytesPerSecond/1e9, "read-GB/s")
	}
}

// BenchmarkCopy reports DRAM copy bandwidth with two threads: the read
// half of a copy's traffic.
func BenchmarkCopy(b *testing.B) {
	for b.Loop() {
		r, err := Measure(context.Background(), Options{Threads: 2, BufferBytes: 64 << 20, ReadBytes: 1 << 20, Reps: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(r.CopyReadBytesPerSecond/1e9, "copy-read-GB/s")
	}
}
