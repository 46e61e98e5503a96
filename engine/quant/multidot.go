package quant

import "fmt"

// MultiDotFunc computes the dot product of one weight row w with up to
// four activation rows stored stride bytes apart in a:
// dst[r] = dot(n, w, a[r*stride:]) for r < len(dst). Kernels that load and
// unpack each weight block once for several rows make prefill and batched
// decode compute-bound instead of decode-bound. Results must equal the
// single-row DotFunc bit for bit.
type MultiDotFunc func(n int, w, a []byte, stride int, dst []float32)

// MaxMultiRows is the largest len(dst) a MultiDotFunc accepts.
const MaxMultiRows = 4

// acceleratedMulti holds SIMD multi-row kernels chosen at start-up, like
// accelerated.
var acceleratedMulti = map[Type]MultiDotFunc{}

// MultiDotFor returns the multi-row dot-product kernel of weight type t: a
// SIMD kernel when this CPU has one, otherwise a loop over DotFor's kernel.
func MultiDotFor(t Type) (MultiDotFunc, error) {
	if m, ok := acceleratedMulti[t]; ok {
		return m, nil
	}
	dot, err := DotFor(t)
	if err != nil {
		return nil, fmt.Errorf("multi-row dot: %w", err)
	}
	return func(n int, w, a []byte, stride int, dst []float32) {
		for r := range dst {
			dst[r] = dot(n, w, a[r*stride:])
		}
	}, nil
}
