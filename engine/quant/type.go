// Package quant implements the tensor element types that GGUF files store:
// their block layouts, dequantization, quantization and reference dot
// products against quantized activations.
package quant

import "fmt"

// Type is a GGML tensor element type. The numeric values are the ones GGUF
// files store in their tensor infos and must never change.
type Type uint32

// The GGML types. Gaps in the numbering are types that GGML removed.
const (
	F32     Type = 0
	F16     Type = 1
	Q4_0    Type = 2
	Q4_1    Type = 3
	Q5_0    Type = 6
	Q5_1    Type = 7
	Q8_0    Type = 8
	Q8_1    Type = 9
	Q2_K    Type = 10
	Q3_K    Type = 11
	Q4_K    Type = 12
	Q5_K    Type = 13
	Q6_K    Type = 14
	Q8_K    Type = 15
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	I8      Type = 24
	I16     Type = 25
	I32     Type = 26
	I64     Type = 27
	F64     Type = 28
	IQ1_M   Type = 29
	BF16    Type = 30
	TQ1_0   Type = 34
	TQ2_0   Type = 35
)

// QK is the number of elements in a block of the 32-element formats;
// QKK is the super-block size of the K-quants.
const (
	QK  = 32
	QKK = 256
)

type layout struct {
	name       string
	blockSize  int // elements per block
	blockBytes int // bytes per block
}

// layouts is a registration table, not mutable state.
var layouts = map[Type]layout{
	F32:     {"F32", 1, 4},
	F16:     {"F16", 1, 2},
	BF16:    {"BF16", 1, 2},
	F64:     {"F64", 1, 8},
	I8:      {"I8", 1, 1},
	I16:     {"I16", 1, 2},
	I32:     {"I32", 1, 4},
	I64:     {"I64", 1, 8},
	Q4_0:    {"Q4_0", QK, 18},
	Q4_1:    {"Q4_1", QK, 20},
	Q5_0:    {"Q5_0", QK, 22},
	Q5_1:    {"Q5_1", QK, 24},
	Q8_0:    {"Q8_0", QK, 34},
	Q8_1:    {"Q8_1", QK, 36},
	Q2_K:    {"Q2_K", QKK, 84},
	Q3_K:    {"Q3_K", QKK, 110},
	Q4_K:    {"Q4_K", QKK, 144},
	Q5_K:    {"Q5_K", QKK, 176},
	Q6_K:    {"Q6_K", QKK, 210},
	Q8_K:    {"Q8_K", QKK, 292},
	IQ2_XXS: {"IQ2_XXS", QKK, 66},
	IQ2_XS:  {"IQ2_XS", QKK, 74},
	IQ3_XXS: {"IQ3_XXS", QKK, 98},
	IQ1_S:   {"IQ1_S", QKK, 50},
	IQ4_NL:  {"IQ4_NL", QK, 18},
	IQ3_S:   {"IQ3_S", QKK, 110},
	IQ2_S:   {"IQ2_S", QKK, 82},
	IQ4_XS:  {"IQ4_XS", QKK, 136},
	IQ1_M:   {"IQ1_M", QKK, 56},
	TQ1_0:   {"TQ1_0", QKK, 54},
	TQ2_0:   {"TQ2_0", QKK, 66},
}

// layoutByType is layouts as an array, for the lookups on the hot path
// (BlockSize and BlockBytes run once per dot product): a map lookup there
// cost several percent of a decode step. Like layouts it is never written
// after package initialization.
var layoutByType = func() (a [64]layout) {
	for t, l := range layouts {
		a[t] = l
	}
	return a
}()

// lookup returns t's layout, the zero layout for unknown types.
func (t Type) lookup() layout {
	if uint64(t) < uint64(len(layoutByType)) {
		return layoutByType[t]
	}
	return layout{}
}

// Known reports whether t is a type whose block layout is known.
func (t Type) Known() bool { return t.lookup().blockSize != 0 }

// String returns the GGML name of the type, e.g. "Q4_K".
func (t Type) String() string {
	if l, ok := layouts[t]; ok {
		return l.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize is the number of elements in one block (1 for scalar types).
// It is 0 for unknown types.
func (t Type) BlockSize() int { return t.lookup().blockSize }

// BlockBytes is the number of bytes in one block. It is 0 for unknown types.
func (t Type) BlockBytes() int { return t.lookup().blockBytes }

// RowBytes returns the bytes needed for n elements of type t, or an error if
// t is unknown or n is not a whole number of blocks.
func (t Type) RowBytes(n int) (int, error) {
	l, ok := layouts[t]
	if !ok {
		return 0, fmt.Errorf("unknown tensor type %d", uint32(t))
	}
	if n < 0 || n%l.blockSize != 0 {
		return 0, fmt.Errorf("%s: %d elements is not a multiple of the block size %d", l.name, n, l.blockSize)
	}
	return n / l.blockSize * l.blockBytes, nil
}

// ParseType returns the type named s (case-insensitive GGML name, e.g. "q4_k").
func ParseType(s string) (Type, error) {
	for t, l := range layouts {
		if equalFold(l.name, s) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown tensor type %q", s)
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 'a' - 'A'
		}
		if 'a' <= y && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
