//go:build arm64 && !noasm

package quant

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"golang.org/x/sys/cpu"
)

// arm64Types are the weight types with arm64 kernels.
var arm64Types = []Type{Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K}

// arm64ISAs are the kernel sets installARM64 can choose, plain NEON first.
var arm64ISAs = []struct {
	isa     string
	dotprod bool
}{{"neon", false}, {"neon+dotprod", true}}

// TestARM64Kernels runs the bit-exactness tests with the plain NEON
// kernels and, where the CPU has FEAT_DotProd (qemu's default CPU does),
// with the SDOT ones, so both paths are checked on any arm64 machine; it
// also checks the start-up choice for the CPU (make test-arm64 runs it
// again on a qemu CPU model without FEAT_DotProd).
func TestARM64Kernels(t *testing.T) {
	t.Logf("CPU features: ASIMD=%v ASIMDDP=%v; installed at start-up: %s",
		cpu.ARM64.HasASIMD, cpu.ARM64.HasASIMDDP, kernelISA)
	want := "go"
	switch {
	case cpu.ARM64.HasASIMDDP:
		want = "neon+dotprod"
	case cpu.ARM64.HasASIMD:
		want = "neon"
	}
	if _, isa := Accelerated(); isa != want {
		t.Errorf("start-up chose %q for this CPU, want %q", isa, want)
	}
	if !cpu.ARM64.HasASIMD {
		t.Skip("CPU without ASIMD")
	}
	defer installARM64(cpu.ARM64.HasASIMD, cpu.ARM64.HasASIMDDP)
	for _, k := range arm64ISAs {
		t.Run(k.isa, func(t *testing.T) {
			if k.dotprod && !cpu.ARM64.HasASIMDDP {
				t.Skip("CPU without FEAT_DotProd")
			}
			installARM64(true, k.dotprod)
			types, isa := Accelerated()
			if isa != k.isa {
				t.Fatalf("installed ISA %q, want %q", isa, k.isa)
			}
			for _, typ := range arm64Types {
				if !slices.Contains(types, typ) || acceleratedMulti[typ] == nil {
					t.Errorf("%s: no %s kernel installed", typ, k.isa)
				}
			}
			t.Run("single", TestAcceleratedMatchesReference)
			t.Run("multi", TestMultiDotMatchesSingle)
			t.Run("manyrows", testMultiDotManyRows)
			t.Run("arbitrary", testArbitraryBlocks)
		})
	}
}

// testMultiDotManyRows checks the multi-row kernels past their contract's
// four rows and at zero length, where the wrappers split the rows or
// return zeros.
func testMultiDotManyRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 13))
	for _, typ := range arm64Types {
		multi, _ := MultiDotFor(typ)
		single, _ := DotFor(typ)
		vt := VecDotType(typ)
		act := activationEncoder(t, vt)
		for _, tc := range []struct{ n, rows int }{{0, 3}, {3, 7}, {8, 9}, {1, 2}} {
			tc.n *= typ.BlockSize()
			stride := must(vt.RowBytes(tc.n)) + 4
			wb := make([]byte, must(typ.RowBytes(tc.n)))
			if err := Quantize(typ, wb, randRow(rng, tc.n, 1)); err != nil {
				t.Fatal(err)
			}
			a := make([]byte, tc.rows*stride)
			for r := 0; r < tc.rows; r++ {
				act(a[r*stride:r*stride+must(vt.RowBytes(tc.n))], randRow(rng, tc.n, 2))
			}
			got := make([]float32, tc.rows)
			for i := range got {
				got[i] = float32(math.NaN())
			}
			multi(tc.n, wb, a, stride, got)
			for r := range got {
				if want := single(tc.n, wb, a[r*stride:]); math.Float32bits(got[r]) != math.Float32bits(want) {
					t.Errorf("%s n=%d rows=%d row %d: multi %v, single %v", typ, tc.n, tc.rows, r, got[r], want)
				}
			}
		}
	}
}

// scaleFields are the byte offsets of each block's f16 scales (f32 for
// Q8_K), which testArbitraryBlocks keeps finite: NaN payloads need not
// survive both paths alike.
var scaleFields = map[Type][]int{
	Q8_0: {0}, Q4_0: {0}, Q5_0: {0}, Q4_1: {0, 2}, Q5_1: {0, 2}, Q8_1: {0, 2},
	Q2_K: {80, 82}, Q3_K: {108}, Q4_K: {0, 2}, Q5_K: {0, 2}, Q6_K: {208},
	Q8_K: {0},
}

// randomBlocks fills nb blocks of typ with random bytes and finite
// random scales.
func randomBlocks(rng *rand.Rand, typ Type, nb int) []byte {
	bb := typ.BlockBytes()
	b := make([]byte, nb*bb)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	for blk := 0; blk < nb; blk++ {
		for _, off := range scaleFields[typ] {
			v := float32(rng.NormFloat64())
			if typ == Q8_K {
				le.PutUint32(b[blk*bb+off:], math.Float32bits(v))
			} else {
				le.PutUint16(b[blk*bb+off:], FP32ToFP16(v))
			}
		}
	}
	return b
}

// testArbitraryBlocks compares the kernels with the references on random
// bytes rather than quantizer output: every bit pattern of the packed
// scales, quants and activation sums (Q8_K bsums that do not match its
// quants included), single rows and four.
func testArbitraryBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 19))
	for _, typ := range arm64Types {
		ref := formats[typ].dot
		vt := VecDotType(typ)
		single, multi := accelerated[typ], acceleratedMulti[typ]
		for iter := 0; iter < 50; iter++ {
			nb := 1 + rng.IntN(8)
			n := nb * typ.BlockSize()
			w := randomBlocks(rng, typ, nb)
			ab := must(vt.RowBytes(n))
			a := randomBlocks(rng, vt, MaxMultiRows*ab/vt.BlockBytes())
			if got, want := single(n, w, a), ref(n, w, a); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("%s n=%d: kernel %v, reference %v", typ, n, got, want)
			}
			dst := make([]float32, 1+rng.IntN(MaxMultiRows))
			multi(n, w, a, ab, dst)
			for r, got := range dst {
				if want := ref(n, w, a[r*ab:]); math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("%s n=%d rows=%d row %d: kernel %v, reference %v", typ, n, len(dst), r, got, want)
				}
			}
		}
	}
}

// BenchmarkDotARM64 compares the reference, plain NEON and SDOT kernels
// on a 4096-element row, single and four rows at a time. Under qemu the
// figures mean nothing; run it on an arm64 machine.
func BenchmarkDotARM64(b *testing.B) {
	const n = 4096
	defer installARM64(cpu.ARM64.HasASIMD, cpu.ARM64.HasASIMDDP)
	r := rand.New(rand.NewPCG(5, 5))
	w := randRow(r, n, 0.5)
	for _, typ := range arm64Types {
		wb := make([]byte, must(typ.RowBytes(n)))
		if err := Quantize(typ, wb, w); err != nil {
			b.Fatal(err)
		}
		vt := VecDotType(typ)
		stride := must(vt.RowBytes(n))
		a := make([]byte, MaxMultiRows*stride)
		q, _ := QuantizeRowFor(vt)
		for i := 0; i < MaxMultiRows; i++ {
			q(a[i*stride:(i+1)*stride], randRow(r, n, 2))
		}
		b.Run(typ.String()+"/go", func(b *testing.B) {
			b.SetBytes(int64(len(wb)))
			ref := formats[typ].dot
			var s float32
			for b.Loop() {
				s += ref(n, wb, a)
			}
			sink = s
		})
		for _, k := range arm64ISAs {
			if k.dotprod && !cpu.ARM64.HasASIMDDP {
				continue
			}
			installARM64(true, k.dotprod)
			dot, multi := accelerated[typ], acceleratedMulti[typ]
			b.Run(typ.String()+"/"+k.isa, func(b *testing.B) {
				b.SetBytes(int64(len(wb)))
				var s float32
				for b.Loop() {
					s += dot(n, wb, a)
				}
				sink = s
			})
			b.Run(typ.String()+"/"+k.isa+"/x4", func(b *testing.B) {
				b.SetBytes(int64(MaxMultiRows * len(wb)))
				var dst [MaxMultiRows]float32
				for b.Loop() {
					multi(n, wb, a, stride, dst[:])
				}
				sink = dst[0]
			})
		}
	}
}
