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
		// falcon splits punctuation, backtick included, before GPT-2's
		// pattern; "default" does not count the backtick.
		{"falcon", "a `b", []string{"a", " ", "`", "b"}},
		{"default", "a `b", []string{"a", " `", "b"}},
		{"falcon", "x 12345", []string{"x", " ", "123", "45"}},
		// Qwen3.5's words take combining marks; Qwen2's do not.
		{"qwen35", "e\u0301te", []string{"e\u0301te"}},
		{"qwen2", "e\u0301te", []string{"e", "\u0301te"}},
		{"qwen35", "x\u0301\u0301!", []string{"x\u0301\u0301", "!"}},
		{"deepseek-llm", "Hello  world\n", []string{"Hello", " ", " world", "\n"}},
		{"deepseek-llm", "ab 12,3", []string{"ab", " ", "12", ",", "3"}},
		{"deepseek-llm", "日本語 123", []string{"日本語", " ", "123"}},
		// U+3000 is whitespace to \s, not a member of the punctuation
		// class or the CJK range, although both ranges cover it.
		{"deepseek-llm", "a\u3000\u3000!", []string{"a", "\u3000", "\u3000!"}},
		{"deepseek-llm", "a\u3000。", []string{"a", "\u3000", "。"}},
		{"deepseek-llm", "a  \t", []string{"a", "  \t"}},
		{"deepseek-coder", "Hi, 1024", []string{"Hi", ",", " ", "1", "0", "2", "4"}},
		{"deepseek-coder", "x\r\ny", []string{"x", "\r", "\n", "y"}},
		{"gemma4", "a▁b\n\nc\n", []string{"a▁b", "\n\n", "c", "\n"}},
	} {
		pre, err := preTokenizerFor(tc.pre)
		if err != nil {
			t.Fatal(err)
		}
		got := pre.split(tc.text, &splitScratch{})
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("%s split %q = %q, want %q", tc.pre, tc.text, got, tc.want)
		}
	}
}
