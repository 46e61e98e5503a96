package api

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCharCountSplitCharacters: text_offset counts characters, and a
// character whose bytes are split across tokens (a byte-level BPE
// vocabulary's é, an emoji) is one character, not one per piece.
func TestCharCountSplitCharacters(t *testing.T) {
	for _, tc := range []struct {
		pieces []string
		want   []int
	}{
		{[]string{"h", "\xc3", "\xa9", "l", "lo"}, []int{0, 1, 1, 2, 3}},               // h é l lo
		{[]string{"\xf0", "\x9f", "\x99", "\x82", " w", "x"}, []int{0, 0, 0, 0, 1, 3}}, // 🙂 w x
		{[]string{"\xf0\x9f", "\x99\x82a", "b"}, []int{0, 0, 2}},                       // 🙂a b
		{[]string{"ab", "中", "é", "😀", "x"}, []int{0, 2, 3, 4, 5}},                     // whole characters
		{[]string{"\xf0", "a", "b"}, []int{0, 1, 2}},                                   // a stray byte is a character (U+FFFD)
		{[]string{"\xe4\xb8", "\xe4\xb8\xad", "z"}, []int{0, 2, 3}},                    // two stray bytes, then 中
	} {
		var c charCount
		var got []int
		for _, p := range tc.pieces {
			got = append(got, c.next(p))
			c.add(p)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%q: offsets %v, want %v", tc.pieces, got, tc.want)
		}
	}
}

// TestCompletionTextOffsetAfterSplitCharacters: through /v1/completions
// (generated and echoed), the token after multi-byte characters starts
// where the text has it.
func TestCompletionTextOffsetAfterSplitCharacters(t *testing.T) {
	ta := startAPIWith(t, true)
	model := quote(realTinyModel(t))
	for _, body := range []string{
		`{"model":` + model + `,"prompt":"hi","max_tokens":12,"temperature":0,"logprobs":1,"grammar":"root ::= \"é🙂中x\""}`,
		`{"model":` + model + `,"prompt":"é🙂中x","max_tokens":0,"echo":true,"logprobs":1}`,
	} {
		out := ta.postOK(t, "/v1/completions", body)
		choice := field(out, "choices").([]any)[0].(map[string]any)
		text := choice["text"].(string)
		lp := choice["logprobs"].(map[string]any)
		tokens, offsets := lp["tokens"].([]any), lp["text_offset"].([]any)
		last := len(tokens) - 1
		if !strings.HasSuffix(text, "x") || tokens[last] != "x" {
			t.Fatalf("%s: text %q, tokens %q: want a last token x", body, text, tokens)
		}
		if got, want := int(offsets[last].(float64)), utf8.RuneCountInString(text)-1; got != want {
			t.Errorf("%s: text %q, tokens %q, offsets %v: x at %d, want %d", body, text, tokens, offsets, got, want)
		}
	}
}
