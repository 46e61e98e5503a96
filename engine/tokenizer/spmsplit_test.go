package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// spmSplitTokenizers are the SentencePiece tokenizers that merge a piece at
// a time (Tokenizer.spmSplit).
func spmSplitTokenizers(t testing.TB) []*Tokenizer {
	var out []*Tokenizer
	for _, tok := range fuzzTokenizers(t) {
		if tok.spmSplit {
			out = append(out, tok)
		}
	}
	return out
}

// encodeWhole tokenizes text as if the vocabulary did not allow cutting
// it: one merge over each whole fragment, llama.cpp's way. It flips the
// shared tokenizer's flag for the call: the package's tests do not run in
// parallel, and fuzz workers are processes of their own.
func encodeWhole(tok *Tokenizer, text string, o EncodeOptions) []int32 {
	tok.spmSplit = false
	defer func() { tok.spmSplit = true }()
	return tok.Encode(text, o)
}

// TestSPMSplitSameTokens: merging a SentencePiece text a piece at a time
// gives the tokens of one merge over the whole text, on random texts of
// words, runs of spaces and newlines, invalid bytes and other scripts.
func TestSPMSplitSameTokens(t *testing.T) {
	toks := spmSplitTokenizers(t)
	if len(toks) == 0 {
		t.Fatal("no SentencePiece vocabulary splits (the hand-built one should)")
	}
	parts := []string{"the", " ", "  ", "   ", "kernel", "\n", "\n\n", "\t", "\xd2", "\xe2\x96", "▁", "ᏸ", "한국어", "🦙", "==",
		"<s>", "</s>", "Hello", " world", "1234", "'s", ".", "\u00a0", "\xff", "a", "b"}
	rng := rand.New(rand.NewPCG(7, 9))
	for _, tok := range toks {
		for range 400 {
			var sb strings.Builder
			for range rng.IntN(40) {
				sb.WriteString(parts[rng.IntN(len(parts))])
			}
			text := sb.String()
			for _, o := range []EncodeOptions{{}, {AddSpecial: true, ParseSpecial: true}} {
				if got, want := tok.Encode(text, o), encodeWhole(tok, text, o); !slices.Equal(got, want) {
					t.Fatalf("%q %+v: pieces %v, whole %v", text, o, got, want)
				}
			}
		}
	}
}

// FuzzSPMSplit: as TestSPMSplitSameTokens, for any text.
func FuzzSPMSplit(f *testing.F) {
	for _, s := range []string{"", " ", "a b", "\xd2   ", "▁▁x▁ y", "hello  world\n\n  ok", "\xe2\x96\x81\xe2"} {
		f.Add(s)
	}
	toks := spmSplitTokenizers(f)
	f.Fuzz(func(t *testing.T, text string) {
		for _, tok := range toks {
			if got, want := tok.Encode(text, EncodeOptions{}), encodeWhole(tok, text, EncodeOptions{}); !slices.Equal(got, want) {
				t.Fatalf("%q: pieces %v, whole %v", text, got, want)
			}
		}
	})
}

// TestLongWordsMergedInChunks: a word longer than maxMergeBytes is merged
// maxMergeBytes at a time, so a byte-level BPE word's tokens are those of
// its chunks (a SentencePiece text cannot be compared so: each chunk
// tokenized alone gets the space prefix).
func TestLongWordsMergedInChunks(t *testing.T) {
	word := strings.Repeat("kernel", maxMergeBytes/2) // cut inside "kernel": its tokens differ
	checked := 0
	for _, tok := range fuzzTokenizers(t) {
		got := tok.Encode(word, EncodeOptions{})
		if len(got) == 0 {
			t.Fatalf("a word of %d bytes gave no tokens", len(word))
		}
		if tok.spm || tok.pre.escapeSpaces {
			continue
		}
		var want []int32
		for rest := word; rest != ""; {
			n := min(len(rest), maxMergeBytes)
			want = append(want, tok.Encode(rest[:n], EncodeOptions{})...)
			rest = rest[n:]
		}
		if !slices.Equal(got, want) {
			t.Fatalf("a word of %d bytes: %d tokens, its chunks' %d", len(word), len(got), len(want))
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no byte-level BPE tokenizer to check")
	}
}
