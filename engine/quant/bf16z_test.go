package quant

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// bf16zWeights returns rows × cols BF16 weights of one of several kinds:
// normal values of a trained model's spread, the same with exact zeros
// and a few values far below the rest (patches), whole sub-blocks of one
// value, and values at the ends of the range (infinities, NaNs,
// subnormals).
func bf16zWeights(rng *rand.Rand, kind string, rows, cols int) []byte {
	w := make([]byte, rows*cols*2)
	for i := range rows * cols {
		x := float32(rng.NormFloat64() * 0.02)
		switch kind {
		case "patches":
			switch rng.IntN(3000) {
			case 0:
				x = 0
			case 1:
				x *= 1e-9
			}
		case "constant":
			x = 0.5
		case "extremes":
			switch rng.IntN(600) {
			case 0:
				x = float32(math.Inf(1 - 2*rng.IntN(2)))
			case 1:
				x = float32(math.NaN())
			case 2:
				x = math.Float32frombits(1 + rng.Uint32N(1<<22)) // subnormal
			}
			x *= 1e30
		}
		le.PutUint16(w[2*i:], FP32ToBF16(x))
	}
	return w
}

// TestBF16x16ZExpandsToBF16x16 repacks BF16 matrices of several kinds
// into BF16x16Z and checks that expanding them (ExpandBF16x16Z, and the
// assembly expansion where this CPU has it) gives the BF16x16 repack's
// bytes exactly, block by block and for runs of blocks.
func TestBF16x16ZExpandsToBF16x16(t *testing.T) {
	rng := rand.New(rand.NewPCG(401, 409))
	expanders := map[string]func(dst, src []byte, nb int){"reference": ExpandBF16x16Z}
	if p := bf16zPacked(); p != nil {
		expanders["kernel"] = p.Expand
	}
	for _, kind := range []string{"normal", "patches", "constant", "extremes"} {
		for _, nb := range []int{1, 2, 5} {
			rows, cols := 2*Q4x16Rows, nb*BF16x16ZBlockSize
			w := bf16zWeights(rng, kind, rows, cols)
			plain := make([]byte, F16x16Bytes(rows, cols))
			if err := RepackBF16x16(plain, w, rows, cols); err != nil {
				t.Fatal(err)
			}
			z := make([]byte, BF16x16ZBytes(rows, cols))
			if err := RepackBF16x16Z(z, w, rows, cols); err != nil {
				t.Fatalf("%s nb=%d: %v", kind, nb, err)
			}
			if len(z)*4 != len(plain)*3+rows/Q4x16Rows*nb*bf16zHeaderBytes*4 {
				t.Fatalf("%s: %d compressed bytes for %d", kind, len(z), len(plain))
			}
			for name, expand := range expanders {
				for g := range rows / Q4x16Rows {
					gz, gp := z[g*nb*BF16x16ZBlockBytes:][:nb*BF16x16ZBlockBytes], plain[g*nb*bf16zExpanded:][:nb*bf16zExpanded]
					got := make([]byte, nb*bf16zExpanded)
					expand(got, gz, nb)
					if !bytes.Equal(got, gp) {
						i := 0
						for got[i] == gp[i] {
							i++
						}
						t.Fatalf("%s %s nb=%d group %d: byte %d expands to %#x, BF16x16 %#x", name, kind, nb, g, i, got[i], gp[i])
					}
					for b := range nb { // one block at a time, from its own offset
						one := make([]byte, bf16zExpanded)
						expand(one, gz[b*BF16x16ZBlockBytes:], 1)
						if !bytes.Equal(one, gp[b*bf16zExpanded:][:bf16zExpanded]) {
							t.Fatalf("%s %s nb=%d group %d block %d alone: differs from BF16x16", name, kind, nb, g, b)
						}
					}
				}
			}
		}
	}
}

// TestBF16x16ZRefusesSpreadWeights checks that a block whose weights
// spread over too many exponents is refused with ErrIncompressible (the
// backend then keeps the matrix BF16x16), and that bad shapes and sizes
// are refused.
func TestBF16x16ZRefusesSpreadWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(419, 421))
	rows, cols := Q4x16Rows, BF16x16ZBlockSize
	w := bf16zWeights(rng, "normal", rows, cols)
	for i := range 12 { // in sub-block 0, twelve weights of twelve exponents the block does not use
		le.PutUint16(w[2*(i*cols):], uint16(0x0100*(i+1)))
	}
	z := make([]byte, BF16x16ZBytes(rows, cols))
	if err := RepackBF16x16Z(z, w, rows, cols); !errors.Is(err, ErrIncompressible) {
		t.Fatalf("spread block: %v, want ErrIncompressible", err)
	}
	for _, tc := range []struct{ rows, cols, src, dst int }{
		{rows, 96, rows * 96 * 2, BF16x16ZBytes(rows, 128)},
		{8, cols, 8 * cols * 2, BF16x16ZBytes(16, cols)},
		{rows, cols, rows*cols*2 - 2, len(z)},
		{rows, cols, rows * cols * 2, len(z) - 1},
	} {
		if err := RepackBF16x16Z(make([]byte, tc.dst), make([]byte, tc.src), tc.rows, tc.cols); err == nil {
			t.Errorf("%d×%d with %d and %d bytes: no error", tc.rows, tc.cols, tc.src, tc.dst)
		}
	}
}

// TestBF16x16ZKernelsMatchBF16x16 checks every kernel of the BF16x16Z
// layout against the BF16x16 layout's on the same weights, bit for bit:
// Kernel and Accumulate for 1 to 8 activation rows, Decode, DecodeMulti
// for 1 to 7 rows and Pair, with rows of a stride wider than their
// length.
func TestBF16x16ZKernelsMatchBF16x16(t *testing.T) {
	z, plain := bf16zPacked(), bf16x16Packed()
	if z == nil {
		t.Skip("no BF16x16Z kernels here")
	}
	rng := rand.New(rand.NewPCG(431, 433))
	for i, nb := range []int{1, 2, 3, 7, 1, 2, 3, 7} {
		rows, cols := 4*Q4x16Rows, nb*BF16x16ZBlockSize
		// Blocks with and without patches: the decode kernel expands the
		// ones without in registers, the others in memory.
		w := bf16zWeights(rng, []string{"normal", "patches"}[i/4], rows, cols)
		if i == 3 { // a patch in one group's block 4 of 7
			le.PutUint16(w[2*(17*cols+4*BF16x16ZBlockSize+5):], 0)
		}
		wz, wp := make([]byte, z.Bytes(rows, cols)), make([]byte, plain.Bytes(rows, cols))
		if err := z.Repack(wz, w, rows, cols); err != nil {
			t.Fatal(err)
		}
		if err := plain.Repack(wp, w, rows, cols); err != nil {
			t.Fatal(err)
		}
		gz, gp := nb*z.BlockBytes, 4*nb*plain.BlockBytes
		astride := 2*cols + 32
		a := make([]byte, PackedRows*astride)
		for r := range PackedRows {
			copy(a[r*astride:], appendHalf16Act(nil, BF16, randRow(rng, cols, 1)))
		}
		dstride := rows + 16
		same := func(name string, call func(p *Packed, w []byte, gb int, dst []float32)) {
			t.Helper()
			start := randRow(rng, PackedRows*dstride, 1)
			want, got := append([]float32(nil), start...), append([]float32(nil), start...)
			call(plain, wp, gp, want)
			call(z, wz, gz, got)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("nb=%d %s: output %d = %v, BF16x16 %v", nb, name, i, got[i], want[i])
				}
			}
		}
		for r := 1; r <= PackedRows; r++ {
			same("Kernel", func(p *Packed, w []byte, gb int, dst []float32) {
				p.Kernel(nb*z.BlockSize/p.BlockSize, w[gb:2*gb], a, astride, nil, 0, r, dst, dstride)
			})
			same("Accumulate", func(p *Packed, w []byte, gb int, dst []float32) {
				p.Accumulate(nb*z.BlockSize/p.BlockSize, w[gb:2*gb], a, astride, nil, 0, r, dst, dstride)
			})
		}
		for _, acc := range []bool{false, true} {
			same("Decode", func(p *Packed, w []byte, gb int, dst []float32) {
				p.Decode(nb*z.BlockSize/p.BlockSize, w, gb, a, dst, acc)
			})
			for r := 1; r <= z.DecodeRows; r++ {
				same("DecodeMulti", func(p *Packed, w []byte, gb int, dst []float32) {
					p.DecodeMulti(nb*z.BlockSize/p.BlockSize, w, gb, a, astride, r, dst, dstride, acc)
				})
			}
			same("Pair", func(p *Packed, w []byte, gb int, dst []float32) {
				p.Pair(nb*z.BlockSize/p.BlockSize, w[2*gb:], gb, a, astride, dst, dstride, acc)
			})
		}
	}
}

// FuzzBF16x16Z repacks arbitrary BF16 bytes (one group of one 128-column
// block, the rest of the matrix normal weights): the repack either
// refuses them with ErrIncompressible or expands back to the BF16x16
// repack's bytes, in Go and in assembly.
func FuzzBF16x16Z(f *testing.F) {
	f.Add([]byte{0x00, 0x3f, 0x80, 0xbf, 0x00, 0x00, 0xff, 0x7f})
	f.Add(bytes.Repeat([]byte{0x12, 0x3c}, 300))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, cols := Q4x16Rows, 2*BF16x16ZBlockSize
		w := bf16zWeights(rand.New(rand.NewPCG(1, uint64(len(data)))), "normal", rows, cols)
		copy(w, data)
		z := make([]byte, BF16x16ZBytes(rows, cols))
		err := RepackBF16x16Z(z, w, rows, cols)
		if errors.Is(err, ErrIncompressible) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		plain := make([]byte, F16x16Bytes(rows, cols))
		if err := RepackBF16x16(plain, w, rows, cols); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(plain))
		ExpandBF16x16Z(got, z, 2)
		if !bytes.Equal(got, plain) {
			t.Fatal("reference expansion differs from BF16x16")
		}
		if p := bf16zPacked(); p != nil {
			clear(got)
			p.Expand(got, z, 2)
			if !bytes.Equal(got, plain) {
				t.Fatal("kernel expansion differs from BF16x16")
			}
		}
	})
}

// BenchmarkBF16x16Z measures the expansion alone (GB/s of BF16x16 bytes
// written, from a block run that stays in L2) and the decode kernel of
// four groups against BF16x16's on the same weights (GB/s of BF16
// weights multiplied, from L2).
func BenchmarkBF16x16Z(b *testing.B) {
	z, plain := bf16zPacked(), bf16x16Packed()
	if z == nil {
		b.Skip("no BF16x16Z kernels here")
	}
	rng := rand.New(rand.NewPCG(5, 7))
	rows, cols := 64, 2048
	if v := os.Getenv("RUVLLM_BF16Z_ROWS"); v != "" { // e.g. 4096: a working set beyond L2
		rows, _ = strconv.Atoi(v)
	}
	w := bf16zWeights(rng, "normal", rows, cols)
	wz, wp := make([]byte, z.Bytes(rows, cols)), make([]byte, plain.Bytes(rows, cols))
	if err := z.Repack(wz, w, rows, cols); err != nil {
		b.Fatal(err)
	}
	if err := plain.Repack(wp, w, rows, cols); err != nil {
		b.Fatal(err)
	}
	nb := cols / BF16x16ZBlockSize
	b.Run("expand", func(b *testing.B) {
		dst := make([]byte, nb*bf16zExpanded)
		b.SetBytes(int64(len(dst)))
		for b.Loop() {
			z.Expand(dst, wz, nb)
		}
	})
	var a []byte
	for range 7 {
		a = appendHalf16Act(a, BF16, randRow(rng, cols, 1))
	}
	dst := make([]float32, 7*64)
	for _, p := range []*Packed{plain, z} {
		w, n := wp, cols/plain.BlockSize
		if p == z {
			w, n = wz, nb
		}
		b.Run("decode/"+p.Name, func(b *testing.B) {
			b.SetBytes(int64(rows * cols * 2))
			for b.Loop() {
				for g := 0; g < rows/16; g += 4 {
					p.Decode(n, w[g*len(w)/(rows/16):], len(w)/(rows/16), a, dst, false)
				}
			}
		})
		for _, r := range []int{2, 4, 7} {
			b.Run(fmt.Sprintf("rows%d/%s", r, p.Name), func(b *testing.B) {
				b.SetBytes(int64(rows * cols * 2))
				for b.Loop() {
					for g := 0; g < rows/16; g += 4 {
						p.DecodeMulti(n, w[g*len(w)/(rows/16):], len(w)/(rows/16), a, 2*cols, r, dst, 64, false)
					}
				}
			})
		}
	}
}

// TestBF16x16ZKernelsAllocateNothing checks that the BF16x16Z kernels,
// blocks with patches included, allocate nothing: a scratch buffer that
// moved to the heap made each patched block of a decode step allocate and
// clear 16 KiB (two cores' decode stream fell from 62 to 40 GB/s).
func TestBF16x16ZKernelsAllocateNothing(t *testing.T) {
	z := bf16zPacked()
	if z == nil {
		t.Skip("no BF16x16Z kernels here")
	}
	rng := rand.New(rand.NewPCG(439, 443))
	const nb, rows = 3, 4 * Q4x16Rows
	cols := nb * BF16x16ZBlockSize
	w := bf16zWeights(rng, "patches", rows, cols)
	le.PutUint16(w[2*(5*cols+BF16x16ZBlockSize+3):], 0) // a patch in every case
	wz := make([]byte, z.Bytes(rows, cols))
	if err := z.Repack(wz, w, rows, cols); err != nil {
		t.Fatal(err)
	}
	gb, astride := nb*z.BlockBytes, 2*cols
	a := make([]byte, PackedRows*astride)
	for r := range PackedRows {
		copy(a[r*astride:], appendHalf16Act(nil, BF16, randRow(rng, cols, 1)))
	}
	dst := make([]float32, PackedRows*rows)
	for name, call := range map[string]func(){
		"Decode": func() { z.Decode(nb, wz, gb, a, dst, false) },
		"DecodeMulti": func() {
			for r := 1; r <= z.DecodeRows; r++ {
				z.DecodeMulti(nb, wz, gb, a, astride, r, dst, rows, true)
			}
		},
		"Pair":   func() { z.Pair(nb, wz, gb, a, astride, dst, rows, false) },
		"Kernel": func() { z.Kernel(nb, wz[:gb], a, astride, nil, 0, PackedRows, dst, rows) },
	} {
		if n := testing.AllocsPerRun(5, call); n != 0 {
			t.Errorf("%s: %v allocations a call", name, n)
		}
	}
}
