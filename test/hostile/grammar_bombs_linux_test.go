package hostile

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestGrammarBombs sends constraints built to explode (nested counted
// repetitions, deep nesting, thousands of rules or properties, huge
// counts) to a daemon whose address space is capped at 6 GiB: each one is
// answered (200, or a 400 naming the field), and the daemon and a plain
// request beside it stay fine. ((a|b){1,1000}){1,1000} once made the
// daemon spell a 24 GB cache key for one lexeme state and the kernel kill
// it.
func TestGrammarBombs(t *testing.T) {
	model := testpath.Shared(t, "models/ruvllm-test-llama-19m-q8_0.gguf")
	p := start(t, startOptions{model: model})
	limit := unix.Rlimit{Cur: 6 << 30, Max: 6 << 30}
	if err := unix.Prlimit(p.cmd.Process.Pid, unix.RLIMIT_AS, &limit, nil); err != nil {
		t.Skipf("cannot cap the daemon's memory: %v", err)
	}
	schema := func(s string) string {
		return `"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":` + s + `}}`
	}
	var props, req []string
	for i := range 3000 {
		props = append(props, fmt.Sprintf(`"k%d":{"type":"string"}`, i))
		req = append(req, fmt.Sprintf(`"k%d"`, i))
	}
	rules := []string{"root ::= r0"}
	for i := range 20000 {
		rules = append(rules, fmt.Sprintf(`r%d ::= "x" r%d | "y"`, i, i+1))
	}
	rules = append(rules, `r20000 ::= "z"`)
	gbnf, _ := json.Marshal(strings.Join(rules, "\n"))
	for _, tc := range []struct{ name, extra, field string }{
		{"nested counts", `"regex":"((a|b){1,1000}){1,1000}"`, ""},
		{"nested counts in a pattern", schema(`{"type":"string","pattern":"^((a|b){1,500}){1,500}$"}`), ""},
		{"alternation", `"regex":"(a|aa|aaa|aaaa|aaaaa)*b(a|aa|aaa){50}"`, ""},
		{"huge count", `"regex":"a{999999999}"`, "regex"},
		{"long class run", `"regex":"[a-z0-9]{0,100000}"`, ""},
		{"deep groups", `"grammar":"root ::= ` + strings.Repeat("(", 2000) + `\"a\"` + strings.Repeat(")", 2000) + `"`, "grammar"},
		{"many rules", `"grammar":` + string(gbnf), ""},
		{"left recursion", `"grammar":"root ::= root \"a\" | \"b\""`, ""},
		{"huge minLength", schema(`{"type":"string","minLength":1000000000}`), ""},
		{"deep arrays", schema(strings.Repeat(`{"type":"array","items":`, 400) + `{"type":"null"}` + strings.Repeat("}", 400)), ""},
		{"ref cycle", schema(`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}}`), ""},
		{"many required properties", schema(`{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":[` + strings.Join(req, ",") + `]}`), ""},
	} {
		for range 2 { // the second time from the compiled-constraint cache
			r := p.post(t, "/v1/chat/completions", fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"x"}],"max_tokens":8,"temperature":0,%s}`, p.model, tc.extra))
			if tc.field != "" {
				want4xx(t, tc.name, r, tc.field)
			} else if r.status != 200 && (r.status < 400 || r.status >= 500) {
				t.Errorf("%s: %d %s", tc.name, r.status, r.body)
			}
			p.alive(t)
		}
		if r := p.post(t, "/v1/chat/completions", fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}],"max_tokens":4}`, p.model)); r.status != 200 {
			t.Fatalf("after %s, a plain request: %d %s", tc.name, r.status, r.body)
		}
	}
}
