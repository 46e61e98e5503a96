package quant

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"
)

// ErrUnsupported is returned for a type this package cannot convert or
// multiply.
var ErrUnsupported = errors.New("quant: unsupported type")

// DotFunc is the dot product of n elements of a weight row and an
// activation row in the weight type's VecDotType.
type DotFunc func(n int, w, a []byte) float32

// RowFunc encodes one row of float32 values into dst.
type RowFunc func(dst []byte, src []float32)

type format struct {
	dequant func(src []byte, dst []float32)
	quant   RowFunc
	act     RowFunc // activation quantizer when it differs from quant
	vecDot  Type
	dot     DotFunc // pure-Go reference, the oracle of every SIMD kernel
}

// formats is a registration table filled by each format's file.
var formats = map[Type]*format{}

// accelerated holds SIMD dot-product kernels chosen at start-up from the
// CPU's features by the architecture's kernels file (built unless the
// noasm tag is set). DotFor prefers them to the reference in formats.
var accelerated = map[Type]DotFunc{}

// kernelISA names the instruction set of the accelerated kernels, the best
// level in use ("avx2", "avx-vnni" or "avx512-vnni" on amd64, the VNNI
// levels differing in the Q8_0 and Q4_0 kernels only); "go" when every dot
// product runs the reference (noasm builds, other architectures, CPUs
// without the needed features).
var kernelISA = "go"

// Accelerated reports the weight types whose dot product runs a SIMD kernel
// on this CPU, and the name of the instruction set it uses.
func Accelerated() (types []Type, isa string) {
	for t := range accelerated {
		types = append(types, t)
	}
	slices.Sort(types)
	return types, kernelISA
}

// VecDotType is the activation format that weight type t is multiplied
// with, as in llama.cpp's CPU backend.
func VecDotType(t Type) Type {
	if f, ok := formats[t]; ok {
		return f.vecDot
	}
	return F32
}

// Dequantize decodes len(dst) elements of type t from src.
func Dequantize(t Type, src []byte, dst []float32) error {
	f, ok := formats[t]
	if !ok || f.dequant == nil {
		return fmt.Errorf("dequantize %s: %w", t, ErrUnsupported)
	}
	n, err := t.RowBytes(len(dst))
	if err != nil {
		return fmt.Errorf("dequantize: %w", err)
	}
	if len(src) < n {
		return fmt.Errorf("dequantize %s: %d bytes for %d elements, need %d", t, len(src), len(dst), n)
	}
	f.dequant(src[:n], dst)
	return nil
}

// Quantize encodes src (a whole number of blocks) as t into dst, which must
// be exactly t.RowBytes(len(src)) long.
func Quantize(t Type, dst []byte, src []float32) error {
	f, ok := formats[t]
	if !ok || f.quant == nil {
		return fmt.Errorf("quantize %s: %w", t, ErrUnsupported)
	}
	n, err := t.RowBytes(len(src))
	if err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	if len(dst) != n {
		return fmt.Errorf("quantize %s: dst has %d bytes, need %d", t, len(dst), n)
	}
	f.quant(dst, src)
	return nil
}

// QuantizeRowFor returns the encoder of activation rows of type t, the
// rounding llama.cpp's CPU backend uses before its dot products.
func QuantizeRowFor(t Type) (RowFunc, error) {
	f, ok := formats[t]
	if !ok || f.quant == nil {
		return nil, fmt.Errorf("quantize %s: %w", t, ErrUnsupported)
	}
	if f.act != nil {
		return f.act, nil
	}
	return f.quant, nil
}

// DotFor returns the dot-product kernel of weight type t.
func DotFor(t Type) (DotFunc, error) {
	if d, ok := accelerated[t]; ok {
		return d, nil
	}
	f, ok := formats[t]
	if !ok || f.dot == nil {
		return nil, fmt.Errorf("dot product of %s: %w", t, ErrUnsupported)
	}
	return f.dot, nil
}

// VecDot returns the dot product of n elements of weight row w (type t) and
// activation row a encoded with VecDotType(t).
func VecDot(t Type, n int, w, a []byte) float32 {
	d, err := DotFor(t)
	if err != nil {
		panic(err)
	}
	return d(n, w, a)
}

var le = binary.LittleEndian

func f16At(b []byte) float32 { return FP16ToFP32(le.Uint16(b)) }

// f32View views little-endian float32 bytes as a slice (all supported
// CPUs are little-endian). The bytes must be 4-byte aligned, which Go
// allocations and GGUF's 32-byte tensor alignment guarantee.
func f32View(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

func u16View(b []byte) []uint16 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/2)
}

func init() {
	formats[F32] = &format{
		dequant: func(src []byte, dst []float32) { copy(dst, f32View(src)) },
		quant: func(dst []byte, src []float32) {
			for i, v := range src {
				le.PutUint32(dst[4*i:], math.Float32bits(v))
			}
		},
		vecDot: F32,
		dot: func(n int, w, a []byte) float32 {
			return sumF32(0, 0, 0, 0, 0, f32View(w)[:n], f32View(a)[:n])
		},
	}
	formats[F16] = &format{
		dequant: func(src []byte, dst []float32) {
			for i, h := range u16View(src)[:len(dst)] {
				dst[i] = FP16ToFP32(h)
			}
		},
		quant: func(dst []byte, src []float32) {
			for i, v := range src {
				le.PutUint16(dst[2*i:], FP32ToFP16(v))
			}
		},
		vecDot: F16,
		dot: func(n int, w, a []byte) float32 {
			return sumF16(0, 0, u16View(w)[:n], u16View(a)[:n])
		},
	}
	formats[BF16] = &format{
		dequant: func(src []byte, dst []float32) {
			for i, h := range u16View(src)[:len(dst)] {
				dst[i] = BF16ToFP32(h)
			}
		},
		quant: func(dst []byte, src []float32) {
			for i, v := range src {
				le.PutUint16(dst[2*i:], FP32ToBF16(v))
			}
		},
		vecDot: BF16,
		dot: func(n int, w, a []byte) float32 {
			return sumBF16(0, 0, u16View(w)[:n], u16View(a)[:n])
		},
	}
}

// sumF32 is the F32 dot product from element i on, the four sums s0-s3
// holding the products of the elements before i: sum j takes elements
// 4k+j, the last n%4 elements go to s0, and the sums add up in order.
// The conversions keep the compiler from fusing multiply and add
// (GOAMD64=v3), so the kernels can reproduce the result.
func sumF32(s0, s1, s2, s3 float32, i int, x, y []float32) float32 {
	n := len(x)
	y = y[:n]
	for ; i+4 <= n; i += 4 {
		s0 += float32(x[i] * y[i])
		s1 += float32(x[i+1] * y[i+1])
		s2 += float32(x[i+2] * y[i+2])
		s3 += float32(x[i+3] * y[i+3])
	}
	for ; i < n; i++ {
		s0 += float32(x[i] * y[i])
	}
	return s0 + s1 + s2 + s3
}

// sumF16 is the F16 dot product from element i on, s holding the sum of
// the elements before i: each product, exact in float32, is added to a
// float64 sum in element order, as llama.cpp's ggml_vec_dot_f16 does
// without SIMD.
func sumF16(s float64, i int, x, y []uint16) float32 {
	y = y[:len(x)]
	for ; i < len(x); i++ {
		s += float64(FP16ToFP32(x[i]) * FP16ToFP32(y[i]))
	}
	return float32(s)
}

// sumBF16 is sumF16 for BF16 values.
func sumBF16(s float64, i int, x, y []uint16) float32 {
	y = y[:len(x)]
	for ; i < len(x); i++ {
		s += float64(BF16ToFP32(x[i]) * BF16ToFP32(y[i]))
	}
	return float32(s)
}
