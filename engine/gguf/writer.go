package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// Writer builds a GGUF v3 file. Metadata and tensor infos are collected
// first; because every tensor's byte size follows from its type and shape,
// all offsets are known before any tensor data is written, so tensors added
// with AddTensorFunc are streamed and a multi-GB file never has to be held
// in memory. The data alignment is 32, or general.alignment when that key is
// added.
type Writer struct {
	kv      []KV
	keys    map[string]bool
	tensors []wtensor
	names   map[string]bool
	padLast bool
}

type wtensor struct {
	info  TensorInfo
	data  []byte
	write func(io.Writer) error
}

// NewWriter returns an empty Writer.
func NewWriter() *Writer {
	return &Writer{keys: map[string]bool{}, names: map[string]bool{}}
}

// AddKV adds a metadata key. v is a Go value accepted by NewValue (integers,
// floats, bool, string, slices of those, or a Value, e.g. from ArrayOf for
// nested arrays). Keys are written in the order added; a duplicate key is an
// error.
func (w *Writer) AddKV(key string, v any) error {
	if w.keys[key] {
		return fmt.Errorf("gguf: duplicate metadata key %q", key)
	}
	val, err := NewValue(v)
	if err != nil {
		return fmt.Errorf("gguf: key %q: %w", key, err)
	}
	if key == "general.alignment" {
		a, ok := val.Uint()
		if val.typ != TypeUint32 || !ok || a == 0 || a&(a-1) != 0 || a > maxAlignment {
			return fmt.Errorf("gguf: general.alignment must be a uint32 power of two, got %s %v", val.typ, val)
		}
	}
	w.keys[key] = true
	w.kv = append(w.kv, KV{Key: key, Value: val})
	return nil
}

// PadLast makes WriteTo pad the last tensor's data to the alignment as
// well, as llama.cpp's writer does (llama-quantize's files end aligned);
// by default the file ends with the last tensor's last byte.
func (w *Writer) PadLast() { w.padLast = true }

// AddTensor adds a tensor whose bytes are in memory. shape is in GGML order
// (shape[0] is the row length); len(data) must equal the size implied by typ
// and shape. data is not copied and must stay unchanged until WriteTo.
func (w *Writer) AddTensor(name string, typ quant.Type, shape []uint64, data []byte) error {
	info, err := w.newInfo(name, typ, shape)
	if err != nil {
		return err
	}
	if int64(len(data)) != info.Size {
		return fmt.Errorf("gguf: tensor %q: %d data bytes, %s %v needs %d", name, len(data), typ, shape, info.Size)
	}
	w.add(wtensor{info: info, data: data})
	return nil
}

// AddTensorFunc adds a tensor whose bytes are produced by write during
// WriteTo. write must write exactly the size implied by typ and shape.
func (w *Writer) AddTensorFunc(name string, typ quant.Type, shape []uint64, write func(io.Writer) error) error {
	if write == nil {
		return fmt.Errorf("gguf: tensor %q: nil write func", name)
	}
	info, err := w.newInfo(name, typ, shape)
	if err != nil {
		return err
	}
	w.add(wtensor{info: info, write: write})
	return nil
}

func (w *Writer) add(t wtensor) {
	w.names[t.info.Name] = true
	w.tensors = append(w.tensors, t)
}

// TensorSize returns the bytes a tensor of type typ and GGML shape needs, or
// an error when the type is unknown, the row length is not a whole number of
// blocks, or the size overflows.
func TensorSize(typ quant.Type, shape []uint64) (int64, error) {
	if !typ.Known() {
		return 0, fmt.Errorf("unknown tensor type %d", uint32(typ))
	}
	if len(shape) > MaxDims {
		return 0, fmt.Errorf("%d dimensions > %d", len(shape), MaxDims)
	}
	elems := uint64(1)
	for _, d := range shape {
		if d != 0 && elems > math.MaxInt64/d {
			return 0, fmt.Errorf("shape %v overflows", shape)
		}
		elems *= d
	}
	bs := uint64(typ.BlockSize())
	if len(shape) > 0 && shape[0]%bs != 0 {
		return 0, fmt.Errorf("row length %d is not a multiple of the %s block size %d", shape[0], typ, bs)
	}
	blocks := elems / bs
	if bb := uint64(typ.BlockBytes()); blocks > math.MaxInt64/bb {
		return 0, fmt.Errorf("shape %v overflows", shape)
	}
	return int64(blocks * uint64(typ.BlockBytes())), nil
}

func (w *Writer) newInfo(name string, typ quant.Type, shape []uint64) (TensorInfo, error) {
	if w.names[name] {
		return TensorInfo{}, fmt.Errorf("gguf: duplicate tensor name %q", name)
	}
	size, err := TensorSize(typ, shape)
	if err != nil {
		return TensorInfo{}, fmt.Errorf("gguf: tensor %q: %w", name, err)
	}
	return TensorInfo{Name: name, Shape: append([]uint64(nil), shape...), Type: typ, Size: size}, nil
}

func (w *Writer) alignment() uint64 {
	for _, kv := range w.kv {
		if kv.Key == "general.alignment" {
			a, _ := kv.Value.Uint()
			return a
		}
	}
	return DefaultAlignment
}

// Tensors returns the tensor infos with the offsets WriteTo will use.
func (w *Writer) Tensors() []TensorInfo {
	align := w.alignment()
	out := make([]TensorInfo, len(w.tensors))
	off := uint64(0)
	for i, t := range w.tensors {
		out[i] = t.info
		out[i].Offset = off
		off = alignUp(off+uint64(t.info.Size), align)
	}
	return out
}

func alignUp(n, a uint64) uint64 { return (n + a - 1) / a * a }

// countWriter counts bytes and keeps the first error.
type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

// WriteTo writes the whole file to out and returns the bytes written.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	cw := &countWriter{w: out}
	bw := bufio.NewWriterSize(cw, 1<<20)
	enc := encoder{w: bw}
	enc.u32(magic)
	enc.u32(3)
	enc.u64(uint64(len(w.tensors)))
	enc.u64(uint64(len(w.kv)))
	for _, kv := range w.kv {
		enc.str(kv.Key)
		enc.u32(uint32(kv.Value.typ))
		enc.value(kv.Value)
	}
	infos := w.Tensors()
	for _, t := range infos {
		enc.str(t.Name)
		enc.u32(uint32(len(t.Shape)))
		for _, d := range t.Shape {
			enc.u64(d)
		}
		enc.u32(uint32(t.Type))
		enc.u64(t.Offset)
	}
	if enc.err != nil {
		return cw.n, fmt.Errorf("gguf: write header: %w", enc.err)
	}
	align := w.alignment()
	pos := uint64(enc.n)
	if err := pad(bw, alignUp(pos, align)-pos); err != nil {
		return cw.n, fmt.Errorf("gguf: write header padding: %w", err)
	}
	for i, t := range w.tensors {
		if t.data != nil || t.write == nil {
			if _, err := bw.Write(t.data); err != nil {
				return cw.n, fmt.Errorf("gguf: write tensor %q: %w", t.info.Name, err)
			}
		} else {
			lw := &limitWriter{w: bw, left: t.info.Size}
			if err := t.write(lw); err != nil {
				return cw.n, fmt.Errorf("gguf: write tensor %q: %w", t.info.Name, err)
			}
			if lw.left != 0 {
				return cw.n, fmt.Errorf("gguf: write tensor %q: %d of %d bytes written", t.info.Name, t.info.Size-lw.left, t.info.Size)
			}
		}
		if i < len(w.tensors)-1 || w.padLast {
			end := uint64(t.info.Size)
			if err := pad(bw, alignUp(end, align)-end); err != nil {
				return cw.n, fmt.Errorf("gguf: write padding: %w", err)
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return cw.n, fmt.Errorf("gguf: flush: %w", err)
	}
	return cw.n, nil
}

var errTooMuch = errors.New("write func wrote more bytes than the tensor size")

// limitWriter enforces that a streamed tensor writes exactly its size.
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		return 0, errTooMuch
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	return n, err
}

var zeros [64]byte

func pad(w io.Writer, n uint64) error {
	for n > 0 {
		k := min(n, uint64(len(zeros)))
		if _, err := w.Write(zeros[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// WriteFile writes the file atomically: to a temporary file in the same
// directory, fsynced, then renamed over path.
//
// An existing path must be a regular file (or a link to one): renaming over
// a device such as /dev/null, a named pipe or a socket would replace it with
// the model, and a directory cannot be replaced.
func (w *Writer) WriteFile(path string) (err error) {
	if st, serr := os.Stat(path); serr == nil {
		if st.IsDir() {
			return fmt.Errorf("gguf: write %s: it is a directory", path)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("gguf: write %s: it exists and is not a regular file (%s); name a new or regular file", path, FileKind(st.Mode()))
		}
	}
	dir := filepath.Dir(path)
	prefix := "." + filepath.Base(path) + ".tmp"
	removeAbandoned(dir, prefix)
	tmp, err := os.CreateTemp(dir, prefix+"*")
	if err != nil {
		return fmt.Errorf("gguf: write %s: %w", path, err)
	}
	// Best effort: where it fails, abandoned cannot lock the file either,
	// and leaves it.
	_ = lockTemp(tmp)
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = w.WriteTo(tmp); err != nil {
		return fmt.Errorf("gguf: write %s: %w", path, err)
	}
	if err = tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("gguf: write %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("gguf: sync %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("gguf: close %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("gguf: rename to %s: %w", path, err)
	}
	// Persist the rename itself; best effort, as not every platform can sync a directory.
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// removeAbandoned removes the temporary files an earlier WriteFile of the
// same path left in dir when it was cut off (kill -9, a crash, a power
// loss): prefix followed by os.CreateTemp's digits, which no writer holds
// (abandoned). They were never renamed to the path, so never taken for
// its file, but each kept up to a model's size of disk for good.
func removeAbandoned(dir, prefix string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" || !e.Type().IsRegular() {
			continue
		}
		if p := filepath.Join(dir, e.Name()); abandoned(p) {
			os.Remove(p)
		}
	}
}

// encoder writes little-endian GGUF primitives, keeping the first error.
type encoder struct {
	w   io.Writer
	n   int64
	err error
	buf [8]byte
}

func (e *encoder) write(p []byte) {
	if e.err != nil {
		return
	}
	n, err := e.w.Write(p)
	e.n += int64(n)
	e.err = err
}

func (e *encoder) u8(v uint8) { e.buf[0] = v; e.write(e.buf[:1]) }
func (e *encoder) u16(v uint16) {
	binary.LittleEndian.PutUint16(e.buf[:], v)
	e.write(e.buf[:2])
}
func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:], v)
	e.write(e.buf[:4])
}
func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:], v)
	e.write(e.buf[:8])
}
func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		n, err := io.WriteString(e.w, s)
		e.n += int64(n)
		e.err = err
	}
}
func (e *encoder) boolean(b bool) {
	if b {
		e.u8(1)
	} else {
		e.u8(0)
	}
}

// value writes v's payload (its type tag is written by the caller).
func (e *encoder) value(v Value) {
	switch v.typ {
	case TypeUint8, TypeInt8:
		e.u8(uint8(v.bits))
	case TypeUint16, TypeInt16:
		e.u16(uint16(v.bits))
	case TypeUint32, TypeInt32:
		e.u32(uint32(v.bits))
	case TypeUint64, TypeInt64, TypeFloat64:
		e.u64(v.bits)
	case TypeFloat32:
		e.u32(math.Float32bits(float32(math.Float64frombits(v.bits))))
	case TypeBool:
		e.boolean(v.bits != 0)
	case TypeString:
		e.str(v.str)
	case TypeArray:
		e.u32(uint32(v.elem))
		e.u64(uint64(v.Len()))
		e.array(v)
	}
}

func (e *encoder) array(v Value) {
	switch a := v.arr.(type) {
	case []uint8:
		e.write(a)
	case []int8:
		for _, x := range a {
			e.u8(uint8(x))
		}
	case []uint16:
		for _, x := range a {
			e.u16(x)
		}
	case []int16:
		for _, x := range a {
			e.u16(uint16(x))
		}
	case []uint32:
		for _, x := range a {
			e.u32(x)
		}
	case []int32:
		for _, x := range a {
			e.u32(uint32(x))
		}
	case []float32:
		for _, x := range a {
			e.u32(math.Float32bits(x))
		}
	case []bool:
		for _, x := range a {
			e.boolean(x)
		}
	case []string:
		for _, x := range a {
			e.str(x)
		}
	case []uint64:
		for _, x := range a {
			e.u64(x)
		}
	case []int64:
		for _, x := range a {
			e.u64(uint64(x))
		}
	case []float64:
		for _, x := range a {
			e.u64(math.Float64bits(x))
		}
	case []Value:
		for _, x := range a {
			e.u32(uint32(x.elem))
			e.u64(uint64(x.Len()))
			e.array(x)
		}
	}
}
