package api

import (
	"reflect"
	"testing"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/grammar"
	"github.com/ruvllm/ruvllm/engine/llm"
)

// TestThinkingOffConstrainsNoReasoning: with thinking turned off (and the
// template taking the switch), a constrained reply (a format, a required
// call) is the constraint from its first byte: the grammar let the model
// open a reasoning block anyway, and think: false came back as all
// thinking.
func TestThinkingOffConstrainsNoReasoning(t *testing.T) {
	tm, err := chat.FromJinja(qwen3Template, nil, chat.SpecialTokens{})
	if err != nil {
		t.Fatal(err)
	}
	m := &fakeModel{name: "thinker", template: qwen3Template, reasoning: tm.Reasoning()}
	p := grammar.Lit("{}")
	off, on := false, true
	for _, c := range []struct {
		want  *bool
		plain bool // the reply is the part alone
	}{
		{&off, true},
		{&on, false},
		{nil, false},
	} {
		req := &llm.Request{Messages: []chat.Message{{Role: "user", Content: "hi"}}}
		st, err := applyThinking(m, req, &thinkingSpec{want: c.want, param: "think"})
		if err != nil {
			t.Fatal(err)
		}
		if got := reflect.DeepEqual(st.wrap(p), p); got != c.plain {
			t.Errorf("think %v: the reply is the part alone: %v, want %v", c.want, got, c.plain)
		}
	}
	g, err := parseGoTemplate(thinkingTemplate)
	if err != nil {
		t.Fatal(err)
	}
	st, err := g.applyThinking(&thinkingSpec{want: &off, param: "think"})
	if err != nil || !reflect.DeepEqual(st.wrap(p), p) {
		t.Errorf("a created model's TEMPLATE with think false: %v, %v", st, err)
	}
}
