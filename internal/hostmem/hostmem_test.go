package hostmem

import (
	"testing"
	"unsafe"
)

func TestAllocSizes(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 4096, HugePage - 1, HugePage, 5*HugePage/2 + 123} {
		b, err := Alloc(n)
		if err != nil {
			t.Fatalf("Alloc(%d): %v", n, err)
		}
		if len(b) != n {
			t.Fatalf("Alloc(%d): %d bytes", n, len(b))
		}
		for i, c := range b {
			if c != 0 {
				t.Fatalf("Alloc(%d): byte %d is %d, want 0", n, i, c)
			}
		}
		for i := range b {
			b[i] = byte(i)
		}
		for i, c := range b {
			if c != byte(i) {
				t.Fatalf("Alloc(%d): byte %d reads %d after writing %d", n, i, c, byte(i))
			}
		}
		if err := Free(b); err != nil {
			t.Fatalf("Free(%d bytes): %v", n, err)
		}
	}
}

func TestAllocNegative(t *testing.T) {
	b, err := Alloc(-5)
	if err != nil || len(b) != 0 {
		t.Fatalf("Alloc(-5) = %d bytes, %v; want none and no error", len(b), err)
	}
}

func TestLargeBuffersAligned(t *testing.T) {
	if !alignsHuge {
		t.Skip("this platform has no transparent huge pages to align for")
	}
	for _, n := range []int{HugePage, 3*HugePage + 7} {
		b, err := Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		if p := uintptr(unsafe.Pointer(unsafe.SliceData(b))); p%HugePage != 0 {
			t.Errorf("Alloc(%d) starts at %#x, not on a %d-byte boundary", n, p, HugePage)
		}
		if err := Free(b); err != nil {
			t.Fatal(err)
		}
	}
}
