package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/sample"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

func synthetic(t testing.TB, arch string, typ quant.Type) string {
	t.Helper()
	o := testmodel.DefaultOptions()
	o.Arch, o.Type, o.Seed, o.ContextLength = arch, typ, 7, 1024
	path := filepath.Join(t.TempDir(), arch+".gguf")
	if err := testmodel.Write(context.Background(), o, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func generate(t *testing.T, m *Model, req Request) ([]int32, string, Result) {
	t.Helper()
	var ids []int32
	var text strings.Builder
	res, err := m.Generate(context.Background(), req, func(tok Token) error {
		if tok.ID >= 0 {
			ids = append(ids, tok.ID)
		}
		text.WriteString(tok.Text)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids, text.String(), res
}

func TestSeedsAndLimits(t *testing.T) {
	m, err := Load(context.Background(), synthetic(t, "llama", quant.F32), Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	hot := sample.Params{Temperature: 1.5, Seed: 42}
	a, _, _ := generate(t, m, Request{Prompt: "hello", MaxTokens: 24, Sampling: hot, IgnoreEOS: true})
	b, _, _ := generate(t, m, Request{Prompt: "hello", MaxTokens: 24, Sampling: hot, IgnoreEOS: true})
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("same seed, different tokens:\n%v\n%v", a, b)
	}
	hot.Seed = 43
	c, _, _ := generate(t, m, Request{Prompt: "hello", MaxTokens: 24, Sampling: hot, IgnoreEOS: true})
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Fatalf("seeds 42 and 43 gave the same 24 tokens")
	}
	_, _, res := generate(t, m, Request{Prompt: "hello", MaxTokens: 5, IgnoreEOS: true})
	if res.CompletionTokens != 5 || res.FinishReason != FinishLength {
		t.Fatalf("MaxTokens 5: %+v", res)
	}
	// A stop string ends generation and is not returned.
	_, full, _ := generate(t, m, Request{Prompt: "hello", MaxTokens: 30, IgnoreEOS: true})
	if len(full) > 6 {
		stop := full[3:6]
		_, text, res := generate(t, m, Request{Prompt: "hello", MaxTokens: 30, IgnoreEOS: true, Stop: []string{stop}})
		if strings.Contains(text, stop) || res.FinishReason != FinishStop || !strings.HasPrefix(full, text) {
			t.Fatalf("stop %q: got %q (%s) from %q", stop, text, res.FinishReason, full)
		}
	}
	long := strings.Repeat("x ", 2000)
	if _, err := m.Generate(context.Background(), Request{Prompt: long}, func(Token) error { return nil }); !errors.Is(err, ErrContextExceeded) {
		t.Fatalf("overlong prompt: %v", err)
	}
}

// TestBatchedCachedEqualsIsolated runs many greedy requests with shared
// prefixes concurrently (continuous batching, prefix cache, chunked
// prefill) and checks each equals the same request run alone on a fresh
// model without a cache; in BF16 and Q8_0, whose matrices take the AMX
// tiles where the CPU has them (BF16 for every batch size, the fused
// q/k/v product included; Q8_0 for two or more tokens, with decode on a
// VNNI kernel of the same sums), and in Q8_0 with AMX off.
func TestBatchedCachedEqualsIsolated(t *testing.T) {
	for _, tc := range []struct {
		arch string
		typ  quant.Type
		amx  cpu.AMXMode
	}{{"llama", quant.Q8_0, cpu.AMXAuto}, {"gemma2", quant.Q8_0, cpu.AMXAuto}, {"llama", quant.BF16, cpu.AMXAuto}, {"llama", quant.Q8_0, cpu.AMXOff}} {
		arch := tc.arch
		t.Run(fmt.Sprintf("%s/%s/amx%d", arch, tc.typ, tc.amx), func(t *testing.T) {
			path := synthetic(t, arch, tc.typ)
			shared, err := Load(context.Background(), path, Options{Threads: 2, BatchSize: 24, Sequences: 3, AMX: tc.amx})
			if err != nil {
				t.Fatal(err)
			}
			defer shared.Close()
			if tiles := tc.typ == quant.BF16 && quant.AMXTiles() || tc.typ == quant.Q8_0 && tc.amx != cpu.AMXOff && quant.AMXInt8Tiles(); tiles && !strings.Contains(shared.namespace, "default-2-amx") {
				t.Fatalf("the %s model did not take the AMX tiles: namespace %s", tc.typ, shared.namespace)
			}
			alone, err := Load(context.Background(), path, Options{Threads: 2, NoPrefixCache: true, Sequences: 1, AMX: tc.amx})
			if err != nil {
				t.Fatal(err)
			}
			defer alone.Close()
			r := rand.New(rand.NewPCG(5, 5))
			system := strings.Repeat("system prompt shared by every app. ", 3)
			var prompts []string
			for i := 0; i < 10; i++ {
				prompts = append(prompts, system[:20+r.IntN(len(system)-20)]+fmt.Sprintf(" question %d?", i))
			}
			want := make([][]int32, len(prompts))
			for i, p := range prompts {
				want[i], _, _ = generate(t, alone, Request{Prompt: p, MaxTokens: 12, IgnoreEOS: true})
			}
			var wg sync.WaitGroup
			got := make([][]int32, len(prompts))
			for round := 0; round < 2; round++ { // the second round hits the cache
				for i, p := range prompts {
					wg.Add(1)
					go func() {
						defer wg.Done()
						var ids []int32
						_, err := shared.Generate(context.Background(), Request{Prompt: p, MaxTokens: 12, IgnoreEOS: true}, func(tok Token) error {
							if tok.ID >= 0 {
								ids = append(ids, tok.ID)
							}
							return nil
						})
						if err != nil {
							t.Error(err)
						}
						got[i] = ids
					}()
				}
				wg.Wait()
				for i := range prompts {
					if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
						t.Fatalf("round %d prompt %d: batched+cached %v, alone %v", round, i, got[i], want[i])
					}
				}
			}
			if st := shared.CacheStats(); st.HitTokens == 0 {
				t.Fatalf("no cache hits: %+v", st)
			}
			shared.ClearCache()
			if free := shared.pool.Free(); free != shared.pool.Blocks() {
				t.Fatalf("leak: %d of %d blocks free when idle", free, shared.pool.Blocks())
			}
		})
	}
}

func TestBrokenFilesGiveOneLineErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.gguf")
	os.WriteFile(junk, []byte("this is not a model"), 0o600)
	trunc := filepath.Join(dir, "trunc.gguf")
	b, _ := os.ReadFile(synthetic(t, "qwen2", quant.F16))
	os.WriteFile(trunc, b[:len(b)/2], 0o600)
	for _, p := range []string{junk, trunc, filepath.Join(dir, "missing.gguf")} {
		_, err := Load(context.Background(), p, Options{})
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want a one-line error", filepath.Base(p), err)
		}
	}
}

// TestTokenGranularPrefix checks that a prompt leaving a cached prefix
// inside a block reuses it to the token, computes only its new tokens,
// generates exactly what a model without a cache does, and reports where
// its time to the first token went.
func TestTokenGranularPrefix(t *testing.T) {
	path := synthetic(t, "llama", quant.Q8_0)
	m, err := Load(context.Background(), path, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	alone, err := Load(context.Background(), path, Options{Threads: 2, NoPrefixCache: true, Sequences: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer alone.Close()
	r := rand.New(rand.NewPCG(1, 2))
	first := make([]int32, 75)
	for i := range first {
		first[i] = int32(3 + r.IntN(200))
	}
	generate(t, m, Request{Tokens: first, MaxTokens: 4, IgnoreEOS: true})
	for _, shared := range []int{37, 50, 16, 5} {
		p := append(append([]int32(nil), first[:shared]...), 250, 251, 252)
		got, _, res := generate(t, m, Request{Tokens: p, MaxTokens: 6, IgnoreEOS: true})
		want, _, _ := generate(t, alone, Request{Tokens: p, MaxTokens: 6, IgnoreEOS: true})
		if res.CachedTokens != shared {
			t.Errorf("%d shared tokens: %d reused", shared, res.CachedTokens)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%d shared tokens: %v, without a cache %v", shared, got, want)
		}
		tm := res.Timings
		if tm.Prefill <= 0 || tm.PrefillSteps != 1 || tm.Prepare <= 0 || tm.Queue < 0 || tm.Sample < 0 {
			t.Errorf("timings %+v: want a positive prepare and prefill in one step", tm)
		}
		if sum := tm.Prepare + tm.Queue + tm.Prefill + tm.Sample; sum != tm.TTFT {
			t.Errorf("prepare %v + queue %v + prefill %v + sample %v = %v, TTFT %v", tm.Prepare, tm.Queue, tm.Prefill, tm.Sample, sum, tm.TTFT)
		}
	}
}
