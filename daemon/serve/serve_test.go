package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/ipc"
)

// testDaemon is a real ruvllmd on a temporary socket with a synthetic
// qwen2 model (ChatML template, byte-level vocabulary).
type testDaemon struct {
	dir, sock, model string
	cancel           context.CancelFunc
	done             chan error
	client           *ipc.Client
	tcp, token       string
}

func writeModel(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "models", "tiny-qwen2.gguf")
	os.MkdirAll(filepath.Dir(path), 0o700)
	o := testmodel.DefaultOptions()
	o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = "qwen2", 2, 64, 4, 2, 128, 4096
	if err := testmodel.Write(context.Background(), o, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func startDaemon(t *testing.T, dir string, tcp bool, opts ...func(*Options)) *testDaemon {
	t.Helper()
	d := &testDaemon{dir: dir, sock: filepath.Join(dir, "run", "ruvllm.sock"), done: make(chan error, 1)}
	d.model = filepath.Join(dir, "models", "tiny-qwen2.gguf")
	if _, err := os.Stat(d.model); err != nil {
		d.model = writeModel(t, dir)
	}
	cfg := daemon.Config{SocketPath: d.sock, StateDir: filepath.Join(dir, "state"), ModelsDir: filepath.Join(dir, "models"),
		CacheDir: filepath.Join(dir, "cache"), MaxBodyBytes: 64 << 10, Threads: 2, Version: "test",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if tcp {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		d.tcp = ln.Addr().String()
		ln.Close()
		cfg.TCPAddr = d.tcp
		cfg.RequireToken = true // the tests run as the daemon's user, who needs no token otherwise
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	o := Options{Config: cfg, Model: "tiny-qwen2", KeepAlive: time.Minute}
	for _, f := range opts {
		f(&o)
	}
	go func() { d.done <- Run(ctx, o) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := ipc.Dial(context.Background(), ipc.WithSocket(d.sock), ipc.WithApp("test"))
		if err == nil {
			d.client = c
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if tcp {
		b, _ := os.ReadFile(filepath.Join(dir, "state", "token"))
		d.token = strings.TrimSpace(string(b))
	}
	t.Cleanup(func() { d.stop(t) })
	return d
}

func (d *testDaemon) stop(t *testing.T) {
	if d.cancel == nil {
		return
	}
	d.cancel()
	d.cancel = nil
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("daemon: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Error("daemon did not stop")
	}
}

// post sends a raw body over the socket and returns status and body.
func (d *testDaemon) post(t *testing.T, path, body string) (int, []byte) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", d.sock)
	}}}
	resp, err := hc.Post("http://ruvllm"+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func longSystemPrompt() string {
	return strings.Repeat("You are a careful assistant for kernel developers. Answer briefly. ", 20)
}

func TestOpenAIChatStreamAndCacheAcrossClients(t *testing.T) {
	d := startDaemon(t, t.TempDir(), false)
	ctx := context.Background()
	sys := longSystemPrompt()
	temp := float32(0)
	ask := func(c *ipc.Client, q string) (string, ipc.Usage, []ipc.ChatCompletionChunk) {
		req := ipc.ChatCompletionRequest{Model: "tiny-qwen2", Messages: []ipc.Message{{Role: "system", Content: sys}, {Role: "user", Content: q}}}
		req.Temperature, req.MaxTokens = &temp, 12
		var chunks []ipc.ChatCompletionChunk
		var text strings.Builder
		var u ipc.Usage
		if err := c.ChatStream(ctx, req, func(ch ipc.ChatCompletionChunk) error {
			chunks = append(chunks, ch)
			for _, c := range ch.Choices {
				text.WriteString(c.Delta.Content)
			}
			if ch.Usage != nil {
				u = *ch.Usage
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return text.String(), u, chunks
	}
	_, u1, chunks := ask(d.client, "What is a spinlock?")
	if len(chunks) < 3 /* role, finish, usage */ || chunks[0].Choices[0].Delta.Role != "assistant" || chunks[0].Object != "chat.completion.chunk" {
		t.Fatalf("first chunk %+v: want role assistant", chunks[0])
	}
	last := chunks[len(chunks)-2] // before the usage chunk
	if fr := last.Choices[0].FinishReason; fr == nil || (*fr != "length" && *fr != "stop") {
		t.Fatalf("finish chunk %+v", last)
	}
	if u1.PromptTokens < 200 || u1.CompletionTokens == 0 || u1.PromptTokensDetails == nil {
		t.Fatalf("usage %+v", u1)
	}
	// A different client with the same system prompt reuses the prefix.
	other, err := ipc.Dial(ctx, ipc.WithSocket(d.sock), ipc.WithApp("other-app"))
	if err != nil {
		t.Fatal(err)
	}
	_, u2, _ := ask(other, "What is RCU?")
	if u2.PromptTokensDetails.CachedTokens < u1.PromptTokens/2 {
		t.Fatalf("second client: %d of %d prompt tokens cached; the shared system prompt should be", u2.PromptTokensDetails.CachedTokens, u2.PromptTokens)
	}
	st, err := d.client.Cache(ctx)
	if err != nil || len(st.Models) != 1 || st.Models[0].HitTokens == 0 {
		t.Fatalf("cache stats %+v, %v", st, err)
	}
	// Non-streaming, with logprobs.
	req := ipc.ChatCompletionRequest{Model: "tiny-qwen2", Messages: []ipc.Message{{Role: "user", Content: "hi"}}, Logprobs: true, TopLogprobs: 3}
	req.Temperature, req.MaxTokens = &temp, 5
	resp, err := d.client.Chat(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Object != "chat.completion" || len(resp.Choices) != 1 || resp.Choices[0].Logprobs == nil || len(resp.Choices[0].Logprobs.Content[0].TopLogprobs) != 3 {
		t.Fatalf("response %+v", resp)
	}
	recs, err := d.client.Requests(ctx, 10)
	if err != nil || len(recs) != 3 || recs[1].Client != "other-app" || recs[1].CachedTokens == 0 {
		t.Fatalf("request log %+v, %v", recs, err)
	}
	for _, r := range recs {
		b := r.TTFT
		if b == nil || b.PrefillSteps < 1 || b.PrefillMillis <= 0 || b.HandlerMillis < 0 {
			t.Fatalf("request %s: TTFT breakdown %+v", r.ID, b)
		}
		if sum := b.PrepareMillis + b.QueueMillis + b.PrefillMillis + b.SampleMillis; math.Abs(sum-r.TTFTMillis) > 0.01 {
			t.Errorf("request %s: breakdown adds up to %.3f ms, TTFT %.3f ms", r.ID, sum, r.TTFTMillis)
		}
	}
}

func TestOllamaShapes(t *testing.T) {
	d := startDaemon(t, t.TempDir(), false)
	code, body := d.post(t, "/api/chat", `{"model":"tiny-qwen2","messages":[{"role":"user","content":"hello"}],"options":{"num_predict":6,"temperature":0}}`)
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	lines := bytes.Split(bytes.TrimSpace(body), []byte("\n"))
	var final ipc.OllamaChatResponse
	if err := json.Unmarshal(lines[len(lines)-1], &final); err != nil {
		t.Fatal(err)
	}
	if !final.Done || final.DoneReason == "" || final.EvalCount == 0 || final.TotalDuration == 0 || final.PromptEvalCount == 0 {
		t.Fatalf("final line %+v", final)
	}
	for _, l := range lines[:len(lines)-1] {
		var r ipc.OllamaChatResponse
		if err := json.Unmarshal(l, &r); err != nil || r.Done || r.Message.Role != "assistant" {
			t.Fatalf("stream line %s: %v", l, err)
		}
	}
	code, body = d.post(t, "/api/generate", `{"model":"tiny-qwen2","prompt":"abc","raw":true,"stream":false,"options":{"num_predict":4,"temperature":0}}`)
	var gen ipc.OllamaGenerateResponse
	if code != 200 || json.Unmarshal(body, &gen) != nil || !gen.Done || gen.EvalCount != 4 {
		t.Fatalf("generate %d %s", code, body)
	}
	for _, path := range []string{"/api/tags", "/api/ps", "/api/version"} {
		var out map[string]any
		if err := d.client.Do(context.Background(), http.MethodGet, path, nil, &out); err != nil || len(out) == 0 {
			t.Fatalf("%s: %v %v", path, out, err)
		}
	}
}

func TestBadRequests(t *testing.T) {
	d := startDaemon(t, t.TempDir(), false)
	for _, tc := range []struct {
		path, body string
		status     int
		want       string
	}{
		{"/v1/chat/completions", `{"model":`, 400, "invalid JSON"},
		{"/v1/chat/completions", `{"model":"tiny-qwen2","messages":"hi"}`, 400, `field "messages" must be an array`},
		{"/v1/chat/completions", `{"model":"tiny-qwen2","messages":[{"role":"user","content":"x"}],"max_tokens":"ten"}`, 400, `"max_tokens" must be an integer, not string`},
		{"/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, 404, "model not found"},
		{"/v1/chat/completions", `{"model":"tiny-qwen2","messages":[{"role":"user","content":"x"}],"n":99}`, 400, "between 1 and 16"},
		{"/v1/chat/completions", `{"model":"tiny-qwen2","messages":[{"role":"user","content":"x"}],"adapters":[{"name":"a"}]}`, 400, "adapter"},
		{"/v1/chat/completions", `{"model":"tiny-qwen2","messages":[{"role":"user","content":"` + strings.Repeat("x", 70<<10) + `"}]}`, 413, "exceeds"},
		{"/api/chat", `{"model":"tiny-qwen2","messages":[],"options":{"temperature":"hot"}}`, 400, `"options.temperature" must be a number`},
		{"/api/generate", `{"model":"tiny-qwen2","prompt":"x","format":"yaml"}`, 400, "format"},
		{"/v1/chat/completions", `{"model":"tiny-qwen2","messages":[{"role":"user","content":"x"}],"unknown_field":1,"max_tokens":1}`, 200, ""},
	} {
		code, body := d.post(t, tc.path, tc.body)
		msg := string(body)
		var oa ipc.OpenAIError
		var ol struct{ Error string }
		if json.Unmarshal(body, &oa) == nil && oa.Error.Message != "" {
			msg = oa.Error.Message
		} else if json.Unmarshal(body, &ol) == nil && ol.Error != "" {
			msg = ol.Error
		}
		if code != tc.status || !strings.Contains(msg, tc.want) {
			t.Errorf("%s %.60s: %d %s; want %d containing %q", tc.path, tc.body, code, body, tc.status, tc.want)
		}
	}
}

func TestDisconnectCancelsGeneration(t *testing.T) {
	d := startDaemon(t, t.TempDir(), false)
	ctx, cancel := context.WithCancel(context.Background())
	req := ipc.ChatCompletionRequest{Model: "tiny-qwen2", Messages: []ipc.Message{{Role: "user", Content: "go on"}}}
	// The tiny model decodes thousands of tokens a second: ban every
	// control token so it cannot finish on its own before the client leaves.
	req.MaxTokens = 4000
	req.LogitBias = controlTokenBans(t, d.model)
	n := 0
	err := d.client.ChatStream(ctx, req, func(ipc.ChatCompletionChunk) error {
		if n++; n == 5 {
			cancel() // the client goes away mid-stream
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("stream err = %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs, _ := d.client.Requests(context.Background(), 1)
		if len(recs) == 1 {
			if recs[0].Status != "cancelled" || recs[0].CompletionTokens >= 4000 {
				t.Fatalf("record %+v: want cancelled well before 4000 tokens", recs[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("cancelled request never logged")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The record is written just before the model handle is released.
	for {
		h, _ := d.client.Health(context.Background())
		if len(h.Loaded) == 1 && h.Loaded[0].Active == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("model still busy after the client left: %+v", h.Loaded)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// controlTokenBans returns a logit_bias that forbids every control token
// (end of text, end of turn) of the model at path.
func controlTokenBans(t *testing.T, path string) map[string]float32 {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	types, ok := f.Int32s("tokenizer.ggml.token_type")
	if !ok {
		t.Fatal("model has no token types")
	}
	bans := map[string]float32{}
	for id, typ := range types {
		if typ == 3 { // control
			bans[fmt.Sprint(id)] = -100
		}
	}
	if len(bans) == 0 {
		t.Fatal("model has no control tokens to ban")
	}
	return bans
}

func TestConcurrentStreams(t *testing.T) {
	d := startDaemon(t, t.TempDir(), false)
	const clients = 16
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := ipc.ChatCompletionRequest{Model: "tiny-qwen2", Messages: []ipc.Message{{Role: "user", Content: fmt.Sprintf("request %d", i)}}}
			req.MaxTokens = 16
			got := 0
			err := d.client.ChatStream(context.Background(), req, func(ch ipc.ChatCompletionChunk) error {
				if ch.Usage != nil {
					got = ch.Usage.CompletionTokens
				}
				return nil
			})
			if err == nil && got == 0 {
				err = fmt.Errorf("client %d: no tokens", i)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestRestartKeepsPrefixCacheWarm(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, dir, false)
	ctx := context.Background()
	temp := float32(0)
	req := ipc.ChatCompletionRequest{Model: "tiny-qwen2", Messages: []ipc.Message{{Role: "system", Content: longSystemPrompt()}, {Role: "user", Content: "one"}}}
	req.Temperature, req.MaxTokens = &temp, 4
	if _, err := d.client.Chat(ctx, req); err != nil {
		t.Fatal(err)
	}
	d.stop(t)
	snaps, _ := filepath.Glob(filepath.Join(dir, "cache", "prefix-tiny-qwen2.*.snap"))
	if len(snaps) != 1 {
		t.Fatalf("snapshots after shutdown: %v", snaps)
	}
	snap := snaps[0]
	d2 := startDaemon(t, dir, false)
	req.Messages[1].Content = "two"
	resp, err := d2.client.Chat(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Usage.PromptTokensDetails.CachedTokens; c < resp.Usage.PromptTokens/2 {
		t.Fatalf("first request after restart: %d of %d tokens cached", c, resp.Usage.PromptTokens)
	}
	// Another cache layout (here the exact arithmetic's keys) keeps a
	// snapshot of its own: the first is still there for a switch back (it
	// was discarded as unusable).
	d2.stop(t)
	dq := startDaemon(t, dir, false, func(o *Options) { o.Exact = true })
	if _, err := dq.client.Chat(ctx, req); err != nil {
		t.Fatal(err)
	}
	dq.stop(t)
	if both, _ := filepath.Glob(filepath.Join(dir, "cache", "prefix-tiny-qwen2.*.snap")); len(both) != 2 || !slices.Contains(both, snap) {
		t.Fatalf("snapshots after a run in the exact arithmetic: %v (the f16 one: %s)", both, snap)
	}
	// A corrupt snapshot is discarded, not trusted.
	b, _ := os.ReadFile(snap)
	b[len(b)/2] ^= 0xff
	os.WriteFile(snap, b, 0o600)
	d3 := startDaemon(t, dir, false)
	resp, err = d3.client.Chat(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Usage.PromptTokensDetails.CachedTokens; c != 0 {
		t.Fatalf("a corrupt snapshot was used: %d cached tokens", c)
	}
}

func TestTCPNeedsToken(t *testing.T) {
	d := startDaemon(t, t.TempDir(), true)
	resp, err := http.Get("http://" + d.tcp + "/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: status %d, want 401", resp.StatusCode)
	}
	c, err := ipc.Dial(context.Background(), ipc.WithTCP(d.tcp, d.token))
	if err != nil {
		t.Fatalf("with token: %v", err)
	}
	c.Close()
	if _, err := ipc.Dial(context.Background(), ipc.WithTCP(d.tcp, "wrong")); err == nil {
		t.Fatal("a wrong token was accepted")
	}
}

// TestOtherUserRefused connects as user nobody through a socket whose file
// modes would allow it, so only the peer-credential check can refuse it.
func TestOtherUserRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	dir, _ := os.MkdirTemp("/tmp", "ruvllm-peer-")
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	d := startDaemon(t, dir, false)
	os.Chmod(filepath.Dir(d.sock), 0o755)
	os.Chmod(d.sock, 0o666)
	// The same request as root succeeds...
	if _, err := d.client.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	// ...and as nobody the connection is closed without an answer.
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", os.Args[0], "-test.run=^TestHelperPeerClient$")
	cmd.Env = append(os.Environ(), "PEER_SOCKET="+d.sock)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client as nobody: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "REFUSED") {
		t.Fatalf("client as nobody was served: %s", out)
	}
}

func TestHelperPeerClient(t *testing.T) {
	sock := os.Getenv("PEER_SOCKET")
	if sock == "" {
		t.Skip("helper process only")
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		fmt.Println("REFUSED at connect:", err)
		return
	}
	fmt.Fprint(c, "GET /v1/health HTTP/1.0\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line == "" {
		fmt.Println("REFUSED: connection closed without an answer")
		return
	}
	fmt.Println("SERVED:", line)
}

func TestDraftFlags(t *testing.T) {
	for _, tc := range []struct {
		model  string
		drafts []string
		want   map[string]string // model name -> draft file
		err    bool
	}{
		{"/m/Llama-F16.gguf", []string{"/m/llama-q4_0.gguf"}, map[string]string{"llama-f16": "/m/llama-q4_0.gguf", "other": ""}, false},
		{"", []string{"Big=/m/small.gguf", "x=/y.gguf"}, map[string]string{"big": "/m/small.gguf", "x": "/y.gguf", "small": ""}, false},
		{"", []string{"/m/small.gguf"}, nil, true}, // no default model to attach it to
		{"m", []string{"=/y.gguf"}, nil, true},
		{"m", []string{"name="}, nil, true},
		{"/m/q8.gguf", []string{"self:Q4_0", "x=self:Q2_K"}, map[string]string{"q8": "self:Q4_0", "x": "self:Q2_K"}, false},
		{"/m/q8.gguf", []string{"self:Q9_9"}, nil, true}, // not a file type: refused at start, not at the first request
	} {
		o := Options{Model: tc.model, Drafts: tc.drafts}
		draft, err := o.drafts()
		if (err != nil) != tc.err {
			t.Fatalf("%v: err = %v", tc.drafts, err)
		}
		for name, want := range tc.want {
			if got := draft(name); got != want {
				t.Errorf("%v: draft(%q) = %q, want %q", tc.drafts, name, got, want)
			}
		}
	}
}
