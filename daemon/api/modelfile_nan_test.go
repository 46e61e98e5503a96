package api

import (
	"strings"
	"testing"
)

// TestCreateModelfileNonFiniteParameter: PARAMETER temperature NaN (or
// Inf) parsed as a float and failed when the manifest was stored as JSON,
// a 500 "json: unsupported value: NaN"; it is a 400 naming the parameter.
func TestCreateModelfileNonFiniteParameter(t *testing.T) {
	ta := startAPI(t)
	for _, v := range []string{"NaN", "Inf", "-inf", "+Infinity"} {
		resp, b := ta.post(t, "/api/create", `{"model":"hot","modelfile":"FROM fake\nPARAMETER temperature `+v+`","stream":false}`)
		if resp.StatusCode != 400 || !strings.Contains(string(b), "temperature") {
			t.Errorf("PARAMETER temperature %s: %d %s, want 400 naming temperature", v, resp.StatusCode, b)
		}
	}
	if resp, b := ta.post(t, "/api/create", `{"model":"warm","modelfile":"FROM fake\nPARAMETER temperature 0.5","stream":false}`); resp.StatusCode != 200 {
		t.Fatalf("a finite temperature: %d %s", resp.StatusCode, b)
	}
}
