//go:build unix

package quant

import (
	"math"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"unsafe"
)

// guardedBytes returns n bytes that end where an unreadable page begins,
// so that a kernel reading or writing past them faults.
func guardedBytes(t *testing.T, n int) []byte {
	t.Helper()
	page := syscall.Getpagesize()
	size := (n+page-1)/page*page + page
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[size-page:], syscall.PROT_NONE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	return mem[size-page-n : size-page : size-page]
}

// guarded is guardedBytes for n values of type T (at least one, so that
// a kernel given an empty aux still has an address).
func guarded[T any](t *testing.T, n int) []T {
	n = max(n, 1)
	var z T
	b := guardedBytes(t, n*int(unsafe.Sizeof(z)))
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// repackedLayouts returns every distinct repacked layout this CPU has for
// the default mode (FastPackedFor, with and without AMX) and, with exact,
// the exact mode's (PackedFor), each beside its weight type.
func repackedLayouts(exact bool) (layouts []*Packed, types []Type) {
	for _, typ := range []Type{Q4_0, Q8_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, F16, BF16} {
		candidates := []*Packed{FastPackedFor(typ, false), FastPackedFor(typ, true)}
		if typ == BF16 { // the plain layout beside the compressed one
			candidates = append(candidates, bf16x16Packed())
		}
		if exact {
			candidates = append(candidates, PackedFor(typ))
		}
		for _, p := range candidates {
			if p != nil && !slices.ContainsFunc(layouts, func(q *Packed) bool { return q.Name == p.Name }) {
				layouts, types = append(layouts, p), append(types, typ)
			}
		}
	}
	return layouts, types
}

// TestPackedKernelsStayInBounds calls every repacked layout's kernels on
// this CPU (Kernel, Accumulate, Decode, DecodeMulti and Tile, for every number
// of activation rows they take) with the weights, the activation rows,
// their aux words and the outputs each ending at an unreadable page, sized
// exactly as the kernel's contract says: a kernel that reads or writes one
// byte past what it was given faults. The results must equal the same
// call's on roomy buffers.
func TestPackedKernelsStayInBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 13))
	layouts, types := repackedLayouts(false)
	for i, p := range layouts {
		typ := types[i]
		t.Run(p.Name, func(t *testing.T) {
			const nb = 3
			cols := nb * p.BlockSize
			rowBytes := must(typ.RowBytes(cols))
			groups := max(p.DecodeGroups, 1)
			if p.Tile != nil {
				groups = 3 // a pair and a group alone
			}
			maxRows := max(PackedRows, p.TileRows)
			src := make([]byte, groups*Q4x16Rows*rowBytes)
			for i := range src {
				src[i] = byte(r.Uint32())
			}
			if p.Expand != nil { // BF16x16Z: weights of a few exponents (random ones do not compress)
				for i := 1; i < len(src); i += 2 {
					src[i] = src[i]&0x83 | 0x3c
				}
			}
			// Scales and minimums are halves: keep them finite.
			if typ != F16 && typ != BF16 {
				for i := 1; i < len(src); i += 2 {
					src[i] &= 0x3b
				}
			}
			packed := make([]byte, p.Bytes(groups*Q4x16Rows, cols))
			if err := p.Repack(packed, src, groups*Q4x16Rows, cols); err != nil {
				t.Fatal(err)
			}
			groupBytes := nb * p.BlockBytes
			actBytes := must(p.Act.RowBytes(cols))
			acts := make([]byte, maxRows*actBytes)
			for i := range acts {
				acts[i] = byte(r.Uint32())
			}
			if p.Act == Q8_0 || p.Act == Q8_1 || p.Act == Q8_K {
				for i := 1; i < len(acts); i += 2 {
					acts[i] &= 0x3b
				}
			}
			auxWords := p.AuxWords * nb
			aux := make([]uint32, maxRows*max(auxWords, 1))
			if p.Aux != nil {
				for row := range maxRows {
					p.Aux(aux[row*auxWords:(row+1)*auxWords], acts[row*actBytes:(row+1)*actBytes])
				}
			}
			check := func(name string, rows, outs int, call func(w, a []byte, aux []uint32, dst []float32)) {
				t.Helper()
				want := make([]float32, rows*outs)
				call(packed, acts[:rows*actBytes], aux[:rows*max(auxWords, 1)], want)
				w := guardedBytes(t, len(packed))
				copy(w, packed)
				a := guardedBytes(t, rows*actBytes)
				copy(a, acts)
				ax := guarded[uint32](t, rows*auxWords)
				copy(ax, aux)
				got := guarded[float32](t, rows*outs)
				call(w, a, ax, got)
				if !sameBits(got, want) {
					t.Errorf("%s, %d rows: results differ from the same call's on roomy buffers", name, rows)
				}
			}
			for rows := 1; rows <= PackedRows; rows++ {
				check("Kernel", rows, Q4x16Rows, func(w, a []byte, aux []uint32, dst []float32) {
					p.Kernel(nb, w[:groupBytes], a, actBytes, aux, auxWords, rows, dst, Q4x16Rows)
				})
				if p.Accumulate != nil {
					check("Accumulate", rows, Q4x16Rows, func(w, a []byte, aux []uint32, dst []float32) {
						p.Accumulate(nb, w[:groupBytes], a, actBytes, aux, auxWords, rows, dst, Q4x16Rows)
					})
				}
			}
			outs := groups * Q4x16Rows
			if p.Decode != nil {
				for _, acc := range []bool{false, true} {
					check("Decode", 1, outs, func(w, a []byte, _ []uint32, dst []float32) {
						p.Decode(nb, w, groupBytes, a, dst, acc)
					})
				}
			}
			for rows := 1; rows <= p.DecodeRows; rows++ {
				check("DecodeMulti", rows, outs, func(w, a []byte, _ []uint32, dst []float32) {
					p.DecodeMulti(nb, w, groupBytes, a, actBytes, rows, dst, outs, false)
				})
			}
			for g := 1; p.Tile != nil && g <= groups; g++ {
				for rows := 1; rows <= p.TileRows; rows++ {
					for _, acc := range []bool{false, true} {
						check("Tile", rows, g*Q4x16Rows, func(w, a []byte, aux []uint32, dst []float32) {
							p.Tile(nb, w[:(g-1)*groupBytes+nb*p.BlockBytes], groupBytes, g, a, actBytes, aux, auxWords, rows, dst, g*Q4x16Rows, acc)
						})
					}
				}
			}
		})
	}
}

// TestDotKernelsStayInBounds calls every weight type's dot-product
// kernels (DotFor, MultiDotFor with 1 to 4 rows, TileDotFor and
// InterleavedTileFor with 1 to 4 rows, where this CPU has them) on
// weights of random bytes, as a hostile or damaged file holds, and
// quantized activation rows, each ending at an unreadable page and sized
// exactly: a kernel that reads one byte past its rows, or indexes a
// table with a weight byte out of its range, faults. Results must equal
// the same call's on roomy buffers, bit for bit.
func TestDotKernelsStayInBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 19))
	for _, typ := range []Type{F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
		IQ4_NL, IQ4_XS, IQ3_S, IQ3_XXS, IQ2_S, IQ2_XS, IQ2_XXS, IQ1_S, IQ1_M} {
		dot, err := DotFor(typ)
		if err != nil {
			continue
		}
		t.Run(typ.String(), func(t *testing.T) {
			vt := VecDotType(typ)
			quantAct, err := QuantizeRowFor(vt)
			if err != nil {
				t.Fatal(err)
			}
			multi, err := MultiDotFor(typ)
			if err != nil {
				t.Fatal(err)
			}
			for _, blocks := range []int{1, 3, 8} {
				n := blocks * typ.BlockSize()
				wb := must(typ.RowBytes(n))
				ab := must(vt.RowBytes(n))
				w := make([]byte, TileRows*wb)
				for i := range w {
					w[i] = byte(r.Uint32())
				}
				a := make([]byte, TileRows*ab)
				for row := range TileRows {
					quantAct(a[row*ab:(row+1)*ab], randRow(r, n, 1))
				}
				guard := func(src []byte) []byte {
					g := guardedBytes(t, len(src))
					copy(g, src)
					return g
				}
				gw1, ga1 := guard(w[:wb]), guard(a[:ab])
				if got, want := dot(n, gw1, ga1), dot(n, w[:wb], a[:ab]); math.Float32bits(got) != math.Float32bits(want) {
					t.Errorf("%d values: dot %v on guarded buffers, %v on roomy ones", n, got, want)
				}
				for rows := 1; rows <= MaxMultiRows; rows++ {
					ga := guard(a[:rows*ab])
					got, want := make([]float32, rows), make([]float32, rows)
					multi(n, gw1, ga, ab, got)
					multi(n, w[:wb], a[:rows*ab], ab, want)
					if !sameBits(got, want) {
						t.Errorf("%d values, %d rows: multi-row dot differs on guarded buffers", n, rows)
					}
				}
				gw := guard(w)
				for name, tile := range map[string]TileDotFunc{"tile": TileDotFor(typ), "interleaved tile": InterleavedTileFor(typ)} {
					if tile == nil {
						continue
					}
					for rows := 1; rows <= TileRows; rows++ {
						ga := guard(a[:rows*ab])
						got := guarded[float32](t, (rows-1)*TileRows+TileRows)
						want := make([]float32, len(got))
						tile(n, gw, wb, ga, ab, rows, got, TileRows)
						tile(n, w, wb, a[:rows*ab], ab, rows, want, TileRows)
						if !sameBits(got, want) {
							t.Errorf("%d values, %d rows: %s differs on guarded buffers", n, rows, name)
						}
					}
				}
			}
		})
	}
}

// TestVectorKernelsStayInBounds runs the element-wise and attention
// helpers that have vector forms (conversions, Exp, SwiGLU, the half dot
// products, AddScaledRows, DecodeRowsHalf, FlashKeysHeads, FlashLoadKT,
// FlashLoadV and Prefetch) on every length from 1 to 200 (and the head counts and
// sizes attention uses) with each slice ending at an unreadable page, so
// that a vector tail that reads or writes past a slice faults.
func TestVectorKernelsStayInBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 29))
	halves := func(n int) []uint16 {
		h := guarded[uint16](t, n)
		for i := range h {
			h[i] = FP32ToFP16(float32(r.NormFloat64()))
		}
		return h
	}
	floats := func(n int) []float32 {
		f := guarded[float32](t, n)[:n]
		copy(f, randRow(r, n, 1))
		return f
	}
	for n := 1; n <= 200; n++ {
		HalfToFloat(floats(n), halves(n))
		FloatToHalf(halves(n), floats(n))
		RoundToHalf(floats(n))
		Exp(floats(n), floats(n))
		SwiGLU(floats(n), floats(n), floats(n))
		Prefetch(halves(n))
		DotHalf(halves(n), halves(n))
		ScaleHalf(halves(n), 0.5)
		MadHalf(halves(n), halves(n), 0.5)
		for _, rows := range []int{1, 3} {
			stride := n + r.IntN(3)
			AddScaledRows(floats(n), floats(rows), floats((rows-1)*stride+n), stride)
		}
	}
	for _, typ := range []Type{Q8_0, Q4_0} {
		for _, n := range []int{32, 64, 128} {
			rb := must(typ.RowBytes(n))
			src := guardedBytes(t, 3*rb)
			for i := range src {
				src[i] = byte(r.Uint32())
			}
			DecodeRowsHalf(typ, guarded[uint16](t, 3*n), src, rb, 3, n)
		}
	}
	for _, hd := range []int{64, 128} {
		for heads := 1; heads <= FlashMaxHeads; heads++ {
			for _, keys := range []int{1, 5, 16} {
				stride := hd * (1 + r.IntN(2))
				st := &FlashHeads{N: heads, Acc: halves(heads * hd), Scale: 0.125}
				for h := range heads {
					st.Max[h], st.Sum[h] = float32(math.Inf(-1)), 0
				}
				FlashKeysHeads(st, halves(heads*hd), halves((keys-1)*stride+hd), halves((keys-1)*stride+hd), stride, keys)
			}
		}
		kt := guarded[float32](t, hd*FlashTile)
		FlashLoadKT(kt, halves(hd*16), hd, 16, FlashTile-16)
		FlashLoadV(guarded[float32](t, 5*hd), halves(4*(hd+16)+hd), hd+16, 5, hd)
	}
}
