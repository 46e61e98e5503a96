package tokenizer

import (
	"errors"
	"strings"
	"testing"
)

func errorsIs(err, target error) bool   { return errors.Is(err, target) }
func contains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

// TestPreTokenizers checks each splitter against what its regex (with
// llama.cpp's leftmost-first alternation and unmatched text kept as words)
// gives, on the cases where the patterns differ.
func TestPreTokenizers(t *testing.T) {
	for _, tc := range []struct {
		pre, text string
		want      []string
	}{
		{"gpt-2", "Hello world", []string{"Hello", " world"}},
		{"gpt-2", "a  b", []string{"a", " ", " b"}}, // \s+(?!\S) gives one space back
		{"gpt-2", "\t\ttabbed", []string{"\t", "\t", "tabbed"}},
		{"gpt-2", "x   ", []string{"x", "   "}}, // trailing run stays whole
		{"gpt-2", "don't DON'T", []string{"don", "'t", " DON", "'", "T"}},
		{"gpt-2", " 12345 ab12", []string{" 12345", " ab", "12"}},
		{"gpt-2", "x += y;", []string{"x", " +=", " y", ";"}},
		{"gpt-2", "a\n\nb", []string{"a", "\n", "\n", "b"}},
		{"llama-bpe", "DON'T 12345", []string{"DON", "'T", " ", "123", "45"}},
		{"llama-bpe", "hello\n\n  world", []string{"hello", "\n\n", " ", " world"}},
		{"llama-bpe", "!!!abc !abc", []string{"!!!", "abc", " !", "abc"}},
		{"llama-bpe", "!abc", []string{"!abc"}},
		{"llama-bpe", "x;\n\ny", []string{"x", ";\n\n", "y"}},
		{"llama-bpe", "   x", []string{"  ", " x"}},
		{"llama-bpe", "a \n b", []string{"a", " \n", " b"}},
		{"qwen2", "12345", []string{"1", "2", "3", "4", "5"}},
		{"qwen2", "naïve café", []string{"naïve", " café"}},
		{"default", " 12345", []string{" ", "123", "45"}},
		{"default", "a...b", []string{"a", "...", "b"}},
		{"", "12345", []string{"123", "45"}},
		{"starcoder", " 123", []string{" ", "1", "2", "3"}},
	} {
		pre, err := preTokenizerFor(tc.pre)
		if err != nil {
			t.Fatal(err)
		}
		got := pre.split(tc.text)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("%s split %q = %q, want %q", tc.pre, tc.text, got, tc.want)
		}
	}
}
