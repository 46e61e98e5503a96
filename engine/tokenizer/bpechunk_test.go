package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// bpeTokenizers are the BPE tokenizers (every pre-tokenizer the vocabularies
// here use), which pre-tokenize a long text a piece at a time.
func bpeTokenizers(t testing.TB) []*Tokenizer {
	var out []*Tokenizer
	for _, tok := range fuzzTokenizers(t) {
		if !tok.spm {
			out = append(out, tok)
		}
	}
	return out
}

// encodeChunked tokenizes text pre-tokenizing at most chunk bytes at a
// time before each safe cut. It sets the shared tokenizer's field for the
// call: the package's tests do not run in parallel, and fuzz workers are
// processes of their own.
func encodeChunked(tok *Tokenizer, text string, o EncodeOptions, chunk int) []int32 {
	tok.bpeChunk = chunk
	defer func() { tok.bpeChunk = bpeChunkBytes }()
	return tok.Encode(text, o)
}

// TestBPEChunkSameTokens: pre-tokenizing a BPE text piece by piece, cut at
// bpeCut's places, gives the tokens of the whole text at once, for every
// pre-tokenizer, on random texts dense in newlines, letters, spaces,
// punctuation, digits, invalid bytes and other scripts.
func TestBPEChunkSameTokens(t *testing.T) {
	toks := bpeTokenizers(t)
	if len(toks) < 3 {
		t.Fatalf("%d BPE tokenizers (the hand-built ones are three)", len(toks))
	}
	parts := []string{"the", " ", "  ", "kernel", "\n", "\n\n", "\r\n", "\t", "x", "B", "\xd2", "\xe2\x96", "\xf0\x9f", "ᏸ",
		"한국어", "🦙", "\xf0", "\xe2", "==", ".", "...", "'s", "'T", "123", "4", "\u00a0", "\xff", "a", "<|im_start|>", "\n ", " \n", "é", "中文"}
	rng := rand.New(rand.NewPCG(3, 5))
	cuts := 0
	for _, tok := range toks {
		for _, text := range []string{"abc\xf0x\nyz", "abcd\xe2x\nyz", "\xf0\x9fx\nthe\xc3\n\nb"} {
			if got, want := encodeChunked(tok, text, EncodeOptions{}, 1), tok.Encode(text, EncodeOptions{}); !slices.Equal(got, want) {
				t.Fatalf("%q: pieces %v, whole %v", text, got, want)
			}
		}
		for range 300 {
			var sb strings.Builder
			for range rng.IntN(60) {
				sb.WriteString(parts[rng.IntN(len(parts))])
			}
			text := sb.String()
			chunk := 1 + rng.IntN(24)
			if bpeCut(text, chunk, !tok.pre.escapeSpaces) < len(text) {
				cuts++
			}
			for _, o := range []EncodeOptions{{}, {AddSpecial: true, ParseSpecial: true}} {
				if got, want := encodeChunked(tok, text, o, chunk), tok.Encode(text, o); !slices.Equal(got, want) {
					t.Fatalf("%q %+v, pieces of %d bytes: %v, whole %v", text, o, chunk, got, want)
				}
			}
		}
	}
	// About one text in thirty is cut; the bound scales with the
	// tokenizers, of which a checkout without ../shared has only the
	// hand-built ones (a fixed 100 failed it: 38 of 1200 texts).
	if cuts < 8*len(toks) {
		t.Fatalf("only %d texts of %d tokenizers were cut", cuts, len(toks))
	}
}

func TestBPECut(t *testing.T) {
	for _, c := range []struct {
		text   string
		from   int
		want   int
		spaced int // with spaces, when it differs
	}{
		{"hello\nworld", 0, 6, 0},
		{"hello\nworld\nagain", 7, 12, 0},
		{"hello\n world", 0, 12, 0},       // a space after the newline
		{"hell \nworld", 0, 11, 0},        // whitespace before it
		{"hello\n\nworld", 0, 12, 0},      // a run of newlines
		{"hello\n1world", 0, 12, 0},       // a digit after it
		{"h\xc3\xa9llo\nworld", 0, 12, 0}, // é a few bytes before the newline
		{"h\xc3\xa9lloo\nworld", 0, 8, 0},
		{"abc\nd", 0, 5, 0},       // too near the start to look back
		{"abc\xf0x\nyz", 0, 8, 0}, // a lead byte would take the newline and y
		{"hello\nworld", 7, 11, 0},
		{"hello there world", 0, 17, 5},
		{"hello there world", 12, 17, 0},
		{"hello  there", 0, 12, 0},        // two spaces
		{"hello, there", 0, 12, 0},        // not after a letter
		{"hello 1there", 0, 12, 0},        // not before a letter
		{"h\xc3\xa9lllo there", 0, 13, 0}, // é too near
		{"h\xc3\xa9llllo there", 0, 14, 8},
	} {
		if got := bpeCut(c.text, c.from, false); got != c.want {
			t.Errorf("bpeCut(%q, %d, false) = %d, want %d", c.text, c.from, got, c.want)
		}
		if got := bpeCut(c.text, c.from, true); c.spaced != 0 && got != c.spaced || c.spaced == 0 && got != c.want {
			t.Errorf("bpeCut(%q, %d, true) = %d, want %d", c.text, c.from, got, max(c.spaced, c.want))
		}
	}
}

// FuzzBPEChunk: as TestBPEChunkSameTokens, for any text, cut after every
// byte it may be.
func FuzzBPEChunk(f *testing.F) {
	for _, s := range []string{"", "a\nb", "hello\nworld\nagain", "x.\nY", "\xe2\x80\nz", "a  \nb", "12\nab\r\ncd", "\xf0x\nab"} {
		f.Add(s)
	}
	toks := bpeTokenizers(f)
	f.Fuzz(func(t *testing.T, text string) {
		for _, tok := range toks {
			if got, want := encodeChunked(tok, text, EncodeOptions{}, 1), tok.Encode(text, EncodeOptions{}); !slices.Equal(got, want) {
				t.Fatalf("%q: pieces %v, whole %v", text, got, want)
			}
		}
	})
}
