package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFlashTileKernels checks the AVX-512 forms of the tiled flash
// attention's steps against their references bit for bit: scores for 1
// to 9 query rows and head sizes 1 to 130, value sums for value sizes 64
// and 128, and the softmax with masked (−∞) scores and scores far below
// the maximum.
func TestFlashTileKernels(t *testing.T) {
	if !flashTileAsm {
		t.Skip("no assembly forms here: FlashScores, FlashPV and FlashSoftmax are the references")
	}
	r := rand.New(rand.NewPCG(71, 73))
	for iter := range 200 {
		rows := 1 + iter%9
		dk := 1 + r.IntN(130)
		ldq := dk + r.IntN(3)
		q := randRow(r, (rows-1)*ldq+dk, 1)
		kt := randRow(r, dk*FlashTile, 1)
		got, want := make([]float32, rows*FlashTile), make([]float32, rows*FlashTile)
		FlashScores(got, q, ldq, kt, dk, rows)
		flashScoresRef(want, q, ldq, kt, dk, rows)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("scores rows=%d dk=%d: [%d] = %v, reference %v", rows, dk, i, got[i], want[i])
			}
		}

		dv := 64 * (1 + iter%2)
		ldacc := dv + 16*r.IntN(2)
		p := randRow(r, rows*FlashTile, 0.3)
		v := randRow(r, FlashTile*dv, 1)
		acc := randRow(r, (rows-1)*ldacc+dv, 1)
		accRef := append([]float32(nil), acc...)
		FlashPV(acc, ldacc, p, v, dv, rows)
		flashPVRef(accRef, ldacc, p, v, dv, rows)
		for i := range acc {
			if math.Float32bits(acc[i]) != math.Float32bits(accRef[i]) {
				t.Fatalf("pv rows=%d dv=%d: [%d] = %v, reference %v", rows, dv, i, acc[i], accRef[i])
			}
		}

		sc := randRow(r, FlashTile, 3)
		scRef := append([]float32(nil), sc...)
		lo := r.IntN(FlashTile)
		hi := lo + r.IntN(FlashTile-lo)
		scale := float32(0.125 + r.Float64())
		gm := FlashScaleMask(sc, scale, lo, hi)
		for c := range scRef {
			scRef[c] *= scale
			if c < lo || c > hi {
				scRef[c] = float32(math.Inf(-1))
			}
		}
		if wm := FlashMax(scRef); gm != wm {
			t.Fatalf("scale-mask max %v, reference %v", gm, wm)
		}
		for c := range sc {
			if math.Float32bits(sc[c]) != math.Float32bits(scRef[c]) {
				t.Fatalf("scale-mask [%d] = %v, reference %v", c, sc[c], scRef[c])
			}
		}

		hd := 16 * (1 + r.IntN(8))
		src := make([]uint16, hd*16)
		for i := range src {
			src[i] = FP32ToFP16(float32(r.NormFloat64()))
		}
		ktile := make([]float32, hd*FlashTile)
		j0 := 16 * r.IntN(4)
		FlashLoadKT(ktile, src, hd, 16, j0)
		stride := hd + 16*r.IntN(3)
		vsrc := make([]uint16, 5*stride)
		for i := range vsrc {
			vsrc[i] = FP32ToFP16(float32(r.NormFloat64()))
		}
		vt := make([]float32, 5*hd)
		FlashLoadV(vt, vsrc, stride, 5, hd)
		for d := range hd {
			for p := range 16 {
				if ktile[d*FlashTile+j0+p] != FP16ToFP32(src[d*16+p]) {
					t.Fatalf("FlashLoadKT: d %d p %d", d, p)
				}
			}
		}
		for row := range 5 {
			for e := range hd {
				if vt[row*hd+e] != FP16ToFP32(vsrc[row*stride+e]) {
					t.Fatalf("FlashLoadV: row %d e %d", row, e)
				}
			}
		}

		x := randRow(r, FlashTile, 8)
		for j := range x {
			switch r.IntN(8) {
			case 0:
				x[j] = float32(math.Inf(-1))
			case 1:
				x[j] -= 200
			}
		}
		m := FlashMax(x)
		xr := append([]float32(nil), x...)
		gs, ws := FlashSoftmax(x, m), flashSoftmaxRef(xr, m, halfDotLanes)
		if gs != ws {
			t.Fatalf("softmax sum %v, reference %v", gs, ws)
		}
		for j := range x {
			if math.Float32bits(x[j]) != math.Float32bits(xr[j]) {
				t.Fatalf("softmax [%d] = %v, reference %v", j, x[j], xr[j])
			}
		}
	}
}

// TestFlashSoftmaxSums checks FlashSoftmax against e^(x−m) in float64.
func TestFlashSoftmaxSums(t *testing.T) {
	r := rand.New(rand.NewPCG(79, 83))
	for _, lanes := range []int{16, 8} {
		x := randRow(r, FlashTile, 4)
		x[3] = float32(math.Inf(-1))
		m := FlashMax(x)
		var want float64
		for _, v := range x {
			want += math.Exp(float64(v - m))
		}
		got := flashSoftmaxRef(append([]float32(nil), x...), m, lanes)
		if math.Abs(got-want) > 1e-5*want {
			t.Fatalf("%d lanes: sum %v, float64 %v", lanes, got, want)
		}
	}
}
