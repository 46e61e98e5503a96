package maskbench

import (
	"context"
	"hash/fnv"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/grammar"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestMaskBenchSample runs about 210 MaskBench schemas (a fixed sample) so
// that a regression in the grammar engine shows in CI: no invalid instance
// may ever be accepted, and most schemas must pass.
func TestMaskBenchSample(t *testing.T) {
	data := testpath.Shared(t, "jsonschema/maskbench-data.tar.gz")
	vpath := testpath.Shared(t, "vocab/ggml-vocab-llama-bpe.gguf")
	cases, err := Load(data, func(name string) bool {
		h := fnv.New32a()
		h.Write([]byte(name))
		return h.Sum32()%53 == 0
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(vpath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	v, err := grammar.VocabFromTokenizer(tok)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), cases, Options{Vocab: v, Tokenizer: tok, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d schemas: %v; compile errors by keyword %v", res.Schemas, res.Outcomes, res.ByKeyword)
	for _, f := range res.Failures {
		if f.Outcome != CompileError {
			t.Logf("%s: %s: %s", f.Case, f.Outcome, f.Detail)
		}
	}
	if n := res.Outcomes[Invalidation]; n > 0 {
		t.Errorf("%d schemas accepted an invalid instance", n)
	}
	if pass := float64(res.Outcomes[Passing]) / float64(res.Schemas); pass < 0.75 {
		t.Errorf("only %.1f%% of the schemas pass", 100*pass)
	}
	if n := res.Outcomes[Validation]; float64(n) > 0.01*float64(res.Schemas) {
		t.Errorf("%d schemas rejected a valid instance", n)
	}
}
