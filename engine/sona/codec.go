package sona

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/ruvllm/ruvllm/engine/train"
)

// ErrCorrupt is returned for serialised state that does not parse.
var ErrCorrupt = errors.New("corrupt learning state")

// Bounds on what a serialised state may claim, so that a damaged store
// never sizes an allocation.
const (
	maxItems  = 1 << 20 // list lengths
	maxFloats = 1 << 28 // one float slice (1 GiB)
	maxBytes  = 1 << 20 // one string
)

// encoder appends little-endian values to a buffer.
type encoder struct {
	b       []byte
	version uint32 // the format version written (see decoder.version)
}

func (e *encoder) u8(v uint8)   { e.b = append(e.b, v) }
func (e *encoder) u32(v uint32) { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *encoder) u64(v uint64) { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *encoder) int(v int)    { e.u64(uint64(int64(v))) }
func (e *encoder) f32(v float32) {
	e.u32(math.Float32bits(v))
}
func (e *encoder) f64(v float64) { e.u64(math.Float64bits(v)) }
func (e *encoder) bool(v bool) {
	if v {
		e.u8(1)
	} else {
		e.u8(0)
	}
}
func (e *encoder) str(s string) {
	e.u32(uint32(len(s)))
	e.b = append(e.b, s...)
}
func (e *encoder) f32s(v []float32) {
	e.u64(uint64(len(v)))
	for _, x := range v {
		e.f32(x)
	}
}
func (e *encoder) i32s(v []int32) {
	e.u64(uint64(len(v)))
	for _, x := range v {
		e.u32(uint32(x))
	}
}

// decoder reads what encoder wrote; the first error sticks and every
// later read returns zero values.
type decoder struct {
	b   []byte
	err error
	// version is the state's format version (records carry their key
	// from version 2 on).
	version uint32
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.fail("%d bytes wanted, %d left", n, len(d.b))
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u8() uint8 {
	if v := d.take(1); v != nil {
		return v[0]
	}
	return 0
}
func (d *decoder) u32() uint32 {
	if v := d.take(4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}
func (d *decoder) u64() uint64 {
	if v := d.take(8); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}
func (d *decoder) int() int {
	v := int64(d.u64())
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail("integer %d out of range", v)
		return 0
	}
	return int(v)
}
func (d *decoder) f32() float32 { return math.Float32frombits(d.u32()) }
func (d *decoder) f64() float64 { return math.Float64frombits(d.u64()) }
func (d *decoder) bool() bool {
	switch d.u8() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail("bad boolean")
	return false
}
func (d *decoder) str() string {
	n := d.u32()
	if n > maxBytes {
		d.fail("string of %d bytes", n)
		return ""
	}
	return string(d.take(int(n)))
}

// count reads a list length of items of at least size bytes each,
// bounded by max and by the bytes left.
func (d *decoder) count(max, size int) int {
	n := d.u64()
	if d.err != nil {
		return 0
	}
	if n > uint64(max) || n*uint64(size) > uint64(len(d.b)) {
		d.fail("list of %d items", n)
		return 0
	}
	return int(n)
}

func (d *decoder) f32s() []float32 {
	n := d.count(maxFloats, 4)
	if n == 0 {
		return nil
	}
	v := make([]float32, n)
	raw := d.take(4 * n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return v
}

func (d *decoder) i32s() []int32 {
	n := d.count(maxFloats, 4)
	if n == 0 {
		return nil
	}
	v := make([]int32, n)
	raw := d.take(4 * n)
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return v
}

// adapter writes a (nil allowed).
func (e *encoder) adapter(a *train.Adapter) {
	if a == nil {
		e.bool(false)
		return
	}
	e.bool(true)
	e.int(a.Rank)
	e.f32(a.Alpha)
	names := a.Names()
	e.u64(uint64(len(names)))
	for _, n := range names {
		p := a.Targets[n]
		e.int(p.Layer)
		e.str(p.Kind)
		e.int(p.In)
		e.int(p.Out)
		e.f32s(p.A)
		e.f32s(p.B)
	}
}

func (d *decoder) adapter() *train.Adapter {
	if !d.bool() {
		return nil
	}
	a := &train.Adapter{Rank: d.int(), Alpha: d.f32(), Targets: map[string]*train.Pair{}}
	if d.err == nil && (a.Rank < 1 || a.Rank > train.MaxRank) {
		d.fail("adapter rank %d", a.Rank)
	}
	n := d.count(maxItems, 20)
	for range n {
		p := &train.Pair{Layer: d.int(), Kind: d.str(), In: d.int(), Out: d.int(), A: d.f32s(), B: d.f32s()}
		if d.err != nil {
			return nil
		}
		if p.In <= 0 || p.Out <= 0 || len(p.A) != a.Rank*p.In || len(p.B) != p.Out*a.Rank {
			d.fail("adapter pair %d/%s of %d×%d with %d and %d values", p.Layer, p.Kind, p.Out, p.In, len(p.A), len(p.B))
			return nil
		}
		a.Targets[fmt.Sprintf("blk.%d.%s", p.Layer, p.Kind)] = p
	}
	if d.err != nil {
		return nil
	}
	return a
}

// optimizer writes an AdamW state (nil allowed).
func (e *encoder) optimizer(o *train.AdamW) {
	if o == nil {
		e.bool(false)
		return
	}
	e.bool(true)
	for _, v := range []float64{o.LR, o.Beta1, o.Beta2, o.Eps, o.WeightDecay} {
		e.f64(v)
	}
	e.int(o.Steps)
	e.adapter(o.M)
	e.adapter(o.V)
}

func (d *decoder) optimizer() *train.AdamW {
	if !d.bool() {
		return nil
	}
	o := &train.AdamW{LR: d.f64(), Beta1: d.f64(), Beta2: d.f64(), Eps: d.f64(), WeightDecay: d.f64(), Steps: d.int()}
	o.M, o.V = d.adapter(), d.adapter()
	if d.err == nil && (o.M == nil || o.V == nil || !o.M.SameShape(o.V)) {
		d.fail("optimizer moments")
	}
	return o
}
