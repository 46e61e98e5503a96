//go:build unix

package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPackedStreamsMatchKernel checks every layout's four-stream decode
// kernel (Packed.Streams) against Kernel group by group, bit for bit, on
// weights of random bytes (finite scales) and quantized activations, for
// strides of one group up to several, and with the weights and outputs
// ending at an unreadable page, sized exactly as checkStreams allows.
func TestPackedStreamsMatchKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 29))
	var layouts []*Packed
	var types []Type
	all, allTypes := repackedLayouts(false)
	for i, p := range all {
		if p.Streams != nil {
			layouts, types = append(layouts, p), append(types, allTypes[i])
		}
	}
	if len(layouts) == 0 {
		t.Skip("no four-stream kernel on this CPU")
	}
	for i, p := range layouts {
		typ := types[i]
		for _, nb := range []int{1, 2, 5, 64} {
			for _, gap := range []int{1, 2, 3} { // stride in groups
				t.Run(fmt.Sprintf("%s/nb%d/stride%d", p.Name, nb, gap), func(t *testing.T) {
					cols := nb * p.BlockSize
					rowBytes := must(typ.RowBytes(cols))
					groups := (DecodeStreams-1)*gap + 1
					src := make([]byte, groups*Q4x16Rows*rowBytes)
					for i := range src {
						src[i] = byte(r.Uint32())
					}
					if typ != F16 && typ != BF16 {
						for i := 1; i < len(src); i += 2 {
							src[i] &= 0x3b // finite half scales
						}
					}
					packed := make([]byte, p.Bytes(groups*Q4x16Rows, cols))
					if err := p.Repack(packed, src, groups*Q4x16Rows, cols); err != nil {
						t.Fatal(err)
					}
					groupBytes := nb * p.BlockBytes
					quantize, err := QuantizeRowFor(p.Act)
					if err != nil {
						t.Fatal(err)
					}
					act := make([]byte, must(p.Act.RowBytes(cols)))
					quantize(act, randRow(r, cols, 2))
					aux := make([]uint32, max(p.AuxWords*nb, 1))
					if p.Aux != nil {
						p.Aux(aux, act)
					}
					stride := gap * groupBytes
					dstride := Q4x16Rows + r.IntN(3)
					w := guardedBytes(t, (DecodeStreams-1)*stride+groupBytes)
					copy(w, packed)
					got := guarded[float32](t, (DecodeStreams-1)*dstride+Q4x16Rows)
					p.Streams(nb, w, stride, act, aux, got, dstride)
					for s := range DecodeStreams {
						want := make([]float32, Q4x16Rows)
						g := s * gap
						p.Kernel(nb, packed[g*groupBytes:(g+1)*groupBytes], act, len(act), aux, len(aux), 1, want, Q4x16Rows)
						if !sameBits(got[s*dstride:s*dstride+Q4x16Rows], want) {
							t.Fatalf("stream %d (group %d): %v, want %v", s, g, got[s*dstride:s*dstride+Q4x16Rows], want)
						}
					}
				})
			}
		}
	}
}
