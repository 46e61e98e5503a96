package jinja

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/internal/testpath"
)

// referenceNow is the clock ../shared/templates/render.py fixes for
// strftime_now: 2026-01-15 09:30.
var referenceNow = time.Date(2026, 1, 15, 9, 30, 0, 0, time.UTC)

// expectation is one line of ../shared/templates/expected.jsonl.
type expectation struct {
	Template string  `json:"template"`
	Case     *string `json:"case"`
	Output   *string `json:"output"`
	Raises   *string `json:"raises"`
	Error    *string `json:"error"`
}

// loadConversations reads conversations.json with key order kept.
func loadConversations(t *testing.T, dir string) map[string]*Dict {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "conversations.json"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := ParseJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*Dict{}
	for _, c := range v.(*List).Items {
		d := c.(*Dict)
		id, _ := d.Get("id")
		out[id.(string)] = d
	}
	return out
}

// referenceVars are the variables render.py passes for a case.
func referenceVars(c *Dict) map[string]any {
	vars := map[string]any{"bos_token": "<BOS>", "eos_token": "<EOS>", "add_generation_prompt": true}
	for _, k := range []string{"messages", "tools", "add_generation_prompt"} {
		if v, ok := c.Get(k); ok {
			vars[k] = v
		}
	}
	if extra, ok := c.Get("extra"); ok {
		for _, k := range extra.(*Dict).keys {
			vars[k.(string)] = extra.(*Dict).vals[k]
		}
	}
	return vars
}

// TestConformance renders every template of ../shared/templates with
// every conversation and compares with what Hugging Face's renderer
// (jinja2) produced: each output byte for byte, each raise_exception with
// its message.
func TestConformance(t *testing.T) {
	dir := os.Getenv("RUVLLM_TEMPLATES_DIR") // another set made by render.py
	if dir == "" {
		dir = testpath.Shared(t, "templates")
	}
	convs := loadConversations(t, dir)
	f, err := os.Open(filepath.Join(dir, "expected.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	tmpls := map[string]*Template{}
	var outputs, outputsOK, raises, raisesOK, skipped int
	for sc.Scan() {
		var e expectation
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Case == nil || e.Error != nil {
			skipped++ // jinja2 itself failed: no expectation
			continue
		}
		tmpl, ok := tmpls[e.Template]
		if !ok {
			src, err := os.ReadFile(filepath.Join(dir, e.Template+".jinja"))
			if err != nil {
				t.Fatal(err)
			}
			tmpl, err = Parse(string(src), &Options{Now: func() time.Time { return referenceNow }})
			if err != nil {
				t.Errorf("%s: parse: %v", e.Template, err)
			}
			tmpls[e.Template] = tmpl
		}
		c, ok := convs[*e.Case]
		if !ok {
			t.Fatalf("%s: unknown case %q", e.Template, *e.Case)
		}
		var got string
		err := errors.New("template did not parse")
		if tmpl != nil {
			got, err = tmpl.Render(context.Background(), referenceVars(c))
		}
		name := e.Template + "/" + *e.Case
		switch {
		case e.Output != nil:
			outputs++
			if err != nil {
				t.Errorf("%s: %v", name, err)
			} else if got != *e.Output {
				t.Errorf("%s: output differs at byte %d:\n got %q\nwant %q", name, firstDiff(got, *e.Output),
					around(got, firstDiff(got, *e.Output)), around(*e.Output, firstDiff(got, *e.Output)))
			} else {
				outputsOK++
			}
		case e.Raises != nil:
			raises++
			var re *RaiseError
			if !errors.As(err, &re) {
				t.Errorf("%s: want raise_exception(%q), got output %q, error %v", name, *e.Raises, around(got, 0), err)
			} else if re.Message != *e.Raises {
				t.Errorf("%s: raised %q, want %q", name, re.Message, *e.Raises)
			} else {
				raisesOK++
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	parsed := 0
	for _, p := range files {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(string(src), nil); err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
			continue
		}
		parsed++
	}
	t.Logf("chat template conformance: %d/%d templates parse; %d/%d outputs byte-identical, %d/%d raise_exception cases raise the same message; %d cases without expectation (jinja2 itself failed)",
		parsed, len(files), outputsOK, outputs, raisesOK, raises, skipped)
	if outputs == 0 || raises == 0 {
		t.Fatalf("no expectations read from %s", dir)
	}
}

func firstDiff(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

func around(s string, i int) string {
	lo := max(0, i-60)
	hi := min(len(s), i+60)
	return strings.ToValidUTF8(s[lo:hi], "?")
}
