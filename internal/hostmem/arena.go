package hostmem

import (
	"fmt"
	"sync"
)

// DefaultChunkBytes is the size of an Arena's chunks unless set.
const DefaultChunkBytes = 32 << 20

// Arena carves buffers out of shared chunks from Alloc, so that the many
// buffers smaller than a huge page (a 1B model's key and value projections
// are 0.6 MiB each, its query and output ones 2.4 MiB) sit in huge pages
// too, side by side. A buffer of at least half a chunk gets a mapping of its
// own. A chunk is unmapped once every buffer carved from it is released and
// the arena has moved on to another. The zero Arena is ready to use; it is
// safe for concurrent use.
type Arena struct {
	// ChunkBytes is the size of each chunk (DefaultChunkBytes when 0).
	ChunkBytes int

	mu  sync.Mutex
	cur *chunk
}

type chunk struct {
	mem  []byte
	off  int // bytes carved so far
	live int // buffers carved and not released
}

// arenaAlign is the alignment of every buffer an Arena carves: a cache
// line, the widest vector load.
const arenaAlign = 64

// Alloc returns n zeroed bytes, 64-byte aligned, and the function that
// releases them (call it once, when the buffer is no longer used).
func (a *Arena) Alloc(n int) ([]byte, func(), error) {
	size := a.ChunkBytes
	if size <= 0 {
		size = DefaultChunkBytes
	}
	if n <= 0 {
		return nil, func() {}, nil
	}
	if n >= size/2 {
		b, err := Alloc(n)
		if err != nil {
			return nil, nil, err
		}
		return b, func() { _ = Free(b) }, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.cur; c == nil || c.off+n > len(c.mem) {
		mem, err := Alloc(size)
		if err != nil {
			return nil, nil, fmt.Errorf("arena chunk: %w", err)
		}
		a.cur = &chunk{mem: mem}
	}
	c := a.cur
	b := c.mem[c.off : c.off+n : c.off+n]
	c.off = (c.off + n + arenaAlign - 1) &^ (arenaAlign - 1)
	c.live++
	var once sync.Once
	return b, func() { once.Do(func() { a.release(c) }) }, nil
}

// release drops one buffer of chunk c, unmapping c when it was the last
// and the arena carves from another chunk now.
func (a *Arena) release(c *chunk) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c.live--
	if c.live > 0 {
		return
	}
	if c == a.cur {
		a.cur = nil
	}
	_ = Free(c.mem)
}
