// Package gguf reads and writes GGUF model files (versions 2 and 3,
// little-endian): typed metadata, tensor infos and zero-copy views of tensor
// data in a read-only memory mapping.
//
// Every count, length and offset in a file is checked against the bytes
// actually present before anything is allocated, so a truncated, lying or
// random file yields an error wrapping ErrMalformed, never a panic or a huge
// allocation.
package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"sort"
	"unsafe"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// Sentinel errors callers can branch on with errors.Is.
var (
	// ErrNotGGUF: the file does not start with the GGUF magic.
	ErrNotGGUF = errors.New("gguf: not a GGUF file")
	// ErrVersion: a GGUF version this package does not read (v1, or newer than v3).
	ErrVersion = errors.New("gguf: unsupported GGUF version")
	// ErrBigEndian: a big-endian GGUF file; only little-endian files are read.
	ErrBigEndian = errors.New("gguf: big-endian GGUF files are not supported")
	// ErrMalformed: a structurally invalid file (truncated, inconsistent counts,
	// out-of-range offsets, unknown types, duplicates...).
	ErrMalformed = errors.New("gguf: malformed file")
	// ErrNotFound: no tensor of that name.
	ErrNotFound = errors.New("gguf: tensor not found")
	// ErrClosed: the File was closed.
	ErrClosed = errors.New("gguf: file closed")
)

const (
	magic = 0x46554747 // "GGUF" read as a little-endian uint32

	// DefaultAlignment is the data alignment when general.alignment is absent.
	DefaultAlignment = 32
	// MaxDims is the most dimensions a GGML tensor has.
	MaxDims = 4
	// maxDepth bounds array nesting so hostile input cannot recurse deeply.
	maxDepth = 8
	// maxAlignment bounds general.alignment to something sane.
	maxAlignment = 1 << 30
)

// KV is one metadata key/value pair, in file order.
type KV struct {
	Key   string
	Value Value
}

// TensorInfo describes one tensor. Shape is in GGML order: Shape[0] is the
// row length (the contiguous dimension), so a weight matrix W with `out` rows
// of `in` inputs has Shape [in, out].
type TensorInfo struct {
	Name   string
	Shape  []uint64
	Type   quant.Type
	Offset uint64 // relative to the start of the data section, aligned
	Size   int64  // bytes of data
}

// Elements returns the number of elements (1 for a tensor of no dimensions).
func (t TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is a parsed GGUF file. Strings in KV and Tensors live in an arena
// owned by the File's parse (not in the mapping), so they stay valid even
// after Close; tensor data returned by TensorData is a view into the mapping
// and is valid only until Close.
type File struct {
	Version    uint32
	KV         []KV
	Tensors    []TensorInfo
	Alignment  uint64
	DataOffset int64 // absolute offset of the (aligned) data section
	Size       int64 // file size in bytes

	data    []byte // the whole file: mapping or memory
	mapped  bool   // data is a file mapping (Open), not memory of its own
	closer  func() error
	kvIndex map[string]int
	tIndex  map[string]int
}

// Parse parses a GGUF file held in memory. Tensor views returned by
// TensorData alias b, so b must not be modified while they are in use.
func Parse(b []byte) (*File, error) {
	d := &decoder{b: b}
	f := &File{Size: int64(len(b)), data: b}
	if err := d.parse(f); err != nil {
		return nil, err
	}
	return f, nil
}

// Close releases the mapping. Tensor data views become invalid; metadata
// (KV, Tensors) stays usable.
func (f *File) Close() error {
	if f.data == nil {
		return nil
	}
	f.data = nil
	if f.closer != nil {
		c := f.closer
		f.closer = nil
		return c()
	}
	return nil
}

// ReleaseData tells the system that the caller no longer reads the
// mapped pages that lie wholly inside b, a tensor's data (or part of it)
// from TensorData, so that they stop counting as the process's resident
// memory: a backend that copied a tensor into a layout of its own then
// does not hold it twice. Reading b again stays valid (the pages come back
// from the page cache). It does nothing for a file not opened by Open
// with a mapping, or for b outside the file.
func (f *File) ReleaseData(b []byte) error {
	if !f.mapped || len(b) == 0 || len(f.data) == 0 {
		return nil
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(f.data)))
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if start < base || start+uintptr(len(b)) > base+uintptr(len(f.data)) {
		return nil
	}
	page := uintptr(os.Getpagesize())
	lo := (start - base + page - 1) &^ (page - 1)
	hi := (start - base + uintptr(len(b))) &^ (page - 1)
	if lo >= hi {
		return nil
	}
	if err := dropPages(f.data[lo:hi]); err != nil {
		return fmt.Errorf("gguf: release %d bytes of tensor data: %w", hi-lo, err)
	}
	return nil
}

// Tensor returns the info of the named tensor.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.tIndex[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Tensors[i], true
}

// TensorData returns the named tensor's bytes as a zero-copy view into the
// file (capacity clipped to the tensor). Valid until Close; do not modify.
func (f *File) TensorData(name string) ([]byte, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	if f.data == nil {
		return nil, ErrClosed
	}
	start := f.DataOffset + int64(t.Offset)
	end := start + t.Size
	return f.data[start:end:end], nil
}

// Vector reads the named 1-D tensor of n elements as float32 (norms,
// biases, per-frequency factors), whatever its stored type.
func (f *File) Vector(name string, n int) ([]float32, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	if len(t.Shape) != 1 || t.Shape[0] != uint64(n) {
		return nil, fmt.Errorf("tensor %s has shape %v, want [%d]", name, t.Shape, n)
	}
	data, err := f.TensorData(name)
	if err != nil {
		return nil, err
	}
	v := make([]float32, n)
	if err := quant.Dequantize(t.Type, data, v); err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	return v, nil
}

// Get returns the value of a metadata key.
func (f *File) Get(key string) (Value, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return Value{}, false
	}
	return f.KV[i].Value, true
}

// String returns a string metadata value.
func (f *File) String(key string) (string, bool) {
	v, _ := f.Get(key)
	return v.Str()
}

// Uint returns an integer metadata value of any unsigned type, or of a
// signed type when non-negative.
func (f *File) Uint(key string) (uint64, bool) {
	v, _ := f.Get(key)
	return v.Uint()
}

// Int returns an integer metadata value that fits in an int64.
func (f *File) Int(key string) (int64, bool) {
	v, _ := f.Get(key)
	return v.Int()
}

// Float returns a numeric metadata value as float64.
func (f *File) Float(key string) (float64, bool) {
	v, _ := f.Get(key)
	return v.Float()
}

// Bool returns a bool metadata value.
func (f *File) Bool(key string) (bool, bool) {
	v, _ := f.Get(key)
	return v.Bool()
}

// Strings returns a string array (shared, do not modify).
func (f *File) Strings(key string) ([]string, bool) {
	v, _ := f.Get(key)
	return v.Strings()
}

// Float32s returns a float array as []float32.
func (f *File) Float32s(key string) ([]float32, bool) {
	v, _ := f.Get(key)
	return v.Float32s()
}

// Int32s returns an integer array as []int32 (see Value.Int32s).
func (f *File) Int32s(key string) ([]int32, bool) {
	v, _ := f.Get(key)
	return v.Int32s()
}

// Architecture returns general.architecture ("llama", "qwen2", ...), or "".
func (f *File) Architecture() string {
	s, _ := f.String("general.architecture")
	return s
}

// ArchUint reads "<arch>.<suffix>", e.g. ArchUint("block_count").
func (f *File) ArchUint(suffix string) (uint64, bool) {
	return f.Uint(f.Architecture() + "." + suffix)
}

// ArchFloat reads "<arch>.<suffix>" as a float.
func (f *File) ArchFloat(suffix string) (float64, bool) {
	return f.Float(f.Architecture() + "." + suffix)
}

// ArchString reads "<arch>.<suffix>" as a string.
func (f *File) ArchString(suffix string) (string, bool) {
	return f.String(f.Architecture() + "." + suffix)
}

// ArchBool reads "<arch>.<suffix>" as a bool.
func (f *File) ArchBool(suffix string) (bool, bool) {
	return f.Bool(f.Architecture() + "." + suffix)
}

// malformed builds an error wrapping ErrMalformed.
func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}

// decoder walks the header. Every read checks the bytes remaining first.
type decoder struct {
	b     []byte
	off   int
	arena arena
}

func (d *decoder) remaining() uint64 { return uint64(len(d.b) - d.off) }

func (d *decoder) take(n uint64, field string) ([]byte, error) {
	if n > d.remaining() {
		return nil, malformed("%s: need %d bytes at offset %d, %d left", field, n, d.off, d.remaining())
	}
	p := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return p, nil
}

func (d *decoder) u32(field string) (uint32, error) {
	p, err := d.take(4, field)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(p), nil
}

func (d *decoder) u64(field string) (uint64, error) {
	p, err := d.take(8, field)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(p), nil
}

func (d *decoder) str(field string) (string, error) {
	n, err := d.u64(field + " length")
	if err != nil {
		return "", err
	}
	p, err := d.take(n, field)
	if err != nil {
		return "", err
	}
	return d.arena.str(p), nil
}

func (d *decoder) parse(f *File) error {
	if len(d.b) < 4 {
		return fmt.Errorf("%w: %d bytes", ErrNotGGUF, len(d.b))
	}
	if binary.LittleEndian.Uint32(d.b) != magic {
		return fmt.Errorf("%w: it does not start with the GGUF magic", ErrNotGGUF)
	}
	d.off = 4
	version, err := d.u32("version")
	if err != nil {
		return err
	}
	switch {
	case version == 2 || version == 3:
	case version&0xffff == 0 && bits.ReverseBytes32(version) <= 0xffff:
		// A small version number stored big-endian.
		return fmt.Errorf("%w (version field %#x)", ErrBigEndian, version)
	default:
		return fmt.Errorf("%w: %d (want 2 or 3)", ErrVersion, version)
	}
	f.Version = version

	nTensors, err := d.u64("tensor count")
	if err != nil {
		return err
	}
	nKV, err := d.u64("metadata kv count")
	if err != nil {
		return err
	}
	// A KV needs at least 8 (key length) + 4 (type) + 1 bytes, a tensor info
	// 8 (name length) + 4 (n_dims) + 4 (type) + 8 (offset) bytes.
	if nKV > d.remaining()/13 {
		return malformed("metadata kv count %d exceeds what %d bytes can hold", nKV, d.remaining())
	}
	if nTensors > d.remaining()/24 {
		return malformed("tensor count %d exceeds what %d bytes can hold", nTensors, d.remaining())
	}

	f.KV = make([]KV, 0, nKV)
	f.kvIndex = make(map[string]int, nKV)
	for i := uint64(0); i < nKV; i++ {
		key, err := d.str(fmt.Sprintf("kv %d key", i))
		if err != nil {
			return err
		}
		if _, dup := f.kvIndex[key]; dup {
			return malformed("kv %d: duplicate key %q", i, key)
		}
		t, err := d.u32(fmt.Sprintf("kv %d (%s) type", i, key))
		if err != nil {
			return err
		}
		v, err := d.value(ValueType(t), 0, key)
		if err != nil {
			return fmt.Errorf("kv %d (%s): %w", i, key, err)
		}
		f.kvIndex[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}

	f.Alignment = DefaultAlignment
	if v, ok := f.Get("general.alignment"); ok {
		a, ok := v.Uint()
		if !ok || a == 0 || a&(a-1) != 0 || a > maxAlignment {
			return malformed("general.alignment %v is not a power of two in [1, 2^30]", v)
		}
		f.Alignment = a
	}

	f.Tensors = make([]TensorInfo, 0, nTensors)
	f.tIndex = make(map[string]int, nTensors)
	for i := uint64(0); i < nTensors; i++ {
		t, err := d.tensorInfo(i)
		if err != nil {
			return err
		}
		if _, dup := f.tIndex[t.Name]; dup {
			return malformed("tensor %d: duplicate name %q", i, t.Name)
		}
		if t.Offset%f.Alignment != 0 {
			return malformed("tensor %q: offset %d not aligned to %d", t.Name, t.Offset, f.Alignment)
		}
		f.tIndex[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}

	headerEnd := uint64(d.off)
	dataOff := (headerEnd + f.Alignment - 1) / f.Alignment * f.Alignment
	f.DataOffset = int64(dataOff)
	return f.checkRanges()
}

// checkRanges verifies every tensor lies inside the file and no two overlap.
func (f *File) checkRanges() error {
	if len(f.Tensors) == 0 {
		return nil
	}
	if f.DataOffset > f.Size {
		return malformed("data section at %d starts past the end of the %d-byte file", f.DataOffset, f.Size)
	}
	avail := uint64(f.Size - f.DataOffset)
	order := make([]int, len(f.Tensors))
	for i := range order {
		order[i] = i
	}
	for _, t := range f.Tensors {
		if t.Offset > avail || uint64(t.Size) > avail-t.Offset {
			return malformed("tensor %q: data [%d, +%d) extends past the %d-byte data section", t.Name, t.Offset, t.Size, avail)
		}
	}
	sort.Slice(order, func(a, b int) bool { return f.Tensors[order[a]].Offset < f.Tensors[order[b]].Offset })
	for k := 1; k < len(order); k++ {
		p, q := f.Tensors[order[k-1]], f.Tensors[order[k]]
		if p.Size > 0 && q.Size > 0 && p.Offset+uint64(p.Size) > q.Offset {
			return malformed("tensors %q and %q overlap", p.Name, q.Name)
		}
	}
	return nil
}

func (d *decoder) tensorInfo(i uint64) (TensorInfo, error) {
	name, err := d.str(fmt.Sprintf("tensor %d name", i))
	if err != nil {
		return TensorInfo{}, err
	}
	field := func(s string) string { return fmt.Sprintf("tensor %d (%s) %s", i, name, s) }
	nd, err := d.u32(field("n_dims"))
	if err != nil {
		return TensorInfo{}, err
	}
	if nd > MaxDims {
		return TensorInfo{}, malformed("%s: %d > %d", field("n_dims"), nd, MaxDims)
	}
	shape := make([]uint64, nd)
	elems := uint64(1)
	for j := range shape {
		n, err := d.u64(field(fmt.Sprintf("ne[%d]", j)))
		if err != nil {
			return TensorInfo{}, err
		}
		if n > math.MaxInt64 {
			return TensorInfo{}, malformed("%s: ne[%d] = %d is negative as int64", field("shape"), j, n)
		}
		hi, lo := bits.Mul64(elems, n)
		if hi != 0 || lo > math.MaxInt64 {
			return TensorInfo{}, malformed("%s: element count overflows", field("shape"))
		}
		elems = lo
		shape[j] = n
	}
	tt, err := d.u32(field("type"))
	if err != nil {
		return TensorInfo{}, err
	}
	typ := quant.Type(tt)
	if !typ.Known() {
		return TensorInfo{}, malformed("%s: unknown tensor type %d", field("type"), tt)
	}
	bs := uint64(typ.BlockSize())
	rowLen := uint64(1)
	if nd > 0 {
		rowLen = shape[0]
	}
	if rowLen%bs != 0 {
		return TensorInfo{}, malformed("%s: row length %d is not a multiple of the %s block size %d", field("shape"), rowLen, typ, bs)
	}
	hi, size := bits.Mul64(elems/bs, uint64(typ.BlockBytes()))
	if hi != 0 || size > math.MaxInt64 {
		return TensorInfo{}, malformed("%s: byte size overflows", field("shape"))
	}
	off, err := d.u64(field("offset"))
	if err != nil {
		return TensorInfo{}, err
	}
	return TensorInfo{Name: name, Shape: shape, Type: typ, Offset: off, Size: int64(size)}, nil
}

// value decodes one value of type t. depth counts enclosing arrays.
func (d *decoder) value(t ValueType, depth int, field string) (Value, error) {
	switch t {
	case TypeUint8, TypeInt8, TypeUint16, TypeInt16, TypeUint32, TypeInt32,
		TypeUint64, TypeInt64, TypeFloat32, TypeFloat64, TypeBool:
		p, err := d.take(uint64(t.size()), field)
		if err != nil {
			return Value{}, err
		}
		return decodeScalar(t, p)
	case TypeString:
		s, err := d.str(field)
		if err != nil {
			return Value{}, err
		}
		return stringValue(s), nil
	case TypeArray:
		return d.array(depth, field)
	}
	return Value{}, malformed("%s: unknown value type %d", field, uint32(t))
}

func decodeScalar(t ValueType, p []byte) (Value, error) {
	switch t {
	case TypeUint8:
		return scalar(t, uint64(p[0])), nil
	case TypeInt8:
		return scalar(t, uint64(int64(int8(p[0])))), nil
	case TypeUint16:
		return scalar(t, uint64(binary.LittleEndian.Uint16(p))), nil
	case TypeInt16:
		return scalar(t, uint64(int64(int16(binary.LittleEndian.Uint16(p))))), nil
	case TypeUint32:
		return scalar(t, uint64(binary.LittleEndian.Uint32(p))), nil
	case TypeInt32:
		return scalar(t, uint64(int64(int32(binary.LittleEndian.Uint32(p))))), nil
	case TypeUint64, TypeInt64:
		return scalar(t, binary.LittleEndian.Uint64(p)), nil
	case TypeFloat32:
		return scalar(t, math.Float64bits(float64(math.Float32frombits(binary.LittleEndian.Uint32(p))))), nil
	case TypeFloat64:
		return scalar(t, binary.LittleEndian.Uint64(p)), nil
	case TypeBool:
		if p[0] > 1 {
			return Value{}, malformed("bool value %d is neither 0 nor 1", p[0])
		}
		return boolValue(p[0] == 1), nil
	}
	return Value{}, malformed("unknown scalar type %d", uint32(t))
}

func (d *decoder) array(depth int, field string) (Value, error) {
	if depth >= maxDepth {
		return Value{}, malformed("%s: arrays nested deeper than %d", field, maxDepth)
	}
	et, err := d.u32(field + " element type")
	if err != nil {
		return Value{}, err
	}
	elem := ValueType(et)
	if !elem.Valid() {
		return Value{}, malformed("%s: unknown array element type %d", field, et)
	}
	n, err := d.u64(field + " array length")
	if err != nil {
		return Value{}, err
	}
	// Bound the count by the smallest encoding of one element before
	// allocating anything.
	minSize := uint64(elem.size())
	switch elem {
	case TypeString:
		minSize = 8
	case TypeArray:
		minSize = 12
	}
	if n > d.remaining()/minSize {
		return Value{}, malformed("%s: %s array of %d elements exceeds the %d bytes left", field, elem, n, d.remaining())
	}
	if sz := elem.size(); sz > 0 {
		p, _ := d.take(n*uint64(sz), field) // checked above
		return decodeScalarArray(elem, p, int(n), field)
	}
	if elem == TypeString {
		out := make([]string, n)
		for i := range out {
			// Hot loop for vocabularies: no error strings built on success.
			if d.remaining() < 8 {
				return Value{}, malformed("%s[%d] length: truncated at offset %d", field, i, d.off)
			}
			l := binary.LittleEndian.Uint64(d.b[d.off:])
			d.off += 8
			if l > d.remaining() {
				return Value{}, malformed("%s[%d]: length %d exceeds the %d bytes left", field, i, l, d.remaining())
			}
			out[i] = d.arena.str(d.b[d.off : d.off+int(l)])
			d.off += int(l)
		}
		return arrayValue(TypeString, out), nil
	}
	out := make([]Value, n)
	for i := range out {
		v, err := d.array(depth+1, fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return Value{}, err
		}
		out[i] = v
	}
	return arrayValue(TypeArray, out), nil
}

func decodeScalarArray(elem ValueType, p []byte, n int, field string) (Value, error) {
	le := binary.LittleEndian
	var arr any
	switch elem {
	case TypeUint8:
		arr = append([]uint8(nil), p...)
	case TypeInt8:
		a := make([]int8, n)
		for i := range a {
			a[i] = int8(p[i])
		}
		arr = a
	case TypeBool:
		a := make([]bool, n)
		for i := range a {
			if p[i] > 1 {
				return Value{}, malformed("%s[%d]: bool value %d is neither 0 nor 1", field, i, p[i])
			}
			a[i] = p[i] == 1
		}
		arr = a
	case TypeUint16:
		a := make([]uint16, n)
		for i := range a {
			a[i] = le.Uint16(p[2*i:])
		}
		arr = a
	case TypeInt16:
		a := make([]int16, n)
		for i := range a {
			a[i] = int16(le.Uint16(p[2*i:]))
		}
		arr = a
	case TypeUint32:
		a := make([]uint32, n)
		for i := range a {
			a[i] = le.Uint32(p[4*i:])
		}
		arr = a
	case TypeInt32:
		a := make([]int32, n)
		for i := range a {
			a[i] = int32(le.Uint32(p[4*i:]))
		}
		arr = a
	case TypeFloat32:
		a := make([]float32, n)
		for i := range a {
			a[i] = math.Float32frombits(le.Uint32(p[4*i:]))
		}
		arr = a
	case TypeUint64:
		a := make([]uint64, n)
		for i := range a {
			a[i] = le.Uint64(p[8*i:])
		}
		arr = a
	case TypeInt64:
		a := make([]int64, n)
		for i := range a {
			a[i] = int64(le.Uint64(p[8*i:]))
		}
		arr = a
	case TypeFloat64:
		a := make([]float64, n)
		for i := range a {
			a[i] = math.Float64frombits(le.Uint64(p[8*i:]))
		}
		arr = a
	default:
		return Value{}, malformed("%s: %s is not a scalar element type", field, elem)
	}
	return arrayValue(elem, arr), nil
}

// arena copies strings out of the file into a few large chunks, so that a
// 150k-entry vocabulary costs a handful of allocations rather than one per
// token, and the strings do not point into the mapping (they survive Close).
// A chunk is only ever appended to, so the bytes under a returned string
// never change.
type arena struct {
	buf  []byte
	next int // size of the next chunk
}

const (
	arenaMinChunk = 4 << 10
	arenaMaxChunk = 1 << 20
	arenaLarge    = 16 << 10 // strings this long get their own allocation
)

func (a *arena) str(p []byte) string {
	if len(p) == 0 {
		return ""
	}
	if len(p) >= arenaLarge {
		return string(p)
	}
	if cap(a.buf)-len(a.buf) < len(p) {
		if a.next < arenaMinChunk {
			a.next = arenaMinChunk
		}
		a.buf = make([]byte, 0, a.next)
		if a.next < arenaMaxChunk {
			a.next *= 2
		}
	}
	start := len(a.buf)
	a.buf = append(a.buf, p...)
	return unsafe.String(&a.buf[start], len(p))
}
