package cpu

import (
	"fmt"
	"runtime"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/internal/hostmem"
)

// The cold tier of the KV store (compute.KVConfig.ColdType): blocks
// Blocks to Blocks+ColdBlocks-1 hold keys and values quantized (Q8_0 or
// Q4_0) in the hot blocks' order — for each block, for each layer, the K
// rows then the V rows of its positions, each row KVHeads×HeadDim values
// in blocks of 32 — so one KV head's part of a row is a contiguous run of
// quantization blocks, and a block's bytes are contiguous (saved to and
// restored from prefix snapshots as they are). Attention reads a cold
// block by decoding the rows it needs to f16 (kvRows) and running the
// same flash arithmetic over them.

// coldTier is the cold part of a kvStore.
type coldTier struct {
	typ      quant.Type
	data     []byte
	rowBytes int // one position's K (or V) row, quantized
	perLayer int // bytes of K (or V) of one layer in one block
	perBlock int
	qblock   int // bytes of one quantization block of 32 values
}

// newColdTier gives s the cold tier its configuration asks for, if any.
func (s *kvStore) newColdTier() error {
	c, err := newColdTier(s.cfg, s.rowElems)
	if err != nil || c == nil {
		return err
	}
	s.coldT = c
	runtime.AddCleanup(s, freeHost, c.data)
	return nil
}

// newColdTier sizes the cold tier of cfg, or returns nil without one.
func newColdTier(cfg compute.KVConfig, rowElems int) (*coldTier, error) {
	if cfg.ColdType == 0 || cfg.ColdBlocks == 0 {
		return nil, nil
	}
	if cfg.ColdType != quant.Q8_0 && cfg.ColdType != quant.Q4_0 {
		return nil, fmt.Errorf("kv cold tier %s: %w", cfg.ColdType, compute.ErrUnsupported)
	}
	if cfg.Type != quant.F16 {
		return nil, fmt.Errorf("kv cold tier under a %s hot tier: %w", cfg.Type, compute.ErrUnsupported)
	}
	if cfg.HeadDim%quant.QK != 0 {
		return nil, fmt.Errorf("kv cold tier: head size %d is not a multiple of %d: %w", cfg.HeadDim, quant.QK, compute.ErrUnsupported)
	}
	rb, err := cfg.ColdType.RowBytes(rowElems)
	if err != nil {
		return nil, err
	}
	qb, _ := cfg.ColdType.RowBytes(quant.QK)
	c := &coldTier{typ: cfg.ColdType, rowBytes: rb, qblock: qb}
	c.perLayer = cfg.BlockSize * rb
	c.perBlock = 2 * cfg.Layers * c.perLayer
	// Outside the Go heap, like repacked weights: the tier is sized for a
	// whole cache of cold blocks and need not raise the collector's
	// target by as much.
	if c.data, err = hostmem.Alloc(c.perBlock * cfg.ColdBlocks); err != nil {
		return nil, fmt.Errorf("kv cold tier: %w", err)
	}
	return c, nil
}

// cold reports whether block id b is in the cold tier.
func (s *kvStore) cold(b int32) bool { return int(b) >= s.cfg.Blocks }

// coldOffset returns the byte offset of position pos's K row (V is
// perLayer further) in layer l of cold block b.
func (s *kvStore) coldOffset(b int32, layer, pos int) int {
	c := s.coldT
	return (int(b)-s.cfg.Blocks)*c.perBlock + layer*2*c.perLayer + (pos%s.cfg.BlockSize)*c.rowBytes
}

// ColdBlockBytes implements compute.TieredKV.
func (s *kvStore) ColdBlockBytes() int {
	if s.coldT == nil {
		return 0
	}
	return s.coldT.perBlock
}

// DemoteBlock implements compute.TieredKV: every K and V row of hot block
// src, quantized into cold block dst.
func (s *kvStore) DemoteBlock(dst, src int32) {
	c := s.coldT
	if c == nil || !s.cold(dst) || s.cold(src) {
		panic(fmt.Sprintf("DemoteBlock(%d, %d): not a cold and a hot block", dst, src))
	}
	row := make([]float32, s.rowElems)
	h := int(src) * s.perBlock
	d := (int(dst) - s.cfg.Blocks) * c.perBlock
	for r := 0; r < 2*s.cfg.Layers*s.cfg.BlockSize; r++ {
		quant.HalfToFloat(row, s.f16[h+r*s.rowElems:h+(r+1)*s.rowElems])
		if err := quant.Quantize(c.typ, c.data[d+r*c.rowBytes:d+(r+1)*c.rowBytes], row); err != nil {
			panic(err)
		}
	}
}

// promote decodes cold block src into hot block dst (a copy before
// writing into a partly filled cold block).
func (s *kvStore) promote(dst, src int32) {
	c := s.coldT
	row := make([]float32, s.rowElems)
	h := int(dst) * s.perBlock
	d := (int(src) - s.cfg.Blocks) * c.perBlock
	for r := 0; r < 2*s.cfg.Layers*s.cfg.BlockSize; r++ {
		if err := quant.Dequantize(c.typ, c.data[d+r*c.rowBytes:d+(r+1)*c.rowBytes], row); err != nil {
			panic(err)
		}
		quant.FloatToHalf(s.f16[h+r*s.rowElems:h+(r+1)*s.rowElems], row)
	}
}

// coldScratch is a worker's buffers for decoding cold rows.
type coldScratch struct{ k, v []uint16 }

// kvRows returns the keys and values of one KV head (its values start at
// element kvOff of a row) at positions [pos, pos+m) of layer l, which lie
// in one block of blocks, and the stride between their rows: the store's
// own f16 rows for a hot block, rows decoded into worker wk's scratch for
// a cold one.
func (j *attendJob) kvRows(wk int, blocks []int32, layer, pos, m, kvOff int) (k, v []uint16, stride int) {
	s := j.s
	b := blocks[pos/s.cfg.BlockSize]
	if !s.cold(b) {
		o := s.offset(blocks, layer, pos) + kvOff
		return s.f16[o:], s.f16[o+s.perLayer:], s.rowElems
	}
	sc := &j.cold[wk] // one per worker (New)
	hd := j.a.HeadDim
	sc.k, sc.v = growHalf(sc.k, m*hd), growHalf(sc.v, m*hd)
	c := s.coldT
	o := s.coldOffset(b, layer, pos) + kvOff/quant.QK*c.qblock
	quant.DecodeRowsHalf(c.typ, sc.k, c.data[o:], c.rowBytes, m, hd)
	quant.DecodeRowsHalf(c.typ, sc.v, c.data[o+c.perLayer:], c.rowBytes, m, hd)
	return sc.k, sc.v, hd
}
