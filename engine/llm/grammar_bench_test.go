package llm

import (
	"context"
	"testing"

	"github.com/ruvllm/ruvllm/engine/grammar"
	"github.com/ruvllm/ruvllm/engine/sample"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// benchSchema admits long outputs (at least 50 objects), so that a
// generation under it runs its whole token budget.
const benchSchema = `{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer","minimum":0},"name":{"type":"string","maxLength":40},"ok":{"type":"boolean"}},"required":["id","name","ok"],"additionalProperties":false},"minItems":50}`

// BenchmarkDecodeGrammar compares decode speed with and without a JSON
// Schema constraint on the shared 19M llama model: the same sampling
// settings, 128 generated tokens per run, tokens per second reported.
// Run old and new alternately when comparing (the machine is shared).
func BenchmarkDecodeGrammar(b *testing.B) {
	for _, name := range []string{"ruvllm-test-llama-19m-q8_0.gguf", "ruvllm-test-qwen2-13m-q8_0.gguf"} {
		m, err := Load(context.Background(), testpath.Shared(b, "models/"+name), Options{Threads: 1})
		if err != nil {
			b.Fatal(err)
		}
		c, err := m.Grammar(grammar.Spec{Kind: grammar.KindJSONSchema, Source: benchSchema})
		if err != nil {
			b.Fatal(err)
		}
		p := sample.Params{Temperature: 0.8, TopK: 40, TopP: 0.95, Seed: 1}
		for _, mode := range []string{"free", "schema"} {
			b.Run(name[len("ruvllm-test-"):len(name)-len(".gguf")]+"/"+mode, func(b *testing.B) {
				req := Request{Prompt: "A list of records in JSON:", MaxTokens: 128, Sampling: p, IgnoreEOS: true}
				if mode == "schema" {
					req.Grammar, req.IgnoreEOS = c, false
				}
				tokens, forced := 0, 0
				var eval float64
				for i := 0; i < b.N; i++ {
					res, err := m.Generate(context.Background(), req, func(Token) error { return nil })
					if err != nil {
						b.Fatal(err)
					}
					tokens += res.CompletionTokens - 1
					forced += res.ForcedTokens
					eval += res.Timings.Eval.Seconds()
				}
				b.ReportMetric(float64(tokens)/eval, "tok/s")
				b.ReportMetric(float64(forced)/float64(b.N), "forced/run")
			})
		}
		m.Close()
	}
}
