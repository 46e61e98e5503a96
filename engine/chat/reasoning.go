package chat

import (
	"context"
	"strings"
)

// Reasoning describes how a thinking model's chat template marks the
// reasoning its replies start with: a block between Open and Close
// ("<think>" and "</think>" for Qwen3, QwQ, DeepSeek-R1 and most others).
type Reasoning struct {
	Open, Close string
	// Toggle is the template variable that turns thinking on (true) and
	// off (false), such as "enable_thinking"; "" when the template has
	// none (the model always thinks).
	Toggle string
	// opens says whether the generation prompt leaves the block open (the
	// reply starts inside it) with the toggle unset, true and false.
	opens [3]bool
}

// reasoningTags are the tags that open and close a reasoning block, in
// the order they are tried: ByteDance Seed-OSS's own, then the <think>
// of Qwen3, QwQ, DeepSeek-R1 and most others.
var reasoningTags = [][2]string{{"<seed:think>", "</seed:think>"}, {"<think>", "</think>"}}

// thinkingToggles are the variables templates turn thinking on and off
// with, in the order they are tried.
var thinkingToggles = []string{"enable_thinking", "thinking"}

// StartsOpen reports whether a reply rendered with vars starts inside the
// reasoning block (the generation prompt ends with Open), rather than
// with Open itself or with no reasoning at all.
func (r *Reasoning) StartsOpen(vars map[string]any) bool {
	if r.Toggle != "" {
		if v, ok := vars[r.Toggle]; ok {
			if on, isBool := v.(bool); isBool {
				if on {
					return r.opens[1]
				}
				return r.opens[2]
			}
		}
	}
	return r.opens[0]
}

// detectReasoning finds how a file template's model reasons: a template
// that writes a pair of reasoningTags ("<think>" and "</think>") is a
// thinking model's; rendering a
// one-message conversation with each candidate toggle set either way tells
// which variable turns thinking off and whether the generation prompt
// leaves the block open. Nil for a template that does not reason.
func detectReasoning(t Template, src string) *Reasoning {
	var r *Reasoning
	for _, tags := range reasoningTags {
		if strings.Contains(src, tags[0]) && strings.Contains(src, tags[1]) {
			r = &Reasoning{Open: tags[0], Close: tags[1]}
			break
		}
	}
	if r == nil {
		return nil
	}
	render := func(vars map[string]any) (string, bool) {
		out, err := t.Apply(context.Background(), Conversation{
			Messages:            []Message{{Role: RoleUser, Content: "Hello"}},
			AddGenerationPrompt: true,
			Vars:                vars,
		})
		return out, err == nil
	}
	opens := func(out string) bool {
		return strings.HasSuffix(strings.TrimRight(out, " \t\r\n"), r.Open)
	}
	plain, ok := render(nil)
	if !ok {
		return r
	}
	r.opens = [3]bool{opens(plain), opens(plain), opens(plain)}
	for _, name := range thinkingToggles {
		if !strings.Contains(src, name) {
			continue
		}
		on, ok1 := render(map[string]any{name: true})
		off, ok2 := render(map[string]any{name: false})
		if ok1 && ok2 && on != off {
			r.Toggle = name
			r.opens[1], r.opens[2] = opens(on), opens(off)
			break
		}
	}
	return r
}

// Reasoning returns how the template's model reasons, or nil for a model
// whose template shows no reasoning block (built-in families included).
func (t Template) Reasoning() *Reasoning {
	if t.file == nil || t.file.reasoning == nil {
		return nil
	}
	r := *t.file.reasoning
	return &r
}

// NewSplitter returns a splitter for one reply; startsOpen says the prompt
// left the reasoning block open (StartsOpen).
func (r *Reasoning) NewSplitter(startsOpen bool) *Splitter {
	s := &Splitter{open: r.Open, close: r.Close}
	if startsOpen {
		s.state, s.leading = inReasoning, true
	}
	return s
}

// Split divides a whole reply into its reasoning and its content, as a
// Splitter fed the whole text does.
func (r *Reasoning) Split(text string, startsOpen bool) (reasoning, content string) {
	s := r.NewSplitter(startsOpen)
	a, b := s.Push(text)
	c, d := s.Close()
	return a + c, b + d
}

// The states of a Splitter.
const (
	beforeReasoning = iota // nothing yet: the reply may open the block
	inReasoning
	afterReasoning // the block closed: whitespace before the content is dropped
	inContent
)

// Splitter separates a reply's reasoning from its content as the text
// streams in. Text that may be the start of a tag (or whitespace at
// the reasoning's edges) is held back until the next text decides it;
// the whitespace around the reasoning and between it and the content is
// dropped, as llama-server does. Make one with Reasoning.NewSplitter.
type Splitter struct {
	open, close string
	state       int
	pending     string
	// leading: no reasoning text has been given out yet (whitespace is
	// dropped).
	leading bool
}

// InReasoning reports whether the text so far has opened the reasoning
// and not closed it.
func (s *Splitter) InReasoning() bool { return s.state == inReasoning }

// Push takes the next piece of the reply and returns the reasoning and
// the content it completes.
func (s *Splitter) Push(text string) (reasoning, content string) {
	s.pending += text
	var rb, cb strings.Builder
	for {
		switch s.state {
		case beforeReasoning:
			p := strings.TrimLeft(s.pending, " \t\r\n")
			switch {
			case strings.HasPrefix(p, s.open):
				s.pending, s.state, s.leading = p[len(s.open):], inReasoning, true
				continue
			case p == "" || strings.HasPrefix(s.open, p):
				return rb.String(), cb.String() // not decided yet
			}
			s.state = inContent
			continue
		case inReasoning:
			if s.leading {
				// A model whose prompt opened the block may open it again.
				s.pending = strings.TrimLeft(s.pending, " \t\r\n")
				if strings.HasPrefix(s.pending, s.open) {
					s.pending = s.pending[len(s.open):]
					continue
				}
				if s.pending == "" || strings.HasPrefix(s.open, s.pending) {
					return rb.String(), cb.String()
				}
			}
			if i := strings.Index(s.pending, s.close); i >= 0 {
				rb.WriteString(strings.TrimRight(s.pending[:i], " \t\r\n"))
				s.pending, s.state = s.pending[i+len(s.close):], afterReasoning
				continue
			}
			keep := heldBack(s.pending, s.close)
			rb.WriteString(s.pending[:len(s.pending)-keep])
			if keep < len(s.pending) {
				s.leading = false
			}
			s.pending = s.pending[len(s.pending)-keep:]
			return rb.String(), cb.String()
		case afterReasoning:
			s.pending = strings.TrimLeft(s.pending, " \t\r\n")
			if s.pending == "" {
				return rb.String(), cb.String()
			}
			s.state = inContent
			continue
		default:
			cb.WriteString(s.pending)
			s.pending = ""
			return rb.String(), cb.String()
		}
	}
}

// Close returns what is held back at the end of the reply: reasoning the
// model never closed stays reasoning.
func (s *Splitter) Close() (reasoning, content string) {
	rest := s.pending
	s.pending = ""
	switch s.state {
	case inReasoning:
		return strings.TrimRight(rest, " \t\r\n"), ""
	case afterReasoning:
		return "", ""
	}
	return "", rest
}

// heldBack is how many bytes at the end of text must wait for what
// follows: trailing whitespace, and a tail that may begin tag (which,
// when it comes whole, ends the reasoning there).
func heldBack(text, tag string) int {
	keep := 0
	for n := min(len(tag)-1, len(text)); n > 0; n-- {
		if strings.HasPrefix(tag, text[len(text)-n:]) {
			keep = n
			break
		}
	}
	rest := text[:len(text)-keep]
	return keep + len(rest) - len(strings.TrimRight(rest, " \t\r\n"))
}
