package testmodel

import (
	"errors"
	"fmt"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// ErrType is returned for a weight type the generator cannot encode.
var ErrType = errors.New("testmodel: unsupported weight type")

// encode writes src as type t into dst (len(dst) must be the encoded size),
// with engine/quant's reference quantizers.
func encode(t quant.Type, src []float32, dst []byte) error {
	if err := quant.Quantize(t, dst, src); err != nil {
		return fmt.Errorf("%w %s: %v", ErrType, t, err)
	}
	return nil
}

// supported reports whether quant can encode t and multiply it: the
// activation-only formats (Q8_1, Q8_K) have a quantizer but no engine can
// run a model whose weights use them.
func supported(t quant.Type) bool {
	if _, err := quant.QuantizeRowFor(t); err != nil {
		return false
	}
	_, err := quant.DotFor(t)
	return err == nil
}
