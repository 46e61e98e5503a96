package tokenizer

import (
	"strings"
	"testing"
	"time"
)

// TestEncodeLargeInputFast encodes 100 KB inputs, including one-word
// inputs that make a single merge list 100 K symbols long, and requires
// each to finish within 3 s even on a loaded 2-core machine (unloaded it
// takes 20-300 ms; a quadratic merge loop would take minutes), since the
// merge loop is a heap over a linked list, not a rescan per merge.
func TestEncodeLargeInputFast(t *testing.T) {
	inputs := map[string]string{
		"prose":    strings.Repeat("The quick brown fox jumps over the lazy dog; naïve café 日本語 1234567. ", 1400),
		"one word": strings.Repeat("a", 100_000),
		"spaces":   strings.Repeat(" ", 100_000),
	}
	toks := sharedTokenizers(t)
	if len(toks) == 0 {
		toks = []*Tokenizer{mustNew(t, spmVocab()), mustNew(t, bpeVocab("gpt-2"))}
	}
	for name, in := range inputs {
		for _, tok := range toks {
			start := time.Now()
			ids := tok.Encode(in, EncodeOptions{AddSpecial: true, ParseSpecial: true})
			el := time.Since(start)
			t.Logf("%s/%s %s: %d bytes → %d tokens in %v", tok.v.Model, tok.v.Pre, name, len(in), len(ids), el)
			if el > 3*time.Second {
				t.Errorf("%s/%s %s: %v for %d bytes", tok.v.Model, tok.v.Pre, name, el, len(in))
			}
		}
	}
}

// BenchmarkEncode measures Encode on 10 KB of prose per shared model.
func BenchmarkEncode(b *testing.B) {
	in := strings.Repeat("The quick brown fox jumps over the lazy dog; naïve café 日本語 1234567. ", 140)
	for _, tok := range sharedTokenizers(b) {
		b.Run(tok.v.Model, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				tok.Encode(in, EncodeOptions{})
			}
		})
	}
}
