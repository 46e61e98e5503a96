package quantize

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestPlanMatchesSharedQ4_K_M checks the Q4_K_M rules against the shared
// models' Q4_K_M files, which llama-quantize made from the F16 files: every
// tensor must get the type llama.cpp gave it.
func TestPlanMatchesSharedQ4_K_M(t *testing.T) {
	dir := testpath.Shared(t, "models")
	ft, _ := ParseFileType("Q4_K_M")
	for _, m := range []string{"llama-19m", "qwen2-13m"} {
		in, err := gguf.Open(filepath.Join(dir, "ruvllm-test-"+m+"-f16.gguf"))
		if err != nil {
			t.Fatal(err)
		}
		ref, err := gguf.Open(filepath.Join(dir, "ruvllm-test-"+m+"-q4_k_m.gguf"))
		if err != nil {
			t.Fatal(err)
		}
		plans, err := Plan(in, Options{Type: ft})
		if err != nil {
			t.Fatal(err)
		}
		if len(plans) != len(ref.Tensors) {
			t.Fatalf("%s: %d tensors planned, llama.cpp's file has %d", m, len(plans), len(ref.Tensors))
		}
		for i, p := range plans {
			r := ref.Tensors[i]
			if p.Name != r.Name || p.To != r.Type {
				t.Errorf("%s tensor %d: %s %s, llama.cpp %s %s", m, i, p.Name, p.To, r.Name, r.Type)
			}
		}
		in.Close()
		ref.Close()
	}
}

// TestRuleTable checks the mixes' choices for the tensors of a model with
// rows of 256, 32 layers and 8 query heads per KV head, against llama.cpp's
// rules worked out by hand.
func TestRuleTable(t *testing.T) {
	m := &model{arch: "llama", layers: 32, heads: 32, headsKV: 4, attnV: 32}
	shape := []uint64{4096, 4096}
	for _, c := range []struct {
		ft    string
		name  string
		layer int // advance the counters to this layer first
		imat  bool
		want  quant.Type
	}{
		{"Q4_K_M", "output.weight", 0, false, quant.Q6_K},
		{"Q4_K_M", "token_embd.weight", 0, false, quant.Q4_K},
		{"Q4_K_M", "blk.0.attn_v.weight", 0, false, quant.Q6_K},     // first eighth
		{"Q4_K_M", "blk.5.attn_v.weight", 5, false, quant.Q4_K},     // (5-4)%3 == 1
		{"Q4_K_M", "blk.6.attn_v.weight", 6, false, quant.Q6_K},     // (6-4)%3 == 2
		{"Q4_K_M", "blk.7.attn_v.weight", 7, false, quant.Q4_K},     // (7-4)%3 == 0
		{"Q4_K_M", "blk.29.ffn_down.weight", 29, false, quant.Q6_K}, // last eighth
		{"Q4_K_M", "blk.10.attn_q.weight", 10, false, quant.Q4_K},
		{"Q2_K", "blk.3.attn_v.weight", 3, false, quant.Q4_K}, // gqa 8 >= 4
		{"Q2_K", "blk.3.ffn_down.weight", 3, false, quant.Q3_K},
		{"Q2_K", "blk.3.attn_output.weight", 3, false, quant.Q3_K},
		{"Q3_K_M", "blk.0.attn_v.weight", 0, false, quant.Q5_K},
		{"Q3_K_M", "blk.3.attn_v.weight", 3, false, quant.Q4_K},
		{"Q3_K_M", "blk.1.ffn_down.weight", 1, false, quant.Q5_K}, // < n/16
		{"Q3_K_M", "blk.9.ffn_down.weight", 9, false, quant.Q4_K},
		{"Q3_K_L", "blk.9.ffn_down.weight", 9, false, quant.Q5_K},
		{"Q4_K_S", "blk.2.attn_v.weight", 2, false, quant.Q5_K},
		{"Q4_K_S", "blk.2.ffn_down.weight", 2, false, quant.Q5_K},
		{"Q4_K_S", "blk.4.ffn_down.weight", 4, false, quant.Q4_K},
		{"IQ4_XS", "blk.0.attn_v.weight", 0, false, quant.Q5_K}, // gqa >= 4
		{"IQ4_XS", "blk.1.ffn_down.weight", 1, false, quant.Q5_K},
		{"IQ4_XS", "blk.1.ffn_down.weight", 1, true, quant.IQ4_XS},
		{"Q4_0", "blk.1.ffn_down.weight", 1, true, quant.Q4_1},
		{"Q5_0", "blk.1.ffn_down.weight", 1, true, quant.Q5_1},
		{"Q5_0", "blk.1.ffn_down.weight", 1, false, quant.Q5_0},
		{"Q8_0", "output.weight", 0, false, quant.Q8_0},
	} {
		ft, err := ParseFileType(c.ft)
		if err != nil {
			t.Fatal(err)
		}
		r := &rules{m: m, ft: ft.ID, hasImatrix: c.imat, iAttnV: c.layer, iFFNDown: c.layer}
		got, err := r.typeFor(ft.Default, c.name, shape, tensorCategory(c.name))
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s %s (layer %d, imatrix %v): %s, want %s", c.ft, c.name, c.layer, c.imat, got, c.want)
		}
	}
}

// TestFallback checks the shape fallbacks.
func TestFallback(t *testing.T) {
	for _, c := range []struct {
		t    quant.Type
		cols int
		want quant.Type
	}{
		{quant.Q4_K, 384, quant.Q5_0}, {quant.Q5_K, 384, quant.Q5_1}, {quant.Q6_K, 384, quant.Q8_0},
		{quant.Q2_K, 384, quant.Q4_0}, {quant.Q3_K, 96, quant.Q4_0}, {quant.IQ4_XS, 384, quant.IQ4_NL},
		{quant.IQ2_XXS, 160, quant.IQ4_NL}, {quant.Q4_K, 40, quant.F16}, {quant.Q4_0, 40, quant.F16},
		{quant.Q4_K, 512, quant.Q4_K},
	} {
		if got, _ := fallback(c.t, c.cols); got != c.want {
			t.Errorf("fallback(%s, %d) = %s, want %s", c.t, c.cols, got, c.want)
		}
	}
}

// TestQuantizeRefuses checks the clear errors: an unknown type, a mix
// that needs an importance matrix without one, a type ruvllm cannot make,
// an already quantized input, an importance matrix of the wrong size, a
// non-finite weight.
func TestQuantizeRefuses(t *testing.T) {
	dir := t.TempDir()
	in := openSynth(t, synthModels[1], filepath.Join(dir, "m.gguf"))
	if _, err := ParseFileType("Q4_K_X"); err == nil || !strings.Contains(err.Error(), "Q4_K_X") {
		t.Errorf("unknown type: %v", err)
	}
	// rows of 256, where the K-quants and grid i-quants are not replaced
	inA := openSynth(t, synthModels[0], filepath.Join(dir, "a.gguf"))
	q2ks, _ := ParseFileType("Q2_K_S")
	if _, err := Plan(inA, Options{Type: q2ks}); err == nil || !strings.Contains(err.Error(), "importance matrix") {
		t.Errorf("Q2_K_S without imatrix: %v", err)
	}
	for _, name := range []string{"IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ1_S", "IQ1_M", "IQ3_XXS", "IQ3_XS"} {
		ft, _ := ParseFileType(name)
		if _, err := Plan(inA, Options{Type: ft}); err == nil || !strings.Contains(err.Error(), "importance matrix") {
			t.Errorf("%s without imatrix: %v", name, err)
		}
	}
	// a type with no quantizer at all
	tq := FileType{Name: "TQ1_0", ID: 36, Default: quant.TQ1_0}
	if _, err := Plan(inA, Options{Type: tq}); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "TQ1_0") {
		t.Errorf("TQ1_0: %v", err)
	}
	// a file already quantized
	q40, _ := ParseFileType("Q4_0")
	out := filepath.Join(dir, "q.gguf")
	if _, err := File(context.Background(), in, out, Options{Type: q40}); err != nil {
		t.Fatal(err)
	}
	qf, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer qf.Close()
	q8, _ := ParseFileType("Q8_0")
	if _, err := Plan(qf, Options{Type: q8}); !errors.Is(err, ErrRequantize) || !errors.Is(err, ErrUnsupported) || strings.Contains(err.Error(), "--") {
		t.Errorf("quantized input: %v", err)
	}
	// an imatrix entry of the wrong length
	bad := &Imatrix{Entries: map[string][]float32{"blk.0.attn_q.weight": make([]float32, 7)}}
	if _, err := Plan(in, Options{Type: q40, Imatrix: bad}); err == nil || !strings.Contains(err.Error(), "blk.0.attn_q.weight") {
		t.Errorf("imatrix of the wrong size: %v", err)
	}
	// a NaN weight
	b, err := os.ReadFile(filepath.Join(dir, "m.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := raw.TensorData("blk.1.ffn_up.weight")
	binary.LittleEndian.PutUint16(data[2*100:], 0x7fc0) // a BF16 NaN
	_, err = File(context.Background(), raw, filepath.Join(dir, "x.gguf"), Options{Type: q40})
	if err == nil || !strings.Contains(err.Error(), "blk.1.ffn_up.weight") {
		t.Errorf("NaN weight: %v", err)
	}
}

// TestImatrixFormats checks that both importance matrix formats read back
// the values written, normalised as llama-quantize does.
func TestImatrixFormats(t *testing.T) {
	dir := t.TempDir()
	m := synthModels[1]
	m.writeImatrixDat(t, filepath.Join(dir, "a.dat"))
	m.writeImatrixGGUF(t, filepath.Join(dir, "a.gguf"))
	want := m.imatrixValues()
	for _, f := range []string{"a.dat", "a.gguf"} {
		im, err := ReadImatrix(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if len(im.Entries) != len(want) || len(im.Datasets) != 1 || im.Datasets[0] != "synthetic.txt" || im.Chunks == 0 {
			t.Fatalf("%s: %d entries, datasets %q, %d chunks", f, len(im.Entries), im.Datasets, im.Chunks)
		}
		for name, v := range want {
			got := im.Entries[name]
			for i := range v {
				if math.Abs(float64(got[i]-v[i])) > 1e-6*float64(v[i]) {
					t.Fatalf("%s %s[%d] = %g, want %g", f, name, i, got[i], v[i])
				}
			}
		}
	}
	for _, bad := range [][]byte{nil, {1, 0, 0, 0}, {1, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f}, []byte("GGUF\x03\x00\x00\x00")} {
		if _, err := ParseImatrix(bad); err == nil {
			t.Errorf("ParseImatrix(%x): no error", bad)
		}
	}
}

// FuzzParseImatrix feeds arbitrary bytes to the imatrix parser: an error
// or entries, never a panic.
func FuzzParseImatrix(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 3, 0, 0, 0, 'a', 'b', 'c', 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0x80, 0x3f})
	f.Add([]byte("GGUF"))
	f.Fuzz(func(t *testing.T, b []byte) {
		im, err := ParseImatrix(b)
		if err == nil && len(im.Entries) == 0 {
			t.Fatal("no error and no entries")
		}
	})
}

// TestRequantize checks AllowRequantize: a Q8_0 file made from the
// synthetic model, converted to Q4_0, holds for every converted tensor
// exactly the bytes of quantizing its dequantized Q8_0 weights (what
// llama-quantize --allow-requantize computes), and copies the tensors
// whose type stays.
func TestRequantize(t *testing.T) {
	dir := t.TempDir()
	in := openSynth(t, synthModels[1], filepath.Join(dir, "m.gguf"))
	q8, _ := ParseFileType("Q8_0")
	q40, _ := ParseFileType("Q4_0")
	if _, err := File(context.Background(), in, filepath.Join(dir, "q8.gguf"), Options{Type: q8}); err != nil {
		t.Fatal(err)
	}
	src, err := gguf.Open(filepath.Join(dir, "q8.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	o := Options{Type: q40, AllowRequantize: true}
	plans, err := Plan(src, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := File(context.Background(), src, filepath.Join(dir, "q4.gguf"), o); err != nil {
		t.Fatal(err)
	}
	out, err := gguf.Open(filepath.Join(dir, "q4.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	converted := 0
	for _, p := range plans {
		from, err := src.TensorData(p.Name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := out.TensorData(p.Name)
		if err != nil {
			t.Fatal(err)
		}
		want := from
		if p.To != p.From {
			converted++
			x := make([]float32, p.Elements())
			if err := quant.Dequantize(p.From, from, x); err != nil {
				t.Fatal(err)
			}
			want = make([]byte, len(got))
			if err := quant.Quantize(p.To, want, x); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, want) {
			t.Errorf("tensor %s (%s to %s): %d bytes differ from the requantized weights", p.Name, p.From, p.To, len(got))
		}
	}
	if converted == 0 {
		t.Fatal("no tensor was requantized")
	}
}

// openSynth writes m to path and opens it, closed when the test ends.
func openSynth(t *testing.T, m synthModel, path string) *gguf.File {
	t.Helper()
	m.write(t, path)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestQuantizeRefusesValuesPastTheType: a finite weight too large for the
// output type (an F16 value or block scale ends near 65504) is refused
// with the tensor named; it was written as ±Inf, and the quantized model
// answered every request with nothing. A BF16 weight of 1e20 is past
// every type but F32's and BF16's.
func TestQuantizeRefusesValuesPastTheType(t *testing.T) {
	dir := t.TempDir()
	openSynth(t, synthModels[1], filepath.Join(dir, "m.gguf"))
	b, err := os.ReadFile(filepath.Join(dir, "m.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := raw.TensorData("blk.1.ffn_up.weight")
	binary.LittleEndian.PutUint16(data[2*100:], 0x60ad) // 1e20 in BF16
	for _, name := range []string{"Q4_0", "Q8_0", "F16"} {
		ft, err := ParseFileType(name)
		if err != nil {
			t.Fatal(err)
		}
		_, err = File(context.Background(), raw, filepath.Join(dir, name+".gguf"), Options{Type: ft})
		if err == nil || !strings.Contains(err.Error(), "blk.1.ffn_up.weight") {
			t.Errorf("%s: err = %v, want a refusal naming blk.1.ffn_up.weight", name, err)
		}
	}
}

// TestImatrixValuesChecked: importance values that are NaN, infinite or
// negative (means of squares never are) are refused with the entry named;
// the weighted quantizers turned them into NaN scales, and the quantized
// model answered every request with nothing.
func TestImatrixValuesChecked(t *testing.T) {
	// legacy .dat: one entry "w" of one call and two values
	dat := func(a, b float32) []byte {
		le := binary.LittleEndian
		out := le.AppendUint32(nil, 1)
		out = le.AppendUint32(out, 1)
		out = append(out, 'w')
		out = le.AppendUint32(out, 1)
		out = le.AppendUint32(out, 2)
		out = le.AppendUint32(out, math.Float32bits(a))
		return le.AppendUint32(out, math.Float32bits(b))
	}
	for _, tc := range []struct {
		name string
		v    float32
		ok   bool
	}{
		{"positive", 2.5, true},
		{"zero", 0, true},
		{"NaN", float32(math.NaN()), false},
		{"+Inf", float32(math.Inf(1)), false},
		{"negative", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseImatrix(dat(1, tc.v))
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrImatrix) || !strings.Contains(err.Error(), "w value 1") {
				t.Fatalf("err = %v, want ErrImatrix naming w value 1", err)
			}
		})
	}
}

// TestImatrixCountsChecked: a GGUF importance matrix whose count is NaN
// or infinite is refused with the entry named; an infinite count divided
// every sum to 0, and the weighted quantizers wrote the tensor as zeros
// (a model of noise, perplexity 1e24, without a word). A count of 0 or
// less stays llama.cpp's "no data": importance 1.
func TestImatrixCountsChecked(t *testing.T) {
	file := func(count float32) []byte {
		w := gguf.NewWriter()
		w.PadLast()
		for _, kv := range []struct {
			k string
			v any
		}{{"imatrix.datasets", []string{"t.txt"}}, {"imatrix.chunk_count", uint32(1)}, {"imatrix.chunk_size", uint32(16)}} {
			if err := w.AddKV(kv.k, kv.v); err != nil {
				t.Fatal(err)
			}
		}
		le := binary.LittleEndian
		sums := le.AppendUint32(le.AppendUint32(nil, math.Float32bits(4)), math.Float32bits(8))
		if err := w.AddTensor("w.in_sum2", quant.F32, []uint64{2, 1}, sums); err != nil {
			t.Fatal(err)
		}
		if err := w.AddTensor("w.counts", quant.F32, []uint64{1, 1}, le.AppendUint32(nil, math.Float32bits(count))); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := w.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	for _, tc := range []struct {
		name  string
		count float32
		want  []float32 // nil: refused
	}{
		{"four", 4, []float32{1, 2}},
		{"zero", 0, []float32{1, 1}},
		{"+Inf", float32(math.Inf(1)), nil},
		{"-Inf", float32(math.Inf(-1)), nil},
		{"NaN", float32(math.NaN()), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im, err := ParseImatrix(file(tc.count))
			if tc.want == nil {
				if !errors.Is(err, ErrImatrix) || !strings.Contains(err.Error(), "w count 0") {
					t.Fatalf("err = %v, want ErrImatrix naming w count 0", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := im.Entries["w"]; !slices.Equal(got, tc.want) {
				t.Errorf("values %v, want %v", got, tc.want)
			}
		})
	}
}

// TestImatrixOfAnotherModel: an importance matrix that has no entry for
// any tensor converted is refused; it weighted nothing, yet changed the
// mix (the rules differ with one) and was recorded in the output, without
// a word. One that covers some of the tensors is used as before.
func TestImatrixOfAnotherModel(t *testing.T) {
	in := openSynth(t, synthModels[1], filepath.Join(t.TempDir(), "m.gguf"))
	q4km, _ := ParseFileType("Q4_K_M")
	foreign := &Imatrix{Entries: map[string][]float32{"model.layers.0.mlp.weight": {1, 2}}}
	if _, err := Plan(in, Options{Type: q4km, Imatrix: foreign}); err == nil || !strings.Contains(err.Error(), "model.layers.0.mlp.weight") {
		t.Errorf("an imatrix of another model: %v, want an error naming its entry", err)
	}
	var name string
	var cols uint64
	for _, ti := range in.Tensors {
		if strings.HasSuffix(ti.Name, "attn_q.weight") {
			name, cols = ti.Name, ti.Shape[0]
			break
		}
	}
	partial := &Imatrix{Entries: map[string][]float32{name: slices.Repeat([]float32{1}, int(cols)), "other.weight": {1}}}
	plans, err := Plan(in, Options{Type: q4km, Imatrix: partial})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plans {
		if (p.Name == name) != (p.Imatrix != nil) {
			t.Errorf("%s: imatrix %v", p.Name, p.Imatrix != nil)
		}
	}
}
