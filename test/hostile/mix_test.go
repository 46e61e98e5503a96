package hostile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/ipc"
)

// badRequest is a client mistake and the text its answer must contain.
type badRequest struct {
	method, path, body, want string
}

// badRequests are the mistakes the mixed load sends, one in ten requests.
func badRequests(model, fifo string) []badRequest {
	chat := func(extra string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]` + extra + `}`
	}
	return []badRequest{
		{"POST", "/v1/chat/completions", chat(`,"max_tokens":-1`), "max_tokens"},
		{"POST", "/v1/chat/completions", chat(`,"temperature":"hot"`), "temperature"},
		{"POST", "/v1/chat/completions", chat(`,"logit_bias":{"99999999":1}`), "logit_bias"},
		{"POST", "/v1/chat/completions", chat(`,"adapters":[{"name":"mix"},{"name":"mix"}]`), "adapters"},
		{"POST", "/v1/chat/completions", chat(`,"adapters":[{"name":"missing-adapter"}]`), "missing-adapter"},
		{"POST", "/v1/chat/completions", `{"model":"` + model + `","messages":[{"role":"wizard","content":"x"}]}`, "role"},
		{"POST", "/v1/chat/completions", `{"model":"` + model + `","messages":[`, "JSON"},
		{"POST", "/v1/chat/completions", `{"model":"no-such-model","messages":[{"role":"user","content":"x"}]}`, "no-such-model"},
		{"POST", "/v1/completions", `{"model":"` + model + `","prompt":[-3]}`, "vocabulary"},
		{"POST", "/v1/embeddings", `{"model":"` + model + `","input":""}`, "input"},
		{"POST", "/v1/adapters", `{"path":"` + fifo + `"}`, "not a regular file"},
		{"POST", "/v1/adapters", `{"path":"/etc/passwd"}`, "not a GGUF file"},
		{"POST", "/api/chat", `{"model":"` + model + `","messages":[{"role":"user","content":"x"}],"options":{"top_k":-5}}`, "top_k"},
		{"POST", "/api/generate", `{"model":"` + model + `","prompt":"x","options":{"num_ctx":-1}}`, "num_ctx"},
		{"POST", "/api/pull", `{"model":"bad\nname","stream":false}`, "reference"},
		{"POST", "/completion", `{"model":"` + model + `","prompt":"x","mirostat":2}`, "mirostat"},
		{"POST", "/completion", `{"model":"` + model + `","prompt":[` + strings.Repeat(`"a",`, 40) + `"b"]}`, "at most 16"},
		{"POST", "/detokenize", `{"model":"` + model + `","tokens":[-1]}`, "tokens[0]"},
		{"POST", "/v1/feedback", `{"request_id":"nope","rating":7}`, "rating"},
		{"GET", "/v1/conversations/conv-does-not-exist", "", "conv-does-not-exist"},
	}
}

// goodRequest is an ordinary call of some app.
type goodRequest struct {
	method, path, body string
	stream             bool
}

func goodRequests(model string) []goodRequest {
	return []goodRequest{
		{"POST", "/v1/chat/completions", `{"model":"` + model + `","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"hi %d"}],"max_tokens":8}`, false},
		{"POST", "/v1/chat/completions", `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"stream %d"}],"max_tokens":16}`, true},
		{"POST", "/v1/chat/completions", `{"model":"` + model + `","messages":[{"role":"user","content":"adapted %d"}],"max_tokens":6,"adapters":[{"name":"mix","scale":0.5}]}`, false},
		{"POST", "/v1/embeddings", `{"model":"` + model + `","input":["one %d","two"]}`, false},
		{"POST", "/api/chat", `{"model":"` + model + `","messages":[{"role":"user","content":"ollama %d"}],"options":{"num_predict":8}}`, true},
		{"POST", "/api/generate", `{"model":"` + model + `","prompt":"gen %d","stream":false,"options":{"num_predict":6}}`, false},
		{"POST", "/completion", `{"model":"` + model + `","prompt":"llama %d","n_predict":8,"stream":true,"n_probs":2}`, true},
		{"POST", "/completion", `{"model":"` + model + `","prompt":["one %d",[1,2,3],"three"],"n_predict":4}`, false},
		{"POST", "/tokenize", `{"model":"` + model + `","content":"count %d","with_pieces":true}`, false},
		{"GET", "/v1/adapters", "", false},
		{"GET", "/api/tags", "", false},
		{"GET", "/v1/cache", "", false},
		{"GET", "/v1/health", "", false},
	}
}

// mixStats is what a mixed-load run saw.
type mixStats struct {
	good, bad, disconnects atomic.Int64
	slowestBad             atomic.Int64 // nanoseconds
	mu                     sync.Mutex
	failures               []string
}

func (s *mixStats) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failures) < 20 {
		s.failures = append(s.failures, fmt.Sprintf(format, args...))
	}
}

// runMix sends 64 clients' mixed traffic for d: one request in ten a
// mistake, some streams abandoned after their first chunk.
func runMix(t testing.TB, p *proc, clients int, d time.Duration) *mixStats {
	fifo := filepath.Join(p.dir, "mix.fifo")
	syscall.Mkfifo(fifo, 0o600)
	adapter := filepath.Join(p.dir, "mix.gguf")
	writeAdapter(t, p.modelPath, adapter, 3)
	if r := p.post(t, "/v1/adapters", `{"path":"`+adapter+`"}`); r.status != 201 {
		t.Fatalf("install: %d %s", r.status, r.body)
	}
	bad, good := badRequests(p.model, fifo), goodRequests(p.model)
	st := &mixStats{}
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for i := 0; time.Now().Before(deadline); i++ {
				if rng.IntN(10) == 0 {
					b := bad[rng.IntN(len(bad))]
					sendBad(p, st, b)
					continue
				}
				g := good[rng.IntN(len(good))]
				sendGood(p, st, g, fmt.Sprint(c*100000+i), g.stream && rng.IntN(4) == 0)
			}
		})
	}
	wg.Wait()
	return st
}

func sendBad(p *proc, st *mixStats, b badRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var body io.Reader
	if b.body != "" {
		body = strings.NewReader(b.body)
	}
	req, _ := http.NewRequestWithContext(ctx, b.method, "http://ruvllm"+b.path, body)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := p.http.Do(req)
	if err != nil {
		st.fail("%s %s: no answer: %v", b.method, b.path, err)
		return
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	el := time.Since(start)
	for {
		old := st.slowestBad.Load()
		if int64(el) <= old || st.slowestBad.CompareAndSwap(old, int64(el)) {
			break
		}
	}
	st.bad.Add(1)
	msg, _ := errorText(raw)
	if resp.StatusCode < 400 || resp.StatusCode >= 500 || !strings.Contains(msg, b.want) {
		st.fail("mistake %s %s %.60q: %d %q (want a 4xx saying %q)", b.method, b.path, b.body, resp.StatusCode, msg, b.want)
	}
}

func sendGood(p *proc, st *mixStats, g goodRequest, n string, abandon bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var body io.Reader
	if g.body != "" {
		body = strings.NewReader(strings.ReplaceAll(g.body, "%d", n))
	}
	req, _ := http.NewRequestWithContext(ctx, g.method, "http://ruvllm"+g.path, body)
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.http.Do(req)
	if err != nil {
		st.fail("%s %s: no answer: %v", g.method, g.path, err)
		return
	}
	defer resp.Body.Close()
	if abandon {
		resp.Body.Read(make([]byte, 32))
		cancel()
		st.disconnects.Add(1)
		return
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		st.fail("%s %s: reading the answer: %v", g.method, g.path, err)
		return
	}
	st.good.Add(1)
	if resp.StatusCode != 200 {
		st.fail("%s %s: %d %.200s", g.method, g.path, resp.StatusCode, raw)
		return
	}
	if g.stream && (bytes.Contains(raw, []byte(`"error"`)) || !(bytes.Contains(raw, []byte("[DONE]")) || bytes.Contains(raw, []byte(`"done":true`)) || bytes.Contains(raw, []byte(`"stop":true`)))) {
		st.fail("%s %s: stream ended badly: %.300s", g.method, g.path, tail(string(raw), 300))
	}
}

// TestMixedLoad: 64 clients, ordinary traffic with a mistake in every ten
// requests and abandoned streams. Every request is answered, every
// mistake is a 4xx with a reason, nothing else fails.
func TestMixedLoad(t *testing.T) {
	d := 6 * time.Second
	if v, err := time.ParseDuration(os.Getenv("HOSTILE_MIX_DURATION")); err == nil {
		d = v
	}
	p := start(t, startOptions{})
	st := runMix(t, p, 64, d)
	p.alive(t)
	t.Logf("%d ordinary requests, %d mistakes, %d abandoned streams in %v; slowest mistake answered in %v",
		st.good.Load(), st.bad.Load(), st.disconnects.Load(), d, time.Duration(st.slowestBad.Load()))
	for _, f := range st.failures {
		t.Error(f)
	}
	if st.good.Load() < 64 || st.bad.Load() < 10 {
		t.Fatalf("too little traffic to mean anything: %d good, %d bad", st.good.Load(), st.bad.Load())
	}
}

// TestKillNineLosesNothingAcknowledged writes conversations, messages and
// feedback from several clients, kills the daemon with SIGKILL in the
// middle, restarts it on the same state and finds every write that was
// acknowledged.
func TestKillNineLosesNothingAcknowledged(t *testing.T) {
	p := start(t, startOptions{})
	type acked struct {
		conv     string
		messages int
	}
	var mu sync.Mutex
	convs := map[string]int{} // acknowledged conversation → acknowledged messages
	var feedback []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 6 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				body := fmt.Sprintf(`{"title":"c%d-%d","model":"%s","messages":[{"role":"user","content":"hello %d"}]}`, c, i, p.model, i)
				req, _ := http.NewRequestWithContext(ctx, "POST", "http://ruvllm/v1/conversations", strings.NewReader(body))
				resp, err := p.http.Do(req)
				if err != nil {
					cancel()
					return // the daemon is gone
				}
				var conv struct {
					ID string `json:"id"`
				}
				err = json.NewDecoder(resp.Body).Decode(&conv)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 201 {
					cancel()
					return
				}
				mu.Lock()
				convs[conv.ID] = 1
				mu.Unlock()
				req, _ = http.NewRequestWithContext(ctx, "POST", "http://ruvllm/v1/conversations/"+conv.ID+"/messages",
					strings.NewReader(`{"messages":[{"role":"assistant","content":"hi"},{"role":"user","content":"more"}]}`))
				resp, err = p.http.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == 200 {
						mu.Lock()
						convs[conv.ID] = 3
						mu.Unlock()
					}
				}
				// A completion and its rating.
				req, _ = http.NewRequestWithContext(ctx, "POST", "http://ruvllm/v1/chat/completions",
					strings.NewReader(`{"model":"`+p.model+`","messages":[{"role":"user","content":"rate me"}],"max_tokens":2}`))
				resp, err = p.http.Do(req)
				if err == nil {
					id := resp.Header.Get("X-Ruvllm-Request-Id")
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					req, _ = http.NewRequestWithContext(ctx, "POST", "http://ruvllm/v1/feedback",
						strings.NewReader(`{"request_id":"`+id+`","rating":1}`))
					if resp, err = p.http.Do(req); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode == 201 || resp.StatusCode == 200 {
							mu.Lock()
							feedback = append(feedback, id)
							mu.Unlock()
						}
					}
				}
				cancel()
			}
		})
	}
	time.Sleep(1500 * time.Millisecond)
	p.kill9()
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(convs) < 5 || len(feedback) < 2 {
		t.Fatalf("only %d conversations and %d ratings acknowledged before the kill", len(convs), len(feedback))
	}
	p2 := start(t, startOptions{dir: p.dir})
	for id, n := range convs {
		r := p2.do(t, "GET", "/v1/conversations/"+id, "", nil)
		if r.status != 200 {
			t.Errorf("acknowledged conversation %s: %d %s", id, r.status, r.body)
			continue
		}
		var conv struct {
			Messages []json.RawMessage `json:"messages"`
		}
		json.Unmarshal(r.body, &conv)
		if len(conv.Messages) < n {
			t.Errorf("conversation %s: %d messages, %d acknowledged", id, len(conv.Messages), n)
		}
	}
	r := p2.do(t, "GET", "/v1/feedback?limit=1000", "", nil)
	for _, id := range feedback {
		if !bytes.Contains(r.body, []byte(strconv.Quote(id))) {
			t.Errorf("acknowledged rating of %s lost", id)
		}
	}
	var stored struct {
		Feedback []json.RawMessage `json:"feedback"`
	}
	json.Unmarshal(r.body, &stored)
	// Learning: every stored rating is learned exactly once — those the
	// killed daemon had learned are in the saved state, the others are
	// learned again from the store after the restart — or counted once
	// as unlearnable (a two-token answer can be empty: the model's first
	// token can end it).
	var scope ipc.LearningScope
	for deadline := time.Now().Add(60 * time.Second); ; {
		var st ipc.LearningStatus
		json.Unmarshal(p2.do(t, "GET", "/v1/learning", "", nil).body, &st)
		scope = ipc.LearningScope{}
		for _, m := range st.Models {
			for _, s := range m.Scopes {
				scope = s
			}
		}
		if scope.Received+scope.Unlearnable == len(stored.Feedback) && scope.Unlearned == 0 {
			break
		}
		if scope.Received+scope.Unlearnable > len(stored.Feedback) || time.Now().After(deadline) {
			t.Fatalf("learning after kill -9: %d signals received, %d unlearnable, %d unlearned; %d ratings stored\nbefore the kill:\n%s\nafter:\n%s",
				scope.Received, scope.Unlearnable, scope.Unlearned, len(stored.Feedback), grepLines(p.log.String(), "learn"), grepLines(p2.log.String(), "learn"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d conversations and %d ratings acknowledged before kill -9: all there after the restart, and all %d stored ratings learned once (%d of them unlearnable, version %d)",
		len(convs), len(feedback), len(stored.Feedback), scope.Unlearnable, scope.Version)
}

// grepLines returns the lines of log that contain word.
func grepLines(log, word string) string {
	var b strings.Builder
	for line := range strings.Lines(log) {
		if strings.Contains(line, word) {
			b.WriteString(line)
		}
	}
	return b.String()
}
