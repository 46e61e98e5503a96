// Package kv manages the paged KV cache's blocks: a fixed pool of
// fixed-size blocks with reference counts, and per-sequence block tables.
// It decides which block holds which positions; the key/value data itself
// lives in a compute.KVStore on the device.
package kv

import (
	"errors"
	"fmt"
	"sync"
)

// ErrPoolExhausted is returned when no free block is left.
var ErrPoolExhausted = errors.New("kv: block pool exhausted")

// Pool hands out block ids in [0, Blocks) and counts references to them.
// A block with a reference count of zero is free. Pool is safe for
// concurrent use.
type Pool struct {
	blockSize int

	mu   sync.Mutex
	refs []int32
	free []int32 // stack of free block ids
}

// NewPool returns a pool of n blocks of blockSize positions each.
func NewPool(n, blockSize int) *Pool {
	p := &Pool{blockSize: blockSize, refs: make([]int32, n), free: make([]int32, n)}
	for i := range p.free {
		p.free[i] = int32(n - 1 - i) // pop low ids first
	}
	return p
}

// BlockSize is the number of positions in one block.
func (p *Pool) BlockSize() int { return p.blockSize }

// Blocks is the pool's capacity in blocks.
func (p *Pool) Blocks() int { return len(p.refs) }

// Free returns the number of free blocks.
func (p *Pool) Free() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}

// Alloc takes n free blocks with a reference count of one each. It takes
// all or nothing.
func (p *Pool) Alloc(n int) ([]int32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n > len(p.free) {
		return nil, fmt.Errorf("%w: need %d blocks, %d free", ErrPoolExhausted, n, len(p.free))
	}
	out := make([]int32, n)
	for i := range out {
		b := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		p.refs[b] = 1
		out[i] = b
	}
	return out, nil
}

// Retain adds one reference to each block.
func (p *Pool) Retain(blocks []int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range blocks {
		if p.refs[b] <= 0 {
			panic(fmt.Sprintf("kv: retain of free block %d", b))
		}
		p.refs[b]++
	}
}

// Release drops one reference to each block; blocks reaching zero are free.
func (p *Pool) Release(blocks []int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range blocks {
		if p.refs[b] <= 0 {
			panic(fmt.Sprintf("kv: release of free block %d", b))
		}
		p.refs[b]--
		if p.refs[b] == 0 {
			p.free = append(p.free, b)
		}
	}
}

// Refs returns the reference count of block b.
func (p *Pool) Refs(b int32) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int(p.refs[b])
}
