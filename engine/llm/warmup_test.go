package llm

import (
	"context"
	"testing"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// TestWarmupLeavesNoTrace checks that Warmup runs, leaves the prefix
// cache and its counters untouched, gives back its KV blocks, and does
// not change what a later request generates.
func TestWarmupLeavesNoTrace(t *testing.T) {
	path := synthetic(t, "llama", quant.Q8_0)
	gen := func(warm bool) []int32 {
		m, err := Load(context.Background(), path, Options{Threads: 2, ContextLength: 64, Sequences: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if warm {
			free := m.pool.Free()
			if err := m.Warmup(context.Background()); err != nil {
				t.Fatal(err)
			}
			if st := m.CacheStats(); st.Lookups != 0 || st.Blocks != 0 || st.Inserted != 0 {
				t.Errorf("cache after warmup: %+v, want untouched", st)
			}
			if m.pool.Free() != free {
				t.Errorf("free KV blocks %d after warmup, %d before", m.pool.Free(), free)
			}
		}
		var ids []int32
		_, err = m.Generate(context.Background(), Request{Tokens: []int32{1, 5, 9, 13}, MaxTokens: 12, IgnoreEOS: true},
			func(tk Token) error { ids = append(ids, tk.ID); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	cold, warm := gen(false), gen(true)
	if len(cold) == 0 || len(cold) != len(warm) {
		t.Fatalf("generated %v cold, %v after warmup", cold, warm)
	}
	for i := range cold {
		if cold[i] != warm[i] {
			t.Fatalf("token %d: %d cold, %d after warmup", i, cold[i], warm[i])
		}
	}
	m, err := Load(context.Background(), path, Options{Threads: 1, ContextLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if err := m.Warmup(context.Background()); err == nil {
		t.Error("warmup of a closed model: no error")
	}
}
