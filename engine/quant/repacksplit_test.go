package quant

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestRepackSplitsByGroups checks that every repacked layout's Repack of
// a matrix equals its Repack of row ranges of whole 16-row groups, each
// into its place (Packed.Bytes of the rows before it): the CPU backend
// repacks a weight's groups on all its workers at once.
func TestRepackSplitsByGroups(t *testing.T) {
	r := rand.New(rand.NewPCG(157, 163))
	layouts, types := repackedLayouts(true)
	if len(layouts) == 0 {
		t.Skip("no repacked layout on this CPU")
	}
	for i, p := range layouts {
		typ := types[i]
		t.Run(p.Name, func(t *testing.T) {
			const rows = 3 * Q4x16Rows
			cols := 2 * p.BlockSize
			rowBytes := must(typ.RowBytes(cols))
			src := make([]byte, rows*rowBytes)
			if err := Quantize(typ, src, randRow(r, rows*cols, 2)); err != nil {
				t.Fatal(err)
			}
			whole := make([]byte, p.Bytes(rows, cols))
			if err := p.Repack(whole, src, rows, cols); err != nil {
				t.Fatal(err)
			}
			for _, cut := range []int{Q4x16Rows, 2 * Q4x16Rows} {
				parts := make([]byte, len(whole))
				for _, rg := range [][2]int{{0, cut}, {cut, rows}} {
					if err := p.Repack(parts[p.Bytes(rg[0], cols):p.Bytes(rg[1], cols)], src[rg[0]*rowBytes:rg[1]*rowBytes], rg[1]-rg[0], cols); err != nil {
						t.Fatal(err)
					}
				}
				if !bytes.Equal(parts, whole) {
					t.Fatalf("cut at row %d: the parts differ from the whole", cut)
				}
			}
		})
	}
}

// BenchmarkRepack repacks a 2048×2048 matrix of each type into its
// layout (a model's load is mostly this), in MB/s of GGUF bytes read.
func BenchmarkRepack(b *testing.B) {
	for _, typ := range []Type{Q4_0, Q8_0, Q4_K, Q6_K, F16, BF16} {
		p := FastPackedFor(typ, false)
		if p == nil {
			continue
		}
		const rows, cols = 2048, 2048
		src := make([]byte, rows*must(typ.RowBytes(cols)))
		dst := make([]byte, p.Bytes(rows, cols))
		b.Run(p.Name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if err := p.Repack(dst, src, rows, cols); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
