package api

import (
	"bufio"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ruvllm/ruvllm/ipc"
)

// MaxModelfileBytes bounds a Modelfile, and MaxTemplateBytes a prompt
// template's source and each of its renderings.
const (
	MaxModelfileBytes = 256 << 10
	MaxTemplateBytes  = 256 << 10
)

// parseModelfile reads Ollama's Modelfile format into the fields of a
// create request: FROM, ADAPTER, SYSTEM, TEMPLATE, PARAMETER (repeatable;
// stop accumulates), MESSAGE and LICENSE, case-insensitive, with values on
// one line or between triple quotes. An unknown command is an error naming
// its line.
func parseModelfile(text string) (ipc.CreateRequest, []string, error) {
	var req ipc.CreateRequest
	var adapters []string
	if len(text) > MaxModelfileBytes {
		return req, nil, fmt.Errorf("the Modelfile is %d bytes; at most %d are allowed", len(text), MaxModelfileBytes)
	}
	// A byte order mark (a Modelfile saved by Notepad) is not part of the
	// first command, as Ollama's parser reads it.
	text = strings.TrimPrefix(text, "\ufeff")
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), MaxModelfileBytes+1)
	line := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return sc.Text(), true
	}
	for {
		raw, ok := next()
		if !ok {
			break
		}
		l := strings.TrimSpace(raw)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		cmd, rest, _ := cutSpace(l)
		rest = strings.TrimSpace(rest)
		start := line
		// MESSAGE's value follows its role: MESSAGE user """...""".
		var role string
		if strings.EqualFold(cmd, "MESSAGE") {
			r, content, ok := cutSpace(rest)
			if !ok {
				return req, nil, fmt.Errorf("line %d: MESSAGE wants a role and a text", start)
			}
			role, rest = r, strings.TrimSpace(content)
		}
		// A value may span lines between triple quotes.
		if strings.HasPrefix(rest, `"""`) {
			body := strings.TrimPrefix(rest, `"""`)
			for !strings.Contains(body, `"""`) {
				more, ok := next()
				if !ok {
					return req, nil, fmt.Errorf("line %d: %s: the \"\"\" is never closed", start, cmd)
				}
				body += "\n" + more
			}
			value, after, _ := strings.Cut(body, `"""`)
			if strings.TrimSpace(after) != "" {
				return req, nil, fmt.Errorf("line %d: text after the closing \"\"\"", line)
			}
			rest = value
		} else if len(rest) >= 2 && rest[0] == '"' && rest[len(rest)-1] == '"' && cmd != "PARAMETER" {
			if v, err := strconv.Unquote(rest); err == nil {
				rest = v
			}
		}
		switch strings.ToUpper(cmd) {
		case "FROM":
			req.From = rest
		case "ADAPTER":
			adapters = append(adapters, rest)
		case "SYSTEM":
			req.System = rest
		case "TEMPLATE":
			req.Template = rest
		case "LICENSE":
			req.License = appendLicense(req.License, rest)
		case "MESSAGE":
			req.Messages = append(req.Messages, ipc.Message{Role: strings.ToLower(role), Content: rest})
		case "PARAMETER":
			key, value, ok := cutSpace(rest)
			if !ok {
				return req, nil, fmt.Errorf("line %d: PARAMETER wants a name and a value", start)
			}
			if req.Parameters == nil {
				req.Parameters = map[string]any{}
			}
			if err := setParameter(req.Parameters, strings.ToLower(key), strings.TrimSpace(value)); err != nil {
				return req, nil, fmt.Errorf("line %d: %w", start, err)
			}
		default:
			return req, nil, fmt.Errorf("line %d: unknown Modelfile command %q (FROM, ADAPTER, SYSTEM, TEMPLATE, PARAMETER, MESSAGE, LICENSE)", start, cmd)
		}
	}
	if err := sc.Err(); err != nil {
		return req, nil, fmt.Errorf("read Modelfile: %w", err)
	}
	if req.From == "" {
		return req, nil, fmt.Errorf("the Modelfile has no FROM line")
	}
	return req, adapters, nil
}

// cutSpace cuts s around its first space or tab: Ollama's Modelfile
// separates a command, a MESSAGE's role and a PARAMETER's name from what
// follows by either.
func cutSpace(s string) (before, after string, found bool) {
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

func appendLicense(l any, s string) any {
	switch v := l.(type) {
	case nil:
		return []string{s}
	case []string:
		return append(v, s)
	}
	return l
}

// parameterKinds are the parameters a created model may set, with their
// JSON kinds: the options this daemon honours (see ollamaRequest).
var parameterKinds = map[string]string{
	"temperature": "number", "top_k": "int", "top_p": "number", "min_p": "number", "typical_p": "number",
	"repeat_penalty": "number", "repeat_last_n": "int", "presence_penalty": "number", "frequency_penalty": "number",
	"seed": "int", "num_predict": "int", "num_ctx": "int", "stop": "strings",
}

// setParameter parses a Modelfile PARAMETER value into params.
func setParameter(params map[string]any, key, value string) error {
	kind, ok := parameterKinds[key]
	if !ok {
		return fmt.Errorf("parameter %q is not supported (supported: temperature, top_k, top_p, min_p, typical_p, repeat_penalty, repeat_last_n, presence_penalty, frequency_penalty, seed, num_predict, num_ctx, stop)", key)
	}
	switch kind {
	case "number":
		f, err := strconv.ParseFloat(value, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("parameter %s: %q is not a finite number", key, value)
		}
		params[key] = f
	case "int":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return fmt.Errorf("parameter %s: %q is not an integer", key, value)
		}
		params[key] = n
	case "strings":
		if v, err := strconv.Unquote(value); err == nil {
			value = v
		}
		prev, _ := params[key].([]string)
		params[key] = append(prev, value)
	}
	return nil
}

// checkParameters refuses parameter names this daemon does not honour,
// and values of the wrong kind, naming them.
func checkParameters(params map[string]any) error {
	for k, v := range params {
		kind, ok := parameterKinds[k]
		if !ok {
			return badParam("parameters."+k, "is not supported (supported: temperature, top_k, top_p, min_p, typical_p, repeat_penalty, repeat_last_n, presence_penalty, frequency_penalty, seed, num_predict, num_ctx, stop)")
		}
		switch kind {
		case "number", "int":
			switch v.(type) {
			case float64, int64, int:
			default:
				return badParam("parameters."+k, "must be a number")
			}
		case "strings":
			switch x := v.(type) {
			case []string:
			case []any:
				for _, e := range x {
					if _, ok := e.(string); !ok {
						return badParam("parameters."+k, "must be a list of strings")
					}
				}
			case string:
			default:
				return badParam("parameters."+k, "must be a list of strings")
			}
		}
	}
	return nil
}

// formatModelfile writes a manifest back as a Modelfile (/api/show).
func formatModelfile(m *ipc.ModelManifest, base string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Modelfile generated by ruvllm\nFROM %s\n", base)
	if m == nil {
		return b.String()
	}
	for _, a := range m.Adapters {
		fmt.Fprintf(&b, "ADAPTER %s\n", a.Name)
	}
	if m.Template != "" {
		fmt.Fprintf(&b, "TEMPLATE %s\n", modelfileText(m.Template))
	}
	if m.System != "" {
		fmt.Fprintf(&b, "SYSTEM %s\n", modelfileText(m.System))
	}
	b.WriteString(formatParameters(m.Parameters))
	for _, msg := range m.Messages {
		fmt.Fprintf(&b, "MESSAGE %s %s\n", msg.Role, modelfileValue(msg.Content))
	}
	for _, l := range m.License {
		fmt.Fprintf(&b, "LICENSE %s\n", modelfileText(l))
	}
	return b.String()
}

// modelfileValue quotes a value that spans lines (or has edge spaces) in
// triple quotes, as Ollama writes it, so the Modelfile reads back: a bare
// multi-line value's later lines would be read as commands. A value triple
// quotes cannot hold is written as modelfileText writes it.
func modelfileValue(s string) string {
	if needsQuote(s) {
		return strconv.Quote(s)
	}
	if strings.Contains(s, "\n") || strings.TrimSpace(s) != s {
		return `"""` + s + `"""`
	}
	return s
}

// modelfileText writes a SYSTEM, TEMPLATE or LICENSE text in triple
// quotes, or, when they cannot hold it, as one double-quoted line with Go
// escapes, which parseModelfile unquotes: triple quotes end at the first
// """ in the text, and a text that ends with a quote closes them early
// (both read back as "text after the closing """", and the model could not
// be created again from its own Modelfile).
func modelfileText(s string) string {
	if needsQuote(s) {
		return strconv.Quote(s)
	}
	return `"""` + s + `"""`
}

// needsQuote reports whether s must be written double-quoted with escapes
// to read back as itself: empty (a bare empty value is no value), holding
// """, or starting or ending with a quote (which merges with the quotes
// around it, or is taken for them).
func needsQuote(s string) bool {
	return s == "" || strings.Contains(s, `"""`) || strings.HasPrefix(s, `"`) || strings.HasSuffix(s, `"`)
}

// formatParameters writes parameters as PARAMETER lines, sorted by name.
func formatParameters(params map[string]any) string {
	return writeParameters(params, "PARAMETER %s %s\n")
}

// showParameters writes parameters as Ollama's /api/show does in its
// "parameters" field: a line each, the name padded to 30 columns, then the
// value (a string quoted), sorted by name. Clients read the first word of
// each line as the name (ruvllm chat and run --remote, to leave a created
// model's PARAMETERs unset); PARAMETER lines made that word "PARAMETER".
func showParameters(params map[string]any) string {
	return writeParameters(params, "%-30s %s\n")
}

// writeParameters writes a line per parameter value, sorted by name, with
// line taking the name and the value as text.
func writeParameters(params map[string]any, line string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(params)) {
		switch v := params[k].(type) {
		case []string:
			for _, s := range v {
				fmt.Fprintf(&b, line, k, strconv.Quote(s))
			}
		case []any:
			for _, s := range v {
				fmt.Fprintf(&b, line, k, strconv.Quote(fmt.Sprint(s)))
			}
		case float64:
			// Not %v: it writes 1e+06 for a million, which an integer
			// parameter (seed, num_ctx, ...) does not read back.
			fmt.Fprintf(&b, line, k, strconv.FormatFloat(v, 'f', -1, 64))
		default:
			fmt.Fprintf(&b, line, k, fmt.Sprint(v))
		}
	}
	return b.String()
}
