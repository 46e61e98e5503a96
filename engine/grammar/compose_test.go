package grammar

import (
	"bytes"
	"testing"
)

func TestRegexConstraint(t *testing.T) {
	g, err := CompileRegex(`^\d{3}-[a-z]+$`)
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]bool{"123-abc": true, "12-abc": false, "123-": false, "123-abcD": false} {
		if got := matches(g, s); got != want {
			t.Errorf("%q: %v", s, got)
		}
	}
	if _, err := CompileRegex(`(a`); err == nil {
		t.Error("bad regex compiled")
	}
}

func TestCompose(t *testing.T) {
	call := JSONValue([]byte(`{"type":"object","properties":{"name":{"const":"f"},"arguments":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false}},"required":["name","arguments"],"additionalProperties":false}`), JSONOptions{})
	p := Repeat(Seq(Special("<tool_call>"), Lit("\n"), call, Lit("\n"), Special("</tool_call>")), 1, -1, Lit("\n"))
	g, err := Compose(p)
	if err != nil {
		t.Fatal(err)
	}
	one := "<tool_call>\n{\"name\":\"f\",\"arguments\":{\"x\":1}}\n</tool_call>"
	for s, want := range map[string]bool{
		one: true, one + "\n" + one: true, "\xff" + one: true, "": false, one + "\n": false,
		"<tool_call>\n{\"name\":\"g\",\"arguments\":{\"x\":1}}\n</tool_call>": false,
	} {
		if got := matches(g, s); got != want {
			t.Errorf("%q: %v", s, got)
		}
	}
	if p.Key() == Lit("x").Key() || p.Key() != Repeat(Seq(Special("<tool_call>"), Lit("\n"), call, Lit("\n"), Special("</tool_call>")), 1, -1, Lit("\n")).Key() {
		t.Error("keys do not identify parts")
	}
}

func TestLazyMatcher(t *testing.T) {
	var toks []Token
	for _, s := range []string{"Hello", " world", "<tool", "_call>", "{", "\"a\"", ":", "1", "}", "</tool_call>", "x", "{\"a\":1}"} {
		toks = append(toks, Token{Bytes: []byte(s)})
	}
	toks = append(toks, Token{Bytes: []byte("<tool_call>"), Special: true}, Token{EOG: true})
	v, err := NewVocab(toks)
	if err != nil {
		t.Fatal(err)
	}
	const (
		hello, world, tool, call, lbrace, keyA, colon, one, rbrace, end, x, whole, special, eog = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
	)
	g, err := Compose(Seq(Special("<tool_call>"), JSONValue([]byte(`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`), JSONOptions{}), Lit("</tool_call>")))
	if err != nil {
		t.Fatal(err)
	}
	c := NewConstraint(g, v)
	m := c.NewLazyMatcher([]string{"<tool_call>"})
	mask := make([]uint64, v.MaskWords())
	allowed := func(tok int) bool { return mask[tok/64]&(1<<(tok%64)) != 0 }
	m.FillMask(mask)
	for _, tok := range []int{hello, world, tool, x, special, eog, lbrace} {
		if !allowed(tok) {
			t.Errorf("free text: token %d refused", tok)
		}
	}
	for _, tok := range []int32{hello, world, tool} {
		if err := m.Accept(tok); err != nil {
			t.Fatal(err)
		}
	}
	if m.Triggered() {
		t.Fatal("triggered too early")
	}
	m.FillMask(mask)
	if !allowed(call) {
		t.Error("completing the trigger refused")
	}
	if err := m.Accept(call); err != nil || !m.Triggered() {
		t.Fatalf("trigger: %v, triggered %v", err, m.Triggered())
	}
	m.FillMask(mask)
	if allowed(x) || allowed(eog) || !allowed(lbrace) || !allowed(whole) {
		t.Errorf("after the trigger: x %v eog %v { %v whole %v", allowed(x), allowed(eog), allowed(lbrace), allowed(whole))
	}
	for _, tok := range []int32{whole, end} {
		if err := m.Accept(tok); err != nil {
			t.Fatal(err)
		}
	}
	if !m.Done() {
		t.Error("not done after the call")
	}
	// The special token triggers too.
	m2 := c.NewLazyMatcher([]string{"<tool_call>"})
	if err := m2.Accept(special); err != nil || !m2.Triggered() {
		t.Fatalf("special trigger: %v", err)
	}
}

// TestWithoutThenConstraint: a thinking model's reasoning (Without its
// closing tag) before a constrained answer, the way the daemon composes a
// constraint for a model that thinks first.
func TestWithoutThenConstraint(t *testing.T) {
	answer, err := Spec{Kind: KindJSONSchema, Source: `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`}.Part()
	if err != nil {
		t.Fatal(err)
	}
	think := Seq(Without("</think>"), Special("</think>"), Regex(`[ \t\n]*`), answer)
	for name, p := range map[string]Part{
		"optional": Choice(Seq(Special("<think>"), think), answer),
		"open":     think,
	} {
		g, err := Compose(p)
		if err != nil {
			t.Fatal(err)
		}
		open := name == "open"
		for s, want := range map[string]bool{
			"<think>let me see</think>\n\n{\"a\":1}":       true, // open: "<think>" is reasoning text
			"<think>a</think>{\"a\":1}":                    true,
			"\xff<think>a <b> </thin\xff</think>{\"a\":1}": !open, // control tokens, a partial tag inside
			"{\"a\":1}":                              !open,
			"let me see</think>\n{\"a\":1}":          open,
			"</think>{\"a\":1}":                      open,
			"\u00e9 \xe2\x80 x\xff</think>{\"a\":1}": open, // any bytes before it
			"<think>a</think></think>{\"a\":1}":      false,
			"a</think></think>{\"a\":1}":             false,
			"<think>a":                               false,
			"a":                                      false,
			"<think>a</think>\nnot json":             false,
			"a</think>\nnot json":                    false,
			"a\xffb</think>{\"a\":1}":                false, // no other special token inside
			"{\"a\":1}</think>":                      false,
		} {
			if got := matches(g, s); got != want {
				t.Errorf("%s: %q: %v", name, s, got)
			}
		}
	}
	if _, err := Compose(Without("")); err == nil {
		t.Error("Without(\"\") compiled")
	}
	for _, s := range []Spec{{Kind: KindJSON}, {Kind: KindJSONObject}, {Kind: KindGBNF, Source: `root ::= "x"`}, {Kind: KindRegex, Source: `x+`}} {
		p, err := s.Part()
		if err != nil {
			t.Fatal(err)
		}
		whole, err := Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		part, err := Compose(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{"x", "xx", "{}", `{"a":[1]}`, "[1]", "1", ""} {
			if matches(whole, text) != matches(part, text) {
				t.Errorf("%s %q: %q compiled alone %v, as a part %v", s.Kind, s.Source, text, matches(whole, text), matches(part, text))
			}
		}
	}
	if _, err := (Spec{Kind: "nope"}).Part(); err == nil {
		t.Error("an unknown kind made a part")
	}
}

// TestGatedLazyMatcher: a thinking model's reasoning may mention the
// trigger without starting the structured part; after the reasoning ends
// (or where the reply does not reason), the trigger starts it as before.
func TestGatedLazyMatcher(t *testing.T) {
	var toks []Token
	for _, s := range []string{"<think>", "<th", "ink>", "I will use", " <tool_call>", " here", "</think>", "\n\n", "<tool_call>", `{"a":1}`, "</tool_call>", "x", " ", "<"} {
		toks = append(toks, Token{Bytes: []byte(s)})
	}
	toks = append(toks, Token{EOG: true})
	v, err := NewVocab(toks)
	if err != nil {
		t.Fatal(err)
	}
	const (
		think, th, ink, iwill, mention, here, endThink, nl, call, body, endCall, x, space, lt, eog = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14
	)
	g, err := Compose(Seq(Special("<tool_call>"), JSONValue([]byte(`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`), JSONOptions{}), Lit("</tool_call>")))
	if err != nil {
		t.Fatal(err)
	}
	c := NewConstraint(g, v)
	gate := Gate{Open: "<think>", Close: "</think>"}
	mask := make([]uint64, v.MaskWords())
	for _, tc := range []struct {
		name     string
		open     bool
		tokens   []int32
		triggers bool // the last token started the structured part
	}{
		{"reasoning mentions the trigger", false, []int32{think, iwill, mention, here}, false},
		{"split open tag", false, []int32{space, th, ink, iwill, mention}, false},
		{"prompt opened the block", true, []int32{iwill, mention}, false},
		{"after the reasoning", false, []int32{think, iwill, mention, endThink, nl, call}, true},
		{"after the prompt's block", true, []int32{iwill, endThink, call}, true},
		{"no reasoning", false, []int32{x, call}, true},
		{"a call first", false, []int32{call}, true},
		{"a tag's start, then the call", false, []int32{lt, x, space, call}, true},
	} {
		m := c.NewLazyMatcher([]string{"<tool_call>"})
		g := gate
		g.StartsOpen = tc.open
		m.GateReasoning(g)
		for i, tok := range tc.tokens {
			m.FillMask(mask)
			if mask[tok/64]&(1<<(tok%64)) == 0 {
				t.Fatalf("%s: token %d (%q) refused", tc.name, i, toks[tok].Bytes)
			}
			if err := m.Accept(tok); err != nil {
				t.Fatalf("%s: token %d: %v", tc.name, i, err)
			}
		}
		if m.Triggered() != tc.triggers {
			t.Fatalf("%s: triggered %v, want %v", tc.name, m.Triggered(), tc.triggers)
		}
		if tc.triggers {
			m.FillMask(mask)
			if mask[x/64]&(1<<(x%64)) != 0 || mask[body/64]&(1<<(body%64)) == 0 {
				t.Fatalf("%s: after the trigger x allowed %v, the call's body refused", tc.name, mask[x/64]&(1<<(x%64)) != 0)
			}
		}
	}
	// A matcher that is not lazy ignores a gate.
	m := c.NewMatcher()
	m.GateReasoning(gate)
	if !m.Triggered() {
		t.Fatal("a strict matcher became lazy")
	}
}

// FuzzGatedLazyMatcher: any sequence of allowed tokens is accepted, and a
// reply that opens its reasoning never starts the structured part before
// the reasoning ends, however the tags and the trigger fall into tokens.
func FuzzGatedLazyMatcher(f *testing.F) {
	pieces := []string{"<think>", "<th", "ink>", "</think>", "</th", "<tool_call>", "<tool", "_call>", "</tool_call>", `{"a":1}`, "{", "\"a\"", ":", "1", "}", " ", "\n", "x", "<", ">", "/"}
	var toks []Token
	for _, s := range pieces {
		toks = append(toks, Token{Bytes: []byte(s)})
	}
	toks = append(toks, Token{Bytes: []byte("<tool_call>"), Special: true}, Token{EOG: true})
	v, err := NewVocab(toks)
	if err != nil {
		f.Fatal(err)
	}
	g, err := Compose(Seq(Special("<tool_call>"), JSONValue([]byte(`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`), JSONOptions{}), Lit("</tool_call>")))
	if err != nil {
		f.Fatal(err)
	}
	c := NewConstraint(g, v)
	for _, s := range [][]byte{{0, 5, 3, 5}, {1, 2, 6, 7, 4}, {15, 5, 9, 8}, {18, 21, 3}} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, seq []byte, open bool) {
		m := c.NewLazyMatcher([]string{"<tool_call>"})
		m.GateReasoning(Gate{Open: "<think>", Close: "</think>", StartsOpen: open})
		mask := make([]uint64, v.MaskWords())
		var text []byte
		for _, b := range seq {
			if m.Done() {
				return
			}
			tok := int32(int(b) % len(toks))
			m.FillMask(mask)
			if mask[tok/64]&(1<<(tok%64)) == 0 {
				continue
			}
			if err := m.Accept(tok); err != nil {
				t.Fatalf("%q then token %d (allowed): %v", text, tok, err)
			}
			text = append(text, display(v.bytes[tok])...)
			reasoning := open || bytes.HasPrefix(bytes.TrimLeft(text, " \n"), []byte("<think>"))
			if reasoning && !bytes.Contains(text, []byte("</think>")) && m.Triggered() {
				t.Fatalf("%q (open %v): triggered inside the reasoning", text, open)
			}
		}
	})
}
