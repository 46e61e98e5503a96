// Package safetensors reads the safetensors format used by Hugging Face
// (and by PEFT for LoRA adapters): an 8-byte little-endian header length, a
// JSON header mapping tensor names to dtype, shape and data offsets, then
// the raw little-endian tensor bytes.
//
// Every length, shape and offset is checked against the bytes present, so a
// truncated or hostile file yields an error wrapping ErrMalformed, never a
// panic or a huge allocation.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// ErrMalformed is wrapped by every error about a structurally invalid file.
var ErrMalformed = errors.New("safetensors: malformed file")

// ErrUnsupportedDType is returned by Floats for a dtype it cannot convert.
var ErrUnsupportedDType = errors.New("safetensors: unsupported dtype")

// MaxHeader bounds the JSON header (the reference implementation uses 100 MB).
const MaxHeader = 100 << 20

// Tensor describes one tensor of a file. Shape is in row-major (PyTorch)
// order: the last dimension is contiguous.
type Tensor struct {
	Name  string
	DType string // "F32", "F16", "BF16", "F64", "I32", ...
	Shape []uint64
	// Begin and End are the byte range of the data, relative to the start
	// of the data section.
	Begin, End uint64
}

// Elements is the number of elements (1 for a scalar).
func (t Tensor) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is a parsed safetensors file held in memory.
type File struct {
	// Metadata is the optional "__metadata__" string map.
	Metadata map[string]string
	// Tensors in data-offset order.
	Tensors []Tensor
	data    []byte
	index   map[string]int
}

// dtypeSize maps safetensors dtype names to element sizes in bytes.
var dtypeSize = map[string]uint64{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
}

type headerEntry struct {
	DType       string   `json:"dtype"`
	Shape       []uint64 `json:"shape"`
	DataOffsets []uint64 `json:"data_offsets"`
}

// JSONProblem describes a JSON decoding error by position and kind only.
// The decoder's own messages quote the offending bytes, and a file's bytes
// must not reach an error a client reads: the file may not be what it
// claims to be.
func JSONProblem(err error) string { return jsonProblem(err) }

func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("syntax error at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q has the wrong type", typ.Field)
	}
	return "malformed JSON"
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// Parse parses a safetensors file held in memory. Tensor data returned by
// Data aliases b.
func Parse(b []byte) (*File, error) {
	if len(b) < 8 {
		return nil, malformed("%d bytes, shorter than the 8-byte header length", len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if n > MaxHeader {
		return nil, malformed("header length %d exceeds %d", n, MaxHeader)
	}
	if n > uint64(len(b)-8) {
		return nil, malformed("header length %d exceeds the %d bytes that follow", n, len(b)-8)
	}
	data := b[8+n:]
	f := &File{data: data, index: map[string]int{}}
	if err := f.readHeader(b[8:8+n], uint64(len(data))); err != nil {
		return nil, err
	}
	sort.Slice(f.Tensors, func(i, j int) bool {
		if f.Tensors[i].Begin != f.Tensors[j].Begin {
			return f.Tensors[i].Begin < f.Tensors[j].Begin
		}
		return f.Tensors[i].Name < f.Tensors[j].Name
	})
	// Tensors must not overlap (zero-size tensors may share an offset).
	var end uint64
	for i, t := range f.Tensors {
		if t.Begin < end && t.End > t.Begin {
			return nil, malformed("tensor %q [%d,%d) overlaps the previous tensor", t.Name, t.Begin, t.End)
		}
		end = max(end, t.End)
		f.index[t.Name] = i
	}
	return f, nil
}

// MaxTensors bounds a header's entries: files hold thousands at most,
// and a 100 MB header of tiny entries took 1.4 GB decoded whole.
const MaxTensors = 1 << 18

// readHeader decodes the JSON header entry by entry (never the whole
// object into memory at once) into f's tensors and metadata.
func (f *File) readHeader(hdr []byte, dataLen uint64) error {
	dec := json.NewDecoder(bytes.NewReader(hdr))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return malformed("the header is not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return malformed("the header is not valid JSON (%s)", jsonProblem(err))
		}
		name, _ := tok.(string)
		if seen[name] {
			return malformed("%q appears twice in the header", name)
		}
		seen[name] = true
		if name == "__metadata__" {
			if err := dec.Decode(&f.Metadata); err != nil {
				return malformed("__metadata__: %s", jsonProblem(err))
			}
			continue
		}
		if len(f.Tensors) == MaxTensors {
			return malformed("more than %d tensors", MaxTensors)
		}
		var e headerEntry
		if err := dec.Decode(&e); err != nil {
			return malformed("tensor %q: %s", name, jsonProblem(err))
		}
		t, err := check(name, e, dataLen)
		if err != nil {
			return err
		}
		f.Tensors = append(f.Tensors, t)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return malformed("the header is not valid JSON (%s)", jsonProblem(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return malformed("the header has data after its object")
	}
	return nil
}

// check validates one header entry against the data section's size.
func check(name string, e headerEntry, dataLen uint64) (Tensor, error) {
	size, ok := dtypeSize[e.DType]
	if !ok {
		return Tensor{}, malformed("tensor %q: unknown dtype %q", name, e.DType)
	}
	if len(e.DataOffsets) != 2 {
		return Tensor{}, malformed("tensor %q: data_offsets has %d values, want 2", name, len(e.DataOffsets))
	}
	if len(e.Shape) > 8 {
		return Tensor{}, malformed("tensor %q: %d dimensions", name, len(e.Shape))
	}
	begin, end := e.DataOffsets[0], e.DataOffsets[1]
	if begin > end || end > dataLen {
		return Tensor{}, malformed("tensor %q: data [%d,%d) outside the %d data bytes", name, begin, end, dataLen)
	}
	elems := uint64(1)
	for _, d := range e.Shape {
		if d != 0 && elems > math.MaxUint64/d {
			return Tensor{}, malformed("tensor %q: shape %v overflows", name, e.Shape)
		}
		elems *= d
	}
	if elems > (math.MaxUint64/size) || elems*size != end-begin {
		return Tensor{}, malformed("tensor %q: %s %v needs %d bytes, data_offsets give %d", name, e.DType, e.Shape, elems*size, end-begin)
	}
	return Tensor{Name: name, DType: e.DType, Shape: e.Shape, Begin: begin, End: end}, nil
}

// ReadFile reads and parses the file at path, refusing files over maxBytes
// (0: no limit).
func ReadFile(path string, maxBytes int64) (*File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if maxBytes > 0 && st.Size() > maxBytes {
		return nil, fmt.Errorf("safetensors %s: %d bytes exceeds the limit of %d", path, st.Size(), maxBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", path, err)
	}
	return f, nil
}

// Tensor returns the description of the named tensor.
func (f *File) Tensor(name string) (Tensor, bool) {
	i, ok := f.index[name]
	if !ok {
		return Tensor{}, false
	}
	return f.Tensors[i], true
}

// Data returns the raw bytes of the named tensor (a view, not a copy).
func (f *File) Data(name string) ([]byte, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("safetensors: no tensor %q", name)
	}
	return f.data[t.Begin:t.End:t.End], nil
}

// Floats returns the named tensor converted to float32 (from F32, F16,
// BF16 or F64).
func (f *File) Floats(name string) ([]float32, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("safetensors: no tensor %q", name)
	}
	raw := f.data[t.Begin:t.End]
	out := make([]float32, t.Elements())
	le := binary.LittleEndian
	switch t.DType {
	case "F32":
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
	case "F64":
		for i := range out {
			out[i] = float32(math.Float64frombits(le.Uint64(raw[8*i:])))
		}
	case "F16":
		for i := range out {
			out[i] = quant.FP16ToFP32(le.Uint16(raw[2*i:]))
		}
	case "BF16":
		for i := range out {
			out[i] = quant.BF16ToFP32(le.Uint16(raw[2*i:]))
		}
	default:
		return nil, fmt.Errorf("tensor %q: %w %s", name, ErrUnsupportedDType, t.DType)
	}
	return out, nil
}

// Encode builds a safetensors file from F32 tensors (shape in row-major
// order), for tests and for exporting adapters. Tensors are laid out in
// the order given.
func Encode(names []string, shapes [][]uint64, values [][]float32, metadata map[string]string) ([]byte, error) {
	if len(names) != len(shapes) || len(names) != len(values) {
		return nil, errors.New("safetensors: names, shapes and values differ in length")
	}
	header := map[string]any{}
	if metadata != nil {
		header["__metadata__"] = metadata
	}
	var off uint64
	for i, n := range names {
		elems := uint64(1)
		for _, d := range shapes[i] {
			elems *= d
		}
		if elems != uint64(len(values[i])) {
			return nil, fmt.Errorf("safetensors: tensor %q: shape %v has %d elements, %d values", n, shapes[i], elems, len(values[i]))
		}
		header[n] = headerEntry{DType: "F32", Shape: shapes[i], DataOffsets: []uint64{off, off + 4*elems}}
		off += 4 * elems
	}
	h, err := json.Marshal(header)
	if err != nil {
		return nil, err
	}
	for len(h)%8 != 0 { // the reference writer pads the header to 8 bytes
		h = append(h, ' ')
	}
	out := make([]byte, 8, 8+len(h)+int(off))
	binary.LittleEndian.PutUint64(out, uint64(len(h)))
	out = append(out, h...)
	for _, v := range values {
		for _, x := range v {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(x))
		}
	}
	return out, nil
}
