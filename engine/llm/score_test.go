package llm

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestScoreTokensMatchesGeneration scores a prompt and a greedy reply
// together: each reply token's score equals the log-probability the
// generation reported for it (the same rows of the same passes), and its
// top alternative is the token that was generated.
func TestScoreTokensMatchesGeneration(t *testing.T) {
	m, err := Load(context.Background(), synthetic(t, "qwen2", quant.F32), Options{Threads: 2, BatchSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prompt := m.tok.Encode("The kernel schedules", tokenizer.EncodeOptions{AddSpecial: true})
	var gen []Token
	if _, err := m.Generate(context.Background(), Request{Tokens: prompt, MaxTokens: 12, IgnoreEOS: true, Logprobs: true, TopLogprobs: 2}, func(tok Token) error {
		if tok.ID >= 0 {
			gen = append(gen, tok)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	all := append([]int32(nil), prompt...)
	for _, g := range gen {
		all = append(all, g.ID)
	}
	scored, err := m.ScoreTokens(context.Background(), all, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(scored) != len(all)-1 {
		t.Fatalf("%d scores for %d tokens", len(scored), len(all))
	}
	for i, g := range gen {
		s := scored[len(prompt)-1+i]
		if s.ID != g.ID || diff(s.Logprob, g.Logprob) > 1e-4 || s.Top[0].ID != g.ID {
			t.Fatalf("token %d: scored %+v, generated %+v", i, s, g)
		}
	}
	if _, err := m.ScoreTokens(context.Background(), []int32{1, 1 << 30}, 0); err == nil {
		t.Fatal("an id outside the vocabulary was scored")
	}
}

func diff(a, b float32) float32 {
	if a > b {
		return a - b
	}
	return b - a
}

// TestContextLimitAndTruncation: a per-request context bounds the reply,
// and a prompt too long for it keeps its BOS and its end when
// Overflow.DropOldest is set (and fails otherwise).
func TestContextLimitAndTruncation(t *testing.T) {
	m, err := Load(context.Background(), synthetic(t, "llama", quant.F32), Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prompt := make([]int32, 100)
	for i := range prompt {
		prompt[i] = int32(3 + i%50)
	}
	if _, err := m.Generate(context.Background(), Request{Tokens: prompt, ContextLimit: 64}, func(Token) error { return nil }); !errors.Is(err, ErrContextExceeded) {
		t.Fatalf("a prompt over the limit without DropOldest: %v", err)
	}
	var got []int32
	res, err := m.Generate(context.Background(), Request{Tokens: prompt, ContextLimit: 64, Overflow: Overflow{DropOldest: true}, IgnoreEOS: true},
		func(tok Token) error { got = append(got, tok.ID); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if res.PromptTokens != 48 || res.TruncatedTokens != 100-48 || res.CompletionTokens != 64-48 || res.FinishReason != FinishLength {
		t.Fatalf("result %+v: want 52 tokens dropped and a 16-token reply", res)
	}
	truncate := func(prompt []int32, maxTokens int) ([]int32, int) {
		t.Helper()
		f, err := m.fitPrompt(context.Background(), Request{Tokens: prompt, MaxTokens: maxTokens, Overflow: Overflow{DropOldest: true}}, 64)
		if err != nil {
			t.Fatal(err)
		}
		return f.prompt, f.droppedTokens
	}
	kept, n := truncate(prompt, 0)
	if n != 52 || len(kept) != 48 || kept[len(kept)-1] != prompt[99] || kept[0] != prompt[52] {
		t.Fatalf("kept %v (dropped %d)", kept, n)
	}
	if m.tok.AddBOS() {
		bos := append([]int32{m.tok.BOS()}, prompt...)
		if kept, _ := truncate(bos, 8); kept[0] != m.tok.BOS() || len(kept) != 56 || kept[55] != prompt[99] || kept[1] != prompt[45] {
			t.Fatalf("with BOS and max 8 tokens: %v", kept)
		}
	} else if kept, _ := truncate(prompt, 8); len(kept) != 56 || kept[0] != prompt[44] {
		t.Fatalf("max 8 tokens: %v", kept)
	}
}

func TestFillInTheMiddle(t *testing.T) {
	m, err := Load(context.Background(), synthetic(t, "qwen2", quant.F32), Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.FIM(); ok {
		t.Fatal("the synthetic vocabulary has no FIM tokens")
	}
	if _, err := m.PromptTokens(Request{Prompt: "def f(", Suffix: "):"}); !errors.Is(err, ErrNoFIM) {
		t.Fatalf("suffix on a model without FIM: %v", err)
	}
	m.Close()
	vocab := testpath.Shared(t, "vocab/ggml-vocab-starcoder.gguf")
	o := testmodel.DefaultOptions()
	o.Arch, o.VocabFrom, o.Dim, o.FF = "llama", vocab, 32, 64
	path := filepath.Join(t.TempDir(), "fim.gguf")
	if err := testmodel.Write(context.Background(), o, path); err != nil {
		t.Fatal(err)
	}
	m, err = Load(context.Background(), path, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	fim, ok := m.FIM()
	if !ok {
		t.Fatal("StarCoder's vocabulary has FIM tokens")
	}
	toks, err := m.PromptTokens(Request{Prompt: "def f(", Suffix: "):"})
	if err != nil {
		t.Fatal(err)
	}
	if m.tok.Piece(fim.Prefix) != "<fim_prefix>" || toks[len(toks)-1] != fim.Middle || !slices.Contains(toks, fim.Suffix) {
		t.Fatalf("FIM prompt %v (%+v)", toks, fim)
	}
}

// TestGenerateNForksFromOnePrefill: n choices of a long prompt compute it
// once; greedy choices equal the single choice; seeded choices differ.
func TestGenerateNForksFromOnePrefill(t *testing.T) {
	m, err := Load(context.Background(), synthetic(t, "qwen2", quant.F32), Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prompt := make([]int32, 200)
	for i := range prompt {
		prompt[i] = int32(3 + (i*7)%200)
	}
	one, _, res1 := generate(t, m, Request{Tokens: prompt, MaxTokens: 6, IgnoreEOS: true})
	m.ClearCache()
	got := make([][]int32, 3)
	results, err := m.GenerateN(context.Background(), Request{Tokens: prompt, MaxTokens: 6, IgnoreEOS: true}, 3, func(i int, tok Token) error {
		if tok.ID >= 0 {
			got[i] = append(got[i], tok.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if !slices.Equal(got[i], one) {
			t.Fatalf("greedy choice %d %v, single %v", i, got[i], one)
		}
	}
	if results[0].CachedTokens != 0 || res1.PromptTokens != 200 {
		t.Fatalf("the first choice computed the prompt: %+v", results[0])
	}
	for i := 1; i < 3; i++ {
		if c := results[i].CachedTokens; c < 200-blockSize {
			t.Fatalf("choice %d found %d of 200 prompt tokens cached; want all full blocks", i, c)
		}
	}
	// Sampled with a seed: each choice its own stream.
	m.ClearCache()
	hot := Request{Tokens: prompt, MaxTokens: 12, IgnoreEOS: true}
	hot.Sampling.Temperature, hot.Sampling.Seed = 1.5, 42
	run := func() [][]int32 {
		out := make([][]int32, 3)
		if _, err := m.GenerateN(context.Background(), hot, 3, func(i int, tok Token) error {
			out[i] = append(out[i], tok.ID)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if texts := run(); slices.Equal(texts[0], texts[1]) && slices.Equal(texts[1], texts[2]) {
		t.Fatal("three seeded choices are identical")
	}
	// A chosen seed of 0: the choices differ, and the run repeats.
	hot.Sampling.Seed, hot.Sampling.Seeded = 0, true
	zero := run()
	if slices.Equal(zero[0], zero[1]) && slices.Equal(zero[1], zero[2]) {
		t.Fatal("three choices of seed 0 are identical")
	}
	if again := run(); !slices.EqualFunc(zero, again, slices.Equal) {
		t.Fatalf("seed 0 gave %v, then %v", zero, again)
	}
}
