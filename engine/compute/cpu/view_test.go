package cpu

import (
	"math"
	"testing"
)

func TestView(t *testing.T) {
	b := New(Options{Threads: 2})
	defer b.Close()
	// Two rows of two heads of size 4: a per-head norm through a 4×4 view
	// must equal normalising each head on its own.
	x := b.New(2, 8)
	in := []float32{1, 2, 3, 4, -1, 0.5, 2, 8, 0.1, 0.2, 0.3, 0.4, 5, -5, 5, -5}
	b.Upload(x, in)
	w := b.New(1, 4)
	b.Upload(w, []float32{1, 2, 0.5, 1})
	heads := b.View(x, 0, 4, 4)
	b.RMSNorm(heads, heads, w, 1e-6)
	got := make([]float32, 16)
	b.Download(x, got)
	ww := []float32{1, 2, 0.5, 1}
	for h := 0; h < 4; h++ {
		v := in[h*4 : h*4+4]
		var ss float64
		for _, e := range v {
			ss += float64(e * e)
		}
		scale := 1 / float32(math.Sqrt(float64(float32(ss/4)+1e-6)))
		for i, e := range v {
			if want := e * scale * ww[i]; got[h*4+i] != want {
				t.Fatalf("head %d elem %d: got %v, want %v", h, i, got[h*4+i], want)
			}
		}
	}
	// A view at an offset: rows [1, 2) of x as a 1×8 tensor, gathered by
	// GetRows and written by Add.
	before := append([]float32(nil), got...)
	row := b.View(x, 8, 1, 8)
	dst := b.New(1, 8)
	b.GetRows(dst, row, []int32{0})
	b.Add(row, row, dst)
	b.Download(x, got)
	for i := range got {
		want := before[i]
		if i >= 8 {
			want *= 2
		}
		if got[i] != want {
			t.Fatalf("elem %d: got %v, want %v", i, got[i], want)
		}
	}
	for _, bad := range [][3]int{{-1, 1, 1}, {0, 3, 8}, {12, 1, 8}, {0, 1, 0}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("View%v did not panic", bad)
				}
			}()
			b.View(x, bad[0], bad[1], bad[2])
		}()
	}
}
