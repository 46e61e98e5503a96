package llm

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// TestKVColdOptional loads models whose KV rows the cold tier cannot
// quantize (heads of 16 values; rows of 16) with a cold tier: without
// KVColdOptional the load fails, as `ruvllm run --kv-type q8_0` should;
// with it (the daemon's loader) the model is served with an all-F16
// cache and says so. A daemon started with --kv-type q8_0 answered every
// request for such a model with a 503.
func TestKVColdOptional(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kvHeads int
	}{
		{"heads of 16", 2},
		{"rows of 16", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testmodel.DefaultOptions() // heads of 64/4 = 16 values
			o.KVHeads = tc.kvHeads
			path := filepath.Join(t.TempDir(), "llama.gguf")
			if err := testmodel.Write(context.Background(), o, path); err != nil {
				t.Fatal(err)
			}
			opts := Options{Threads: 1, ContextLength: 128, Sequences: 1, KVCold: quant.Q8_0, KVHotWindow: 32}
			if m, err := Load(context.Background(), path, opts); err == nil {
				m.Close()
				t.Fatal("loaded with a cold tier the head size cannot take")
			}
			opts.KVColdOptional = true
			m, err := Load(context.Background(), path, opts)
			if err != nil {
				t.Fatalf("KVColdOptional: %v", err)
			}
			defer m.Close()
			if info := m.KVInfo(); info.Type != "f16" || info.ColdBytesPerToken != 0 {
				t.Fatalf("KVInfo %+v, want an all-F16 cache", info)
			}
			req := Request{Prompt: "The kernel", MaxTokens: 8, IgnoreEOS: true}
			if ids, _, _ := generate(t, m, req); len(ids) != 8 {
				t.Fatalf("generated %d tokens, want 8", len(ids))
			}
		})
	}
}
