//go:build amd64 && !noasm

package quant

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFlashVectorsMatchGo checks the AVX-512 forms of DotHalf, MadHalf,
// ScaleHalf and SwiGLU bit for bit against their Go forms, on lengths
// with and without tails, including values that overflow f16 and
// exponents past ggml_v_expf's ±192 cut-off.
func TestFlashVectorsMatchGo(t *testing.T) {
	if !hasFlashAVX512 {
		t.Skip("no AVX-512 on this CPU")
	}
	r := rand.New(rand.NewPCG(41, 43))
	half := func(n int, scale float32) []uint16 {
		h := make([]uint16, n)
		for i := range h {
			h[i] = FP32ToFP16((r.Float32()*2 - 1) * scale)
		}
		return h
	}
	run := func(f func()) {
		f()
		hasFlashAVX512 = false
		defer func() { hasFlashAVX512 = true }()
		f()
	}
	for _, n := range []int{16, 64, 80, 128, 130, 256, 1000} {
		x, y := half(n, 4), half(n, 4)
		var got, want float32
		run(func() { want, got = got, DotHalf(x, y) })
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("DotHalf n=%d: vector %v, Go %v", n, want, got)
		}
		for _, v := range []float32{0.37, 1, 0, 3e4} {
			a, b := append([]uint16(nil), y...), append([]uint16(nil), y...)
			MadHalf(a, x, v)
			hasFlashAVX512 = false
			MadHalf(b, x, v)
			hasFlashAVX512 = true
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("MadHalf n=%d v=%g element %d: vector %#x, Go %#x", n, v, i, a[i], b[i])
				}
			}
			a, b = append([]uint16(nil), y...), append([]uint16(nil), y...)
			ScaleHalf(a, v)
			hasFlashAVX512 = false
			ScaleHalf(b, v)
			hasFlashAVX512 = true
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("ScaleHalf n=%d v=%g element %d: vector %#x, Go %#x", n, v, i, a[i], b[i])
				}
			}
		}
		g, u := make([]float32, n), make([]float32, n)
		for i := range g {
			g[i] = (r.Float32()*2 - 1) * 20
			if i%17 == 3 {
				g[i] = (r.Float32()*2 - 1) * 300 // |x| log2 e past 192
			}
			u[i] = r.Float32()*2 - 1
		}
		a, b := make([]float32, n), make([]float32, n)
		SwiGLU(a, g, u)
		hasFlashAVX512 = false
		SwiGLU(b, g, u)
		hasFlashAVX512 = true
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
				t.Fatalf("SwiGLU n=%d element %d (g=%g): vector %v, Go %v", n, i, g[i], a[i], b[i])
			}
		}
	}
}

// TestFlashKeysVectorMatchesGo runs FlashKeys over the same keys with and
// without the AVX-512 forms, soft-capping included, and wants the same
// accumulator, maximum and sum bit for bit.
func TestFlashKeysVectorMatchesGo(t *testing.T) {
	if !hasFlashAVX512 {
		t.Skip("no AVX-512 on this CPU")
	}
	r := rand.New(rand.NewPCG(47, 53))
	for _, tc := range []struct{ hd, stride, n, split int }{
		{64, 128, 40, 17},
		{128, 256, 150, 70}, // chunks of 64 keys, split mid-chunk
		{64, 64, 200, 1},
	} {
		hd, stride, n := tc.hd, tc.stride, tc.n
		k, v, q := make([]uint16, n*stride), make([]uint16, n*stride), make([]uint16, hd)
		for i := range k {
			k[i], v[i] = FP32ToFP16(r.Float32()*4-2), FP32ToFP16(r.Float32()*4-2)
		}
		for i := range q {
			q[i] = FP32ToFP16(r.Float32()*4 - 2)
		}
		// Rising keys make new maxima (the scaling step) all along.
		for i := 0; i < n; i += 7 {
			for e := range hd {
				k[i*stride+e] = FP32ToFP16(halfTable[q[e]] * float32(i) / float32(n))
			}
		}
		for _, softcap := range []float32{0, 5} {
			run := func() FlashState {
				st := FlashState{Max: float32(math.Inf(-1)), Acc: make([]uint16, hd), Scale: 0.125, Softcap: softcap}
				FlashKeys(&st, q, k, v, stride, tc.split)
				FlashKeys(&st, q, k[tc.split*stride:], v[tc.split*stride:], stride, n-tc.split)
				return st
			}
			a := run()
			hasFlashAVX512 = false
			b := run()
			hasFlashAVX512 = true
			if a.Max != b.Max || math.Float32bits(a.Sum) != math.Float32bits(b.Sum) || !slices.Equal(a.Acc, b.Acc) {
				t.Errorf("hd %d n %d softcap %g: vector max %v sum %v, Go max %v sum %v (accumulators equal: %v)", hd, n, softcap, a.Max, a.Sum, b.Max, b.Sum, slices.Equal(a.Acc, b.Acc))
			}
			if a.Sum < 1 {
				t.Errorf("hd %d softcap %g: sum %v below the maximum key's 1", hd, softcap, a.Sum)
			}
		}
	}
}

// TestDotF16AMXVectorMatchesGo checks DotF16AMX's AVX-512 form against
// its Go form bit for bit.
func TestDotF16AMXVectorMatchesGo(t *testing.T) {
	if !hasFlashAVX512 {
		t.Skip("no AVX-512 on this CPU")
	}
	r := rand.New(rand.NewPCG(59, 61))
	for _, n := range []int{16, 32, 384, 1024} {
		w, a := make([]byte, 2*n), make([]byte, 4*n)
		for i := range n {
			h := FP32ToFP16(r.Float32()*2 - 1)
			w[2*i], w[2*i+1] = byte(h), byte(h>>8)
			f := math.Float32bits(r.Float32()*8 - 4)
			a[4*i], a[4*i+1], a[4*i+2], a[4*i+3] = byte(f), byte(f>>8), byte(f>>16), byte(f>>24)
		}
		got := DotF16AMX(n, w, a)
		hasFlashAVX512 = false
		want := DotF16AMX(n, w, a)
		hasFlashAVX512 = true
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("n=%d: vector %v, Go %v", n, got, want)
		}
	}
}

// TestTileF16AMXMatchesPairs checks the side-by-side AVX-512 form of
// TileF16AMX against DotF16AMX's Go form for every pair, bit for bit,
// with one to four activation rows and row strides wider than a row.
func TestTileF16AMXMatchesPairs(t *testing.T) {
	if !hasFlashAVX512 {
		t.Skip("no AVX-512 on this CPU")
	}
	r := rand.New(rand.NewPCG(67, 71))
	for _, n := range []int{16, 48, 384, 1024} {
		wstride, astride := 2*n+64, 4*n+32
		w, a := make([]byte, TileRows*wstride), make([]byte, TileRows*astride)
		for i := range TileRows {
			for k := range n {
				h := FP32ToFP16(r.Float32()*2 - 1)
				w[i*wstride+2*k], w[i*wstride+2*k+1] = byte(h), byte(h>>8)
				f := math.Float32bits(r.Float32()*8 - 4)
				o := i*astride + 4*k
				a[o], a[o+1], a[o+2], a[o+3] = byte(f), byte(f>>8), byte(f>>16), byte(f>>24)
			}
		}
		for rows := 1; rows <= TileRows; rows++ {
			dst := make([]float32, rows*7)
			TileF16AMX(n, w, wstride, a, astride, rows, dst, 7)
			hasFlashAVX512 = false
			for i := range TileRows {
				for rr := range rows {
					want := DotF16AMX(n, w[i*wstride:], a[rr*astride:])
					if math.Float32bits(dst[rr*7+i]) != math.Float32bits(want) {
						t.Errorf("n=%d rows=%d pair (%d,%d): tile %v, Go %v", n, rows, i, rr, dst[rr*7+i], want)
					}
				}
			}
			hasFlashAVX512 = true
		}
	}
}
