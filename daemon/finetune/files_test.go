package finetune

import (
	"errors"
	"strings"
	"testing"
)

func TestReadExamples(t *testing.T) {
	for _, c := range []struct {
		name, in string
		n        int
		errLine  string // "" for no error
	}{
		{"chat", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}`, 1, ""},
		{"blank lines and parts", "\n" + `{"messages":[{"role":"developer","content":"s"},{"role":"user","content":[{"type":"text","text":"q"}]},{"role":"assistant","content":"a"}]}` + "\n\n", 1, ""},
		{"weight 0 turns", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","weight":0},{"role":"user","content":"q2"},{"role":"assistant","content":"b"}]}`, 1, ""},
		{"no answer", `{"messages":[{"role":"user","content":"q"}]}`, 0, "line 1"},
		{"only weight 0", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","weight":0}]}`, 0, "line 1"},
		{"bad weight", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","weight":2}]}`, 0, "weight"},
		{"tool role", `{"messages":[{"role":"tool","content":"q"},{"role":"assistant","content":"a"}]}`, 0, "role"},
		{"assistant first", `{"messages":[{"role":"assistant","content":"a"}]}`, 0, "nothing prompts"},
		{"empty answer", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":" "}]}`, 0, "empty"},
		{"not json on line 2", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}` + "\nnope", 1, "line 2"},
		{"empty file", "\n\n", 0, "no examples"},
		{"byte order mark", "\uFEFF" + `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}`, 1, ""},
		{"latin-1 text", `{"messages":[{"role":"user","content":"caf` + "\xe9" + `"},{"role":"assistant","content":"a"}]}`, 0, "not UTF-8"},
		{"two examples on a line", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]} {"messages":[{"role":"user","content":"q2"},{"role":"assistant","content":"b"}]}`, 0, "line 1"},
		{"text after the example", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}` + "\n" + `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}, trailing`, 0, "line 2"},
		{"carriage return", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}` + "\r\n", 1, ""},
		{"byte order mark on line 2", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}` + "\n\uFEFF{}", 1, "line 2"},
	} {
		n, err := readExamples(strings.NewReader(c.in), nil)
		switch {
		case c.errLine == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.errLine != "" && (err == nil || !strings.Contains(err.Error(), c.errLine)):
			t.Errorf("%s: error %v, want one naming %q", c.name, err, c.errLine)
		case c.errLine == "" && n != c.n:
			t.Errorf("%s: %d examples, want %d", c.name, n, c.n)
		}
		var pe *ParamError
		if err != nil && !errors.As(err, &pe) {
			t.Errorf("%s: %v is not a ParamError", c.name, err)
		}
	}
	long := `{"messages":[{"role":"user","content":"` + strings.Repeat("x", MaxLineBytes) + `"},{"role":"assistant","content":"a"}]}`
	if _, err := readExamples(strings.NewReader(long), nil); err == nil || !strings.Contains(err.Error(), "longer") {
		t.Fatalf("long line: %v", err)
	}
}

func TestAdapterName(t *testing.T) {
	for _, c := range []struct{ model, suffix, id, want string }{
		{"tiny-qwen2", "notes", "ftjob-0123456789abcdef01234567", "ft:tiny-qwen2:notes:0123456789ab"},
		{"Llama 3.2+x", "", "ftjob-abc", "ft:llama-3.2-x::abc"},
	} {
		if got := AdapterName(c.model, c.suffix, c.id); got != c.want {
			t.Errorf("AdapterName(%q, %q, %q) = %q, want %q", c.model, c.suffix, c.id, got, c.want)
		}
	}
}

// FuzzReadExamples: any file is examples or a ParamError, never a panic.
func FuzzReadExamples(f *testing.F) {
	f.Add(`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}`)
	f.Add(`{"messages":[{"role":"user","content":[{"type":"text","text":"q"}]},{"role":"assistant","content":"a","weight":0}]}`)
	f.Add("{\"messages\":null}\n[]\n")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := readExamples(strings.NewReader(s), nil)
		var pe *ParamError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("%q: %v is not a ParamError", s, err)
		}
		if err == nil && n == 0 {
			t.Fatalf("%q: no examples and no error", s)
		}
	})
}
