package llm

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ruvllm/ruvllm/internal/testpath"
)

type goldenRow struct {
	Prompt       string         `json:"prompt"`
	PromptTokens []int32        `json:"prompt_tokens"`
	Tokens       []int32        `json:"tokens"`
	Text         string         `json:"text"`
	Top5         [][][2]float64 `json:"top5_probs"`
}

func readGolden(t *testing.T, path string) []goldenRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []goldenRow
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r goldenRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		rows = append(rows, r)
	}
	return rows
}

// TestGoldenGreedy checks greedy generation against llama.cpp's outputs on
// the shared models: every token for f16 and q8_0, the first 32 for q4_0,
// and the top-5 probabilities of the first positions.
func TestGoldenGreedy(t *testing.T) {
	models := testpath.Shared(t, "models")
	golden := testpath.Shared(t, "golden")
	for _, tc := range []struct {
		model, golden string
		exact         int     // tokens that must match
		probTol       float64 // absolute tolerance on top-5 probabilities
	}{
		{"ruvllm-test-llama-19m-f16.gguf", "greedy-llama-19m-f16.jsonl", 64, 0.01},
		{"ruvllm-test-llama-19m-q8_0.gguf", "greedy-llama-19m-q8_0.jsonl", 64, 0.01},
		{"ruvllm-test-llama-19m-q4_0.gguf", "greedy-llama-19m-q4_0.jsonl", 32, 0.02},
		{"ruvllm-test-qwen2-13m-f16.gguf", "greedy-qwen2-13m-f16.jsonl", 64, 0.01},
		{"ruvllm-test-qwen2-13m-q8_0.gguf", "greedy-qwen2-13m-q8_0.jsonl", 64, 0.01},
		{"ruvllm-test-qwen2-13m-q4_0.gguf", "greedy-qwen2-13m-q4_0.jsonl", 32, 0.02},
	} {
		t.Run(tc.model, func(t *testing.T) {
			m, err := Load(context.Background(), filepath.Join(models, tc.model), Options{ContextLength: 2048, Sequences: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			for _, row := range readGolden(t, filepath.Join(golden, tc.golden)) {
				if len(row.PromptTokens) == 0 {
					continue // nothing to condition on (qwen2's empty prompt)
				}
				var got []int32
				var probs [][]TokenLogprob
				_, err := m.Generate(context.Background(), Request{Tokens: row.PromptTokens, MaxTokens: len(row.Tokens), TopLogprobs: 5}, func(tok Token) error {
					if tok.ID >= 0 {
						got = append(got, tok.ID)
						probs = append(probs, tok.Top)
					}
					return nil
				})
				if err != nil {
					t.Fatalf("prompt %q: %v", row.Prompt, err)
				}
				n := min(tc.exact, len(row.Tokens))
				if len(got) < n {
					t.Errorf("prompt %q: generated %d tokens, want at least %d", row.Prompt, len(got), n)
					continue
				}
				for i := 0; i < n; i++ {
					if got[i] != row.Tokens[i] {
						t.Errorf("prompt %q: token %d = %d, llama.cpp %d (got %v, want %v)", row.Prompt, i, got[i], row.Tokens[i], got[:n], row.Tokens[:n])
						break
					}
				}
				for pos, top := range row.Top5 {
					if pos >= len(probs) || got[pos] != row.Tokens[pos] {
						break
					}
					for k, want := range top {
						if k >= len(probs[pos]) {
							break
						}
						gp := math.Exp(float64(probs[pos][k].Logprob))
						if probs[pos][k].ID == int32(want[0]) && math.Abs(gp-want[1]) > tc.probTol {
							t.Errorf("prompt %q pos %d: p(%d) = %.4f, llama.cpp %.4f", row.Prompt, pos, int(want[0]), gp, want[1])
						}
					}
				}
			}
		})
	}
}
