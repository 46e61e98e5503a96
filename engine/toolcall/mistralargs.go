package toolcall

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ruvllm/ruvllm/engine/grammar"
)

// mistralArgs is the call format of Mistral's newer models (Mistral Small
// 3.2, Devstral, Magistral, Ministral 3): each call is
// [TOOL_CALLS]name[ARGS]{...}, the arguments object after its own
// marker, as their templates render calls back ([CALL_ID]id before
// [ARGS] in some of them). The older [TOOL_CALLS][{"name", "arguments"}]
// array is mistral.
type mistralArgs struct{ mistral }

func (mistralArgs) Name() string { return "mistral-args" }

func (mistralArgs) Grammar(tools []Tool, required, parallel bool) (grammar.Part, []string) {
	var alts []grammar.Part
	for _, t := range tools {
		alts = append(alts, grammar.Seq(grammar.Special("[TOOL_CALLS]"), grammar.Lit(t.Name), grammar.Special("[ARGS]"),
			grammar.JSONValue([]byte(rooted(t)), grammar.JSONOptions{})))
	}
	max := -1
	if !parallel {
		max = 1
	}
	return grammar.Repeat(grammar.Choice(alts...), 1, max), []string{"[TOOL_CALLS]"}
}

// Parse reads each [TOOL_CALLS]name[ARGS]{...}; a last call the length
// limit cut short is dropped with an error, the complete ones kept.
func (mistralArgs) Parse(text string) (string, []Call, error) {
	i := strings.Index(text, "[TOOL_CALLS]")
	if i < 0 {
		return text, nil, nil
	}
	content := strings.TrimSpace(text[:i])
	var calls []Call
	rest := text[i+len("[TOOL_CALLS]"):]
	for {
		name, args, ok := strings.Cut(rest, "[ARGS]")
		if !ok {
			return content, calls, errors.New("tool call without [ARGS]")
		}
		name, id, _ := strings.Cut(name, "[CALL_ID]")
		name = strings.TrimSpace(name)
		if name == "" {
			return content, calls, errors.New("tool call has no name")
		}
		// The arguments are read as one JSON value, not up to the next
		// [TOOL_CALLS]: an argument may hold the marker's text.
		raw, after, err := nextJSON(args)
		if err == nil && raw[0] != '{' {
			err = errors.New("not an object")
		}
		if err != nil {
			return content, calls, fmt.Errorf("tool call %s: arguments are not a JSON object: %w", name, err)
		}
		calls = append(calls, Call{ID: strings.TrimSpace(id), Name: name, Arguments: raw})
		rest = strings.TrimSpace(after)
		if rest == "" {
			return content, calls, nil
		}
		var next bool
		if rest, next = strings.CutPrefix(rest, "[TOOL_CALLS]"); !next {
			return content, calls, fmt.Errorf("tool call %s: text after its arguments", name)
		}
	}
}
