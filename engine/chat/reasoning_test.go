package chat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestReasoningDetected reads how real thinking models' templates mark
// their reasoning: which variable turns it off and whether the generation
// prompt leaves the block open, unset, on and off; templates of models
// that do not think have none.
func TestReasoningDetected(t *testing.T) {
	dir := testpath.Shared(t, "templates")
	type want struct {
		toggle string
		opens  [3]bool // unset, on, off
		open   string  // the tag that opens the block ("<think>" when "")
	}
	for file, w := range map[string]*want{
		"Qwen-Qwen3-0.6B.jinja":                          {"enable_thinking", [3]bool{false, false, false}, ""},
		"Qwen-QwQ-32B.jinja":                             {"enable_thinking", [3]bool{false, true, false}, ""},
		"Qwen3.5-4B.jinja":                               {"enable_thinking", [3]bool{true, true, false}, ""},
		"deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": {"", [3]bool{true, true, true}, ""},
		"deepseek-ai-DeepSeek-V3.1.jinja":                {"enable_thinking", [3]bool{false, true, false}, ""},
		"Kimi-K2-Thinking.jinja":                         {"", [3]bool{false, false, false}, ""},
		"GLM-4.6.jinja":                                  {"enable_thinking", [3]bool{false, false, false}, ""},
		// Seed-OSS's own tags (its reasoning came back as content).
		"ByteDance-Seed-OSS.jinja":               {"", [3]bool{false, false, false}, "<seed:think>"},
		"meta-llama-Llama-3.1-8B-Instruct.jinja": nil,
		"Qwen-Qwen2.5-7B-Instruct.jinja":         nil,
		"openai-gpt-oss-120b.jinja":              nil, // channels, not a think block
	} {
		src, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		tm, err := FromJinja(string(src), nil, SpecialTokens{BOS: "<s>", EOS: "</s>"})
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		r := tm.Reasoning()
		switch {
		case w == nil && r != nil:
			t.Errorf("%s: reasoning %+v, want none", file, *r)
		case w != nil && r == nil:
			t.Errorf("%s: no reasoning found", file)
		case w != nil:
			open := w.open
			if open == "" {
				open = "<think>"
			}
			if r.Open != open || r.Close != "</"+open[1:] || r.Toggle != w.toggle {
				t.Errorf("%s: %+v, want toggle %q", file, *r, w.toggle)
			}
			got := [3]bool{r.StartsOpen(nil), r.StartsOpen(map[string]any{r.Toggle: true}), r.StartsOpen(map[string]any{r.Toggle: false})}
			if r.Toggle == "" {
				got = [3]bool{r.StartsOpen(nil), r.StartsOpen(map[string]any{"enable_thinking": true}), r.StartsOpen(map[string]any{"enable_thinking": false})}
			}
			if got != w.opens {
				t.Errorf("%s: starts open (unset, on, off) %v, want %v", file, got, w.opens)
			}
			if r.StartsOpen(map[string]any{r.Toggle: "yes"}) != w.opens[0] {
				t.Errorf("%s: a toggle that is not a boolean counts as set", file)
			}
		}
	}
	for _, name := range Names() {
		b, _ := ByName(name)
		if b.Reasoning() != nil {
			t.Errorf("built-in %s reasons", name)
		}
	}
}

// TestSplitter: a reply's reasoning and content come apart the same
// whole, in halves cut anywhere, and a byte at a time.
func TestSplitter(t *testing.T) {
	reasoning := &Reasoning{Open: "<think>", Close: "</think>"}
	for _, c := range []struct {
		text        string
		open        bool
		reason, ans string
	}{
		{"<think>\nabc\n</think>\n\nHello", false, "abc", "Hello"},
		{"  <think>abc</think>Hello", false, "abc", "Hello"},
		{"Hello <think>x</think>", false, "", "Hello <think>x</think>"},
		{"<thin", false, "", "<thin"},
		{"<", false, "", "<"},
		{"", false, "", ""},
		{"\n\n", false, "", "\n\n"},
		{"<think>never closed ", false, "never closed", ""},
		{"<think>a</think>", false, "a", ""},
		{"<think>a </ b </thinking> c</think> d", false, "a </ b </thinking> c", "d"},
		{"abc\n</think>\n\nHello", true, "abc", "Hello"},
		{"<think>\nabc</think>Hello", true, "abc", "Hello"},
		{"abc", true, "abc", ""},
		{"</think>Hello", true, "", "Hello"},
		{"a</think>b</think>c", true, "a", "b</think>c"},
	} {
		if gr, ga := reasoning.Split(c.text, c.open); gr != c.reason || ga != c.ans {
			t.Errorf("%q (open %v): reasoning %q, content %q; want %q, %q", c.text, c.open, gr, ga, c.reason, c.ans)
		}
		// Streamed a byte at a time, and in two halves everywhere: the same.
		for cut := 0; cut <= len(c.text); cut++ {
			for _, pieces := range [][]string{{c.text[:cut], c.text[cut:]}, strings.Split(c.text, "")} {
				s := reasoning.NewSplitter(c.open)
				var gr, ga strings.Builder
				for _, p := range pieces {
					r, a := s.Push(p)
					gr.WriteString(r)
					ga.WriteString(a)
				}
				r, a := s.Close()
				gr.WriteString(r)
				ga.WriteString(a)
				if gr.String() != c.reason || ga.String() != c.ans {
					t.Fatalf("%q (open %v) in pieces %q: reasoning %q, content %q", c.text, c.open, pieces, gr.String(), ga.String())
				}
			}
		}
	}
}

// FuzzSplitter: for any reply, streaming it in pieces (a byte at a time,
// or cut in two anywhere) splits it as the whole text splits, and no text
// other than whitespace and the tags is lost.
func FuzzSplitter(f *testing.F) {
	for _, s := range []string{"", "<think>a</think>b", "a</think>b", "<thi", " <think>\n\n</think>\n\nx", "</think></think>", "<think><think>"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	r := &Reasoning{Open: "<think>", Close: "</think>"}
	f.Fuzz(func(t *testing.T, text string, open bool) {
		wantR, wantC := r.Split(text, open)
		s := r.NewSplitter(open)
		var gr, gc strings.Builder
		for i := range len(text) {
			a, b := s.Push(text[i : i+1])
			gr.WriteString(a)
			gc.WriteString(b)
		}
		a, b := s.Close()
		gr.WriteString(a)
		gc.WriteString(b)
		if gr.String() != wantR || gc.String() != wantC {
			t.Fatalf("%q (open %v) byte by byte: %q, %q; whole: %q, %q", text, open, gr.String(), gc.String(), wantR, wantC)
		}
		squeeze := func(s string) string {
			return strings.Join(strings.Fields(strings.NewReplacer(r.Open, "", r.Close, "").Replace(s)), "")
		}
		if got, want := squeeze(wantR+wantC), squeeze(text); got != want {
			t.Fatalf("%q (open %v): split into %q and %q, text lost", text, open, wantR, wantC)
		}
	})
}
