package tokenizer

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
)

// vocabTestSep separates the test strings of llama.cpp's ggml-vocab-*.inp
// files; the matching .out file has one line of ids per string.
const vocabTestSep = "\n__ggml_vocab_test__\n"

type vocabVector struct {
	text string
	ids  []int32
}

// parseVocabVectors reads llama.cpp's tokenizer test vectors (the format
// of tests/test-tokenizer-0: strings, each followed by the separator, and
// lines of space-separated ids).
func parseVocabVectors(inp, out string) ([]vocabVector, error) {
	var texts []string
	for {
		i := strings.Index(inp, vocabTestSep)
		if i < 0 {
			break
		}
		texts = append(texts, inp[:i])
		inp = inp[i+len(vocabTestSep):]
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) < len(texts) {
		return nil, os.ErrInvalid
	}
	vs := make([]vocabVector, len(texts))
	for i, text := range texts {
		vs[i].text = text
		for _, f := range strings.Fields(lines[i]) {
			id, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				return nil, err
			}
			vs[i].ids = append(vs[i].ids, int32(id))
		}
	}
	return vs, nil
}

func TestParseVocabVectors(t *testing.T) {
	vs, err := parseVocabVectors("\n__ggml_vocab_test__\n hello\n__ggml_vocab_test__\na\nb\n__ggml_vocab_test__\n", "\n 1 22\n3 4 5\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 || vs[0].text != "" || len(vs[0].ids) != 0 || vs[1].text != " hello" || !equal(vs[1].ids, []int32{1, 22}) ||
		vs[2].text != "a\nb" || !equal(vs[2].ids, []int32{3, 4, 5}) {
		t.Errorf("parsed %+v", vs)
	}
}

// TestLlamaCppVocabVectors runs every ggml-vocab-*.gguf with .inp/.out
// vectors found in shared/vocab (llama.cpp's models/ directory layout).
func TestLlamaCppVocabVectors(t *testing.T) {
	dir := findShared("vocab")
	if dir == "" {
		t.Skip("no shared/vocab directory with llama.cpp ggml-vocab-*.gguf + .inp/.out test vectors; nothing to compare against")
	}
	models, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
	ran := 0
	for _, path := range models {
		inp, err1 := os.ReadFile(path + ".inp")
		out, err2 := os.ReadFile(path + ".out")
		if err1 != nil || err2 != nil {
			continue
		}
		ran++
		t.Run(filepath.Base(path), func(t *testing.T) {
			vs, err := parseVocabVectors(string(inp), string(out))
			if err != nil {
				t.Fatalf("vectors: %v", err)
			}
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tok, err := FromGGUF(f)
			if err != nil {
				t.Skipf("tokenizer not supported: %v", err)
			}
			for _, v := range vs {
				if got := tok.Encode(v.text, EncodeOptions{}); !equal(got, v.ids) {
					t.Errorf("Encode(%q) = %v, llama.cpp %v", v.text, got, v.ids)
				}
			}
		})
	}
	if ran == 0 {
		t.Skipf("%s has no *.gguf with .inp/.out vectors", dir)
	}
}
