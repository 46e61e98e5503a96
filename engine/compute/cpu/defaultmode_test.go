package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// TestDefaultModeMatMulBatchInvariant checks the default mode's MatMul of
// every weight type it may repack differently from the exact mode: each
// token's row of the product is bit for bit the same whether it is
// computed alone (decode), among 2 to 70 tokens (a verification of
// drafted tokens, a batch, a prompt), or
// with other thread counts, for rows long enough to be split over ranges
// of blocks; and it stays within float32 rounding of the float64 product
// of the dequantized weights and the activations in their dot-product
// format.
func TestDefaultModeMatMulBatchInvariant(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 67))
	for _, tc := range []struct {
		typ     quant.Type
		in, out int
		amx     AMXMode
	}{
		{quant.F16, 256, 48, AMXAuto},
		{quant.F16, 4864, 32, AMXAuto},  // split over ranges of blocks
		{quant.F16, 384, 128, AMXAuto},  // runs of four groups for 2 to 7 tokens (speculation's verification)
		{quant.F16, 1024, 96, AMXAuto},  // ... split over ranges of blocks
		{quant.BF16, 320, 32, AMXAuto},  // not a multiple of 128 columns: BF16x16, not BF16x16Z
		{quant.BF16, 2048, 80, AMXAuto}, // AMX tiles: groups in a pair and one alone, 32-token runs
		{quant.BF16, 384, 128, AMXOff},  // BF16x16Z: runs of four groups for 2 to 7 tokens
		{quant.BF16, 4864, 32, AMXOff},  // ... split over ranges of blocks
		{quant.F16, 96, 40, AMXAuto},    // not a multiple of 16 rows: not repacked
		{quant.Q5_0, 896, 32, AMXAuto},
		{quant.Q8_0, 2048, 48, AMXOff},
		{quant.Q8_0, 2048, 48, AMXAuto}, // AMX-INT8 tiles for 2+ tokens, the VNNI kernel of the same sums for one
		{quant.Q8_0, 4864, 32, AMXAuto},
		{quant.Q6_K, 1024, 48, AMXAuto},
		{quant.Q6_K, 256, 40, AMXAuto},
		{quant.Q5_K, 512, 32, AMXAuto},
		{quant.Q5_1, 896, 16, AMXAuto},
		{quant.Q4_K, 768, 32, AMXAuto},
		{quant.Q2_K, 1024, 48, AMXAuto},
		{quant.Q2_K, 4864, 32, AMXAuto},
		{quant.Q2_K, 512, 40, AMXAuto}, // not a multiple of 16 rows: not repacked
		{quant.Q3_K, 1024, 48, AMXAuto},
		{quant.Q3_K, 512, 40, AMXAuto},   // not a multiple of 16 rows: not repacked
		{quant.IQ3_S, 1024, 48, AMXAuto}, // the panel from 16 tokens on
		{quant.IQ3_XXS, 512, 32, AMXAuto},
		{quant.IQ4_XS, 1024, 48, AMXAuto},
		{quant.IQ4_XS, 4864, 32, AMXAuto}, // split over ranges of blocks
		{quant.IQ4_XS, 512, 40, AMXAuto},  // not a multiple of 16 rows: not repacked
		{quant.IQ4_NL, 896, 32, AMXAuto},
		{quant.IQ4_NL, 4864, 16, AMXAuto},
	} {
		raw := quantized(t, tc.typ, tc.out, tc.in, randRows(r, tc.out, tc.in))
		deq := make([]float32, tc.out*tc.in) // (activations are rounded to the dot type: 1e-2 of Σ|w·x|)
		if err := quant.Dequantize(tc.typ, raw, deq); err != nil {
			t.Fatal(err)
		}
		const n = 70
		x := randRows(r, n, tc.in)
		var alone []float32
		for _, threads := range []int{1, 3} {
			b := New(Options{Threads: threads, AMX: tc.amx})
			wt, err := b.MatMulWeight(tc.typ, tc.out, tc.in, raw)
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%s/%dx%d/t%d/amx%d", tc.typ, tc.out, tc.in, threads, tc.amx)
			if p := quant.FastPackedFor(tc.typ, b.tiles); p != nil && tc.out%16 == 0 && !wt.(compute.Repacked).Repacked() {
				t.Fatalf("%s: not repacked into %s", name, p.Name)
			}
			if alone == nil {
				alone = make([]float32, n*tc.out)
				for i := range n {
					xt, dst := b.New(1, tc.in), b.New(1, tc.out)
					b.Upload(xt, x[i*tc.in:(i+1)*tc.in])
					b.MatMul(dst, xt, wt)
					copy(alone[i*tc.out:], F32(dst))
				}
				// Within rounding of the float64 product.
				for i := range n {
					for o := range tc.out {
						var want, mag float64
						for k := range tc.in {
							p := float64(deq[o*tc.in+k]) * float64(x[i*tc.in+k])
							want, mag = want+p, mag+math.Abs(p)
						}
						if d := math.Abs(float64(alone[i*tc.out+o]) - want); d > 1e-2*mag {
							t.Fatalf("%s: token %d output %d = %v, float64 %v", name, i, o, alone[i*tc.out+o], want)
						}
					}
				}
			}
			for _, m := range []int{2, 3, 4, 5, 6, 7, 8, 9, 17, n} {
				xt, dst := b.New(m, tc.in), b.New(m, tc.out)
				b.Upload(xt, x[:m*tc.in])
				b.MatMul(dst, xt, wt)
				got := F32(dst)
				for k := range got {
					if math.Float32bits(got[k]) != math.Float32bits(alone[k]) {
						t.Fatalf("%s: %d tokens: token %d output %d = %v, alone %v", name, m, k/tc.out, k%tc.out, got[k], alone[k])
					}
				}
			}
			b.Close()
		}
	}
}

// TestBF16CompressionKeepsBits checks that BF16 matrices repacked into
// the compressed BF16x16Z layout give the bits of the BF16x16 layout
// (Options.NoCompression) for 1 to 70 tokens, alone and fused with other
// weights (MatMulMulti), and that a matrix too spread in exponent to
// compress stays BF16x16 with the same results.
func TestBF16CompressionKeepsBits(t *testing.T) {
	if quant.FastPackedFor(quant.BF16, false) == nil || quant.FastPackedFor(quant.BF16, false).Expand == nil {
		t.Skip("no BF16x16Z layout on this CPU")
	}
	r := rand.New(rand.NewPCG(79, 83))
	const in = 1024
	outs := []int{64, 32, 48}
	raws := make([][]byte, len(outs))
	for i, out := range outs {
		raws[i] = quantized(t, quant.BF16, out, in, randRows(r, out, in))
	}
	spread := append([]byte(nil), raws[2]...)
	for i := range 12 { // twelve exponents in one 128-column block of one group
		spread[2*(i*in)+1] = byte(i + 1)
	}
	raws = append(raws, spread)
	outs = append(outs, outs[2])
	var results [2][][]float32
	for k, plain := range []bool{true, false} {
		b := New(Options{Threads: 2, AMX: AMXOff, NoCompression: plain})
		ws := make([]compute.Tensor, len(raws))
		for i, raw := range raws {
			w, err := b.MatMulWeight(quant.BF16, outs[i], in, raw)
			if err != nil {
				t.Fatal(err)
			}
			want := "BF16x16Z"
			if plain || i == 3 {
				want = "BF16x16"
			}
			if got := ct(w).pk.Name; got != want {
				t.Fatalf("weight %d (no compression %v): layout %s, want %s", i, plain, got, want)
			}
			ws[i] = w
		}
		for _, m := range []int{1, 2, 3, 7, 8, 9, 70} {
			x := randRows(rand.New(rand.NewPCG(uint64(m), 1)), m, in)
			xt := b.New(m, in)
			b.Upload(xt, x)
			dsts := make([]compute.Tensor, len(ws))
			for i := range ws {
				dsts[i] = b.New(m, outs[i])
			}
			b.MatMulMulti(dsts, xt, ws)
			for i := range ws {
				results[k] = append(results[k], append([]float32(nil), F32(dsts[i])...))
				alone := b.New(m, outs[i])
				b.MatMul(alone, xt, ws[i])
				if !slices.EqualFunc(F32(alone), F32(dsts[i]), sameBits) {
					t.Fatalf("weight %d, %d tokens: MatMul and MatMulMulti differ", i, m)
				}
			}
		}
		b.Close()
	}
	for i := range results[0] {
		if !slices.EqualFunc(results[0][i], results[1][i], sameBits) {
			t.Fatalf("product %d: BF16x16Z differs from BF16x16", i)
		}
	}
}

// TestArithmeticNamesAMXTiles checks that the default mode's arithmetic
// name (the prefix cache's namespace) says when a BF16 or Q8_0 weight took
// an AMX layout, and only then: an F16 or Q4_0 weight, or a BF16 or Q8_0
// one with AMXOff, keeps the plain name, so that snapshots of models the
// tiles do not touch stay valid.
func TestArithmeticNamesAMXTiles(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 73))
	for _, tc := range []struct {
		typ  quant.Type
		amx  AMXMode
		want string
	}{
		{quant.F16, AMXAuto, "default-2"},
		{quant.BF16, AMXOff, "default-2"},
		{quant.BF16, AMXAuto, map[bool]string{true: "default-2-amx", false: "default-2"}[quant.AMXTiles()]},
		{quant.Q8_0, AMXOff, "default-2"},
		{quant.Q8_0, AMXAuto, map[bool]string{true: "default-2-amx", false: "default-2"}[quant.AMXInt8Tiles()]},
		{quant.Q4_0, AMXAuto, "default-2"},
	} {
		b := New(Options{Threads: 1, AMX: tc.amx})
		if got := b.Arithmetic(); got != "default-2" {
			t.Errorf("before any weight: %q, want default-2", got)
		}
		if _, err := b.MatMulWeight(tc.typ, 32, 64, quantized(t, tc.typ, 32, 64, randRows(r, 32, 64))); err != nil {
			t.Fatal(err)
		}
		if got := b.Arithmetic(); got != tc.want {
			t.Errorf("%s, AMX mode %d: arithmetic %q, want %q", tc.typ, tc.amx, got, tc.want)
		}
		b.Close()
	}
}
