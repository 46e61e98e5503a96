package tokenizer

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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

// extraVector is one line of testdata/llamacpp-vectors.jsonl: strings
// made by bench/tokdiff (every kind of space, scripts, combining marks,
// digits, special-token texts, malformed UTF-8) with the ids llama.cpp
// gave them, with add_special and parse_special both off or both on.
type extraVector struct {
	Vocab   string  `json:"vocab"`
	Text    string  `json:"text"`
	TextHex string  `json:"text_hex"`
	Special bool    `json:"special"`
	IDs     []int32 `json:"ids"`
}

func loadExtraVectors(t *testing.T) map[string][]extraVector {
	t.Helper()
	byVocab := map[string][]extraVector{}
	jsonLines(t, filepath.Join("testdata", "llamacpp-vectors.jsonl"), func(line []byte) {
		var v extraVector
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("llamacpp-vectors.jsonl: %v", err)
		}
		if v.TextHex != "" {
			b, err := hex.DecodeString(v.TextHex)
			if err != nil {
				t.Fatalf("llamacpp-vectors.jsonl: %v", err)
			}
			v.Text = string(b)
		}
		byVocab[v.Vocab] = append(byVocab[v.Vocab], v)
	})
	return byVocab
}

// TestLlamaCppVocabVectors runs every ggml-vocab-*.gguf of shared/vocab
// (llama.cpp's models/ directory) against its .inp/.out vectors and this
// package's extra llama.cpp vectors, and fails on any difference or on a
// vocabulary it cannot load. go test -v shows the counts per family.
func TestLlamaCppVocabVectors(t *testing.T) {
	all := vocabTokenizers(t)
	if len(all) == 0 {
		t.Skip("no shared/vocab directory with llama.cpp ggml-vocab-*.gguf + .inp/.out test vectors; nothing to compare against")
	}
	extra := loadExtraVectors(t)
	var summary []string
	for _, v := range all {
		inp, err1 := os.ReadFile(v.path + ".inp")
		out, err2 := os.ReadFile(v.path + ".out")
		if err1 != nil || err2 != nil {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			vs, err := parseVocabVectors(string(inp), string(out))
			if err != nil {
				t.Fatalf("vectors: %v", err)
			}
			if v.err != nil {
				summary = append(summary, fmt.Sprintf("%-32s not loaded: %v", v.name, v.err))
				t.Fatalf("tokenizer: %v", v.err)
			}
			pass, failed := 0, 0
			check := func(text string, o EncodeOptions, want []int32) {
				if got := v.tok.Encode(text, o); equal(got, want) {
					pass++
				} else if failed++; failed <= 5 {
					t.Errorf("Encode(%q, %+v) = %v, llama.cpp %v", text, o, got, want)
				}
			}
			for _, x := range vs {
				check(x.text, EncodeOptions{}, x.ids)
			}
			inpPass := pass
			for _, x := range extra[v.name] {
				check(x.Text, EncodeOptions{AddSpecial: x.Special, ParseSpecial: x.Special}, x.IDs)
			}
			summary = append(summary, fmt.Sprintf("%-32s .inp/.out %d/%d, extra %d/%d", v.name, inpPass, len(vs), pass-inpPass, len(extra[v.name])))
		})
	}
	if len(summary) == 0 {
		t.Skip("shared/vocab has no *.gguf with .inp/.out vectors")
	}
	t.Logf("llama.cpp tokenizer vectors per family:\n%s", strings.Join(summary, "\n"))
}
