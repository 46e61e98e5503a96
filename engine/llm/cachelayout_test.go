package llm

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// TestCacheLayoutNamesColdType checks that each KV type gives its own
// cache layout, so the daemon keeps one prefix snapshot per type: q8_0
// and q4_0 gave the same layout, and switching --kv-type between them
// discarded the other's snapshot and then overwrote its file.
func TestCacheLayoutNamesColdType(t *testing.T) {
	o := testmodel.DefaultOptions()
	o.Heads, o.KVHeads = 2, 1 // heads of 32: a cold tier quantizes rows in blocks of 32
	path := filepath.Join(t.TempDir(), "llama.gguf")
	if err := testmodel.Write(context.Background(), o, path); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, tc := range []struct {
		name string
		cold quant.Type
	}{
		{"f16", 0},
		{"q8_0", quant.Q8_0},
		{"q4_0", quant.Q4_0},
	} {
		m, err := Load(context.Background(), path, Options{Threads: 1, ContextLength: 128, Sequences: 1, KVCold: tc.cold, KVHotWindow: 32})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		layout := m.CacheLayout()
		m.Close()
		if other, ok := seen[layout]; ok {
			t.Fatalf("%s and %s share the cache layout %q", tc.name, other, layout)
		}
		seen[layout] = tc.name
	}
}
