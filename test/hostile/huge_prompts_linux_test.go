package hostile

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestHugePrompts sends huge prompts (12 MB of prose, and one 12 MB word)
// to a daemon whose address space is capped at 6 GiB, through the
// endpoints that tokenize them: each is answered (a 400 that the prompt
// exceeds the context, a truncated reply, the tokens), the daemon stays
// up, and its resident memory peaks under 1.5 GiB. Tokenizing 30 MB once
// took 6-7 GB and up to a minute (12 MB: about 2.5 GB): the whole text was
// one SentencePiece merge, or one word's.
func TestHugePrompts(t *testing.T) {
	for _, model := range []string{"ruvllm-test-llama-19m-q8_0.gguf", "ruvllm-test-qwen2-13m-q8_0.gguf"} {
		t.Run(model, func(t *testing.T) {
			p := start(t, startOptions{model: testpath.Shared(t, "models/"+model)})
			limit := unix.Rlimit{Cur: 6 << 30, Max: 6 << 30}
			if err := unix.Prlimit(p.cmd.Process.Pid, unix.RLIMIT_AS, &limit, nil); err != nil {
				t.Skipf("cannot cap the daemon's memory: %v", err)
			}
			for _, text := range []struct{ name, s string }{
				{"prose", strings.Repeat("the quick brown fox jumps over the lazy dog ", 12<<20/44)},
				{"one word", strings.Repeat("kernel", 12<<20/6)},
			} {
				r := p.post(t, "/v1/completions", fmt.Sprintf(`{"model":%q,"prompt":%s,"max_tokens":1}`, p.model, jsonString(text.s)))
				want4xx(t, text.name+" to /v1/completions", r, "context")
				p.alive(t)
				r = p.post(t, "/api/generate", fmt.Sprintf(`{"model":%q,"prompt":%s,"raw":true,"stream":false,"options":{"num_predict":2}}`, p.model, jsonString(text.s)))
				if r.status != 200 || !strings.Contains(string(r.body), `"prompt_eval_count"`) {
					t.Errorf("%s to /api/generate (truncated, as Ollama does): %d %.300s", text.name, r.status, r.body)
				}
				p.alive(t)
				r = p.post(t, "/tokenize", fmt.Sprintf(`{"model":%q,"content":%s}`, p.model, jsonString(text.s)))
				if r.status != 200 || !strings.HasPrefix(string(r.body), `{"tokens":[`) {
					t.Errorf("%s to /tokenize: %d %.200s", text.name, r.status, r.body)
				}
				p.alive(t)
			}
			if r := p.post(t, "/v1/completions", fmt.Sprintf(`{"model":%q,"prompt":"hi","max_tokens":4}`, p.model)); r.status != 200 {
				t.Fatalf("after the huge prompts, a plain request: %d %s", r.status, r.body)
			}
			status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(status), "\n") {
				var kb int64
				if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kb); err == nil {
					t.Logf("peak resident memory %d MB", kb>>10)
					if kb > 3<<19 {
						t.Errorf("the daemon's resident memory peaked at %d MB", kb>>10)
					}
				}
			}
		})
	}
}
