package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// sseNamed splits a typed SSE body into (event, data) pairs.
func sseNamed(t *testing.T, body []byte) (names []string, data []map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	name := ""
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "event: "):
			name = strings.TrimPrefix(l, "event: ")
		case strings.HasPrefix(l, "data: "):
			names = append(names, name)
			data = append(data, mustJSON(t, strings.TrimPrefix(l, "data: ")))
		}
	}
	return names, data
}

func TestResponsesAPI(t *testing.T) {
	ta := startAPIWith(t, true)
	model := realTinyModel(t)
	instr := strings.Repeat("You are a careful assistant who answers in few words. ", 4)
	resp, b := ta.post(t, "/v1/responses", `{"model":"`+model+`","instructions":"`+instr+`","input":"Name a colour.","max_output_tokens":6,"temperature":0}`)
	if resp.StatusCode != 200 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	first := mustJSON(t, string(b))
	if first["object"] != "response" || !strings.HasPrefix(first["id"].(string), "resp_") || field(first, "output", 0, "type") != "message" ||
		field(first, "output", 0, "content", 0, "type") != "output_text" || field(first, "usage", "output_tokens").(float64) == 0 {
		t.Fatalf("response %s", b)
	}
	if s := first["status"]; s != "completed" && s != "incomplete" {
		t.Fatalf("status %v", s)
	}
	// A chained response reuses the history from the prefix cache.
	resp, b = ta.post(t, "/v1/responses", `{"model":"`+model+`","instructions":"`+instr+`","previous_response_id":"`+first["id"].(string)+`","input":[{"role":"user","content":[{"type":"input_text","text":"And another?"}]}],"max_output_tokens":4}`)
	if resp.StatusCode != 200 {
		t.Fatalf("chained: %d %s", resp.StatusCode, b)
	}
	second := mustJSON(t, string(b))
	cached := field(second, "usage", "input_tokens_details", "cached_tokens").(float64)
	input := field(second, "usage", "input_tokens").(float64)
	if cached == 0 || cached >= input {
		t.Fatalf("chained response cached %v of %v input tokens", cached, input)
	}
	// get, input_items, delete.
	id := second["id"].(string)
	if status, b := ta.get(t, "/v1/responses/"+id); status != 200 || field(mustJSON(t, string(b)), "id") != id {
		t.Fatalf("get: %d %s", status, b)
	}
	if status, b := ta.get(t, "/v1/responses/"+id+"/input_items"); status != 200 || field(mustJSON(t, string(b)), "data", 0, "content", 0, "text") != "And another?" {
		t.Fatalf("input_items: %d %s", status, b)
	}
	req, _ := http.NewRequest("DELETE", "http://ruvllm/v1/responses/"+id, nil)
	dr, err := ta.http.Do(req)
	if err != nil || dr.StatusCode != 200 {
		t.Fatalf("delete: %v %v", dr, err)
	}
	dr.Body.Close()
	if status, _ := ta.get(t, "/v1/responses/"+id); status != 404 {
		t.Fatalf("get after delete: %d", status)
	}
	// Streaming: OpenAI's event order.
	resp, b = ta.post(t, "/v1/responses", `{"model":"`+model+`","input":"Hi","stream":true,"max_output_tokens":5,"store":false}`)
	names, data := sseNamed(t, b)
	if resp.StatusCode != 200 || len(names) < 7 {
		t.Fatalf("stream: %d %s", resp.StatusCode, b)
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
	for i, w := range want {
		if names[i] != w {
			t.Fatalf("event %d is %s, want %s (%v)", i, names[i], w, names)
		}
	}
	tailWant := []string{"response.output_text.done", "response.content_part.done", "response.output_item.done"}
	for i, w := range tailWant {
		if got := names[len(names)-4+i]; got != w {
			t.Fatalf("event %d from the end is %s, want %s (%v)", 4-i, got, w, names)
		}
	}
	if last := names[len(names)-1]; last != "response.completed" && last != "response.incomplete" {
		t.Fatalf("last event %s", last)
	}
	var deltas strings.Builder
	for i, n := range names {
		if int(data[i]["sequence_number"].(float64)) != i {
			t.Fatalf("sequence_number %v at %d", data[i]["sequence_number"], i)
		}
		if n == "response.output_text.delta" {
			deltas.WriteString(data[i]["delta"].(string))
		}
	}
	if done := data[len(names)-4]["text"]; done != deltas.String() {
		t.Fatalf("output_text.done %q, deltas %q", done, deltas.String())
	}
	// store:false responses cannot be continued.
	respID := field(data[len(data)-1], "response", "id").(string)
	if r, b := ta.post(t, "/v1/responses", `{"model":"`+model+`","input":"x","previous_response_id":"`+respID+`"}`); r.StatusCode != 404 || !strings.Contains(string(b), "previous_response_id") {
		t.Fatalf("continuing an unstored response: %d %s", r.StatusCode, b)
	}
	for _, c := range []struct{ body, param string }{
		{`{"model":"` + model + `","input":"x","tools":[{"type":"function","description":"nameless"}]}`, "tools"},
		{`{"model":"` + model + `","input":"x","text":{"format":{"type":"json_schema"}}}`, "text.format.schema"},
		{`{"model":"` + model + `","input":"x","text":{"format":{"type":"xml"}}}`, "text.format.type"},
		{`{"model":"` + model + `","input":[{"type":"function_call_output","output":"x"}]}`, "input[0].call_id"},
		{`{"model":"` + model + `","input":[{"type":"item_reference","id":"x"}]}`, "input[0].type"},
		{`{"model":"` + model + `","input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]}`, "input[0].content[0]"},
		{`{"model":"` + model + `","input":""}`, "input"},
		{`{"model":"` + model + `","input":"x","max_output_tokens":0}`, "max_output_tokens"},
	} {
		r, b := ta.post(t, "/v1/responses", c.body)
		if r.StatusCode != 400 || field(mustJSON(t, string(b)), "error", "param") != c.param {
			t.Errorf("%s: %d %s, want 400 with param %s", c.body, r.StatusCode, b, c.param)
		}
	}
}

func TestAnthropicMessages(t *testing.T) {
	ta := startAPIWith(t, true)
	model := realTinyModel(t)
	resp, b := ta.post(t, "/v1/messages", `{"model":"`+model+`","max_tokens":5,"system":"Be brief.","messages":[{"role":"user","content":"Hi"}],"temperature":0}`)
	if resp.StatusCode != 200 {
		t.Fatalf("messages: %d %s", resp.StatusCode, b)
	}
	m := mustJSON(t, string(b))
	if m["type"] != "message" || m["role"] != "assistant" || field(m, "content", 0, "type") != "text" ||
		(m["stop_reason"] != "end_turn" && m["stop_reason"] != "max_tokens") || field(m, "usage", "input_tokens").(float64) == 0 {
		t.Fatalf("message %s", b)
	}
	// Streaming events, in Anthropic's order.
	resp, b = ta.post(t, "/v1/messages", `{"model":"`+model+`","max_tokens":5,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`)
	names, data := sseNamed(t, b)
	if resp.StatusCode != 200 || len(names) < 6 || names[0] != "message_start" || names[1] != "content_block_start" ||
		names[len(names)-3] != "content_block_stop" || names[len(names)-2] != "message_delta" || names[len(names)-1] != "message_stop" {
		t.Fatalf("stream events %v", names)
	}
	if field(data[len(data)-2], "usage", "output_tokens").(float64) == 0 {
		t.Fatalf("message_delta %v", data[len(data)-2])
	}
	// count_tokens is what the model reads.
	resp, b = ta.post(t, "/v1/messages/count_tokens", `{"model":"`+model+`","system":"Be brief.","messages":[{"role":"user","content":"Hi"}]}`)
	if prompt := field(m, "usage", "input_tokens").(float64) + field(m, "usage", "cache_read_input_tokens").(float64); resp.StatusCode != 200 || field(mustJSON(t, string(b)), "input_tokens") != prompt {
		t.Fatalf("count_tokens %d %s (message used %v)", resp.StatusCode, b, prompt)
	}
	// Errors in Anthropic's shape.
	for _, c := range []struct {
		body, typ, want string
		status          int
	}{
		{`{"model":"` + model + `","messages":[{"role":"user","content":"x"}]}`, "invalid_request_error", "max_tokens", 400},
		{`{"model":"` + model + `","max_tokens":3,"messages":[{"role":"system","content":"x"}]}`, "invalid_request_error", "role", 400},
		{`{"model":"` + model + `","max_tokens":3,"temperature":1.5,"messages":[{"role":"user","content":"x"}]}`, "invalid_request_error", "temperature", 400},
		{`{"model":"` + model + `","max_tokens":3,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]}`, "invalid_request_error", "image", 400},
		{`{"model":"` + model + `","max_tokens":3,"tools":[{"type":"web_search_20250305","name":"web"}],"messages":[{"role":"user","content":"x"}]}`, "invalid_request_error", "tools[0].type", 400},
		{`{"model":"` + model + `","max_tokens":3,"tools":[{"name":"f"}],"tool_choice":{"type":"tool","name":"g"},"messages":[{"role":"user","content":"x"}]}`, "invalid_request_error", "g", 400},
		{`{"model":"nope","max_tokens":3,"messages":[{"role":"user","content":"x"}]}`, "not_found_error", "nope", 404},
		{`{"model":"` + model + `","max_tokens":3,"output_config":{"effort":"high"},"messages":[{"role":"user","content":"x"}]}`, "invalid_request_error", "output_config.effort", 400},
		{`{"model":"` + model + `","max_tokens":3,"output_config":{"format":{"type":"json_schema","schema":{"type":"array","uniqueItems":true}}},"messages":[{"role":"user","content":"x"}]}`, "invalid_request_error", "uniqueItems", 400},
		{`{"model":"` + model + `","max_tokens":3,"output_config":{"format":{"type":"xml"}},"messages":[{"role":"user","content":"x"}]}`, "invalid_request_error", "output_config.format.type", 400},
	} {
		r, b := ta.post(t, "/v1/messages", c.body)
		e := mustJSON(t, string(b))
		if r.StatusCode != c.status || e["type"] != "error" || field(e, "error", "type") != c.typ || !strings.Contains(field(e, "error", "message").(string), c.want) {
			t.Errorf("%s: %d %s", c.body, r.StatusCode, b)
		}
	}
}

// TestAnthropicStructuredOutput: output_config.format (and the beta's
// output_format) holds the reply to a JSON Schema, streamed or not.
func TestAnthropicStructuredOutput(t *testing.T) {
	ta := startAPIWith(t, true)
	model := realTinyModel(t)
	const schema = `{"type":"object","properties":{"ok":{"type":"boolean"},"n":{"type":"integer","minimum":1,"maximum":9}},"required":["ok","n"],"additionalProperties":false}`
	for _, c := range []struct{ name, field string }{
		{"output_config", `"output_config":{"format":{"type":"json_schema","schema":` + schema + `}}`},
		{"output_format", `"output_format":{"type":"json_schema","schema":` + schema + `}`},
		{"streamed", `"stream":true,"output_config":{"format":{"type":"json_schema","schema":` + schema + `}}`},
	} {
		resp, b := ta.post(t, "/v1/messages", `{"model":"`+model+`","max_tokens":100,`+c.field+`,"messages":[{"role":"user","content":"x"}]}`)
		text, stop := "", ""
		if strings.Contains(c.field, `"stream":true`) {
			names, data := sseNamed(t, b)
			for i, n := range names {
				if n == "content_block_delta" {
					text += field(data[i], "delta", "text").(string)
				}
				if n == "message_delta" {
					stop, _ = field(data[i], "delta", "stop_reason").(string)
				}
			}
		} else {
			m := mustJSON(t, string(b))
			text, _ = field(m, "content", 0, "text").(string)
			stop, _ = m["stop_reason"].(string)
		}
		var v struct {
			OK *bool `json:"ok"`
			N  *int  `json:"n"`
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); resp.StatusCode != 200 || err != nil || v.OK == nil || v.N == nil || *v.N < 1 || *v.N > 9 || stop != "end_turn" {
			t.Fatalf("%s: %d %q stop %q (%v): %s", c.name, resp.StatusCode, text, stop, err, b)
		}
	}
}

func TestNChoices(t *testing.T) {
	ta := startAPIWith(t, true)
	model := realTinyModel(t)
	resp, b := ta.post(t, "/v1/chat/completions", `{"model":"`+model+`","n":3,"max_tokens":4,"temperature":1,"seed":5,"logprobs":true,"messages":[{"role":"user","content":"Hi"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("n=3: %d %s", resp.StatusCode, b)
	}
	m := mustJSON(t, string(b))
	choices := m["choices"].([]any)
	if len(choices) != 3 {
		t.Fatalf("%d choices", len(choices))
	}
	completion := 0.0
	for i, c := range choices {
		c := c.(map[string]any)
		if c["index"] != float64(i) || field(c, "message", "role") != "assistant" || field(c, "logprobs", "content") == nil {
			t.Fatalf("choice %d: %v", i, c)
		}
		completion += float64(len(field(c, "logprobs", "content").([]any)))
	}
	if field(m, "usage", "completion_tokens") != completion {
		t.Fatalf("usage %v for %v completion tokens", m["usage"], completion)
	}
	// Streamed: chunks of every index, a finish for each, then [DONE].
	resp, b = ta.post(t, "/v1/chat/completions", `{"model":"`+model+`","n":2,"max_tokens":3,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`)
	events := sseEvents(t, b)
	finished := map[float64]bool{}
	roles := map[float64]bool{}
	for _, e := range events[:len(events)-1] {
		ch := field(mustJSON(t, e), "choices", 0).(map[string]any)
		if field(ch, "delta", "role") == "assistant" {
			roles[ch["index"].(float64)] = true
		}
		if ch["finish_reason"] != nil {
			finished[ch["index"].(float64)] = true
		}
	}
	if resp.StatusCode != 200 || events[len(events)-1] != "[DONE]" || len(finished) != 2 || len(roles) != 2 {
		t.Fatalf("stream of 2 choices: roles %v finished %v (%d events)", roles, finished, len(events))
	}
	// Completions.
	resp, b = ta.post(t, "/v1/completions", `{"model":"`+model+`","n":2,"max_tokens":3,"prompt":"The"}`)
	if m := mustJSON(t, string(b)); resp.StatusCode != 200 || len(m["choices"].([]any)) != 2 || field(m, "choices", 1, "index") != 1.0 {
		t.Fatalf("completions n=2: %d %s", resp.StatusCode, b)
	}
	if r, b := ta.post(t, "/v1/completions", `{"model":"`+model+`","n":2,"echo":true,"prompt":"The"}`); r.StatusCode != 400 || !strings.Contains(string(b), "echo") {
		t.Fatalf("echo with n=2: %d %s", r.StatusCode, b)
	}
}

// TestResponsesTools (and TestAnthropicTools) ask for one call, greedily:
// neither API has a seed, and sampled or parallel calls of the untrained
// test model sometimes ran to the token limit (about 1 run in 15).
func TestResponsesTools(t *testing.T) {
	ta := startAPIWith(t, true)
	model := realTinyModel(t)
	tool := `{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":12}},"required":["city"],"additionalProperties":false}}`
	resp, b := ta.post(t, "/v1/responses", `{"model":"`+model+`","input":"Weather in Oslo?","tools":[`+tool+`],"tool_choice":"required","parallel_tool_calls":false,"temperature":0,"max_output_tokens":200}`)
	if resp.StatusCode != 200 {
		t.Fatalf("required: %d %s", resp.StatusCode, b)
	}
	m := mustJSON(t, string(b))
	var call map[string]any
	for _, it := range m["output"].([]any) {
		if it.(map[string]any)["type"] == "function_call" {
			call = it.(map[string]any)
		}
	}
	if call == nil || call["name"] != "get_weather" || !json.Valid([]byte(call["arguments"].(string))) || call["call_id"] == "" {
		t.Fatalf("no function_call item: %s", b)
	}
	// The call's output continues the response.
	resp, b = ta.post(t, "/v1/responses", `{"model":"`+model+`","previous_response_id":"`+m["id"].(string)+`","tools":[`+tool+`],"max_output_tokens":20,"input":[{"type":"function_call_output","call_id":"`+call["call_id"].(string)+`","output":"12 C"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("function_call_output: %d %s", resp.StatusCode, b)
	}
	// Structured text.
	resp, b = ta.post(t, "/v1/responses", `{"model":"`+model+`","input":"x","max_output_tokens":100,"text":{"format":{"type":"json_schema","name":"o","strict":true,"schema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}}}}`)
	text := field(mustJSON(t, string(b)), "output", 0, "content", 0, "text")
	var v struct{ OK *bool }
	if resp.StatusCode != 200 || json.Unmarshal([]byte(text.(string)), &v) != nil || v.OK == nil {
		t.Fatalf("text.format json_schema: %d %s", resp.StatusCode, b)
	}
	// Streaming a call: function_call_arguments events.
	resp, b = ta.post(t, "/v1/responses", `{"model":"`+model+`","input":"Weather?","stream":true,"tools":[`+tool+`],"tool_choice":"required","parallel_tool_calls":false,"temperature":0,"max_output_tokens":200}`)
	names, data := sseNamed(t, b)
	var args string
	for i, n := range names {
		if n == "response.function_call_arguments.delta" {
			args += data[i]["delta"].(string)
		}
	}
	if resp.StatusCode != 200 || !json.Valid([]byte(args)) || names[len(names)-1] != "response.completed" {
		t.Fatalf("streamed call: %v %q", names, args)
	}
	// The announced call carries arguments "" (OpenAI's SDK appends the
	// deltas to it: without it the snapshot reads "undefined{...").
	for i, n := range names {
		if n == "response.output_item.added" && field(data[i], "item", "type") == "function_call" {
			if a, ok := field(data[i], "item", "arguments").(string); !ok || a != "" {
				t.Fatalf("output_item.added function_call without arguments \"\": %v", data[i])
			}
			for _, k := range []string{"call_id", "name"} {
				if v, _ := field(data[i], "item", k).(string); v == "" {
					t.Fatalf("output_item.added function_call without %s: %v", k, data[i])
				}
			}
		}
	}
	// Output text parts always have annotations, as OpenAI's types require.
	resp, b = ta.post(t, "/v1/responses", `{"model":"`+model+`","input":"Hi","max_output_tokens":2}`)
	if a, ok := field(mustJSON(t, string(b)), "output", 0, "content", 0, "annotations").([]any); resp.StatusCode != 200 || !ok || len(a) != 0 {
		t.Fatalf("output_text without annotations: %d %s", resp.StatusCode, b)
	}
}

func TestAnthropicTools(t *testing.T) {
	ta := startAPIWith(t, true)
	model := realTinyModel(t)
	tool := `{"name":"get_weather","description":"Weather","input_schema":{"type":"object","properties":{"city":{"type":"string","maxLength":12}},"required":["city"],"additionalProperties":false}}`
	resp, b := ta.post(t, "/v1/messages", `{"model":"`+model+`","max_tokens":200,"temperature":0,"tools":[`+tool+`],"tool_choice":{"type":"any","disable_parallel_tool_use":true},"messages":[{"role":"user","content":"Weather in Oslo?"}]}`)
	m := mustJSON(t, string(b))
	if resp.StatusCode != 200 || m["stop_reason"] != "tool_use" {
		t.Fatalf("tool_choice any: %d %s", resp.StatusCode, b)
	}
	var use map[string]any
	for _, c := range m["content"].([]any) {
		if c.(map[string]any)["type"] == "tool_use" {
			use = c.(map[string]any)
		}
	}
	if use == nil || use["name"] != "get_weather" || field(use, "input", "city") == nil || !strings.HasPrefix(use["id"].(string), "toolu_") {
		t.Fatalf("tool_use block: %s", b)
	}
	// The result goes back as a tool_result block.
	follow := `{"model":"` + model + `","max_tokens":8,"tools":[` + tool + `],"messages":[{"role":"user","content":"Weather in Oslo?"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"` + use["id"].(string) + `","name":"get_weather","input":{"city":"Oslo"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + use["id"].(string) + `","content":"12 C"}]}]}`
	if resp, b := ta.post(t, "/v1/messages", follow); resp.StatusCode != 200 {
		t.Fatalf("tool_result: %d %s", resp.StatusCode, b)
	}
	// Streamed: a tool_use block with input_json_delta.
	resp, b = ta.post(t, "/v1/messages", `{"model":"`+model+`","max_tokens":200,"temperature":0,"stream":true,"tools":[`+tool+`],"tool_choice":{"type":"tool","name":"get_weather","disable_parallel_tool_use":true},"messages":[{"role":"user","content":"Weather?"}]}`)
	names, data := sseNamed(t, b)
	var partial string
	sawToolStart := false
	for i, n := range names {
		if n == "content_block_start" && field(data[i], "content_block", "type") == "tool_use" {
			sawToolStart = true
		}
		if n == "content_block_delta" && field(data[i], "delta", "type") == "input_json_delta" {
			partial += field(data[i], "delta", "partial_json").(string)
		}
	}
	if resp.StatusCode != 200 || !sawToolStart || !json.Valid([]byte(partial)) || names[len(names)-1] != "message_stop" {
		t.Fatalf("streamed tool_use: %v %q", names, partial)
	}
}
