package api

import (
	"fmt"
	"strings"
	"testing"
)

// TestPromptTemplateWorkBounded: a Modelfile TEMPLATE (or /api/generate's
// template) whose work grows without writing anything is refused when it
// is parsed. Nested ranges over .Messages rendered for 30 s per request
// (200 messages, four levels) and went on after the client had gone, as
// text/template cannot be cancelled and the output bound never fired.
func TestPromptTemplateWorkBounded(t *testing.T) {
	// fanOut is 40 templates, each calling the next twice: 2^40 calls.
	var fanOut strings.Builder
	for i := range 40 {
		fmt.Fprintf(&fanOut, `{{define "t%d"}}{{template "t%d" .}}{{template "t%d" .}}{{end}}`, i, i+1, i+1)
	}
	fanOut.WriteString(`{{define "t40"}}{{end}}{{template "t0" .}}{{.Prompt}}`)
	for _, c := range []struct{ name, src, err string }{
		{"ollama style", `{{- if .System }}<|system|>{{ .System }}{{ end }}{{- range $i, $m := .Messages }}{{- $last := eq (len (slice $.Messages $i)) 1 }}<|{{ .Role }}|>{{ .Content }}{{ if $last }}<|assistant|>{{ end }}{{- end }}`, ""},
		{"prompt only", `{{ .System }} {{ .Prompt }}`, ""},
		{"call in a range", `{{define "m"}}[{{.Role}}]{{.Content}}{{end}}{{range .Messages}}{{template "m" .}}{{end}}`, ""},
		{"two ranges in a row", `{{range .Messages}}{{.Role}}{{end}}{{range .Messages}}{{.Content}}{{end}}`, ""},
		{"range over a number", `{{range 100000000000}}{{end}}`, "range over a number"},
		{"nested ranges", `{{range .Messages}}{{range $.Messages}}{{range $.Messages}}{{end}}{{end}}{{end}}{{.Prompt}}`, "range inside a range"},
		{"nested in an if", `{{range .Messages}}{{if .Content}}{{range $.Messages}}{{end}}{{end}}{{end}}`, "range inside a range"},
		{"nested through a template", `{{define "all"}}{{range $.Messages}}{{end}}{{end}}{{range .Messages}}{{template "all" $}}{{end}}`, "range inside a range"},
		{"nested through a template seen before", `{{define "all"}}{{range $.Messages}}{{end}}{{end}}{{template "all" .}}{{range .Messages}}{{template "all" $}}{{end}}`, "range inside a range"},
		{"recursion", `{{define "a"}}{{template "a" .}}{{template "a" .}}{{end}}{{template "a" .}}`, "calls itself"},
		{"fan-out", fanOut.String(), "steps"},
	} {
		_, err := parsePromptTemplate(c.src)
		if c.err == "" {
			if err != nil {
				t.Errorf("%s: refused: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: err = %v, want one saying %q", c.name, err, c.err)
		}
	}
	// What is accepted still renders.
	tpl, err := parsePromptTemplate(`{{define "m"}}[{{.Role}}]{{.Content}}{{end}}{{range .Messages}}{{template "m" .}}{{end}}`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := renderPromptTemplate(tpl, "", []templateMessage{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "yo"}})
	if err != nil || out.Text != "[user]hi[assistant]yo" {
		t.Fatalf("rendered %q, %v", out.Text, err)
	}
}
