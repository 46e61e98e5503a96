package quant

import (
	"encoding/binary"
	"math"
	"testing"
)

// FuzzBlocks decodes arbitrary bytes as one block of every format and
// re-encodes arbitrary floats (NaN and infinities included): neither may
// panic, and the dot product of arbitrary blocks must not either.
func FuzzBlocks(f *testing.F) {
	f.Add(make([]byte, 292))
	f.Add([]byte{0x00, 0x3c, 0xff, 0x7b, 0x01, 0x80})
	f.Add([]byte{0xff, 0x7f, 0x00, 0x7c, 0x00, 0xfc, 0x01, 0x7e})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, typ := range quantTypes {
			bs, bb := typ.BlockSize(), typ.BlockBytes()
			n := max(bs, QKK/bs*bs)
			if n%bs != 0 {
				continue
			}
			raw := make([]byte, n/bs*bb)
			for i := range raw {
				if len(b) > 0 {
					raw[i] = b[i%len(b)]
				}
			}
			out := make([]float32, n)
			if err := Dequantize(typ, raw, out); err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			x := make([]float32, n)
			for i := range x {
				if len(b) >= 4 {
					j := 4 * (i % (len(b) / 4))
					x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[j:]))
				}
			}
			enc := make([]byte, len(raw))
			if err := Quantize(typ, enc, x); err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			if dot, err := DotFor(typ); err == nil {
				vt := VecDotType(typ)
				act := make([]byte, must(vt.RowBytes(n)))
				for i := range act {
					if len(b) > 0 {
						act[i] = b[(i*7)%len(b)]
					}
				}
				_ = dot(n, raw, act)
			}
		}
	})
}
