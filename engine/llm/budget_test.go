package llm

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/grammar"
	"github.com/ruvllm/ruvllm/engine/sample"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestReasoningBudget: a reply whose reasoning has spent its budget gets
// the block's closing tag written for it after exactly that many tokens,
// then goes on; a reply without reasoning, or a budget never reached, is
// generated as without one. With a constraint after the reasoning, the
// forced tag is read by the grammar and the answer still follows it.
func TestReasoningBudget(t *testing.T) {
	m, err := Load(context.Background(), testpath.Shared(t, "models/ruvllm-test-qwen2-13m-q8_0.gguf"), Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	open := &grammar.Gate{Open: "<think>", Close: "</think>", StartsOpen: true}
	greedy := sample.Params{Temperature: 0}
	plain, _, _ := generate(t, m, Request{Prompt: "The shell", MaxTokens: 30, Sampling: greedy, IgnoreEOS: true})
	closing := m.tok.Encode("\n</think>", tokenizer.EncodeOptions{ParseSpecial: true})
	for _, budget := range []int{1, 6} {
		ids, text, res := generate(t, m, Request{Prompt: "The shell", MaxTokens: 30, Sampling: greedy, IgnoreEOS: true,
			Reasoning: open, ReasoningBudget: budget})
		if !slices.Equal(ids[:budget], plain[:budget]) || !slices.Equal(ids[budget:budget+len(closing)], closing) {
			t.Fatalf("budget %d: tokens %v, want the first %d of %v then %v", budget, ids, budget, plain, closing)
		}
		if strings.Count(text, "</think>") != 1 || len(ids) != 30 || res.ForcedTokens != len(closing) {
			t.Fatalf("budget %d: %q, %d tokens, %d forced", budget, text, len(ids), res.ForcedTokens)
		}
	}
	// Not reached, or no reasoning in the reply: nothing changes.
	for _, req := range []Request{
		{Reasoning: open, ReasoningBudget: 31},
		{Reasoning: &grammar.Gate{Open: "<think>", Close: "</think>"}, ReasoningBudget: 2},
		{ReasoningBudget: 2},
	} {
		req.Prompt, req.MaxTokens, req.Sampling, req.IgnoreEOS = "The shell", 30, greedy, true
		if ids, _, _ := generate(t, m, req); !slices.Equal(ids, plain) {
			t.Fatalf("%+v: %v, want %v", req, ids, plain)
		}
	}
	// After a constraint's free reasoning: the answer follows the tag.
	c, err := m.ComposedGrammar(grammar.Seq(grammar.Without("</think>"), grammar.Lit("</think>"), grammar.Regex(`\n?(yes|no)\.`)))
	if err != nil {
		t.Fatal(err)
	}
	for _, temp := range []float32{0, 1} {
		_, text, res := generate(t, m, Request{Prompt: "Is it? ", MaxTokens: 60, Sampling: sample.Params{Temperature: temp, Seed: 3},
			Grammar: c, Reasoning: open, ReasoningBudget: 4})
		if res.FinishReason != FinishStop || !regexp.MustCompile(`(?s)^.*\n</think>\n?(yes|no)\.$`).MatchString(text) {
			t.Fatalf("temperature %v: %q (%s)", temp, text, res.FinishReason)
		}
	}
	// A grammar that writes the opening tag itself (a constraint on a
	// model whose reply opens the block: Qwen3's, with tool_choice
	// required or a schema) forces it without sampling; the budget still
	// follows the block from that tag. It never saw the tag, and the
	// reasoning ran to max_tokens (soak P).
	c, err = m.ComposedGrammar(grammar.Seq(grammar.Lit("<think>"), grammar.Without("</think>"), grammar.Lit("</think>"), grammar.Regex(`\n?(yes|no)\.`)))
	if err != nil {
		t.Fatal(err)
	}
	replyOpens := &grammar.Gate{Open: "<think>", Close: "</think>"}
	for _, temp := range []float32{0, 1} {
		_, text, res := generate(t, m, Request{Prompt: "Is it? ", MaxTokens: 60, Sampling: sample.Params{Temperature: temp, Seed: 3},
			Grammar: c, Reasoning: replyOpens, ReasoningBudget: 4})
		if res.FinishReason != FinishStop || !regexp.MustCompile(`(?s)^<think>.*\n</think>\n?(yes|no)\.$`).MatchString(text) {
			t.Fatalf("reply opens the block, temperature %v: %q (%s)", temp, text, res.FinishReason)
		}
	}
}

// TestReasoningBudgetFollowsTheReply: the budget counts the reasoning's
// tokens only, after an opening tag the reply writes itself, and ends
// with a closing tag the model writes.
func TestReasoningBudgetFollowsTheReply(t *testing.T) {
	m, err := Load(context.Background(), testpath.Shared(t, "models/ruvllm-test-qwen2-13m-q8_0.gguf"), Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, tc := range []struct {
		startsOpen bool
		reply      string
		budget     int
		due        int // the token after which the tag is due (-1: never)
	}{
		{false, "\n<think> a b c d e f", 3, 7}, // "\n" "<" "th" "ink" ">" " a" " b" " c"
		{false, "Hello there, friend", 1, -1},
		{true, " a b</think> c d e f g", 2, 1},
		{true, " a b</think> c d e f g", 3, -1}, // not inside the tag the model writes
		{true, " a b c", 2, 1},
	} {
		b := newReasoningBudget(Request{Reasoning: &grammar.Gate{Open: "<think>", Close: "</think>", StartsOpen: tc.startsOpen}, ReasoningBudget: tc.budget}, m.tok)
		ids := m.tok.Encode(tc.reply, tokenizer.EncodeOptions{})
		due := -1
		for i, id := range ids {
			if b.add(m.tok, id) {
				due = i
				break
			}
		}
		var pieces []string
		for _, id := range ids {
			pieces = append(pieces, string(m.tok.TokenPiece(nil, id)))
		}
		if due != tc.due {
			t.Errorf("%q (%q), budget %d: due after token %d, want %d", tc.reply, pieces, tc.budget, due, tc.due)
		}
	}

}
