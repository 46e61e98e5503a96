// Package jinja renders Jinja2 templates the way Hugging Face's
// apply_chat_template does, for the chat templates GGUF files carry in
// tokenizer.chat_template: jinja2 semantics (Python values, undefined,
// scoping, whitespace control with trim_blocks and lstrip_blocks), the
// statements, filters, tests and methods real templates use, HF's tojson
// (keys in insertion order, ensure_ascii off), raise_exception and
// strftime_now.
//
// A template comes from a model file, so it is untrusted: Parse and
// Render bound tokens, nesting, steps, output and allocation (Limits),
// honour a context, and fail with an error, never a panic. A construct
// the engine does not implement fails with an error naming it
// ("unsupported template feature: ...").
package jinja

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrLimit is wrapped by the errors of a template that exceeds one of
// its Limits.
var ErrLimit = errors.New("template limit exceeded")

// Error is a template syntax or runtime error at a line of the source.
type Error struct {
	Line int
	Msg  string
	err  error
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// Unwrap returns the underlying error (such as ErrLimit), if any.
func (e *Error) Unwrap() error { return e.err }

// RaiseError is the error of a template that called raise_exception:
// Message is what the template said (such as "Conversation roles must
// alternate user/assistant/user/assistant/...").
type RaiseError struct{ Message string }

func (e *RaiseError) Error() string { return e.Message }

// Limits bound what one template may cost. Zero fields take the defaults.
type Limits struct {
	// MaxOutput bounds the rendered text and any one string or list a
	// template builds, in bytes (default 16 MiB).
	MaxOutput int
	// MaxSteps bounds the statements, loop iterations and filter calls of
	// one render (default 5,000,000).
	MaxSteps int
	// MaxDepth bounds macro calls in progress, recursive loops and the
	// nesting of the source (default 200).
	MaxDepth int
	// MaxAlloc bounds the bytes of all strings and lists made during one
	// render (default 1 GiB).
	MaxAlloc int64
	// MaxTokens bounds the length of the source in tokens (default 1,000,000).
	MaxTokens int
}

func (l Limits) withDefaults() Limits {
	if l.MaxOutput <= 0 {
		l.MaxOutput = 16 << 20
	}
	if l.MaxSteps <= 0 {
		l.MaxSteps = 5_000_000
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = 200
	}
	if l.MaxAlloc <= 0 {
		l.MaxAlloc = 1 << 30
	}
	if l.MaxTokens <= 0 {
		l.MaxTokens = 1_000_000
	}
	return l
}

// Options configure Parse.
type Options struct {
	Limits Limits
	// Now is the clock of strftime_now; nil means time.Now.
	Now func() time.Time
}

// env is the environment a template renders in.
type env struct {
	now func() time.Time
}

// Template is a parsed template. It is immutable and safe for concurrent
// Render calls.
type Template struct {
	nodes []node
	lim   Limits
	env   env
}

// Parse parses src. o may be nil for the defaults.
func Parse(src string, o *Options) (*Template, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	lim := opts.Limits.withDefaults()
	toks, err := lex(src, lim.MaxTokens)
	if err != nil {
		return nil, err
	}
	nodes, err := parse(toks, lim.MaxDepth)
	if err != nil {
		return nil, err
	}
	t := &Template{nodes: nodes, lim: lim, env: env{now: opts.Now}}
	if t.env.now == nil {
		t.env.now = time.Now
	}
	return t, nil
}

// Render renders the template with vars as its global variables (values
// converted by ValueOf). A template that calls raise_exception fails with
// a *RaiseError; other failures are *Error (with ErrLimit inside when a
// limit was hit) or the context's error.
func (t *Template) Render(ctx context.Context, vars map[string]any) (string, error) {
	return t.render(ctx, vars, t.env.now)
}

// RenderAt is Render with strftime_now reading the time now instead of
// the clock of Options.Now.
func (t *Template) RenderAt(ctx context.Context, vars map[string]any, now time.Time) (string, error) {
	return t.render(ctx, vars, func() time.Time { return now })
}

func (t *Template) render(ctx context.Context, vars map[string]any, now func() time.Time) (out string, err error) {
	r := &renderer{ctx: ctx, lim: t.lim, now: now}
	defer func() {
		// The evaluator returns errors for bad input; a panic here is a
		// bug, but a hostile template must not take the process down.
		if p := recover(); p != nil {
			out, err = "", &Error{Msg: fmt.Sprintf("internal error: %v", p)}
		}
	}()
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s := newScope(r.globals())
	for k, v := range vars {
		s.vars[k] = ValueOf(v)
	}
	var b strings.Builder
	if _, err := r.exec(t.nodes, s, &b); err != nil {
		return "", err
	}
	return b.String(), nil
}

// globals is the scope of the built-in functions.
func (r *renderer) globals() *scope {
	g := newScope(nil)
	for _, b := range []*builtin{
		{"range", gRange},
		{"namespace", gNamespace},
		{"dict", gDict},
		{"raise_exception", gRaise},
		{"strftime_now", gStrftimeNow},
	} {
		g.vars[b.n] = b
	}
	return g
}

func gRange(r *renderer, args []any, kwargs []kwval) (any, error) {
	if len(kwargs) > 0 || len(args) == 0 || len(args) > 3 {
		return nil, errors.New("range() takes 1 to 3 integer arguments")
	}
	n := make([]int64, len(args))
	for i, a := range args {
		v, ok := intOf(a)
		if !ok {
			return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(a))
		}
		n[i] = v
	}
	start, stop, step := int64(0), n[0], int64(1)
	if len(n) > 1 {
		start, stop = n[0], n[1]
	}
	if len(n) > 2 {
		step = n[2]
	}
	if step == 0 {
		return nil, errors.New("range() arg 3 must not be zero")
	}
	var count int64
	if step > 0 && stop > start {
		count = (stop - start + step - 1) / step
	} else if step < 0 && stop < start {
		count = (start - stop - step - 1) / -step
	}
	if count < 0 || count > int64(r.lim.MaxSteps) {
		return nil, fmt.Errorf("%w: range of %d items", ErrLimit, count)
	}
	if err := r.charge(int(count) * 16); err != nil {
		return nil, err
	}
	l := &List{Items: make([]any, count)}
	for i := range l.Items {
		l.Items[i] = start + int64(i)*step
	}
	return l, nil
}

func gNamespace(r *renderer, args []any, kwargs []kwval) (any, error) {
	d, err := gDict(r, args, kwargs)
	if err != nil {
		return nil, err
	}
	return &namespace{d: d.(*Dict)}, nil
}

func gDict(r *renderer, args []any, kwargs []kwval) (any, error) {
	d := NewDict()
	if len(args) > 1 {
		return nil, errors.New("dict expected at most 1 argument")
	}
	if len(args) == 1 {
		src, ok := args[0].(*Dict)
		if !ok {
			return nil, fmt.Errorf("cannot convert %s to a dict", typeName(args[0]))
		}
		for _, k := range src.keys {
			d.set(k, src.vals[k])
		}
	}
	for _, k := range kwargs {
		d.set(k.name, k.v)
	}
	return d, r.charge(len(d.keys) * 32)
}

func gRaise(r *renderer, args []any, kwargs []kwval) (any, error) {
	msg := ""
	if len(args) > 0 {
		msg = toStr(args[0])
	}
	return nil, &RaiseError{Message: msg}
}

func gStrftimeNow(r *renderer, args []any, kwargs []kwval) (any, error) {
	if len(args) != 1 || len(kwargs) > 0 {
		return nil, errors.New("strftime_now() takes one format argument")
	}
	f, ok := asString(args[0])
	if !ok {
		return nil, fmt.Errorf("strftime_now() argument must be str, not %s", typeName(args[0]))
	}
	return strftime(r.now(), f), nil
}

// strftime formats t with Python's (C's) strftime directives.
func strftime(t time.Time, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		noPad := false
		if f[i] == '-' && i+1 < len(f) {
			noPad = true
			i++
		}
		num := func(v, width int) {
			if noPad {
				fmt.Fprintf(&b, "%d", v)
			} else {
				fmt.Fprintf(&b, "%0*d", width, v)
			}
		}
		switch f[i] {
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'y':
			num(t.Year()%100, 2)
		case 'm':
			num(int(t.Month()), 2)
		case 'd':
			num(t.Day(), 2)
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'H':
			num(t.Hour(), 2)
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			num(h, 2)
		case 'M':
			num(t.Minute(), 2)
		case 'S':
			num(t.Second(), 2)
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'j':
			num(t.YearDay(), 3)
		case 'w':
			fmt.Fprintf(&b, "%d", int(t.Weekday()))
		case 'u':
			wd := int(t.Weekday())
			if wd == 0 {
				wd = 7
			}
			fmt.Fprintf(&b, "%d", wd)
		case 'Z':
			name, _ := t.Zone()
			b.WriteString(name)
		case 'z':
			b.WriteString(t.Format("-0700"))
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case 'D':
			b.WriteString(t.Format("01/02/06"))
		case 'c':
			b.WriteString(t.Format("Mon Jan  2 15:04:05 2006"))
		case 'x':
			b.WriteString(t.Format("01/02/06"))
		case 'X':
			b.WriteString(t.Format("15:04:05"))
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			if noPad {
				b.WriteByte('-')
			}
			b.WriteByte(f[i])
		}
	}
	return b.String()
}
