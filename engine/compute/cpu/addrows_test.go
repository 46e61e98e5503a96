package cpu

import "testing"

func TestAddRowsScaled(t *testing.T) {
	b := New(Options{Threads: 1})
	defer b.Close()
	dst, src := b.New(3, 2), b.New(2, 2)
	b.Upload(dst, []float32{1, 1, 1, 1, 1, 1})
	b.Upload(src, []float32{1, 2, 3, 4})
	b.AddRowsScaled(dst, src, []int32{2, 0}, []float32{0.5, -1})
	got := make([]float32, 6)
	b.Download(dst, got)
	want := []float32{-2, -3, 1, 1, 1.5, 2}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("out-of-range row did not panic")
		}
	}()
	b.AddRowsScaled(dst, src, []int32{3}, []float32{1})
}
