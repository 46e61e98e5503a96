package model

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// stepper runs a model one token at a time over a fixed block table, the
// way the scheduler's decode loop does, with the batch reused between
// steps.
type stepper struct {
	b     *cpu.Backend
	m     Model
	kv    compute.KVStore
	batch Batch
	rows  []int32
	pos   int
}

func newStepper(tb testing.TB, o testmodel.Options, threads, ctx int) *stepper {
	tb.Helper()
	f := writeModel(tb, o)
	b := cpu.New(cpu.Options{Threads: threads})
	tb.Cleanup(b.Close)
	m, err := Load(f, b)
	if err != nil {
		tb.Fatal(err)
	}
	c := m.Config()
	const bs = 16
	blocks := (ctx + bs - 1) / bs
	kv, err := b.NewKVStore(compute.KVConfig{Layers: c.Layers, Blocks: blocks, BlockSize: bs, KVHeads: c.KVHeads, HeadDim: c.HeadDim, Type: quant.F16})
	if err != nil {
		tb.Fatal(err)
	}
	table := make([]int32, blocks)
	for i := range table {
		table[i] = int32(i)
	}
	s := &stepper{b: b, m: m, kv: kv, rows: []int32{0}}
	s.batch = Batch{Tokens: make([]int32, 1), Spans: []compute.Span{{N: 1, Blocks: table}}}
	return s
}

// prefill runs n tokens in one batch.
func (s *stepper) prefill(n int) {
	toks := make([]int32, n)
	for i := range toks {
		toks[i] = int32(i*7) % int32(s.m.Config().Vocab)
	}
	b := &Batch{Tokens: toks, Spans: []compute.Span{{N: n, Pos: s.pos, Blocks: s.batch.Spans[0].Blocks}}}
	h := s.m.Forward(b, s.kv)
	s.m.Logits(h, []int32{int32(n - 1)})
	s.pos += n
}

// step decodes one token at the next position.
func (s *stepper) step() {
	s.batch.Tokens[0] = int32(s.pos*13) % int32(s.m.Config().Vocab)
	s.batch.Spans[0].Pos = s.pos
	h := s.m.Forward(&s.batch, s.kv)
	s.m.Logits(h, s.rows)
	s.pos++
}

// TestDecodeStepDoesNotAllocate checks that a decode step through each
// family, after the first has sized the scratch buffers, allocates
// nothing: no garbage in the loop that runs once per generated token.
func TestDecodeStepDoesNotAllocate(t *testing.T) {
	for _, arch := range testmodel.Arches() {
		t.Run(arch, func(t *testing.T) {
			o := testmodel.DefaultOptions()
			o.Arch, o.Type = arch, quant.Q8_0
			s := newStepper(t, o, 2, 128)
			s.prefill(5)
			s.step()
			if n := testing.AllocsPerRun(20, s.step); n != 0 {
				t.Errorf("%v allocations per decode step, want 0", n)
			}
		})
	}
}

// benchShape is a model big enough that a step's time is the weights'
// (24 M parameters: 8 layers of a dim-768 llama) yet quick to generate.
func benchShape(arch string, typ quant.Type) testmodel.Options {
	o := testmodel.DefaultOptions()
	o.Arch, o.Type = arch, typ
	o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = 8, 768, 12, 4, 2048, 1024
	return o
}

func benchThreads() int {
	if n, err := strconv.Atoi(os.Getenv("RUVLLM_BENCH_THREADS")); err == nil && n > 0 {
		return n
	}
	return 2
}

// BenchmarkDecodeStep measures one decode step (Forward of one token at
// position ~128, then its logits) and its allocations.
// Threads: RUVLLM_BENCH_THREADS (default 2).
func BenchmarkDecodeStep(b *testing.B) {
	for _, arch := range []string{"llama", "qwen2"} {
		for _, typ := range []quant.Type{quant.Q4_0, quant.Q8_0} {
			b.Run(fmt.Sprintf("%s/%s", arch, typ), func(b *testing.B) {
				s := newStepper(b, benchShape(arch, typ), benchThreads(), 1024)
				s.prefill(128)
				// One step at the last position sizes every scratch buffer
				// (attention scores grow with the position).
				s.pos = 999
				s.step()
				s.pos = 128
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if s.pos >= 1000 {
						s.pos = 128
					}
					s.step()
				}
			})
		}
	}
}

// BenchmarkPrefill measures a 128-token prompt pass, the case the tiled
// multi-row MatMul is for.
func BenchmarkPrefill(b *testing.B) {
	for _, typ := range []quant.Type{quant.Q4_0, quant.Q8_0} {
		b.Run(typ.String(), func(b *testing.B) {
			s := newStepper(b, benchShape("llama", typ), benchThreads(), 256)
			b.ReportAllocs()
			for b.Loop() {
				s.pos = 0
				s.prefill(128)
			}
			b.ReportMetric(128*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// moeBenchShapes are a mixture-of-experts model (qwen3moe: 32 experts of
// width 512, 4 per token) and the dense model that does the same work per
// token (qwen3, width 4·512): grouping the rows of a batch by expert
// should bring the MoE's prompt speed close to the dense model's, where
// running each row's experts alone would multiply every expert by one row
// at a time.
func moeBenchShapes() []testmodel.Options {
	o := testmodel.DefaultOptions()
	o.Layers, o.Dim, o.Heads, o.KVHeads, o.ContextLength, o.Type = 4, 1024, 8, 4, 1024, quant.Q8_0
	moe, dense := o, o
	moe.Arch, moe.FF, moe.Experts, moe.ExpertsUsed, moe.ExpertFF = "qwen3moe", 2048, 32, 4, 512
	dense.Arch, dense.FF = "qwen3", 2048
	return []testmodel.Options{moe, dense}
}

// BenchmarkMoE measures a 128-token prompt pass and a decode step of the
// shapes of moeBenchShapes. Threads: RUVLLM_BENCH_THREADS (default 2).
func BenchmarkMoE(b *testing.B) {
	for _, o := range moeBenchShapes() {
		b.Run(o.Arch+"/prefill128", func(b *testing.B) {
			s := newStepper(b, o, benchThreads(), 256)
			b.ReportAllocs()
			for b.Loop() {
				s.pos = 0
				s.prefill(128)
			}
			b.ReportMetric(128*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
		b.Run(o.Arch+"/decode", func(b *testing.B) {
			s := newStepper(b, o, benchThreads(), 256)
			s.prefill(64)
			s.step()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if s.pos >= 250 {
					s.pos = 64
				}
				s.step()
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
