//go:build darwin

package metal

import (
	"fmt"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// kvStore keeps keys and values in one shared Metal buffer, in the CPU
// backend's layout (for each block, for each layer, K then V, each
// BlockSize×KVHeads×HeadDim elements), so a block's bytes are contiguous
// and ReadBlock/WriteBlock produce the same bytes as the CPU backend:
// prefix-cache snapshots move between the two.
type kvStore struct {
	b        *Backend
	cfg      compute.KVConfig
	t        *tensor // the buffer; rows×cols are nominal (1 × total bytes/4)
	elem     int     // bytes per element
	rowElems int
	perLayer int
	perBlock int
}

// NewKVStore implements compute.Backend.
func (b *Backend) NewKVStore(cfg compute.KVConfig) (compute.KVStore, error) {
	if cfg.ColdType != 0 {
		return nil, fmt.Errorf("kv cold tier %s: %w", cfg.ColdType, compute.ErrUnsupported)
	}
	var elem int
	switch cfg.Type {
	case quant.F16:
		elem = 2
	case quant.F32:
		elem = 4
	default:
		return nil, fmt.Errorf("kv type %s: %w", cfg.Type, compute.ErrUnsupported)
	}
	if cfg.Layers <= 0 || cfg.Blocks <= 0 || cfg.BlockSize <= 0 || cfg.KVHeads <= 0 || cfg.HeadDim <= 0 {
		return nil, fmt.Errorf("kv config %+v: every size must be positive", cfg)
	}
	s := &kvStore{b: b, cfg: cfg, elem: elem, rowElems: cfg.KVHeads * cfg.HeadDim}
	s.perLayer = cfg.BlockSize * s.rowElems
	s.perBlock = 2 * cfg.Layers * s.perLayer
	total := s.perBlock * cfg.Blocks * elem
	buf, mem, err := b.newBuffer(total)
	if err != nil {
		return nil, fmt.Errorf("kv store of %d bytes: %w", total, err)
	}
	// A nominal F32 shape covering the bytes (always a multiple of 4 bytes
	// because perBlock is even), so the tensor helpers apply.
	t, err := b.wrap(&tensor{rows: 1, cols: total / 4, typ: quant.F32, buf: buf, mem: mem, rowBytes: total})
	if err != nil {
		return nil, err
	}
	s.t = t
	return s, nil
}

func (s *kvStore) Config() compute.KVConfig { return s.cfg }

func (s *kvStore) BlockBytes() int { return s.perBlock * s.elem }

func (s *kvStore) block(blk int32) []byte {
	if blk < 0 || int(blk) >= s.cfg.Blocks {
		panic(fmt.Sprintf("kv block %d out of range [0,%d)", blk, s.cfg.Blocks))
	}
	n := s.BlockBytes()
	return s.t.mem[int(blk)*n : (int(blk)+1)*n]
}

// CopyBlock implements compute.KVStore, on the host after pending GPU work.
func (s *kvStore) CopyBlock(dst, src int32) {
	s.b.flush()
	copy(s.block(dst), s.block(src))
}

// ReadBlock implements compute.KVStore.
func (s *kvStore) ReadBlock(blk int32, dst []byte) error {
	if len(dst) != s.BlockBytes() {
		return fmt.Errorf("read block: buffer of %d bytes, block is %d", len(dst), s.BlockBytes())
	}
	if blk < 0 || int(blk) >= s.cfg.Blocks {
		return fmt.Errorf("read block %d: out of range [0,%d)", blk, s.cfg.Blocks)
	}
	s.b.flush()
	copy(dst, s.block(blk))
	return nil
}

// WriteBlock implements compute.KVStore.
func (s *kvStore) WriteBlock(blk int32, src []byte) error {
	if len(src) != s.BlockBytes() {
		return fmt.Errorf("write block: %d bytes, block is %d", len(src), s.BlockBytes())
	}
	if blk < 0 || int(blk) >= s.cfg.Blocks {
		return fmt.Errorf("write block %d: out of range [0,%d)", blk, s.cfg.Blocks)
	}
	s.b.flush()
	copy(s.block(blk), src)
	return nil
}
