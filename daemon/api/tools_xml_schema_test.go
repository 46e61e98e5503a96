package api

import (
	"strings"
	"testing"
)

// TestXMLToolSchemaErrorsAre400: a tool whose parameters are no valid
// JSON Schema is a 400 naming tools for a model whose calls write tagged
// arguments, as for one whose calls are JSON. The tagged formats compile
// a parameter's schema only where its value is JSON, so these requests
// were served, the schema's mistakes ignored.
func TestXMLToolSchemaErrorsAre400(t *testing.T) {
	ta := startAPI(t)
	f := ta.fakes["hermes"]
	f.template = "{{ tools }}<tool_call>\n<function=x>\n<parameter=y>\n{{ messages }}"
	f.script = []string{"<tool_call>\n<function=g>\n</function>\n</tool_call>"}
	user := `"messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct{ name, params, want string }{
		{"properties not an object", `{"type":"object","properties":[]}`, "properties"},
		{"a property that is no schema", `{"type":"object","properties":{"a":"x"}}`, "schema"},
		{"a reference to nowhere", `{"type":"object","properties":{"a":{"$ref":"#/nope"}}}`, "#/nope"},
		{"required not an array", `{"type":"object","required":"a"}`, "required"},
		{"a text parameter's pattern", `{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`, "pattern"},
	} {
		body := `{"model":"hermes",` + user + `,"tools":[{"type":"function","function":{"name":"g","parameters":` + c.params + `}}]}`
		r, b := ta.post(t, "/v1/chat/completions", body)
		if r.StatusCode != 400 || !strings.Contains(string(b), `"param":"tools"`) || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %s", c.name, r.StatusCode, b)
		}
	}
	// A valid schema is served as before.
	r, b := ta.post(t, "/v1/chat/completions", `{"model":"hermes",`+user+`,"tools":[{"type":"function","function":{"name":"g","parameters":{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}}}}}]}`)
	if r.StatusCode != 200 || !strings.Contains(string(b), `"name":"g"`) {
		t.Errorf("a valid schema: %d %s", r.StatusCode, b)
	}
}
