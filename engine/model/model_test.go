package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/kv"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// writeModel writes a small synthetic model and opens it.
func writeModel(t testing.TB, o testmodel.Options) *gguf.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), o.Arch+".gguf")
	if err := testmodel.Write(context.Background(), o, path); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// engineLogits runs tokens through the engine the way generation does: a
// prefill of the first half in one batch, then one token at a time, and
// returns the logits at every position.
func engineLogits(t *testing.T, f *gguf.File, tokens []int32, kvType quant.Type) [][]float32 {
	return engineRun(t, f, tokens, kvType, runOptions{})
}

// runOptions vary engineRun.
type runOptions struct {
	ctx  int                                   // context passed to ContextSizer (0: none)
	wrap func(compute.Backend) compute.Backend // replaces the CPU backend seen by the model
}

// engineRun is engineLogits with options.
func engineRun(t *testing.T, f *gguf.File, tokens []int32, kvType quant.Type, o runOptions) [][]float32 {
	t.Helper()
	cb := cpu.New(cpu.Options{Threads: 2})
	defer cb.Close()
	var b compute.Backend = cb
	if o.wrap != nil {
		b = o.wrap(b)
	}
	m, err := Load(f, b)
	if err != nil {
		t.Fatal(err)
	}
	if cs, ok := m.(ContextSizer); ok && o.ctx > 0 {
		cs.SizeContext(o.ctx)
	}
	c := m.Config()
	blocks := max(64, (len(tokens)+15)/16)
	pool := kv.NewPool(blocks, 16)
	store, err := b.NewKVStore(compute.KVConfig{Layers: c.Layers, Blocks: blocks, BlockSize: 16, KVHeads: c.KVHeads, HeadDim: c.HeadDim, Type: kvType})
	if err != nil {
		t.Fatal(err)
	}
	seq := kv.NewSequence(pool)
	var out [][]float32
	run := func(toks []int32) {
		if err := seq.Reserve(len(toks), store); err != nil {
			t.Fatal(err)
		}
		batch := &Batch{Tokens: toks, Spans: []compute.Span{{N: len(toks), Pos: seq.Len(), Blocks: seq.Blocks()}}}
		hidden := m.Forward(batch, store)
		rows := make([]int32, len(toks))
		for i := range rows {
			rows[i] = int32(i)
		}
		logits := m.Logits(hidden, rows)
		all := make([]float32, len(toks)*c.Vocab)
		b.Download(logits, all)
		for i := range toks {
			out = append(out, all[i*c.Vocab:(i+1)*c.Vocab])
		}
		seq.Advance(len(toks))
	}
	half := len(tokens) / 2
	run(tokens[:half])
	for _, tok := range tokens[half:] {
		run([]int32{tok})
	}
	return out
}

// TestFamiliesMatchReference checks each family's forward pass against the
// float64 reference on synthetic models: f32 weights within 1e-4 relative
// to the logits' scale, quantized weights within their quantization error.
// "llama-moe" is the llama architecture with experts (Mixtral's layout).
func TestFamiliesMatchReference(t *testing.T) {
	tokens := []int32{1, 17, 200, 45, 99, 3, 250, 64, 7, 180, 33, 2, 90, 141}
	for _, arch := range append(testmodel.Arches(), "llama-moe") {
		for _, tc := range []struct {
			typ quant.Type
			tol float64
		}{
			{quant.F32, 1e-4},
			{quant.F16, 2e-2},
			{quant.Q8_0, 5e-2},
		} {
			t.Run(arch+"/"+tc.typ.String(), func(t *testing.T) {
				o := familyOptions(arch)
				o.Type = tc.typ
				o.SlidingWindow = 6 // shorter than the sequence, so windows matter
				o.SWAPattern = 2    // gemma3: one local layer, one global
				f := writeModel(t, o)
				b := cpu.New(cpu.Options{Threads: 1})
				_, err := Load(f, b)
				b.Close()
				if err != nil {
					if errors.Is(err, compute.ErrUnsupported) {
						t.Skipf("%s weights not supported yet: %v", tc.typ, err)
					}
					t.Fatal(err)
				}
				ref := newRef(t, f, o, 0)
				want := ref.logits(tokens)
				checkMargin(t, ref, tc.typ)
				got := engineLogits(t, f, tokens, quant.F32)
				compareLogits(t, got, want, tc.tol)
			})
		}
	}
}

// familyOptions is the default shape of arch ("llama-moe": llama with 4
// experts, 2 per token), with a seed for which every routing decision of
// a mixture-of-experts model has a clear margin (see checkMargin).
func familyOptions(arch string) testmodel.Options {
	o := testmodel.DefaultOptions()
	o.Arch, o.Seed = arch, 42
	switch arch {
	case "llama-moe":
		o.Arch, o.Experts, o.ExpertsUsed, o.Seed = "llama", 4, 2, 180
	case "qwen3moe":
		o.Seed = 195
	}
	return o
}

// checkMargin fails when the reference's routing had a near-tie that a
// quantized model's rounding could break the other way: the engine would
// then pick another expert, and its logits differ by far more than the
// rounding. Routing must be compared where the choice is clear; a fixture
// that has none needs another seed.
func checkMargin(t *testing.T, ref *refModel, typ quant.Type) {
	t.Helper()
	need := map[quant.Type]float64{quant.F32: 1e-3, quant.F16: 0.02, quant.Q8_0: 0.08}[typ]
	if ref.margin < need {
		t.Fatalf("fixture's closest routing decision is %.3g apart in router logits, under %.3g for %s: choose another seed", ref.margin, need, typ)
	}
}

// compareLogits fails unless every position's logits are within tol of
// the reference's, relative to the larger of 1 and the largest logit.
func compareLogits(t *testing.T, got [][]float32, want [][]float64, tol float64) {
	t.Helper()
	for p := range want {
		var scale, maxDiff float64
		for i, w := range want[p] {
			scale = math.Max(scale, math.Abs(w))
			maxDiff = math.Max(maxDiff, math.Abs(float64(got[p][i])-w))
		}
		if maxDiff > tol*math.Max(scale, 1) {
			t.Fatalf("position %d: max |engine-reference| = %.3g, scale %.3g, tolerance %.1g relative", p, maxDiff, scale, tol)
		}
	}
}

func TestUnsupportedArchitecture(t *testing.T) {
	o := testmodel.DefaultOptions()
	f := writeModel(t, o)
	// Rewrite the architecture key by writing a copy with another name.
	w := gguf.NewWriter()
	for _, kv := range f.KV {
		if kv.Key == "general.architecture" {
			w.AddKV(kv.Key, "mamba")
			continue
		}
		w.AddKV(kv.Key, kv.Value)
	}
	for _, ti := range f.Tensors {
		data, _ := f.TensorData(ti.Name)
		w.AddTensor(ti.Name, ti.Type, ti.Shape, data)
	}
	path := filepath.Join(t.TempDir(), "mamba.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	g, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	b := cpu.New(cpu.Options{Threads: 1})
	defer b.Close()
	if _, err := Load(g, b); !errors.Is(err, ErrUnsupportedArch) {
		t.Fatalf("err = %v, want ErrUnsupportedArch", err)
	}
}

// TestReadConfig: ReadConfig gives the configuration Load gives, without
// loading weights, and refuses architectures it has no reader for.
func TestReadConfig(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2"} {
		o := testmodel.DefaultOptions()
		o.Arch = arch
		f := writeModel(t, o)
		b := cpu.New(cpu.Options{Threads: 1})
		m, err := Load(f, b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadConfig(f)
		if err != nil {
			t.Fatal(err)
		}
		want := m.Config()
		want.RoPE.Factors = nil
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: ReadConfig %+v, Load %+v", arch, got, want)
		}
		b.Close()
	}
	o := testmodel.DefaultOptions()
	o.Arch = "gemma2"
	if _, err := ReadConfig(writeModel(t, o)); !errors.Is(err, ErrUnsupportedArch) {
		t.Fatalf("gemma2: %v, want ErrUnsupportedArch", err)
	}
}
