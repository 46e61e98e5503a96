package api

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
)

const weatherTool = `{"type":"function","function":{"name":"get_weather","description":"Weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":20},"unit":{"enum":["c","f"]}},"required":["city","unit"],"additionalProperties":false}}}`

func TestStructuredOutputAndTools(t *testing.T) {
	ta := startAPIWith(t, true)
	model := realTinyModel(t)
	chat := func(extra string) map[string]any {
		t.Helper()
		resp, b := ta.post(t, "/v1/chat/completions", `{"model":"`+model+`","max_tokens":200,"temperature":1,"seed":3,"messages":[{"role":"user","content":"Weather in Oslo?"}]`+extra+`}`)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", extra, resp.StatusCode, b)
		}
		return mustJSON(t, string(b))
	}
	// response_format json_schema: the content is JSON of the schema.
	m := chat(`,"response_format":{"type":"json_schema","json_schema":{"name":"w","strict":true,"schema":{"type":"object","properties":{"ok":{"type":"boolean"},"n":{"type":"integer","minimum":1,"maximum":9}},"required":["ok","n"],"additionalProperties":false}}}`)
	var v struct {
		OK *bool `json:"ok"`
		N  *int  `json:"n"`
	}
	content := field(m, "choices", 0, "message", "content").(string)
	if err := json.Unmarshal([]byte(content), &v); err != nil || v.OK == nil || v.N == nil || *v.N < 1 || *v.N > 9 || field(m, "choices", 0, "finish_reason") != "stop" {
		t.Fatalf("json_schema content %q (%v)", content, err)
	}
	// json_object.
	m = chat(`,"response_format":{"type":"json_object"}`)
	var obj map[string]any
	if err := json.Unmarshal([]byte(field(m, "choices", 0, "message", "content").(string)), &obj); err != nil {
		t.Fatalf("json_object content %v: %v", field(m, "choices", 0, "message", "content"), err)
	}
	// Native regex.
	m = chat(`,"regex":"(yes|no), [0-9]{3}"`)
	if c := field(m, "choices", 0, "message", "content").(string); len(c) < 7 || (c[:3] != "yes" && c[:2] != "no") {
		t.Fatalf("regex content %q", c)
	}
	// Tools, required: a valid call of the tool, finish_reason tool_calls.
	m = chat(`,"tools":[` + weatherTool + `],"tool_choice":"required"`)
	calls := field(m, "choices", 0, "message", "tool_calls").([]any)
	if len(calls) == 0 || field(m, "choices", 0, "finish_reason") != "tool_calls" {
		t.Fatalf("required tool call: %v", m["choices"])
	}
	call := calls[0].(map[string]any)
	var args struct{ City, Unit string }
	if err := json.Unmarshal([]byte(field(call, "function", "arguments").(string)), &args); err != nil ||
		field(call, "function", "name") != "get_weather" || !strings.HasPrefix(call["id"].(string), "call_") || (args.Unit != "c" && args.Unit != "f") {
		t.Fatalf("call %v (%v)", call, err)
	}
	// Streamed calls: a delta naming the call, then its arguments.
	resp, b := ta.post(t, "/v1/chat/completions", `{"model":"`+model+`","stream":true,"max_tokens":200,"seed":3,"messages":[{"role":"user","content":"Weather?"}],"tools":[`+weatherTool+`],"tool_choice":{"type":"function","function":{"name":"get_weather"}}}`)
	var name, argText, finish string
	for _, e := range sseEvents(t, b) {
		if e == "[DONE]" {
			continue
		}
		ch := field(mustJSON(t, e), "choices", 0).(map[string]any)
		if f, ok := ch["finish_reason"].(string); ok {
			finish = f
		}
		if tc, ok := field(ch, "delta", "tool_calls").([]any); ok {
			if n, ok := field(tc[0], "function", "name").(string); ok {
				name += n
			}
			argText += field(tc[0], "function", "arguments").(string)
		}
		if c, _ := field(ch, "delta", "content").(string); c != "" {
			t.Fatalf("content %q leaked from a required call", c)
		}
	}
	if resp.StatusCode != 200 || name != "get_weather" || finish != "tool_calls" || !json.Valid([]byte(argText)) {
		t.Fatalf("streamed call: name %q args %q finish %q", name, argText, finish)
	}
	// A tool result in the history, and tools with auto.
	m = chat(`,"tools":[` + weatherTool + `],"tool_choice":"auto","messages":[{"role":"user","content":"Weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\",\"unit\":\"c\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"12 C"}]`)
	if r := field(m, "choices", 0, "finish_reason"); r != "stop" && r != "length" && r != "tool_calls" {
		t.Fatalf("auto after a tool result: %v", m)
	}
	// Ollama: format json (an object, as in Ollama) and schema, tools with
	// arguments as objects.
	for seed := range 4 {
		resp, b := ta.post(t, "/api/generate", `{"model":"`+model+`","stream":false,"format":"json","prompt":"Data:","options":{"num_predict":200,"seed":`+strconv.Itoa(seed)+`}}`)
		out := mustJSON(t, string(b))
		text, _ := out["response"].(string)
		var err error
		if out["done_reason"] == "stop" { // else cut by num_predict
			// Numbers as written: JSON allows exponents beyond float64.
			d := json.NewDecoder(strings.NewReader(text))
			d.UseNumber()
			err = d.Decode(&obj)
		}
		if resp.StatusCode != 200 || err != nil || !strings.HasPrefix(strings.TrimSpace(text), "{") {
			t.Fatalf("ollama format json (seed %d) is not an object: %d %s (%v)", seed, resp.StatusCode, b, err)
		}
	}
	// A schema: every reply is a prefix of a matching object, and a reply
	// that stopped is one. (An integer may run until num_predict: the
	// seeds make the test the same every time, and at least one of them
	// must finish.)
	finished := 0
	for seed := range 4 {
		resp, b := ta.post(t, "/api/chat", `{"model":"`+model+`","stream":false,"format":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false},"messages":[{"role":"user","content":"x"}],"options":{"num_predict":100,"seed":`+strconv.Itoa(seed)+`}}`)
		out := mustJSON(t, string(b))
		text, _ := field(out, "message", "content").(string)
		if resp.StatusCode != 200 || !strings.HasPrefix(strings.Join(strings.Fields(text), ""), `{"a":`) {
			t.Fatalf("ollama format schema (seed %d): %d %s", seed, resp.StatusCode, b)
		}
		if out["done_reason"] != "stop" {
			continue
		}
		obj = nil
		if err := json.Unmarshal([]byte(text), &obj); err != nil || obj["a"] == nil || len(obj) != 1 {
			t.Fatalf("ollama format schema (seed %d) stopped outside the schema: %s (%v)", seed, b, err)
		}
		finished++
	}
	if finished == 0 {
		t.Fatal("ollama format schema: no seed's reply finished within num_predict")
	}
	resp, b = ta.post(t, "/api/chat", `{"model":"`+model+`","stream":false,"tools":[`+weatherTool+`],"messages":[{"role":"user","content":"Weather?"}],"options":{"num_predict":200,"seed":4}}`)
	if resp.StatusCode != 200 {
		t.Fatalf("ollama tools: %d %s", resp.StatusCode, b)
	}
	if tc, ok := field(mustJSON(t, string(b)), "message", "tool_calls").([]any); ok {
		if _, isObj := field(tc[0], "function", "arguments").(map[string]any); !isObj {
			t.Fatalf("ollama tool call arguments are not an object: %s", b)
		}
	}
	// Refusals naming the problem.
	for _, c := range []struct{ extra, param, want string }{
		{`,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"array","uniqueItems":true}}}`, "response_format.json_schema.schema", "uniqueItems"},
		{`,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"nonsense"}}}`, "response_format.json_schema.schema", ""},
		{`,"response_format":{"type":"xml"}`, "response_format.type", "xml"},
		{`,"grammar":"root ::= ("`, "grammar", ""},
		{`,"regex":"(unclosed"`, "regex", ""},
		{`,"tools":[{"type":"function","function":{"description":"no name"}}]`, "tools", "no name"},
		{`,"tools":[` + weatherTool + `],"tool_choice":{"type":"function","function":{"name":"nope"}}`, "tool_choice", "nope"},
		{`,"tool_choice":"required"`, "tool_choice", "no tools"},
		{`,"functions":[{"name":"f"}]`, "functions", "tools"},
	} {
		resp, b := ta.post(t, "/v1/chat/completions", `{"model":"`+model+`","messages":[{"role":"user","content":"x"}]`+c.extra+`}`)
		e := mustJSON(t, string(b))
		if resp.StatusCode != 400 || field(e, "error", "param") != c.param || !strings.Contains(field(e, "error", "message").(string), c.want) {
			t.Errorf("%s: %d %s, want 400 param %s naming %q", c.extra, resp.StatusCode, b, c.param, c.want)
		}
	}
	if resp, b := ta.post(t, "/api/generate", `{"model":"`+model+`","prompt":"x","format":"yaml","stream":false}`); resp.StatusCode != 400 || !strings.Contains(string(b), "format") {
		t.Errorf("ollama format yaml: %d %s", resp.StatusCode, b)
	}
}

// TestStreamedCallsAfterText streams a Hermes-format model that writes a
// newline before its call: the newline streams as text (it could have
// begun a reply), and every API's stream must stay consistent with it.
// Anthropic's blocks and the Responses API's output items each start once,
// stop once, at distinct indices; OpenAI's chat stream carries the call.
func TestStreamedCallsAfterText(t *testing.T) {
	ta := startAPI(t)
	const tool = `{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`
	const flat = `{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`
	const anthropicTool = `{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`

	// Anthropic: block indices 0..n-1, each started and stopped once, the
	// tool_use's input deltas inside its own block.
	resp, b := ta.post(t, "/v1/messages", `{"model":"hermes","max_tokens":50,"stream":true,"tools":[`+anthropicTool+`],"messages":[{"role":"user","content":"Weather?"}]}`)
	names, data := sseNamed(t, b)
	started, stopped := map[float64]string{}, map[float64]bool{}
	for i, n := range names {
		idx, _ := data[i]["index"].(float64)
		switch n {
		case "content_block_start":
			if _, dup := started[idx]; dup || idx != float64(len(started)) {
				t.Fatalf("content_block_start index %v after %v: %v", idx, started, names)
			}
			started[idx] = field(data[i], "content_block", "type").(string)
		case "content_block_delta":
			want := map[string]string{"text_delta": "text", "input_json_delta": "tool_use"}[field(data[i], "delta", "type").(string)]
			if started[idx] != want || stopped[idx] {
				t.Fatalf("a %v delta in block %v (%q, stopped %v)", field(data[i], "delta", "type"), idx, started[idx], stopped[idx])
			}
		case "content_block_stop":
			if _, ok := started[idx]; !ok || stopped[idx] {
				t.Fatalf("content_block_stop %v: started %v stopped %v", idx, started, stopped)
			}
			stopped[idx] = true
		}
	}
	if resp.StatusCode != 200 || len(stopped) != len(started) || started[float64(len(started)-1)] != "tool_use" ||
		field(data[len(data)-2], "delta", "stop_reason") != "tool_use" {
		t.Fatalf("anthropic stream: %d blocks %v stopped %v: %v", resp.StatusCode, started, stopped, names)
	}

	// Responses: output items added and done once each, at distinct
	// indices, and the final response lists the same items.
	resp, b = ta.post(t, "/v1/responses", `{"model":"hermes","stream":true,"tools":[`+flat+`],"input":"Weather?"}`)
	names, data = sseNamed(t, b)
	var added, done []string
	for i, n := range names {
		switch n {
		case "response.output_item.added", "response.output_item.done":
			idx := int(data[i]["output_index"].(float64))
			id := field(data[i], "item", "id").(string)
			list := &added
			if n == "response.output_item.done" {
				list = &done
			}
			if idx != len(*list) {
				t.Fatalf("%s at output_index %d after %v: %v", n, idx, *list, names)
			}
			*list = append(*list, id)
		case "response.output_text.delta", "response.function_call_arguments.delta":
			if idx := int(data[i]["output_index"].(float64)); idx >= len(added) || added[idx] != data[i]["item_id"] {
				t.Fatalf("%s for item %v at %d; items %v", n, data[i]["item_id"], idx, added)
			}
		}
	}
	final := data[len(data)-1]
	var ids []string
	for _, it := range field(final, "response", "output").([]any) {
		ids = append(ids, it.(map[string]any)["id"].(string))
	}
	if resp.StatusCode != 200 || names[len(names)-1] != "response.completed" || strings.Join(added, ",") != strings.Join(done, ",") ||
		strings.Join(ids, ",") != strings.Join(added, ",") || field(final, "response", "output", len(ids)-1, "type") != "function_call" {
		t.Fatalf("responses stream: added %v done %v final %v: %v", added, done, ids, names)
	}

	// OpenAI chat: the call streams with finish_reason tool_calls.
	resp, b = ta.post(t, "/v1/chat/completions", `{"model":"hermes","stream":true,"tools":[`+tool+`],"messages":[{"role":"user","content":"Weather?"}]}`)
	var name, args, finish string
	for _, e := range sseEvents(t, b) {
		if e == "[DONE]" {
			continue
		}
		ch := field(mustJSON(t, e), "choices", 0).(map[string]any)
		if f, ok := ch["finish_reason"].(string); ok {
			finish = f
		}
		if tc, ok := field(ch, "delta", "tool_calls").([]any); ok {
			if n, ok := field(tc[0], "function", "name").(string); ok {
				name += n
			}
			args += field(tc[0], "function", "arguments").(string)
		}
	}
	if resp.StatusCode != 200 || name != "get_weather" || args != `{"city": "Oslo"}` || finish != "tool_calls" {
		t.Fatalf("chat stream: name %q args %q finish %q", name, args, finish)
	}
}

// TestLogprobsUnderConstraint: top_logprobs list only tokens the
// constraint allows (forced tokens have one alternative or none), never
// -Inf, which JSON cannot carry (the response used to be an empty 200).
func TestLogprobsUnderConstraint(t *testing.T) {
	ta := startAPIWith(t, true)
	model := realTinyModel(t)
	for _, extra := range []string{
		`"response_format":{"type":"json_object"}`,
		`"tools":[` + weatherTool + `],"tool_choice":"required"`,
		`"regex":"(yes|no)"`,
	} {
		resp, b := ta.post(t, "/v1/chat/completions", `{"model":"`+model+`","max_tokens":8,"seed":1,"logprobs":true,"top_logprobs":5,"messages":[{"role":"user","content":"x"}],`+extra+`}`)
		if resp.StatusCode != 200 || !json.Valid(b) {
			t.Fatalf("%s: %d %q", extra, resp.StatusCode, b)
		}
		var r ipc.ChatCompletionResponse
		json.Unmarshal(b, &r)
		lp := r.Choices[0].Logprobs
		if lp == nil || len(lp.Content) == 0 {
			t.Fatalf("%s: no logprobs: %s", extra, b)
		}
		for _, tok := range lp.Content {
			if len(tok.TopLogprobs) > 5 || tok.Logprob > 0 || tok.Logprob < -1000 {
				t.Fatalf("%s: token %+v", extra, tok)
			}
			for _, alt := range tok.TopLogprobs {
				if alt.Logprob > 0 || alt.Logprob < -1000 {
					t.Fatalf("%s: alternative %+v of %q", extra, alt, tok.Token)
				}
			}
		}
		// The first token of a JSON object is forced: "{" and nothing else.
		if strings.Contains(extra, "json_object") && (lp.Content[0].Token != "{" || len(lp.Content[0].TopLogprobs) != 1) {
			t.Fatalf("first token %+v", lp.Content[0])
		}
	}
}

// TestCompletionsConstraint: /v1/completions honours the native grammar
// and regex fields (they were decoded and silently ignored), per choice.
func TestCompletionsConstraint(t *testing.T) {
	ta := startAPIWith(t, true)
	model := realTinyModel(t)
	re := regexp.MustCompile(`^(yes|no), [0-9]{3}$`)
	for _, c := range []string{`"regex":"(yes|no), [0-9]{3}"`, `"grammar":"root ::= (\"yes\" | \"no\") \", \" [0-9] [0-9] [0-9]"`} {
		resp, b := ta.post(t, "/v1/completions", `{"model":"`+model+`","prompt":"Answer:","max_tokens":30,"n":2,"seed":1,`+c+`}`)
		var r ipc.CompletionResponse
		if err := json.Unmarshal(b, &r); resp.StatusCode != 200 || err != nil || len(r.Choices) != 2 {
			t.Fatalf("%s: %d %s", c, resp.StatusCode, b)
		}
		for _, ch := range r.Choices {
			if !re.MatchString(ch.Text) || *ch.FinishReason != "stop" {
				t.Fatalf("%s: choice %q (%s)", c, ch.Text, *ch.FinishReason)
			}
		}
	}
	for _, c := range []struct{ extra, param string }{
		{`"grammar":"root ::= ("`, "grammar"},
		{`"regex":"(unclosed"`, "regex"},
		{`"regex":"a","grammar":"root ::= \"a\""`, "regex"},
	} {
		resp, b := ta.post(t, "/v1/completions", `{"model":"`+model+`","prompt":"x",`+c.extra+`}`)
		if resp.StatusCode != 400 || field(mustJSON(t, string(b)), "error", "param") != c.param {
			t.Errorf("%s: %d %s, want 400 naming %s", c.extra, resp.StatusCode, b, c.param)
		}
	}
}

// TestToolParametersErrorNamesTool: a tool whose parameters the grammar
// cannot enforce is refused naming the tool and the place within its
// parameters, in every API; the message named a place in the call schema
// the daemon wraps around them ("#/anyOf/0/properties/tool_calls/...").
func TestToolParametersErrorNamesTool(t *testing.T) {
	ta := startAPIWith(t, true)
	model := realTinyModel(t)
	params := `{"type":"object","properties":{"city":{"type":"string"},"n":{"type":"integer","multipleOf":3}}}`
	user := `"messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"` + model + `",` + user + `,"tools":[{"type":"function","function":{"name":"get_weather","parameters":` + params + `}}]}`},
		{"/api/chat", `{"model":"` + model + `","stream":false,` + user + `,"tools":[{"type":"function","function":{"name":"get_weather","parameters":` + params + `}}]}`},
		{"/v1/messages", `{"model":"` + model + `","max_tokens":9,` + user + `,"tools":[{"name":"get_weather","input_schema":` + params + `}]}`},
		{"/v1/responses", `{"model":"` + model + `","input":"hi","tools":[{"type":"function","name":"get_weather","parameters":` + params + `}]}`},
	} {
		resp, b := ta.post(t, c.path, c.body)
		msg := string(b)
		if resp.StatusCode != 400 || !strings.Contains(msg, `multipleOf`) || !strings.Contains(msg, `get_weather`) ||
			!strings.Contains(msg, `at #/properties/n`) || strings.Contains(msg, "tool_calls") {
			t.Errorf("%s: %d %s, want 400 naming get_weather and #/properties/n", c.path, resp.StatusCode, b)
		}
	}
}
