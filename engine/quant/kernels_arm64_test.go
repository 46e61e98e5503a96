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

// arm64MultiTypes are those of arm64Types with multi-row kernels.
var arm64MultiTypes = []Type{Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q6_K}

// arm64ISAs are the kernel sets installARM64 can choose, plain NEON first.
var arm64ISAs = []struct {
	isa     string
	dotprod bool
}{{"neon", false}, {"neon+dotprod", true}}

// TestARM64Kernels runs the bit-exactness tests with the plain NEON
// kernels and, where the CPU has FEAT_DotProd (qemu's default CPU does),
// with the SDOT ones, so both paths are checked on any arm64 machine.
func TestARM64Kernels(t *testing.T) {
	t.Logf("CPU features: ASIMD=%v ASIMDDP=%v; installed at start-up: %s",
		cpu.ARM64.HasASIMD, cpu.ARM64.HasASIMDDP, kernelISA)
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
				if !slices.Contains(types, typ) {
					t.Errorf("%s: no %s kernel installed", typ, k.isa)
				}
			}
			for _, typ := range arm64MultiTypes {
				if acceleratedMulti[typ] == nil {
					t.Errorf("%s: no %s multi-row kernel installed", typ, k.isa)
				}
			}
			t.Run("single", TestAcceleratedMatchesReference)
			t.Run("multi", TestMultiDotMatchesSingle)
			t.Run("manyrows", testMultiDotManyRows)
		})
	}
}

// testMultiDotManyRows checks the multi-row kernels past their contract's
// four rows and at zero length, where the wrappers split the rows or
// return zeros.
func testMultiDotManyRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 13))
	for _, typ := range arm64MultiTypes {
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
			if multi == nil {
				continue
			}
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
