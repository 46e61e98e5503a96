package api

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// TestShowNonFiniteMetadata: /api/show of a model file whose float
// metadata holds NaN or an infinity answers 200 with those values as
// strings ("NaN", "+Inf"), as `ruvllm inspect --json` writes them; the
// response could not be encoded, a 500 for a file the client only asked
// about.
func TestShowNonFiniteMetadata(t *testing.T) {
	ta := startAPI(t)
	w := gguf.NewWriter()
	for _, kv := range []struct {
		key string
		v   any
	}{
		{"general.architecture", "llama"},
		{"llama.attention.layer_norm_rms_epsilon", float32(math.NaN())},
		{"llama.rope.freq_base", math.Inf(1)},
		{"llama.rope.scaling.factors", []float32{1, float32(math.Inf(-1))}},
	} {
		if err := w.AddKV(kv.key, kv.v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.AddTensor("x", quant.F32, []uint64{64}, make([]byte, 256)); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(filepath.Join(ta.srv.Config().ModelsDir, "nanmeta.gguf")); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{`{"model":"nanmeta"}`, `{"model":"nanmeta","verbose":true}`} {
		info, _ := ta.postOK(t, "/api/show", body)["model_info"].(map[string]any)
		if got := info["llama.attention.layer_norm_rms_epsilon"]; got != "NaN" {
			t.Errorf("%s: epsilon %v, want \"NaN\"", body, got)
		}
		if got := info["llama.rope.freq_base"]; got != "+Inf" {
			t.Errorf("%s: freq_base %v, want \"+Inf\"", body, got)
		}
		if got, _ := info["llama.rope.scaling.factors"].([]any); len(got) != 2 || got[0] != 1.0 || got[1] != "-Inf" {
			t.Errorf("%s: factors %v, want [1 -Inf]", body, info["llama.rope.scaling.factors"])
		}
	}
}
