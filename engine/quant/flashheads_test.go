package quant

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFlashKeysHeadsMatchesFlashKeys runs 1 to 4 query heads over shared
// keys and values with FlashKeysHeads and each head alone with FlashKeys,
// in two calls split mid-chunk, with and without soft-capping, and wants
// the same maxima, sums and accumulators bit for bit. On CPUs without
// AVX-512 both take the per-head path, and the test checks that path's
// bookkeeping.
func TestFlashKeysHeadsMatchesFlashKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 67))
	for _, tc := range []struct{ hd, stride, n, split int }{
		{64, 128, 40, 17},
		{128, 256, 150, 70},
		{64, 64, 200, 1},
		{32, 64, 20, 5}, // not a multiple of 64: the per-head path
	} {
		hd, stride, n := tc.hd, tc.stride, tc.n
		k, v := make([]uint16, n*stride), make([]uint16, n*stride)
		for i := range k {
			k[i], v[i] = FP32ToFP16(r.Float32()*4-2), FP32ToFP16(r.Float32()*4-2)
		}
		q := make([]uint16, FlashMaxHeads*hd)
		for i := range q {
			q[i] = FP32ToFP16(r.Float32()*4 - 2)
		}
		// Keys that rise towards head 0's query make new maxima all along.
		for i := 0; i < n; i += 7 {
			for e := range hd {
				k[i*stride+e] = FP32ToFP16(halfTable[q[e]] * float32(i) / float32(n))
			}
		}
		for heads := 1; heads <= FlashMaxHeads; heads++ {
			for _, softcap := range []float32{0, 5} {
				st := FlashHeads{N: heads, Acc: make([]uint16, heads*hd), Scale: 0.125, Softcap: softcap}
				for h := range heads {
					st.Max[h] = float32(math.Inf(-1))
				}
				FlashKeysHeads(&st, q[:heads*hd], k, v, stride, tc.split)
				FlashKeysHeads(&st, q[:heads*hd], k[tc.split*stride:], v[tc.split*stride:], stride, n-tc.split)
				for h := range heads {
					one := FlashState{Max: float32(math.Inf(-1)), Acc: make([]uint16, hd), Scale: 0.125, Softcap: softcap}
					qh := q[h*hd : (h+1)*hd]
					FlashKeys(&one, qh, k, v, stride, tc.split)
					FlashKeys(&one, qh, k[tc.split*stride:], v[tc.split*stride:], stride, n-tc.split)
					if st.Max[h] != one.Max || math.Float32bits(st.Sum[h]) != math.Float32bits(one.Sum) || !slices.Equal(st.Acc[h*hd:(h+1)*hd], one.Acc) {
						t.Errorf("hd %d n %d heads %d softcap %g head %d: max %v sum %v, alone max %v sum %v (accumulators equal: %v)",
							hd, n, heads, softcap, h, st.Max[h], st.Sum[h], one.Max, one.Sum, slices.Equal(st.Acc[h*hd:(h+1)*hd], one.Acc))
					}
					if one.Sum < 1 {
						t.Errorf("hd %d head %d: sum %v below the maximum key's 1", hd, h, one.Sum)
					}
				}
			}
		}
	}
}
