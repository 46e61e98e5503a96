package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// fuzzTokenizers are the tokenizers the fuzz targets exercise: the
// hand-built vocabularies always; the shared test models and every
// tokenizer family of shared/vocab when present.
func fuzzTokenizers(t testing.TB) []*Tokenizer {
	t.Helper()
	toks := []*Tokenizer{mustNew(t, spmVocab()), mustNew(t, bpeVocab("gpt-2")), mustNew(t, bpeVocab("llama-bpe")), mustNew(t, bpeVocab("qwen2"))}
	toks = append(toks, sharedTokenizers(t)...)
	for _, v := range vocabTokenizers(t) {
		if v.tok != nil {
			toks = append(toks, v.tok)
		}
	}
	return toks
}

// vocabTokenizer is one ggml-vocab-*.gguf of shared/vocab: its file name
// and tokenizer, or the error that refused it.
type vocabTokenizer struct {
	name string
	path string
	tok  *Tokenizer
	err  error
}

var vocabs struct {
	once sync.Once
	all  []vocabTokenizer
}

// vocabTokenizers loads every ggml-vocab-*.gguf of shared/vocab once per
// test binary (none when shared/vocab is absent).
func vocabTokenizers(t testing.TB) []vocabTokenizer {
	dir := testpath.SharedIfPresent(t, "vocab")
	vocabs.once.Do(func() {
		if dir == "" {
			return
		}
		paths, _ := filepath.Glob(filepath.Join(dir, "ggml-vocab-*.gguf"))
		for _, path := range paths {
			v := vocabTokenizer{name: filepath.Base(path), path: path}
			f, err := gguf.Open(path)
			if err == nil {
				v.tok, err = FromGGUF(f)
				f.Close()
			}
			v.err = err
			vocabs.all = append(vocabs.all, v)
		}
	})
	return vocabs.all
}

var shared struct {
	once sync.Once
	toks []*Tokenizer
}

// sharedTokenizers loads the shared test models' tokenizers once per test
// binary (nil when the shared directory is absent).
func sharedTokenizers(t testing.TB) []*Tokenizer {
	shared.once.Do(func() {
		dir := findShared("models")
		if dir == "" {
			return
		}
		for _, name := range []string{"ruvllm-test-llama-19m-f16.gguf", "ruvllm-test-qwen2-13m-f16.gguf"} {
			f, err := gguf.Open(filepath.Join(dir, name))
			if err != nil {
				continue
			}
			if tok, err := FromGGUF(f); err == nil {
				shared.toks = append(shared.toks, tok)
			}
			f.Close()
		}
	})
	return shared.toks
}

// findShared returns shared/<name> from the nearest directory above the
// working directory that has it, or "".
func findShared(name string) string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		p := filepath.Join(dir, "shared", name)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// roundTrip is what Decode(Encode(s)) gives for valid UTF-8 s, by
// llama.cpp's rules: SentencePiece and SentencePiece-style BPE (Gemma 4)
// turn a literal ▁ into a space (the prefixed space is removed again), and
// BPE vocabularies with clean_spaces drop spaces before punctuation and
// some contractions.
func roundTrip(tok *Tokenizer, s string) string {
	if tok.spm {
		return strings.ReplaceAll(s, "\u2581", " ")
	}
	if tok.pre.escapeSpaces {
		s = strings.ReplaceAll(s, "\u2581", " ")
	}
	if tok.pre.cleanSpaces {
		return string(cleanSpaces([]byte(s)))
	}
	return s
}

// roundTrips reports whether Decode(ids) can give back the text they
// were encoded from: not when a piece of plain text became a control or
// unknown token (which decode to nothing, in llama.cpp too), nor when a
// byte had no token and was dropped.
func roundTrips(tok *Tokenizer, s string, ids []int32) bool {
	n := 0
	for _, id := range ids {
		switch tok.types[id] {
		case TypeControl, TypeUnknown, TypeUnused, TypeUndefined:
			return false
		}
		n += len(tok.pieceBytes(nil, id, false))
	}
	if tok.spm {
		return true // a dropped byte becomes <unk>, seen above
	}
	want := len(s)
	if tok.pre.escapeSpaces {
		want = len(s) - 2*strings.Count(s, "\u2581") // each literal ▁ comes back as a space
	}
	return n == want
}

// maxFuzzInput bounds the fuzz inputs: each runs through some twenty
// tokenizers, and a long one took the fuzzing worker past its hang limit
// on the loaded 2-core machine. Long inputs are TestEncodeLargeInputFast's.
const maxFuzzInput = 2048

// FuzzEncodeDecode encodes arbitrary text with every tokenizer family: no
// panic, every id in the vocabulary, with and without special tokens; for
// valid UTF-8, Decode gives the text back as llama.cpp's rules say.
func FuzzEncodeDecode(f *testing.F) {
	for _, s := range []string{"Hello world", " leading", "a  b\n\n", "don't", "日本語 😀", "x += 1;", "<|im_end|>", "<s>", "▁", "\t\r\n",
		"a . b ' c 's", "e\u0301\u0301 1234567", "\u3000。！", "[PAD12]<|endoftext|>", "\xed\xa0\x80\xc0\x80\xff", "\n\n\n▁ ▁"} {
		f.Add(s)
	}
	toks := fuzzTokenizers(f)
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > maxFuzzInput {
			return
		}
		for _, tok := range toks {
			ids := tok.Encode(s, EncodeOptions{})
			special := tok.Encode(s, EncodeOptions{AddSpecial: true, ParseSpecial: true})
			for _, id := range append(ids, special...) {
				if id < 0 || int(id) >= tok.VocabSize() {
					t.Fatalf("%s/%s: Encode(%q) gave id %d outside the vocabulary", tok.v.Model, bpePre(tok.v), s, id)
				}
			}
			if !utf8.ValidString(s) {
				continue
			}
			if got, want := tok.Decode(ids, DecodeOptions{}), roundTrip(tok, s); got != want && roundTrips(tok, s, ids) {
				t.Fatalf("%s/%s: Decode(Encode(%q)) = %q, want %q (ids %v)", tok.v.Model, bpePre(tok.v), s, got, want, ids)
			}
		}
	})
}

func FuzzStreamDecoder(f *testing.F) {
	f.Add("emoji 😀🎉 日本語", []byte{})
	f.Add("a . b", []byte{0xC3, 0x00, 0xA9, 0x00})
	f.Add("", []byte{1, 2, 3, 0xff, 0xfe})
	toks := fuzzTokenizers(f)
	f.Fuzz(func(t *testing.T, s string, raw []byte) {
		if len(s)+len(raw) > maxFuzzInput {
			return
		}
		for _, tok := range toks {
			// Ids from text, then arbitrary ids (two bytes each).
			ids := tok.Encode(s, EncodeOptions{AddSpecial: true})
			for i := 0; i+1 < len(raw); i += 2 {
				ids = append(ids, int32(int(raw[i])<<8|int(raw[i+1]))%int32(tok.VocabSize()+1)-1)
			}
			want := tok.Decode(ids, DecodeOptions{})
			if tok.v.AddSpacePrefix && len(ids) > 0 {
				// The stream continues a prompt: its first piece keeps
				// the space Decode strips.
				if p := tok.pieceBytes(nil, ids[0], false); len(p) > 0 && p[0] == ' ' {
					want = " " + want
				}
			}
			d := NewStreamDecoder(tok)
			var got strings.Builder
			for _, id := range ids {
				piece := d.Add(id)
				if utf8.ValidString(want) && !utf8.ValidString(piece) {
					t.Fatalf("%s: piece %q is not valid UTF-8 (ids %v)", tok.v.Model, piece, ids)
				}
				got.WriteString(piece)
			}
			got.WriteString(d.Flush())
			if got.String() != want {
				t.Fatalf("%s/%s: streamed %q, Decode %q (ids %v)", tok.v.Model, bpePre(tok.v), got.String(), want, ids)
			}
		}
	})
}
