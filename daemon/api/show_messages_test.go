package api

import (
	"encoding/json"
	"testing"
)

// TestShowMessages: /api/show returns a created model's MESSAGE turns in
// "messages", as Ollama's show does (clients read them there to show the
// conversation a model starts with); they were only in the Modelfile text.
func TestShowMessages(t *testing.T) {
	ta := startAPI(t)
	for _, c := range []struct {
		name, create string
		want         []map[string]any
	}{
		{"modelfile", `{"model":"m1","modelfile":"FROM fake\nMESSAGE user Hi there\nMESSAGE assistant \"\"\"Ahoy!\nMatey.\"\"\"","stream":false}`,
			[]map[string]any{{"role": "user", "content": "Hi there"}, {"role": "assistant", "content": "Ahoy!\nMatey."}}},
		{"messages field", `{"model":"m2","from":"fake","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}],"stream":false}`,
			[]map[string]any{{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}}},
		{"none", `{"model":"m3","from":"fake","stream":false}`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var req struct{ Model string }
			json.Unmarshal([]byte(c.create), &req)
			ta.postOK(t, "/api/create", c.create)
			got, _ := ta.postOK(t, "/api/show", `{"model":"`+req.Model+`"}`)["messages"].([]any)
			if len(got) != len(c.want) {
				t.Fatalf("messages %v, want %v", got, c.want)
			}
			for i, w := range c.want {
				m, _ := got[i].(map[string]any)
				if m["role"] != w["role"] || m["content"] != w["content"] {
					t.Errorf("messages[%d] = %v, want %v", i, m, w)
				}
			}
		})
	}
}
