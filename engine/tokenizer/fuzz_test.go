package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/ruvllm/ruvllm/engine/gguf"
)

// fuzzTokenizers are the tokenizers the fuzz targets exercise: the two
// hand-built vocabularies always, the shared test models when present.
func fuzzTokenizers(t testing.TB) []*Tokenizer {
	t.Helper()
	toks := []*Tokenizer{mustNew(t, spmVocab()), mustNew(t, bpeVocab("gpt-2")), mustNew(t, bpeVocab("llama-bpe")), mustNew(t, bpeVocab("qwen2"))}
	return append(toks, sharedTokenizers(t)...)
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
// llama.cpp's rules: SentencePiece turns a literal ▁ into a space (the
// prefixed space is removed again), and BPE vocabularies with clean_spaces
// drop spaces before punctuation and some contractions.
func roundTrip(tok *Tokenizer, s string) string {
	if tok.spm {
		return strings.ReplaceAll(s, "\u2581", " ")
	}
	if tok.pre.cleanSpaces {
		return string(cleanSpaces([]byte(s)))
	}
	return s
}

func FuzzEncodeDecode(f *testing.F) {
	for _, s := range []string{"Hello world", " leading", "a  b\n\n", "don't", "日本語 😀", "x += 1;", "<|im_end|>", "<s>", "▁", "\t\r\n", "a . b ' c 's"} {
		f.Add(s)
	}
	toks := fuzzTokenizers(f)
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		for _, tok := range toks {
			ids := tok.Encode(s, EncodeOptions{})
			for _, id := range ids {
				if id < 0 || int(id) >= tok.VocabSize() {
					t.Fatalf("%s: Encode(%q) gave id %d outside the vocabulary", tok.v.Model, s, id)
				}
			}
			if got, want := tok.Decode(ids, DecodeOptions{}), roundTrip(tok, s); got != want {
				t.Fatalf("%s/%s: Decode(Encode(%q)) = %q, want %q (ids %v)", tok.v.Model, tok.v.Pre, s, got, want, ids)
			}
			// Special parsing and BOS/EOS must not break anything either.
			tok.Encode(s, EncodeOptions{AddSpecial: true, ParseSpecial: true})
		}
	})
}

func FuzzStreamDecoder(f *testing.F) {
	f.Add("emoji 😀🎉 日本語", []byte{})
	f.Add("a . b", []byte{0xC3, 0x00, 0xA9, 0x00})
	f.Add("", []byte{1, 2, 3, 0xff, 0xfe})
	toks := fuzzTokenizers(f)
	f.Fuzz(func(t *testing.T, s string, raw []byte) {
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
				t.Fatalf("%s/%s: streamed %q, Decode %q (ids %v)", tok.v.Model, tok.v.Pre, got.String(), want, ids)
			}
		}
	})
}
