// Package kv manages the paged KV cache's blocks: a fixed pool of
// fixed-size blocks with reference counts, and per-sequence block tables.
// It decides which block holds which positions; the key/value data itself
// lives in a compute.KVStore on the device.
//
// A pool may have two tiers (NewTieredPool): hot blocks, which hold
// keys and values as written (f16) and are the only ones written to, and
// cold blocks, which hold them quantized at a fraction of the bytes. A
// sequence moves its full blocks that have fallen out of its recent
// window to the cold tier (Sequence.Demote), so that the same memory
// holds longer contexts and more cached prefixes.
package kv

import (
	"errors"
	"fmt"
	"sync"
)

// ErrPoolExhausted is returned when no free block is left.
var ErrPoolExhausted = errors.New("kv: block pool exhausted")

// Pool hands out block ids and counts references to them. Ids in
// [0, HotBlocks) are hot, ids in [HotBlocks, Blocks) cold. A block with a
// reference count of zero is free. With a byte budget (SetBudget) both
// tiers draw on it, each block counting its real size, so memory that
// cold blocks leave free holds more of them. Pool is safe for concurrent
// use.
type Pool struct {
	blockSize int
	hot       int

	mu       sync.Mutex
	refs     []int32
	free     []int32 // stack of free hot block ids
	freeCold []int32 // stack of free cold block ids
	// budget (0: none), the bytes of a hot and a cold block, and the
	// bytes allocated now
	budget, hotBytes, coldBytes, used int64
}

// NewPool returns a pool of n hot blocks of blockSize positions each.
func NewPool(n, blockSize int) *Pool { return NewTieredPool(n, 0, blockSize) }

// NewTieredPool returns a pool of hot hot blocks and cold cold blocks of
// blockSize positions each.
func NewTieredPool(hot, cold, blockSize int) *Pool {
	p := &Pool{blockSize: blockSize, hot: hot, refs: make([]int32, hot+cold),
		free: make([]int32, hot), freeCold: make([]int32, cold)}
	for i := range p.free {
		p.free[i] = int32(hot - 1 - i) // pop low ids first
	}
	for i := range p.freeCold {
		p.freeCold[i] = int32(hot + cold - 1 - i)
	}
	return p
}

// SetBudget makes both tiers draw on budget bytes, hot blocks counting
// hotBytes each and cold ones coldBytes. Call it before any allocation.
func (p *Pool) SetBudget(budget, hotBytes, coldBytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.budget, p.hotBytes, p.coldBytes = budget, hotBytes, coldBytes
}

// Budgeted reports whether the tiers share a byte budget: then freeing a
// block of either tier makes room for both.
func (p *Pool) Budgeted() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.budget > 0
}

// UsedBytes is the bytes of the allocated blocks (0 without a budget).
func (p *Pool) UsedBytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}

// BlockSize is the number of positions in one block.
func (p *Pool) BlockSize() int { return p.blockSize }

// Blocks is the pool's capacity in blocks, both tiers.
func (p *Pool) Blocks() int { return len(p.refs) }

// HotBlocks is the number of hot blocks; ColdBlocks of cold ones.
func (p *Pool) HotBlocks() int  { return p.hot }
func (p *Pool) ColdBlocks() int { return len(p.refs) - p.hot }

// Cold reports whether block b is in the cold tier.
func (p *Pool) Cold(b int32) bool { return int(b) >= p.hot }

// Free returns the number of free hot blocks (those new positions need).
func (p *Pool) Free() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.room(len(p.free), p.hotBytes)
}

// FreeCold returns the number of free cold blocks.
func (p *Pool) FreeCold() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.room(len(p.freeCold), p.coldBytes)
}

// room is how many of ids free blocks of size bytes the budget allows.
func (p *Pool) room(ids int, size int64) int {
	if p.budget == 0 || size == 0 {
		return ids
	}
	return min(ids, int(max(0, p.budget-p.used)/size))
}

// Alloc takes n free hot blocks with a reference count of one each. It
// takes all or nothing.
func (p *Pool) Alloc(n int) ([]int32, error) { return p.alloc(&p.free, n, p.hotBytes, 0, "") }

// AllocCold takes n free cold blocks, all or nothing.
func (p *Pool) AllocCold(n int) ([]int32, error) {
	return p.alloc(&p.freeCold, n, p.coldBytes, 0, "cold ")
}

// allocColdFor takes one cold block that will replace hot block old (to
// be released once its data is copied): the budget counts old as gone.
func (p *Pool) allocColdFor(old int32) (int32, error) {
	b, err := p.alloc(&p.freeCold, 1, p.coldBytes, p.hotBytes, "cold ")
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (p *Pool) alloc(free *[]int32, n int, size, credit int64, tier string) ([]int32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n > len(*free) {
		return nil, fmt.Errorf("%w: need %d %sblocks, %d free", ErrPoolExhausted, n, tier, len(*free))
	}
	if p.budget > 0 && p.used-credit+int64(n)*size > p.budget {
		return nil, fmt.Errorf("%w: need %d %sblocks of %d bytes, %d of %d bytes used", ErrPoolExhausted, n, tier, size, p.used, p.budget)
	}
	p.used += int64(n) * size
	out := make([]int32, n)
	for i := range out {
		b := (*free)[len(*free)-1]
		*free = (*free)[:len(*free)-1]
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
			if int(b) >= p.hot {
				p.freeCold = append(p.freeCold, b)
				p.used -= p.coldBytes
			} else {
				p.free = append(p.free, b)
				p.used -= p.hotBytes
			}
		}
	}
}

// Refs returns the reference count of block b.
func (p *Pool) Refs(b int32) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int(p.refs[b])
}
