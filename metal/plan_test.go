package metal

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// These tests cover the host half of the Metal backend, which runs on every
// platform. The kernels themselves run only on a Mac (metal_test.go).

func TestParamsLayout(t *testing.T) {
	got := params(7, uint32(1<<31), float32(0.5), true, false)
	want := []uint32{7, 1 << 31, math.Float32bits(0.5), 1, 0}
	if len(got) != 4*len(want) {
		t.Fatalf("%d bytes, want %d", len(got), 4*len(want))
	}
	for i, w := range want {
		if v := binary.LittleEndian.Uint32(got[4*i:]); v != w {
			t.Errorf("field %d = %#x, want %#x", i, v, w)
		}
	}
	if b := int32Bytes([]int32{-1, 3}); !slices.Equal(b, []byte{0xff, 0xff, 0xff, 0xff, 3, 0, 0, 0}) {
		t.Errorf("int32Bytes = %v", b)
	}
}

// TestRopeTableMatchesCPU rotates with the (cos, sin) table ropeTable
// builds, using the rope_f32 kernel's pairing (adjacent pairs, or halves
// for neox), and requires bit-identical results to the CPU backend's RoPE.
func TestRopeTableMatchesCPU(t *testing.T) {
	const heads, headDim = 3, 8
	spans := []compute.Span{{Row: 0, N: 2, Pos: 5}, {Row: 2, N: 3, Pos: 4000}}
	rowsN := 5
	factors := []float32{1, 1.5, 4, 8}
	tests := []struct {
		name    string
		p       compute.RoPE
		factors []float32
	}{
		{"normal", compute.RoPE{Mode: compute.RoPENormal, FreqBase: 10000}, nil},
		{"neox", compute.RoPE{Mode: compute.RoPENeox, FreqBase: 1e6}, nil},
		{"partial-dims", compute.RoPE{Mode: compute.RoPENeox, Dims: 4, FreqBase: 10000}, nil},
		{"linear-scale", compute.RoPE{Mode: compute.RoPENormal, FreqBase: 10000, FreqScale: 0.25}, nil},
		{"yarn", compute.RoPE{Mode: compute.RoPENeox, FreqBase: 10000, FreqScale: 0.25, ExtFactor: 1,
			AttnFactor: 1, BetaFast: 32, BetaSlow: 1, OrigCtx: 2048}, nil},
		{"freq-factors", compute.RoPE{Mode: compute.RoPENormal, FreqBase: 500000}, factors},
	}
	b := cpu.New(cpu.Options{Threads: 1})
	defer b.Close()
	for _, tt := range tests {
		x := make([]float32, rowsN*heads*headDim)
		for i := range x {
			x[i] = float32(math.Sin(float64(i)*0.37)) * 3
		}
		p := tt.p
		if tt.factors != nil {
			raw := make([]byte, 4*len(tt.factors))
			for i, f := range tt.factors {
				binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
			}
			w, err := b.Weight(quant.F32, 1, len(tt.factors), raw)
			if err != nil {
				t.Fatal(err)
			}
			p.Factors = w
		}
		xt := b.New(rowsN, heads*headDim)
		b.Upload(xt, x)
		b.RoPE(xt, spans, heads, headDim, p)
		want := make([]float32, len(x))
		b.Download(xt, want)

		rows, cs, half := ropeTable(spans, headDim, tt.p, tt.factors)
		if !slices.Equal(rows, []uint32{0, 1, 2, 3, 4}) {
			t.Errorf("%s: rows %v", tt.name, rows)
		}
		if len(cs) != 2*half*len(rows) {
			t.Fatalf("%s: %d table entries for %d rows of %d pairs", tt.name, len(cs), len(rows), half)
		}
		got := slices.Clone(x)
		for k, r := range rows {
			for h := 0; h < heads; h++ {
				v := got[int(r)*heads*headDim+h*headDim:]
				for i := 0; i < half; i++ {
					c, s := cs[(k*half+i)*2], cs[(k*half+i)*2+1]
					i0, i1 := 2*i, 2*i+1
					if tt.p.Mode == compute.RoPENeox {
						i0, i1 = i, i+half
					}
					x0, x1 := v[i0], v[i1]
					// The CPU backend's fused rotation (llama.cpp's).
					v[i0] = float32(math.FMA(float64(x0), float64(c), -float64(x1*s)))
					v[i1] = float32(math.FMA(float64(x0), float64(s), float64(x1*c)))
				}
			}
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Errorf("%s: element %d = %v, CPU backend %v", tt.name, i, got[i], want[i])
				break
			}
		}
	}
}

// TestKVIndexMatchesCPULayout stores keys and values through the CPU
// backend's Attend and finds each one where kvIndex (the formula of
// kernels.metal's kv_index) says it is, in the store's raw block bytes.
func TestKVIndexMatchesCPULayout(t *testing.T) {
	cfg := compute.KVConfig{Layers: 2, Blocks: 4, BlockSize: 4, KVHeads: 2, HeadDim: 2, Type: quant.F32}
	b := cpu.New(cpu.Options{Threads: 1})
	defer b.Close()
	store, err := b.NewKVStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rowElems := cfg.KVHeads * cfg.HeadDim
	perLayer := cfg.BlockSize * rowElems
	perBlock := 2 * cfg.Layers * perLayer
	// Two sequences in one batch, with block tables out of order.
	spans := []compute.Span{{Row: 0, N: 6, Pos: 0, Blocks: []int32{2, 0}}, {Row: 6, N: 2, Pos: 1, Blocks: []int32{3}}}
	const n, layer = 8, 1
	k, v := make([]float32, n*rowElems), make([]float32, n*rowElems)
	for i := range k {
		k[i], v[i] = float32(i+1), float32(-(i + 1))
	}
	kt, vt, qt, dst := b.New(n, rowElems), b.New(n, rowElems), b.New(n, rowElems), b.New(n, rowElems)
	b.Upload(kt, k)
	b.Upload(vt, v)
	b.Attend(dst, qt, kt, vt, store, spans, compute.Attention{Layer: layer, Heads: cfg.KVHeads, KVHeads: cfg.KVHeads, HeadDim: cfg.HeadDim, Scale: 1})

	all := make([]float32, 0, cfg.Blocks*perBlock)
	raw := make([]byte, store.BlockBytes())
	for blk := range int32(cfg.Blocks) {
		if err := store.ReadBlock(blk, raw); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(raw); i += 4 {
			all = append(all, math.Float32frombits(binary.LittleEndian.Uint32(raw[i:])))
		}
	}
	plan := planAttention(spans, cfg.BlockSize, cfg.Blocks)
	if plan.count != n || !slices.Equal(plan.blocks, []int32{2, 0, 3}) {
		t.Fatalf("plan: count %d blocks %v", plan.count, plan.blocks)
	}
	for q := 0; q < n; q++ {
		row, pos, table := int(plan.rows[3*q]), int(plan.rows[3*q+1]), int(plan.rows[3*q+2])
		if row != q {
			t.Errorf("query %d planned as batch row %d", q, row)
		}
		at := kvIndex(plan.blocks, table, pos, cfg.BlockSize, perBlock, perLayer, rowElems, layer)
		for j := 0; j < rowElems; j++ {
			if got, want := all[at+j], k[row*rowElems+j]; got != want {
				t.Errorf("K of row %d (pos %d) elem %d at kvIndex %d = %v, want %v", row, pos, j, at, got, want)
			}
			if got, want := all[at+perLayer+j], v[row*rowElems+j]; got != want {
				t.Errorf("V of row %d (pos %d) elem %d = %v, want %v", row, pos, j, got, want)
			}
		}
	}
}

func TestPlanAttentionRejectsShortTables(t *testing.T) {
	for _, sp := range []compute.Span{
		{Row: 0, N: 5, Pos: 0, Blocks: []int32{0}}, // 4 positions for 5
		{Row: 0, N: 1, Pos: 0, Blocks: []int32{9}}, // block out of range
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("planAttention(%+v) did not panic", sp)
				}
			}()
			planAttention([]compute.Span{sp}, 4, 4)
		}()
	}
}
