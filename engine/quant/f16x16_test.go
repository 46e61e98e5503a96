package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestHalf16MatchesReference repacks random F16 and BF16 matrices of 16
// rows and checks, where this CPU has them, the assembly kernels against
// F16x16Reference and BF16x16Reference bit for bit, for 1 to 8 activation
// rows with gaps between them, in one call and split in two where the
// second call adds to the first (Accumulate); and the references against
// the float64 dot products of the GGUF rows within float32 rounding.
func TestHalf16MatchesReference(t *testing.T) {
	forEachISA(t, testHalf16MatchesReference)
}

func testHalf16MatchesReference(t *testing.T) {
	for _, bf := range []bool{false, true} {
		typ, ref, accRef, kern, accKern := F16, F16x16Reference, F16x16AccReference, f16x16Kernel, f16x16AccKernel
		repack := RepackF16x16
		if bf {
			typ, ref, accRef, kern, accKern = BF16, BF16x16Reference, BF16x16AccReference, bf16x16Kernel, bf16x16AccKernel
			repack = RepackBF16x16
		}
		kernels := map[string][2]PackedKernel{"reference": {ref, accRef}}
		if kern != nil {
			kernels["kernel"] = [2]PackedKernel{kern, accKern}
		}
		rng := rand.New(rand.NewPCG(51, 53))
		for iter := range 120 {
			nb := 1 + rng.IntN(12)
			n := nb * QK
			w := make([]byte, Q4x16Rows*n*2)
			vals := randRow(rng, Q4x16Rows*n, 0.5)
			if err := Quantize(typ, w, vals); err != nil {
				t.Fatal(err)
			}
			packed := make([]byte, F16x16Bytes(Q4x16Rows, n))
			if err := repack(packed, w, Q4x16Rows, n); err != nil {
				t.Fatal(err)
			}
			rows := 1 + iter%PackedRows
			ab := 4 // bytes per activation: float32, or bf16 for BF16x16
			if bf {
				ab = 2
			}
			astride := ab*n + 4*rng.IntN(3)
			a := make([]byte, (rows-1)*astride+ab*n)
			act := make([][]float32, rows)
			for r := range rows {
				act[r] = randRow(rng, n, 2)
				for k, x := range act[r] {
					if bf {
						h := FP32ToBF16(x)
						le.PutUint16(a[r*astride+2*k:], h)
						act[r][k] = BF16ToFP32(h)
					} else {
						le.PutUint32(a[r*astride+4*k:], math.Float32bits(x))
					}
				}
			}
			dstride := Q4x16Rows + iter%3
			// The float64 dot products the kernels approximate.
			for r := range rows {
				for i := range Q4x16Rows {
					var want, mag float64
					for k := range n {
						h := le.Uint16(w[2*(i*n+k):])
						v := float64(halfTable[h])
						if bf {
							v = float64(BF16ToFP32(h))
						}
						want += v * float64(act[r][k])
						mag += math.Abs(v * float64(act[r][k]))
					}
					got := make([]float32, (rows-1)*dstride+Q4x16Rows)
					ref(nb, packed, a, astride, nil, 0, rows, got, dstride)
					if d := math.Abs(float64(got[r*dstride+i]) - want); d > 1e-6*mag+1e-30 {
						t.Fatalf("%s nb=%d row %d act %d: reference %v, float64 %v", typ, nb, i, r, got[r*dstride+i], want)
					}
					break // one weight row per activation row is enough here
				}
			}
			want := make([]float32, (rows-1)*dstride+Q4x16Rows)
			ref(nb, packed, a, astride, nil, 0, rows, want, dstride)
			for name, k := range kernels {
				got := make([]float32, len(want))
				k[0](nb, packed, a, astride, nil, 0, rows, got, dstride)
				split := make([]float32, len(want))
				h := nb / 2
				if h > 0 {
					k[0](h, packed, a, astride, nil, 0, rows, split, dstride)
					k[1](nb-h, packed[h*F16x16BlockBytes:], a[h*QK*ab:], astride, nil, 0, rows, split, dstride)
				} else {
					k[1](nb, packed, a, astride, nil, 0, rows, split, dstride)
				}
				for r := range rows {
					for i := range Q4x16Rows {
						o := r*dstride + i
						if math.Float32bits(got[o]) != math.Float32bits(want[o]) || math.Float32bits(split[o]) != math.Float32bits(want[o]) {
							t.Fatalf("%s %s nb=%d rows=%d: act %d row %d = %v (split %v), reference %v", typ, name, nb, rows, r, i, got[o], split[o], want[o])
						}
					}
				}
			}
		}
	}
}

// half16Layout is a layout of F16 or BF16 weights.
type half16Layout struct {
	*Packed
	typ Type
}

// half16Layouts returns the default mode's F16 and BF16 layouts this CPU
// has kernels for: F16x16, BF16x16 and BF16x16Z.
func half16Layouts() []half16Layout {
	var out []half16Layout
	for _, l := range []half16Layout{{FastPackedFor(F16, false), F16}, {bf16x16Packed(), BF16}, {bf16zPacked(), BF16}} {
		if l.Packed != nil {
			out = append(out, l)
		}
	}
	return out
}

// half16Groups repacks random typ (F16 or BF16) weights of nb blocks a row
// into p's layout, p.DecodeGroups groups of 16 rows, and returns them with
// the bytes of a group.
func half16Groups(t *testing.T, rng *rand.Rand, p *Packed, typ Type, nb int) (packed []byte, groupBytes int) {
	t.Helper()
	n, rows := nb*p.BlockSize, Q4x16Rows*p.DecodeGroups
	w := make([]byte, rows*n*2)
	if err := Quantize(typ, w, randRow(rng, rows*n, 1)); err != nil {
		t.Fatal(err)
	}
	packed = make([]byte, p.Bytes(rows, n))
	if err := p.Repack(packed, w, rows, n); err != nil {
		t.Fatal(err)
	}
	return packed, nb * p.BlockBytes
}

// appendHalf16Act appends the activation row x as the F16x16 (float32) or
// BF16x16 (bf16) kernels take it.
func appendHalf16Act(a []byte, typ Type, x []float32) []byte {
	for _, v := range x {
		if typ == BF16 {
			a = le.AppendUint16(a, FP32ToBF16(v))
		} else {
			a = le.AppendUint32(a, math.Float32bits(v))
		}
	}
	return a
}

// TestHalf16DecodeMatchesKernel checks Packed.Decode of the F16x16 and
// BF16x16 layouts (four groups at once, one activation row) against the
// one-group kernel on each group, bit for bit, starting from zero and
// adding to dst.
func TestHalf16DecodeMatchesKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(101, 103))
	for _, p := range half16Layouts() {
		typ := p.typ
		if p.Decode == nil {
			t.Logf("no %s decode kernel here", p.Name)
			continue
		}
		for _, nb := range []int{1, 3, 28} {
			rows := Q4x16Rows * p.DecodeGroups
			packed, gb := half16Groups(t, rng, p.Packed, typ, nb)
			a := appendHalf16Act(nil, typ, randRow(rng, nb*p.BlockSize, 1))
			astride := len(a)
			for _, acc := range []bool{false, true} {
				start := randRow(rng, rows, 1)
				want, got := append([]float32(nil), start...), append([]float32(nil), start...)
				k := p.Kernel
				if acc {
					k = p.Accumulate
				}
				for g := range p.DecodeGroups {
					k(nb, packed[g*gb:], a, astride, nil, 0, 1, want[g*Q4x16Rows:], Q4x16Rows)
				}
				p.Decode(nb, packed, gb, a, got, acc)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s nb=%d accumulate=%v: output %d = %v, kernel %v", typ, nb, acc, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestHalf16DecodeMultiMatchesKernel checks Packed.DecodeMulti of the
// F16x16 and BF16x16 layouts (four groups at once, 1 to DecodeRows
// activation rows) against the one-group kernel on each group and row,
// bit for bit, starting from zero and adding to dst, with strides wider
// than a row.
func TestHalf16DecodeMultiMatchesKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(107, 109))
	for _, p := range half16Layouts() {
		typ := p.typ
		if p.DecodeMulti == nil {
			t.Logf("no %s multi-row decode kernel here", p.Name)
			continue
		}
		act := 4 // bytes of an activation: float32, or bf16 for BF16
		if typ == BF16 {
			act = 2
		}
		for _, nb := range []int{1, 3, 12, 32} {
			n := nb * p.BlockSize
			wrows := Q4x16Rows * p.DecodeGroups
			packed, gb := half16Groups(t, rng, p.Packed, typ, nb)
			astride := n*act + 64 // rows apart by more than their length
			a := make([]byte, p.DecodeRows*astride)
			for r := range p.DecodeRows {
				copy(a[r*astride:], appendHalf16Act(nil, typ, randRow(rng, n, 1)))
			}
			dstride := wrows + 16
			for rows := 1; rows <= p.DecodeRows; rows++ {
				for _, acc := range []bool{false, true} {
					start := randRow(rng, rows*dstride, 1)
					want, got := append([]float32(nil), start...), append([]float32(nil), start...)
					k := p.Kernel
					if acc {
						k = p.Accumulate
					}
					for g := range p.DecodeGroups {
						k(nb, packed[g*gb:(g+1)*gb], a, astride, nil, 0, rows, want[g*Q4x16Rows:], dstride)
					}
					p.DecodeMulti(nb, packed, gb, a, astride, rows, got, dstride, acc)
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s nb=%d rows=%d accumulate=%v: output %d (row %d) = %v, kernel %v", typ, nb, rows, acc, i, i/dstride, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestHalf16PairMatchesKernel checks Packed.Pair of the F16x16 and BF16x16 layouts
// (two groups, PackedRows activation rows at once) against the one-group
// kernel on each group, bit for bit, starting from zero and adding to dst,
// with strides wider than a row.
func TestHalf16PairMatchesKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(113, 127))
	for _, p := range half16Layouts() {
		typ := p.typ
		if p.Pair == nil {
			t.Logf("no %s pair kernel here", p.Name)
			continue
		}
		for _, nb := range []int{1, 3, 12, 32} {
			n := nb * p.BlockSize
			wrows := 2 * Q4x16Rows
			w := make([]byte, wrows*n*2)
			if err := Quantize(typ, w, randRow(rng, wrows*n, 1)); err != nil {
				t.Fatal(err)
			}
			packed := make([]byte, p.Bytes(wrows, n))
			if err := p.Repack(packed, w, wrows, n); err != nil {
				t.Fatal(err)
			}
			gb := nb * p.BlockBytes
			act := 4 // float32 activations (F16x16)
			if typ == BF16 {
				act = 2
			}
			astride := n*act + 64 // rows apart by more than their length
			a := make([]byte, PackedRows*astride)
			for r := range PackedRows {
				for i, x := range randRow(rng, n, 1) {
					if typ == BF16 {
						le.PutUint16(a[r*astride+2*i:], FP32ToBF16(x))
					} else {
						le.PutUint32(a[r*astride+4*i:], math.Float32bits(x))
					}
				}
			}
			dstride := wrows + 16
			for _, acc := range []bool{false, true} {
				start := randRow(rng, PackedRows*dstride, 1)
				want, got := append([]float32(nil), start...), append([]float32(nil), start...)
				k := p.Kernel
				if acc {
					k = p.Accumulate
				}
				for g := range 2 {
					k(nb, packed[g*gb:(g+1)*gb], a, astride, nil, 0, PackedRows, want[g*Q4x16Rows:], dstride)
				}
				p.Pair(nb, packed, gb, a, astride, got, dstride, acc)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s nb=%d accumulate=%v: output %d (row %d) = %v, kernel %v", typ, nb, acc, i, i/dstride, got[i], want[i])
					}
				}
			}
		}
	}
}
