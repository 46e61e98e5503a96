package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/ruvllm/ruvllm/engine/gguf"
)

func loadShared(t testing.TB, name string) *Tokenizer {
	t.Helper()
	f, err := gguf.Open(filepath.Join(sharedDir(t, "models"), name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func jsonLines(t *testing.T, path string, each func([]byte)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		each(sc.Bytes())
	}
}

// TestGoldenTokenization compares with llama.cpp on 50 tricky strings,
// with and without special-token parsing, and on the greedy prompts.
func TestGoldenTokenization(t *testing.T) {
	golden := sharedDir(t, "golden")
	for _, tc := range []struct{ model, tokfile, greedy string }{
		{"ruvllm-test-llama-19m-f16.gguf", "tokenize-llama-19m.jsonl", "greedy-llama-19m-*.jsonl"},
		{"ruvllm-test-qwen2-13m-f16.gguf", "tokenize-qwen2-13m.jsonl", "greedy-qwen2-13m-*.jsonl"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			tok := loadShared(t, tc.model)
			jsonLines(t, filepath.Join(golden, tc.tokfile), func(line []byte) {
				var row struct {
					Text          string  `json:"text"`
					Tokens        []int32 `json:"tokens"`
					TokensSpecial []int32 `json:"tokens_special"`
				}
				if err := json.Unmarshal(line, &row); err != nil {
					t.Fatal(err)
				}
				if got := tok.Encode(row.Text, EncodeOptions{}); !equal(got, row.Tokens) {
					t.Errorf("Encode(%q) = %v, llama.cpp %v", row.Text, got, row.Tokens)
				}
				if got := tok.Encode(row.Text, EncodeOptions{ParseSpecial: true}); !equal(got, row.TokensSpecial) {
					t.Errorf("Encode(%q, special) = %v, llama.cpp %v", row.Text, got, row.TokensSpecial)
				}
				if got, want := tok.Decode(row.Tokens, DecodeOptions{}), roundTrip(tok, row.Text); got != want {
					t.Errorf("Decode(%v) = %q, want %q", row.Tokens, got, want)
				}
			})
			greedy, _ := filepath.Glob(filepath.Join(golden, tc.greedy))
			if len(greedy) == 0 {
				t.Fatalf("no %s in %s", tc.greedy, golden)
			}
			for _, path := range greedy {
				jsonLines(t, path, func(line []byte) {
					var row struct {
						Prompt       string  `json:"prompt"`
						PromptTokens []int32 `json:"prompt_tokens"`
						Tokens       []int32 `json:"tokens"`
						Text         string  `json:"text"`
					}
					if err := json.Unmarshal(line, &row); err != nil {
						t.Fatal(err)
					}
					if got := tok.Encode(row.Prompt, EncodeOptions{AddSpecial: true}); !equal(got, row.PromptTokens) {
						t.Errorf("prompt %q: %v, llama.cpp %v", row.Prompt, got, row.PromptTokens)
					}
					if got := tok.Decode(row.Tokens, DecodeOptions{}); got != row.Text {
						t.Errorf("Decode(%v) = %q, llama.cpp %q", row.Tokens, got, row.Text)
					}
					d := NewStreamDecoder(tok)
					var streamed string
					for _, id := range row.Tokens {
						streamed += d.Add(id)
					}
					streamed += d.Flush()
					if want := row.Text; streamed != want && streamed != " "+want {
						t.Errorf("streamed %v = %q, llama.cpp %q", row.Tokens, streamed, want)
					}
				})
			}
		})
	}
}

func equal(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestStreamDecoderNeverSplitsRunes(t *testing.T) {
	for _, model := range []string{"ruvllm-test-llama-19m-f16.gguf", "ruvllm-test-qwen2-13m-f16.gguf"} {
		tok := loadShared(t, model)
		for _, s := range []string{"emoji 😀🎉👍🏽 日本語のテキスト", "naïve café — “quotes”", "🤖"} {
			ids := tok.Encode(s, EncodeOptions{})
			d := NewStreamDecoder(tok)
			var all string
			for _, id := range ids {
				piece := d.Add(id)
				if !utf8.ValidString(piece) {
					t.Fatalf("%s: piece %q of %q is not valid UTF-8", model, piece, s)
				}
				all += piece
			}
			all += d.Flush()
			want := tok.Decode(ids, DecodeOptions{})
			if tok.v.Model == "llama" {
				want = " " + want // the stream keeps the prefixed space
			}
			if all != want {
				t.Fatalf("%s: streamed %q, Decode %q", model, all, want)
			}
		}
	}
}

// sharedDir finds shared/<name> in the nearest directory above the package
// that has one: ../shared beside a checkout at the repository root, or
// further up for a worktree nested one level deeper. It skips the test
// with the reason when there is none.
func sharedDir(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, "shared", name)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skipf("shared test assets (shared/%s) not found in any directory above the package", name)
		}
		dir = parent
	}
}
