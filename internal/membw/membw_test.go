package membw

import (
	"context"
	"testing"
)

func TestMeasure(t *testing.T) {
	r, err := Measure(context.Background(), Options{Threads: 2, BufferBytes: 1 << 20, Reps: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Threads != 2 || r.BufferBytes != 1<<20 {
		t.Errorf("options not echoed: %+v", r)
	}
	if !(r.ReadBytesPerSecond > 0) || r.CopyBytesPerSecond != 2*r.ReadBytesPerSecond {
		t.Errorf("bandwidth %+v: want read > 0 and copy = 2·read", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Measure(ctx, Options{BufferBytes: 1 << 10}); err == nil {
		t.Error("cancelled context: no error")
	}
}

// BenchmarkCopy reports DRAM copy bandwidth with two threads; b.SetBytes
// counts the bytes read, so MB/s is the read bandwidth a decode step sees.
func BenchmarkCopy(b *testing.B) {
	for b.Loop() {
		r, err := Measure(context.Background(), Options{Threads: 2, BufferBytes: 64 << 20, Reps: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(r.ReadBytesPerSecond/1e9, "read-GB/s")
	}
}
