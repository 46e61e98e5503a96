package hostile

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestConcurrentOutputsReproduce: under concurrent traffic, with every
// speculation kind (a draft model included) and streaming or not, a
// greedy request gives the tokens it gives alone without speculation, and
// a seeded sampled one (seed 0 included) gives the same tokens twice.
// Batching, speculation and the shared prefix cache must never show in
// an answer. (A soak of this shape found "seed": 0 drawing a random seed.)
func TestConcurrentOutputsReproduce(t *testing.T) {
	model := testpath.Shared(t, "models/ruvllm-test-llama-19m-f16.gguf")
	draft := testpath.Shared(t, "models/ruvllm-test-llama-19m-q4_0.gguf")
	d := 6 * time.Second
	if v, err := time.ParseDuration(os.Getenv("HOSTILE_MIX_DURATION")); err == nil {
		d = v
	}
	p := start(t, startOptions{model: model, args: []string{"--draft", draft}})
	prompts := []string{
		"Summarize: the scheduler picks the next task. The scheduler keeps a run queue per CPU.",
		"Write a function that reverses a string in Python.",
		"The quick brown fox jumps over the lazy dog. Repeat it twice.",
		"What does the -r flag of cp do?",
	}
	chat := func(prompt, extra string) string {
		return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}],"max_tokens":24%s}`, p.model, prompt, extra)
	}
	text := func(r reply, stream bool) (string, error) {
		if r.status != 200 {
			return "", fmt.Errorf("status %d: %.200s", r.status, r.body)
		}
		if !stream {
			var c struct {
				Choices []struct {
					Message struct{ Content string } `json:"message"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(r.body, &c); err != nil || len(c.Choices) != 1 {
				return "", fmt.Errorf("answer %.200s: %v", r.body, err)
			}
			return c.Choices[0].Message.Content, nil
		}
		var b strings.Builder
		for _, line := range strings.Split(string(r.body), "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var c struct {
				Choices []struct {
					Delta struct{ Content string } `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(data), &c); err != nil {
				return "", fmt.Errorf("chunk %.200s: %v", data, err)
			}
			if len(c.Choices) > 0 {
				b.WriteString(c.Choices[0].Delta.Content)
			}
		}
		return b.String(), nil
	}
	want := map[string]string{}
	for _, pr := range prompts {
		got, err := text(p.post(t, "/v1/chat/completions", chat(pr, `,"temperature":0,"speculation":"off"`)), false)
		if err != nil {
			t.Fatal(err)
		}
		want[pr] = got
	}
	var greedy, seeded atomic.Int64
	st := &mixStats{} // for its failures
	fail := st.fail
	kinds := []string{"all", "lookup", "draft", "lookup+tree", "draft+tree", "off"}
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 11))
			for time.Now().Before(deadline) {
				pr := prompts[rng.IntN(len(prompts))]
				if rng.IntN(3) > 0 {
					kind, stream := kinds[rng.IntN(len(kinds))], rng.IntN(2) == 0
					extra := fmt.Sprintf(`,"temperature":0,"speculation":%q,"stream":%v`, kind, stream)
					switch rng.IntN(3) { // a predicted output: the reply, an edit of it, or none
					case 0:
						extra += `,"prediction":{"type":"content","content":` + jsonString(want[pr]) + `}`
					case 1:
						extra += `,"prediction":{"type":"content","content":` + jsonString(strings.Replace(want[pr], " ", " zebra ", 1)) + `}`
					}
					got, err := text(p.post(t, "/v1/chat/completions", chat(pr, extra)), stream)
					if err != nil {
						fail("greedy %s: %v", kind, err)
						continue
					}
					if got != want[pr] {
						fail("greedy, speculation %s, stream %v: %q, alone %q", kind, stream, got, want[pr])
					}
					greedy.Add(1)
					continue
				}
				seed := rng.IntN(3) // 0 among them
				var got [2]string
				for i := range got {
					kind := kinds[rng.IntN(len(kinds))]
					var err error
					got[i], err = text(p.post(t, "/v1/chat/completions", chat(pr, fmt.Sprintf(`,"temperature":0.9,"top_p":0.95,"seed":%d,"speculation":%q`, seed, kind))), false)
					if err != nil {
						fail("seed %d: %v", seed, err)
						return
					}
				}
				if got[0] != got[1] {
					fail("seed %d: %q, then %q", seed, got[0], got[1])
				}
				seeded.Add(1)
			}
		})
	}
	wg.Wait()
	p.alive(t)
	t.Logf("%d greedy and %d seeded pairs of requests in %v", greedy.Load(), seeded.Load(), d)
	for _, f := range st.failures {
		t.Error(f)
	}
	if greedy.Load() < 16 || seeded.Load() < 4 {
		t.Fatalf("too little traffic to mean anything: %d greedy, %d seeded", greedy.Load(), seeded.Load())
	}
}

// jsonString is s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
