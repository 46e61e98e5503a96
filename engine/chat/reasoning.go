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
// that writes "<think>" and "</think>" is a thinking model's; rendering a
// one-message conversation with each candidate toggle set either way tells
// which variable turns thinking off and whether the generation prompt
// leaves the block open. Nil for a template that does not reason.
func detectReasoning(t Template, src string) *Reasoning {
	r := &Reasoning{Open: "<think>", Close: "</think>"}
	if !strings.Contains(src, r.Open) || !strings.Contains(src, r.Close) {
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
