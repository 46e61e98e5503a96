package llm

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/quant"
)

func TestCapMessageText(t *testing.T) {
	msg := func(n int) chat.Message { return chat.Message{Role: "user", Content: strings.Repeat("a", n)} }
	for _, tc := range []struct {
		name  string
		sizes []int
		limit int
		want  []int
	}{
		{"fits", []int{10, 20}, 30, []int{10, 20}},
		{"one too long", []int{10, 100}, 50, []int{10, 40}},
		{"shares", []int{100, 100, 5}, 65, []int{30, 30, 5}},
		{"all long", []int{40, 50, 60}, 30, []int{10, 10, 10}},
	} {
		var msgs []chat.Message
		for _, n := range tc.sizes {
			msgs = append(msgs, msg(n))
		}
		out := capMessageText(msgs, tc.limit)
		for i, m := range out {
			if len(m.Content) != tc.want[i] {
				t.Errorf("%s: message %d has %d bytes, want %d", tc.name, i, len(m.Content), tc.want[i])
			}
			if len(msgs[i].Content) != tc.sizes[i] {
				t.Fatalf("%s: the caller's message %d was changed", tc.name, i)
			}
		}
	}
	// Head and end, at character boundaries.
	s := "héllo wörld " + strings.Repeat("é", 100) + " the end"
	got := headAndEnd(s, 21)
	if !utf8.ValidString(got) || !strings.HasPrefix(got, "héllo") || !strings.HasSuffix(got, "the end") || len(got) > 21 {
		t.Fatalf("headAndEnd = %q", got)
	}
}

// TestHugeMessageKeepsHeadAndEnd: a chat message larger than a chat
// template renders (16 MiB; a body may hold 32) failed with "template
// limit exceeded" naming no field; like any turn too long for the
// context, it keeps its head and its end.
func TestHugeMessageKeepsHeadAndEnd(t *testing.T) {
	m, err := Load(context.Background(), synthetic(t, "llama", quant.Q8_0), Options{Threads: 2, ContextLength: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	text := "START " + strings.Repeat("lorem ipsum dolor ", 20<<20/18) + " END"
	res, err := m.Generate(context.Background(), Request{Messages: []chat.Message{{Role: "user", Content: text}}, MaxTokens: 2,
		Overflow: OverflowDropOldest.Overflow()}, func(Token) error { return nil })
	if err != nil {
		t.Fatalf("a 20 MiB message: %v", err)
	}
	if res.PromptTokens == 0 || res.PromptTokens > 256 {
		t.Fatalf("prompt of %d tokens for a 256-token context", res.PromptTokens)
	}
}

// TestHugeMessagePreview: the template preview (/v1/chat/template,
// /apply-template) renders a message too large for a template as chat
// requests do, its head and end, instead of failing with "template limit
// exceeded" (soak M).
func TestHugeMessagePreview(t *testing.T) {
	m, err := Load(context.Background(), synthetic(t, "qwen2", quant.Q8_0), Options{Threads: 1, ContextLength: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	text := "START " + strings.Repeat("x", 20<<20) + " END"
	got, err := m.ApplyChatTemplate(context.Background(), chat.Conversation{Messages: []chat.Message{{Role: "user", Content: text}}, AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "START") || !strings.Contains(got, " END") || len(got) > maxRenderedText+4096 {
		t.Fatalf("preview of %d bytes", len(got))
	}
}
