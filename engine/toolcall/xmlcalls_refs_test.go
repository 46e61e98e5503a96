package toolcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestXMLValueTypeThroughRefsAndAnyOf: whether a parameter is raw text or
// JSON is read through its "$ref" to the tool's definitions and through
// anyOf/oneOf, as Pydantic and Zod write schemas: Optional[int] (anyOf an
// integer and null) is JSON, held to its schema by the grammar and read
// as a number; a reference to an object is an object; a reference to a
// string enum takes the enum's words only. Before, a schema without a
// top-level type was raw text: any text was allowed and "5" came back as
// the string "5", an object as a string of JSON.
func TestXMLValueTypeThroughRefsAndAnyOf(t *testing.T) {
	const tool = `{"type":"function","function":{"name":"f","parameters":{"type":"object",` +
		`"properties":{"v":SCHEMA},"required":["v"],` +
		`"$defs":{"Point":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]},"Unit":{"type":"string","enum":["c","f"]},"Alias":{"$ref":"#/$defs/Point"},"Loop":{"$ref":"#/$defs/Loop"}}}}}`
	x := xmlCalls{xmlLayout: qwen3CoderLayout}
	for _, c := range []struct {
		name, schema, value string
		accepted            bool
		want                string // the arguments Parse reads
	}{
		{"Optional[int], a number", `{"anyOf":[{"type":"integer"},{"type":"null"}]}`, "5", true, `{"v":5}`},
		{"Optional[int], null", `{"anyOf":[{"type":"integer"},{"type":"null"}]}`, "null", true, `{"v":null}`},
		{"Optional[int], text", `{"anyOf":[{"type":"integer"},{"type":"null"}]}`, "five", false, ""},
		{"oneOf with a string stays text", `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, "5", true, `{"v":"5"}`},
		{"a reference to an object", `{"$ref":"#/$defs/Point"}`, `{"x":1}`, true, `{"v":{"x":1}}`},
		{"a reference to a reference", `{"$ref":"#/$defs/Alias"}`, `{"x":2}`, true, `{"v":{"x":2}}`},
		{"a reference to an object, text", `{"$ref":"#/$defs/Point"}`, "here", false, ""},
		{"a reference to a string enum", `{"$ref":"#/$defs/Unit"}`, "c", true, `{"v":"c"}`},
		{"a reference to a string enum, another word", `{"$ref":"#/$defs/Unit"}`, "k", false, ""},
		{"anyOf of references", `{"anyOf":[{"$ref":"#/$defs/Point"},{"type":"null"}]}`, `{"x":3}`, true, `{"v":{"x":3}}`},
		{"a reference to itself stays text", `{"$ref":"#/$defs/Loop"}`, "x", true, `{"v":"x"}`},
	} {
		def := json.RawMessage(strings.Replace(tool, "SCHEMA", c.schema, 1))
		tools, err := ParseTools([]json.RawMessage{def})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		text := "<tool_call>\n<function=f>\n<parameter=v>\n" + c.value + "\n</parameter>\n</function>\n</tool_call>"
		if got := acceptsCalls(t, x, tools, false, text) == nil; got != c.accepted {
			t.Errorf("%s: the grammar accepts %q: %v, want %v", c.name, c.value, got, c.accepted)
		}
		if !c.accepted {
			continue
		}
		_, calls, err := Bind(x, tools).Parse(text)
		if err != nil || len(calls) != 1 || string(calls[0].Arguments) != c.want {
			t.Errorf("%s: Parse = %v, %v; want %s", c.name, calls, err, c.want)
		}
	}
}

// TestXMLCopiedDefinitionsBounded: an XML-format grammar copies a tool's
// definitions into each parameter that may refer to them, so a tool whose
// copies would pass maxCopiedDefs bytes is refused by name before any
// grammar is built (a few megabytes of $defs and thousands of parameters
// stood for gigabytes); parameters without a reference take no copy.
func TestXMLCopiedDefinitionsBounded(t *testing.T) {
	big := `{"type":"string","description":"` + strings.Repeat("d", 1<<20) + `"}`
	tool := func(params int, ref string) json.RawMessage {
		var props []string
		for i := range params {
			props = append(props, fmt.Sprintf(`"p%d":%s`, i, ref))
		}
		return json.RawMessage(`{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{` +
			strings.Join(props, ",") + `},"$defs":{"Big":` + big + `}}}}`)
	}
	x := xmlCalls{xmlLayout: qwen3CoderLayout}
	for _, c := range []struct {
		name    string
		def     json.RawMessage
		refused bool
	}{
		{"40 parameters referring to 1 MB", tool(40, `{"$ref":"#/$defs/Big"}`), true},
		{"40 parameters referring with an escaped $", tool(40, `{"\u0024ref":"#/$defs/Big"}`), true},
		{"8 parameters referring to 1 MB", tool(8, `{"$ref":"#/$defs/Big"}`), false},
		{"400 parameters that refer to nothing", tool(400, `{"type":"integer"}`), false},
	} {
		tools, err := ParseTools([]json.RawMessage{c.def})
		if err != nil {
			t.Fatal(err)
		}
		err = CheckSchemas(x, tools)
		if c.refused != (err != nil) || c.refused && (!errors.Is(err, ErrBadTool) || !strings.Contains(err.Error(), `tool "f"`)) {
			t.Errorf("%s: %v", c.name, err)
		}
		if c.refused {
			continue
		}
		for _, p := range xmlParams(tools[0]) {
			if copied := bytes.Contains(p.schema, []byte(`"$defs"`)); copied != mayRefer(p.schema) {
				t.Errorf("%s: parameter %s copied the definitions: %v", c.name, p.name, copied)
			}
		}
	}
}

// TestXMLTextValuedBounded: reading whether a parameter is text visits at
// most maxSchemaVisits subschemas: anyOf definitions that refer three
// times each to the next stand for 3^depth branches (integers all, so
// none is text and nothing stops the reading early; 8 deep is 9,841
// subschemas, 21 deep ten billion). Past the bound the parameter is read
// as text.
func TestXMLTextValuedBounded(t *testing.T) {
	var defs []string
	for i := range 8 {
		next := fmt.Sprintf(`{"$ref":"#/$defs/L%d"}`, i+1)
		defs = append(defs, fmt.Sprintf(`"L%d":{"anyOf":[%s,%s,%s]}`, i, next, next, next))
	}
	defs = append(defs, `"L8":{"type":"integer"}`)
	schema := json.RawMessage(`{"$ref":"#/$defs/L0","$defs":{` + strings.Join(defs, ",") + `}}`)
	budget := maxSchemaVisits
	if !textValuedIn(schema, localDefs(schema), &budget) || budget < 0 {
		t.Errorf("read past its bound (%d visits left) or not as text", budget)
	}
	small := json.RawMessage(`{"$ref":"#/$defs/L7","$defs":{` + strings.Join(defs, ",") + `}}`)
	if textValued(small) {
		t.Error("an anyOf of integers within the bound is read as text")
	}
}
