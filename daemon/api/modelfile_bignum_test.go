package api

import (
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestModelfileLargeNumberRoundTrip: /api/show writes parameters as
// Modelfile lines that /api/create reads back. Stored parameters are
// float64 (JSON), and %v wrote a seed of 4294967296 as 4.294967296e+09 and
// num_ctx 1048576 as 1.048576e+06, which the integer parameters refuse
// ("is not an integer"), and which Ollama clients showed as such.
func TestModelfileLargeNumberRoundTrip(t *testing.T) {
	params := map[string]any{
		"seed":        float64(4294967296),
		"num_ctx":     float64(1048576),
		"num_predict": float64(2000000),
		"temperature": 0.1,
		"min_p":       1e-7,
		"top_k":       int64(40), // as a Modelfile parsed in this process stores it
	}
	text := formatParameters(params)
	for _, want := range []string{"PARAMETER seed 4294967296\n", "PARAMETER num_ctx 1048576\n", "PARAMETER num_predict 2000000\n",
		"PARAMETER temperature 0.1\n", "PARAMETER top_k 40\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("parameters\n%s\nlack %q", text, want)
		}
	}
	mf := formatModelfile(&ipc.ModelManifest{Parameters: params}, "/models/base.gguf")
	back, _, err := parseModelfile(mf)
	if err != nil {
		t.Fatalf("%s\nreads back as: %v", mf, err)
	}
	for k, v := range params {
		got, want := toFloat(back.Parameters[k]), toFloat(v)
		if got != want {
			t.Errorf("%s: read back %v, want %v", k, back.Parameters[k], v)
		}
	}
}

func toFloat(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case int64:
		return float64(n)
	}
	return -1
}
