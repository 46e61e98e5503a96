package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestTemplateRenderCmd runs `ruvllm template render` on every template
// and conversation of ../shared/templates (each conversation written as a
// CASE.json with the reference's special tokens) and compares its output
// with Hugging Face's, byte for byte; raise_exception cases must fail with
// the template's message.
func TestTemplateRenderCmd(t *testing.T) {
	dir := testpath.Shared(t, "templates")
	raw, err := os.ReadFile(filepath.Join(dir, "conversations.json"))
	if err != nil {
		t.Fatal(err)
	}
	var convs []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &convs); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cases := map[string]string{}
	for _, c := range convs {
		var id string
		json.Unmarshal(c["id"], &id)
		c["bos_token"], c["eos_token"] = json.RawMessage(`"<BOS>"`), json.RawMessage(`"<EOS>"`)
		data, _ := json.Marshal(c)
		cases[id] = filepath.Join(tmp, id+".json")
		if err := os.WriteFile(cases[id], data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(filepath.Join(dir, "expected.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	var ok, total int
	for sc.Scan() {
		var e struct {
			Template       string
			Case           *string
			Output, Raises *string
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Case == nil || e.Output == nil && e.Raises == nil {
			continue
		}
		total++
		cmd := newTemplateCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs([]string{"render", "--template", filepath.Join(dir, e.Template+".jinja"), "--conversation", cases[*e.Case], "--now", "2026-01-15T09:30:00"})
		err := cmd.Execute()
		name := e.Template + "/" + *e.Case
		switch {
		case e.Output != nil && (err != nil || out.String() != *e.Output):
			t.Errorf("%s: got %q, %v\nwant %q", name, out.String(), err, *e.Output)
		case e.Raises != nil && (err == nil || !strings.HasSuffix(err.Error(), *e.Raises)):
			t.Errorf("%s: got error %v, want the template's message %q", name, err, *e.Raises)
		default:
			ok++
		}
	}
	t.Logf("template render: %d/%d shared cases as Hugging Face renders them", ok, total)
}

// TestTemplateRenderCmdModel renders with a model's own template and
// checks the flag errors.
func TestTemplateRenderCmdModel(t *testing.T) {
	qwen := sharedModel(t, "ruvllm-test-qwen2-13m-f16.gguf")
	llama := sharedModel(t, "ruvllm-test-llama-19m-f16.gguf")
	conv := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(conv, []byte(`{"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args    []string
		want    string
		wantErr string
	}{
		{[]string{"render", "-m", qwen, "--conversation", conv}, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", ""},
		{[]string{"render", "-m", llama, "--conversation", conv}, "<s>[INST] Hi [/INST]", ""}, // bos_token from the file
		{[]string{"render", "--conversation", conv}, "", "exactly one of --template"},
		{[]string{"render", "-m", qwen}, "", "--conversation CASE.json is required"},
		{[]string{"render", "-m", qwen, "--conversation", conv, "--now", "yesterday"}, "", "--now"},
		{[]string{"render", "-m", qwen, "--conversation", filepath.Join(t.TempDir(), "none.json")}, "", "no such file"},
	} {
		cmd := newTemplateCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(tc.args)
		err := cmd.Execute()
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: got %v, want an error containing %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil || out.String() != tc.want {
			t.Errorf("%v: got %q, %v; want %q", tc.args, out.String(), err, tc.want)
		}
	}
}

// TestTemplateRenderRefusesUnknownFields: a conversation file's field the
// command does not know (a misspelt add_generation_prompt) is an error
// naming it; it was ignored and the rendering was not the one asked for.
func TestTemplateRenderRefusesUnknownFields(t *testing.T) {
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "t.jinja")
	conv := filepath.Join(dir, "c.json")
	os.WriteFile(tmpl, []byte(`{% for m in messages %}{{ m.content }}{% endfor %}{% if add_generation_prompt %}>{% endif %}`), 0o644)
	os.WriteFile(conv, []byte(`{"id":"x","messages":[{"role":"user","content":"hi"}],"add_generation_promt":false}`), 0o644)
	_, _, err := runCLI(t, newTemplateCmd(), "render", "--template", tmpl, "--conversation", conv)
	if err == nil || !strings.Contains(err.Error(), "add_generation_promt") {
		t.Fatalf("err = %v, want one naming add_generation_promt", err)
	}
	os.WriteFile(conv, []byte(`{"id":"x","messages":[{"role":"user","content":"hi"}],"add_generation_prompt":false}`), 0o644)
	out, _, err := runCLI(t, newTemplateCmd(), "render", "--template", tmpl, "--conversation", conv)
	if err != nil || out != "hi" {
		t.Fatalf("rendered %q, %v", out, err)
	}
}

// TestTemplateRenderContentParts: a conversation's message content may be
// an array of text parts, as chat requests and /v1/chat/template take it,
// and renders as their texts joined with newlines; the command refused
// it. A part that is not text is an error naming its type.
func TestTemplateRenderContentParts(t *testing.T) {
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "t.jinja")
	os.WriteFile(tmpl, []byte(`{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}`), 0o644)
	for _, c := range []struct{ name, content, want, wantErr string }{
		{"string", `"a\nb"`, "[user:a\nb]", ""},
		{"text parts", `[{"type":"text","text":"a"},{"type":"text","text":"b"}]`, "[user:a\nb]", ""},
		{"input_text and untyped", `[{"type":"input_text","text":"a"},{"text":"b"}]`, "[user:a\nb]", ""},
		{"null", `null`, "[user:]", ""},
		{"image", `[{"type":"image_url","image_url":{"url":"x"}}]`, "", `"image_url" part`},
		{"number", `1`, "", "content"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conv := filepath.Join(dir, "c.json")
			os.WriteFile(conv, []byte(`{"messages":[{"role":"user","content":`+c.content+`}]}`), 0o644)
			out, _, err := runCLI(t, newTemplateCmd(), "render", "--template", tmpl, "--conversation", conv)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil || out != c.want {
				t.Fatalf("rendered %q, %v; want %q", out, err, c.want)
			}
		})
	}
}
