package ipc

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestAdapterRefsExplicitZeroScale: an adapter sent with "scale": 0 is
// not applied (the app's scale slider at 0, llama-server's "lora" at 0);
// it decoded as AdapterRef{Scale: 0}, which the daemon applies at scale
// 1, in full. A scale left out, or null, still means 1.
func TestAdapterRefsExplicitZeroScale(t *testing.T) {
	for _, c := range []struct {
		in   string
		want AdapterRefs
	}{
		{`[{"name":"tone","scale":0}]`, AdapterRefs{}},
		{`[{"name":"tone","scale":0.0},{"name":"style","scale":0.5}]`, AdapterRefs{{Name: "style", Scale: 0.5}}},
		{`[{"name":"tone"}]`, AdapterRefs{{Name: "tone"}}},
		{`[{"name":"tone","scale":null}]`, AdapterRefs{{Name: "tone"}}},
		{`[{"name":"tone","scale":-0.25}]`, AdapterRefs{{Name: "tone", Scale: -0.25}}},
		{`[{"name":"","scale":0}]`, AdapterRefs{{Name: ""}}}, // kept, for the daemon to refuse by name
	} {
		var r AdapterRefs
		if err := json.Unmarshal([]byte(c.in), &r); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if !reflect.DeepEqual(r, c.want) {
			t.Errorf("%s: decoded %+v, want %+v", c.in, r, c.want)
		}
	}
	// Ollama's options carry the same field.
	var o OllamaOptions
	if err := json.Unmarshal([]byte(`{"adapters":[{"name":"tone","scale":0}]}`), &o); err != nil || len(o.Adapters) != 0 {
		t.Fatalf("ollama options: %+v %v", o.Adapters, err)
	}
}
