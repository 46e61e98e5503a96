package quantize

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// Synthetic models for the golden tests: small F16 (or BF16) llama and
// qwen2 files whose weights come from a fixed SplitMix64 stream (not
// math/rand, whose algorithms may change), with just the metadata
// llama-quantize reads. synthA has rows of 256 (every K-quant fits) and
// grouped-query attention with 4 query heads per KV head; synthB has rows
// of 96, where the K-quants and IQ4_XS fall back to 32-element types, and
// tied embeddings.

type synthModel struct {
	name                                   string
	arch                                   string
	layers, dim, heads, kvHeads, ff, vocab int
	typ                                    quant.Type
	tied                                   bool
}

var synthModels = []synthModel{
	{name: "synthA", arch: "llama", layers: 8, dim: 256, heads: 4, kvHeads: 1, ff: 256, vocab: 320, typ: quant.F16},
	{name: "synthB", arch: "qwen2", layers: 3, dim: 96, heads: 3, kvHeads: 3, ff: 160, vocab: 200, typ: quant.BF16, tied: true},
}

type splitmix uint64

func (s *splitmix) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// normal returns an approximately Gaussian value (sum of 4 uniforms) with
// occasional outliers, like trained weights.
func (s *splitmix) normal() float32 {
	var u float64
	for range 4 {
		u += float64(s.next()>>11)/(1<<53) - 0.5
	}
	if s.next()%97 == 0 {
		u *= 8
	}
	return float32(u * 1.7)
}

// write writes the model to path.
func (m synthModel) write(t *testing.T, path string) {
	t.Helper()
	w := gguf.NewWriter()
	w.PadLast()
	kv := func(k string, v any) {
		if err := w.AddKV(k, v); err != nil {
			t.Fatal(err)
		}
	}
	kv("general.architecture", m.arch)
	kv("general.name", m.name)
	kv(m.arch+".context_length", uint32(256))
	kv(m.arch+".embedding_length", uint32(m.dim))
	kv(m.arch+".block_count", uint32(m.layers))
	kv(m.arch+".feed_forward_length", uint32(m.ff))
	kv(m.arch+".rope.dimension_count", uint32(m.dim/m.heads))
	kv(m.arch+".attention.head_count", uint32(m.heads))
	kv(m.arch+".attention.head_count_kv", uint32(m.kvHeads))
	kv(m.arch+".attention.layer_norm_rms_epsilon", float32(1e-5))
	kv("general.file_type", uint32(map[quant.Type]uint32{quant.F16: ftF16, quant.BF16: ftBF16, quant.F32: ftF32}[m.typ]))
	toks := make([]string, m.vocab)
	for i := range toks {
		toks[i] = fmt.Sprintf("<t%d>", i)
	}
	kv("tokenizer.ggml.model", "gpt2")
	kv("tokenizer.ggml.tokens", toks)
	s := splitmix(len(m.name) * 7919)
	hd := m.dim / m.heads
	add := func(name string, typ quant.Type, shape ...uint64) {
		n := 1
		for _, d := range shape {
			n *= int(d)
		}
		x := make([]float32, n)
		for i := range x {
			x[i] = s.normal() * 0.05
		}
		b := make([]byte, must(typ.RowBytes(n)))
		if err := quant.Quantize(typ, b, x); err != nil {
			t.Fatal(err)
		}
		if err := w.AddTensor(name, typ, shape, b); err != nil {
			t.Fatal(err)
		}
	}
	add("token_embd.weight", m.typ, uint64(m.dim), uint64(m.vocab))
	add("output_norm.weight", quant.F32, uint64(m.dim))
	if !m.tied {
		add("output.weight", m.typ, uint64(m.dim), uint64(m.vocab))
	}
	for l := 0; l < m.layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		add(p+"attn_norm.weight", quant.F32, uint64(m.dim))
		add(p+"attn_q.weight", m.typ, uint64(m.dim), uint64(m.heads*hd))
		add(p+"attn_k.weight", m.typ, uint64(m.dim), uint64(m.kvHeads*hd))
		add(p+"attn_v.weight", m.typ, uint64(m.dim), uint64(m.kvHeads*hd))
		add(p+"attn_output.weight", m.typ, uint64(m.heads*hd), uint64(m.dim))
		if m.arch == "qwen2" {
			add(p+"attn_q.bias", quant.F32, uint64(m.heads*hd))
			add(p+"attn_k.bias", quant.F32, uint64(m.kvHeads*hd))
			add(p+"attn_v.bias", quant.F32, uint64(m.kvHeads*hd))
		}
		add(p+"ffn_norm.weight", quant.F32, uint64(m.dim))
		add(p+"ffn_gate.weight", m.typ, uint64(m.dim), uint64(m.ff))
		add(p+"ffn_up.weight", m.typ, uint64(m.dim), uint64(m.ff))
		add(p+"ffn_down.weight", m.typ, uint64(m.ff), uint64(m.dim))
	}
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

// imatrixValues returns importance weights for every matrix of m (as
// llama-imatrix would have them: mean squared activations, positive).
func (m synthModel) imatrixValues() map[string][]float32 {
	s := splitmix(len(m.name)*31 + 5)
	out := map[string][]float32{}
	vec := func(name string, n int) {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(s.next()>>40)/(1<<24)*2 + 0.01
		}
		out[name] = v
	}
	hd := m.dim / m.heads
	if !m.tied {
		vec("output.weight", m.dim)
	}
	for l := 0; l < m.layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		for _, n := range []string{"attn_q.weight", "attn_k.weight", "attn_v.weight", "ffn_gate.weight", "ffn_up.weight"} {
			vec(p+n, m.dim)
		}
		vec(p+"attn_output.weight", m.heads*hd)
		vec(p+"ffn_down.weight", m.ff)
	}
	return out
}

// writeImatrixDat writes m's importance weights in llama.cpp's legacy
// format with the given number of calls (the values are stored times
// the calls, as llama-imatrix stores sums), 10 chunks and a dataset name.
func (m synthModel) writeImatrixDat(t *testing.T, path string) {
	t.Helper()
	vals := m.imatrixValues()
	var b []byte
	le := binary.LittleEndian
	b = le.AppendUint32(b, uint32(len(vals)))
	for _, name := range sortedKeys(vals) {
		b = le.AppendUint32(b, uint32(len(name)))
		b = append(b, name...)
		const calls = 3
		b = le.AppendUint32(b, calls)
		b = le.AppendUint32(b, uint32(len(vals[name])))
		for _, v := range vals[name] {
			b = le.AppendUint32(b, math.Float32bits(v*calls))
		}
	}
	b = le.AppendUint32(b, 10)
	ds := "synthetic.txt"
	b = le.AppendUint32(b, uint32(len(ds)))
	b = append(b, ds...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeImatrixGGUF writes m's importance weights in llama-imatrix's GGUF
// format: per tensor its sums (values times a count) and the count.
func (m synthModel) writeImatrixGGUF(t *testing.T, path string) {
	t.Helper()
	vals := m.imatrixValues()
	w := gguf.NewWriter()
	w.PadLast() // llama.cpp's reader wants the last tensor padded too
	for _, kv := range []struct {
		k string
		v any
	}{{"general.type", "imatrix"}, {"imatrix.datasets", []string{"synthetic.txt"}}, {"imatrix.chunk_count", uint32(7)}, {"imatrix.chunk_size", uint32(256)}} {
		if err := w.AddKV(kv.k, kv.v); err != nil {
			t.Fatal(err)
		}
	}
	f32 := func(x []float32) []byte {
		b := make([]byte, 4*len(x))
		for i, v := range x {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b
	}
	for _, name := range sortedKeys(vals) {
		const count = 1792
		sums := make([]float32, len(vals[name]))
		for i, v := range vals[name] {
			sums[i] = v * count
		}
		if err := w.AddTensor(name+".in_sum2", quant.F32, []uint64{uint64(len(sums)), 1}, f32(sums)); err != nil {
			t.Fatal(err)
		}
		if err := w.AddTensor(name+".counts", quant.F32, []uint64{1, 1}, f32([]float32{count})); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

func sortedKeys(m map[string][]float32) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.Sort(keys)
	return keys
}

func must(n int, err error) int {
	if err != nil {
		panic(err)
	}
	return n
}

// synthFiles writes the synthetic models and their imatrix files into dir
// and returns the model paths by name.
func synthFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range synthModels {
		p := filepath.Join(dir, m.name+".gguf")
		m.write(t, p)
		m.writeImatrixDat(t, filepath.Join(dir, m.name+".imatrix.dat"))
		m.writeImatrixGGUF(t, filepath.Join(dir, m.name+".imatrix.gguf"))
		out[m.name] = p
	}
	return out
}
