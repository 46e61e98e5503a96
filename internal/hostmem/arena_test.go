package hostmem

import (
	"testing"
	"unsafe"
)

func TestArenaCarvesAlignedDisjointBuffers(t *testing.T) {
	a := &Arena{ChunkBytes: 1 << 20}
	sizes := []int{1, 100, 4096, 300 << 10, 7, 200 << 10, 600 << 10, 3 << 20}
	var bufs [][]byte
	var releases []func()
	for _, n := range sizes {
		b, release, err := a.Alloc(n)
		if err != nil {
			t.Fatalf("Alloc(%d): %v", n, err)
		}
		if len(b) != n || cap(b) != n {
			t.Fatalf("Alloc(%d): len %d cap %d", n, len(b), cap(b))
		}
		if p := uintptr(unsafe.Pointer(unsafe.SliceData(b))); p%arenaAlign != 0 {
			t.Fatalf("Alloc(%d) at %#x: not %d-byte aligned", n, p, arenaAlign)
		}
		for i, c := range b {
			if c != 0 {
				t.Fatalf("Alloc(%d): byte %d is %d, want 0", n, i, c)
			}
		}
		bufs, releases = append(bufs, b), append(releases, release)
	}
	// Fill each buffer with its own index and check no other buffer
	// overwrote it.
	for i, b := range bufs {
		for j := range b {
			b[j] = byte(i + 1)
		}
	}
	for i, b := range bufs {
		for j, c := range b {
			if c != byte(i+1) {
				t.Fatalf("buffer %d (%d bytes): byte %d is %d, want %d", i, len(b), j, c, i+1)
			}
		}
	}
	for _, r := range releases {
		r()
		r() // a second call does nothing
	}
	if a.cur != nil {
		t.Errorf("arena keeps a chunk after every buffer was released")
	}
}

func TestArenaChunkLifetime(t *testing.T) {
	a := &Arena{ChunkBytes: 1 << 20}
	b1, r1, _ := a.Alloc(400 << 10)
	first := a.cur
	_, r2, _ := a.Alloc(400 << 10)
	if a.cur != first {
		t.Fatalf("two 400 KiB buffers did not share a 1 MiB chunk")
	}
	_, r3, _ := a.Alloc(400 << 10) // does not fit: a new chunk
	if a.cur == first {
		t.Fatalf("a third 400 KiB buffer fit a 1 MiB chunk with 800 KiB carved")
	}
	r1()
	if first.live != 1 {
		t.Fatalf("first chunk has %d live buffers after one release, want 1", first.live)
	}
	b1 = b1[:0]
	r2()
	if first.live != 0 {
		t.Fatalf("first chunk has %d live buffers, want 0", first.live)
	}
	r3()
	if a.cur != nil {
		t.Fatalf("the current chunk stays after its only buffer was released")
	}
	_ = b1
}
