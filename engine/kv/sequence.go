package kv

import "fmt"

// Copier copies one block's data into another on the device; it is how a
// sequence makes a shared block private before writing to it. A cold
// source is copied into the hot destination dequantized.
type Copier interface {
	CopyBlock(dst, src int32)
}

// Demoter quantizes a hot block's data into a cold block on the device.
type Demoter interface {
	DemoteBlock(dst, src int32)
}

// Sequence is one sequence's view of the cache: its block table and the
// number of positions filled. A Sequence is owned by one goroutine at a time.
type Sequence struct {
	pool   *Pool
	blocks []int32
	len    int
	// demoted is how many leading blocks Demote has dealt with (moved to
	// the cold tier, or found cold or shared).
	demoted int
}

// NewSequence returns an empty sequence drawing blocks from p.
func NewSequence(p *Pool) *Sequence { return &Sequence{pool: p} }

// Len is the number of positions whose keys and values are stored.
func (s *Sequence) Len() int { return s.len }

// Blocks is the block table; valid until the next call that changes s.
func (s *Sequence) Blocks() []int32 { return s.blocks }

// Adopt makes s start with the given cached blocks holding n positions,
// taking a reference to each (prefix-cache hit). s must be empty.
func (s *Sequence) Adopt(blocks []int32, n int) {
	if s.len != 0 || len(s.blocks) != 0 {
		panic("kv: Adopt on a non-empty sequence")
	}
	if need := (n + s.pool.blockSize - 1) / s.pool.blockSize; need > len(blocks) {
		panic(fmt.Sprintf("kv: %d positions need %d blocks, got %d", n, need, len(blocks)))
	}
	s.pool.Retain(blocks)
	s.blocks = append(s.blocks, blocks...)
	s.len = n
}

// Reserve makes room for n more positions: it allocates the blocks they
// need and, when the last partly filled block is shared with another
// sequence or the prefix cache, replaces it by a private copy
// (copy-on-write) so the new positions never write into shared memory.
func (s *Sequence) Reserve(n int, c Copier) error {
	bs := s.pool.blockSize
	if s.len%bs != 0 && n > 0 {
		last := len(s.blocks) - 1
		if b := s.blocks[last]; s.pool.Refs(b) > 1 {
			fresh, err := s.pool.Alloc(1)
			if err != nil {
				return fmt.Errorf("copy-on-write: %w", err)
			}
			c.CopyBlock(fresh[0], b)
			s.pool.Release([]int32{b})
			s.blocks[last] = fresh[0]
		}
	}
	if s.len%bs != 0 && n > 0 && s.pool.Cold(s.blocks[len(s.blocks)-1]) {
		// A partly filled cold block (a prefix adopted mid-block): new
		// positions are written hot.
		last := len(s.blocks) - 1
		fresh, err := s.pool.Alloc(1)
		if err != nil {
			return fmt.Errorf("copy of a cold block: %w", err)
		}
		c.CopyBlock(fresh[0], s.blocks[last])
		s.pool.Release(s.blocks[last : last+1])
		s.blocks[last] = fresh[0]
		s.demoted = min(s.demoted, last)
	}
	need := (s.len+n+bs-1)/bs - len(s.blocks)
	if need > 0 {
		fresh, err := s.pool.Alloc(need)
		if err != nil {
			return err
		}
		s.blocks = append(s.blocks, fresh...)
	}
	return nil
}

// Advance records that n more positions were written.
func (s *Sequence) Advance(n int) {
	if s.len+n > len(s.blocks)*s.pool.blockSize {
		panic("kv: Advance beyond reserved blocks")
	}
	s.len += n
}

// Truncate drops positions from n on, freeing whole blocks past it.
func (s *Sequence) Truncate(n int) {
	if n >= s.len {
		return
	}
	keep := (n + s.pool.blockSize - 1) / s.pool.blockSize
	s.pool.Release(s.blocks[keep:])
	s.blocks = s.blocks[:keep]
	s.len = n
	s.demoted = min(s.demoted, n/s.pool.blockSize)
}

// Trim frees the blocks reserved past the filled positions: after a
// speculative step reserved room for a draft and kept only part of it.
// Positions past Len in the last kept block hold stale data, which is
// never read (attention reads positions below Len) and is overwritten
// by the next positions written.
func (s *Sequence) Trim() {
	keep := (s.len + s.pool.blockSize - 1) / s.pool.blockSize
	if keep < len(s.blocks) {
		s.pool.Release(s.blocks[keep:])
		s.blocks = s.blocks[:keep]
	}
}

// Release returns every block to the pool; s is empty afterwards.
func (s *Sequence) Release() {
	s.pool.Release(s.blocks)
	s.blocks = s.blocks[:0]
	s.len = 0
	s.demoted = 0
}

// Demote moves to the cold tier, oldest first, the full blocks that end
// at least window positions before the sequence's length: each gets a
// cold block holding its data quantized (d.DemoteBlock) and its hot block
// is released. Blocks shared with other holders (the prefix cache, other
// sequences) stay as they are, since those hold their ids. It returns the
// number of blocks moved, and ErrPoolExhausted when the cold tier had no
// room (the caller may free some and call again). A pool without a cold
// tier moves nothing.
func (s *Sequence) Demote(window int, d Demoter) (int, error) {
	if s.pool.ColdBlocks() == 0 {
		return 0, nil
	}
	bs := s.pool.blockSize
	moved := 0
	// s.len-(end of the block) >= window, not end+window <= s.len: a
	// window near the int's maximum (a flag's "keep everything hot")
	// overflowed the sum and demoted every block.
	for ; s.demoted < len(s.blocks) && s.len-(s.demoted+1)*bs >= window; s.demoted++ {
		b := s.blocks[s.demoted]
		if s.pool.Cold(b) || s.pool.Refs(b) > 1 {
			continue
		}
		fresh, err := s.pool.allocColdFor(b)
		if err != nil {
			return moved, err
		}
		d.DemoteBlock(fresh, b)
		s.pool.Release([]int32{b})
		s.blocks[s.demoted] = fresh
		moved++
	}
	return moved, nil
}
