package hostile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/lora"
)

// TestRequestsThatKilledTheDaemon are the requests of issue 24 that took
// ruvllmd down, and their relatives: every one is answered, the daemon
// stays up, and a limit past the context is generation until it is full.
func TestRequestsThatKilledTheDaemon(t *testing.T) {
	p := start(t, startOptions{})
	for _, n := range []string{"100000000000", "4611686018427387904", "9223372036854775807"} {
		for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
			body := fmt.Sprintf(`{"model":"%s","messages":[{"role":"user","content":"hi"}],"prompt":"The","max_tokens":%s,"temperature":0}`, p.model, n)
			r := p.post(t, path, body)
			if r.status != 200 && (r.status < 400 || r.status >= 500) {
				t.Errorf("%s max_tokens %s: %d %s", path, n, r.status, r.body)
			}
			p.alive(t)
		}
		r := p.post(t, "/api/generate", fmt.Sprintf(`{"model":"%s","prompt":"The","raw":true,"stream":false,"options":{"num_predict":%s}}`, p.model, n))
		if r.status != 200 {
			t.Errorf("num_predict %s: %d %s", n, r.status, r.body)
		}
		p.alive(t)
	}
	// A top_k far past the vocabulary drops nothing (and sizes nothing):
	// the sampler once allocated candidates by it.
	for _, k := range []string{"1000000000", "9223372036854775807"} {
		r := p.post(t, "/v1/chat/completions", fmt.Sprintf(`{"model":"%s","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"top_k":%s,"top_p":0.9}`, p.model, k))
		if r.status != 200 {
			t.Errorf("top_k %s: %d %s", k, r.status, r.body)
		}
		r = p.post(t, "/api/generate", fmt.Sprintf(`{"model":"%s","prompt":"The","stream":false,"options":{"num_predict":4,"top_k":%s}}`, p.model, k))
		if r.status != 200 {
			t.Errorf("options.top_k %s: %d %s", k, r.status, r.body)
		}
		p.alive(t)
	}
	// Numbers that do not fit are a 400 naming the field.
	r := p.post(t, "/v1/chat/completions", fmt.Sprintf(`{"model":"%s","messages":[{"role":"user","content":"hi"}],"max_tokens":1e30}`, p.model))
	want4xx(t, "max_tokens 1e30", r, "max_tokens")
	r = p.post(t, "/v1/chat/completions", fmt.Sprintf(`{"model":"%s","messages":[{"role":"user","content":"hi"}],"max_tokens":-5}`, p.model))
	want4xx(t, "max_tokens -5", r, "max_tokens")

	// 20,000 and 30,000 references to one adapter: a quick 400.
	adapter := filepath.Join(p.dir, "one.gguf")
	writeAdapter(t, p.modelPath, adapter, 1)
	if r := p.post(t, "/v1/adapters", `{"path":"`+adapter+`"}`); r.status != 201 {
		t.Fatalf("install: %d %s", r.status, r.body)
	}
	for _, n := range []int{20000, 30000} {
		refs := strings.TrimSuffix(strings.Repeat(`{"name":"one"},`, n), ",")
		r := p.post(t, "/v1/chat/completions", fmt.Sprintf(`{"model":"%s","messages":[{"role":"user","content":"hi"}],"adapters":[%s]}`, p.model, refs))
		want4xx(t, fmt.Sprint(n, " adapters"), r, "adapters")
		if r.elapsed > time.Second {
			t.Errorf("%d adapters answered in %v", n, r.elapsed)
		}
	}
	r = p.post(t, "/v1/chat/completions", fmt.Sprintf(`{"model":"%s","messages":[{"role":"user","content":"hi"}],"adapters":[{"name":"one"},{"name":"one"}]}`, p.model))
	want4xx(t, "duplicate adapter", r, "a second time")
	p.alive(t)
}

// writeAdapter writes a random LoRA adapter for the model at base.
func writeAdapter(t testing.TB, base, out string, seed uint64) {
	t.Helper()
	f, err := gguf.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := lora.Random(f, lora.RandomOptions{Rank: 4, Alpha: 8, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(out); err != nil {
		t.Fatal(err)
	}
}

// TestAbsurdModelFile: a model whose context_length is 0 is refused at
// load with the key named; the daemon and its default model carry on.
func TestAbsurdModelFile(t *testing.T) {
	p := start(t, startOptions{})
	src, err := gguf.Open(p.modelPath)
	if err != nil {
		t.Fatal(err)
	}
	w := gguf.NewWriter()
	for _, kv := range src.KV {
		v := any(kv.Value)
		if kv.Key == "qwen2.context_length" {
			v = uint32(0)
		}
		w.AddKV(kv.Key, v)
	}
	for _, ti := range src.Tensors {
		data, _ := src.TensorData(ti.Name)
		w.AddTensor(ti.Name, ti.Type, ti.Shape, data)
	}
	if err := w.WriteFile(filepath.Join(p.dir, "models", "zero-ctx.gguf")); err != nil {
		t.Fatal(err)
	}
	src.Close()
	os.WriteFile(filepath.Join(p.dir, "models", "garbage.gguf"), bytes.Repeat([]byte("x"), 4096), 0o600)
	for _, c := range []struct{ model, want string }{
		{"zero-ctx", "qwen2.context_length = 0"},
		{"garbage", "not a GGUF file"},
	} {
		r := p.post(t, "/v1/chat/completions", `{"model":"`+c.model+`","messages":[{"role":"user","content":"hi"}]}`)
		want4xx(t, c.model, r, c.want)
		r = p.post(t, "/api/generate", `{"model":"`+c.model+`","prompt":"hi","stream":false}`)
		want4xx(t, c.model+" (ollama)", r, c.want)
		p.alive(t)
	}
	if r := p.post(t, "/v1/chat/completions", `{"model":"`+p.model+`","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`); r.status != 200 {
		t.Fatalf("the default model after a refused load: %d %s", r.status, r.body)
	}
}

// TestAdapterInstallAbuse: large bodies, FIFOs, other files, symlinks.
func TestAdapterInstallAbuse(t *testing.T) {
	p := start(t, startOptions{})
	peak0, _ := p.rss()

	// A 300 MB JSON body announced by Content-Length: 413 before reading.
	big := &repeatReader{head: []byte(`{"path":"`), b: 'a', n: 300 << 20}
	req, _ := http.NewRequest("POST", "http://ruvllm/v1/adapters", big)
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = int64(len(big.head)) + big.n
	start := time.Now()
	resp, err := p.http.Do(req)
	if err != nil && !strings.Contains(err.Error(), "broken pipe") && !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("300 MB body: %v", err)
	}
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 413 || bytes.Contains(b, []byte("aaaa")) {
			t.Fatalf("300 MB body: %d %.300s", resp.StatusCode, b)
		}
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("300 MB body answered after %v", el)
	}
	// Chunked (no length): refused once 8 KiB are read.
	r := p.do(t, "POST", "/v1/adapters", "application/json", io.MultiReader(strings.NewReader(`{"path":"`), &repeatReader{b: 'a', n: 50 << 20}))
	if r.status != 413 || bytes.Contains(r.body, []byte("aaaa")) {
		t.Fatalf("chunked 50 MB body: %d %.300s", r.status, r.body)
	}
	if peak, _ := p.rss(); peak-peak0 > 64<<20 {
		t.Errorf("large JSON bodies raised the peak RSS by %d MiB", (peak-peak0)>>20)
	}

	// FIFOs: refused at once, never read; many at a time block nothing.
	fifo := filepath.Join(p.dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slowest time.Duration
	for range 200 {
		wg.Go(func() {
			r := p.post(t, "/v1/adapters", `{"path":"`+fifo+`"}`)
			want4xx(t, "fifo", r, "not a regular file")
			mu.Lock()
			slowest = max(slowest, r.elapsed)
			mu.Unlock()
		})
	}
	wg.Wait()
	if slowest > 2*time.Second {
		t.Errorf("the slowest of 200 FIFO installs took %v", slowest)
	}
	p.alive(t)

	// Any file the daemon can read: named, never quoted.
	r = p.post(t, "/v1/adapters", `{"path":"/etc/passwd"}`)
	want4xx(t, "/etc/passwd", r, "not a GGUF file: /etc/passwd")
	if bytes.Contains(r.body, []byte("root")) {
		t.Fatalf("the error quotes /etc/passwd: %s", r.body)
	}
	r = p.post(t, "/v1/adapters", `{"path":"/dev/zero"}`)
	want4xx(t, "/dev/zero", r, "not a regular file")

	// A symlink dropped in the adapters folder is installed as a copy of
	// its target, which may change afterwards without effect.
	target := filepath.Join(p.dir, "target.gguf")
	writeAdapter(t, p.modelPath, target, 2)
	if err := os.Symlink(target, filepath.Join(p.dir, "drop", "linked.gguf")); err != nil {
		t.Fatal(err)
	}
	var info struct {
		File   string `json:"file"`
		SHA256 string `json:"sha256"`
	}
	deadline := time.Now().Add(10 * time.Second)
	for info.File == "" {
		if time.Now().After(deadline) {
			t.Fatalf("the dropped symlink was not installed\n%s", tail(p.log.String(), 2000))
		}
		time.Sleep(50 * time.Millisecond)
		var list []json.RawMessage
		json.Unmarshal(p.do(t, "GET", "/v1/adapters", "", nil).body, &list)
		for _, a := range list {
			if bytes.Contains(a, []byte(`"linked"`)) {
				json.Unmarshal(a, &info)
			}
		}
	}
	st, err := os.Lstat(info.File)
	if err != nil || !st.Mode().IsRegular() {
		t.Fatalf("installed %s: %v %v", info.File, st, err)
	}
	os.WriteFile(target, []byte("swapped"), 0o600)
	if r := p.post(t, "/v1/chat/completions", `{"model":"`+p.model+`","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"adapters":[{"name":"linked"}]}`); r.status != 200 {
		t.Fatalf("the installed copy after its source changed: %d %s", r.status, r.body)
	}
}

// repeatReader yields head, then n copies of b.
type repeatReader struct {
	head []byte
	b    byte
	n    int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if len(r.head) > 0 {
		n := copy(p, r.head)
		r.head = r.head[n:]
		return n, nil
	}
	if r.n <= 0 {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), r.n))
	for i := range n {
		p[i] = r.b
	}
	r.n -= int64(n)
	return n, nil
}

// TestClientMistakesAre4xx: every mistake of issue 24's list, in both
// APIs, is a 4xx naming the field (OpenAI's param where it has one).
func TestClientMistakesAre4xx(t *testing.T) {
	p := start(t, startOptions{})
	m := p.model
	chat := func(extra string) string {
		return `{"model":"` + m + `","messages":[{"role":"user","content":"hi"}]` + extra + `}`
	}
	for _, c := range []struct {
		path, body, want, param string
	}{
		{"/v1/chat/completions", `{"model":"` + m + `","messages":[{"role":"wizard","content":"hi"}]}`, "messages[0].role", "messages[0].role"},
		{"/v1/chat/completions", chat(`,"adapters":[{"name":"x","scale":1e30}]`), "adapters[0].scale", "adapters[0].scale"},
		{"/v1/chat/completions", chat(`,"logit_bias":{"999999999":5}`), "logit_bias", "logit_bias"},
		{"/v1/chat/completions", chat(`,"logit_bias":{"-3":5}`), "logit_bias", "logit_bias"},
		{"/v1/chat/completions", chat(`,"logit_bias":{"5":1000}`), "logit_bias", "logit_bias"},
		{"/v1/chat/completions", chat(`,"temperature":-1`), "temperature", "temperature"},
		{"/v1/chat/completions", chat(`,"temperature":7`), "temperature", "temperature"},
		{"/v1/chat/completions", chat(`,"top_p":2`), "top_p", "top_p"},
		{"/v1/chat/completions", chat(`,"top_k":-5`), "top_k", "top_k"},
		{"/v1/chat/completions", chat(`,"presence_penalty":9`), "presence_penalty", "presence_penalty"},
		{"/v1/chat/completions", chat(`,"top_logprobs":50,"logprobs":true`), "top_logprobs", "top_logprobs"},
		{"/v1/chat/completions", chat(`,"stop":["` + strings.Repeat("s", 600) + `"]`), "stop[0]", "stop[0]"},
		{"/v1/chat/completions", chat(`,"stop":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]`), "stop", "stop"},
		{"/v1/chat/completions", chat(`,"n":99`), "n", "n"},
		{"/v1/chat/completions", `{"model":"` + m + `","messages":"hi"}`, "messages", ""},
		{"/v1/chat/completions", `{"model":"` + m + `","messages":[]}`, "messages", "messages"},
		{"/v1/chat/completions", `{"model":"` + m + `",`, "JSON", ""},
		{"/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, "nope", ""},
		{"/v1/completions", `{"model":"` + m + `","prompt":[999999999]}`, "vocabulary", ""},
		{"/v1/completions", `{"model":"` + m + `","prompt":""}`, "prompt", "prompt"},
		{"/v1/embeddings", `{"model":"` + m + `","input":""}`, "input", "input"},
		{"/v1/embeddings", `{"model":"` + m + `","input":["a",""]}`, "input[1]", "input[1]"},
		{"/v1/embeddings", `{"model":"` + m + `","input":[]}`, "input", "input"},
		{"/api/chat", `{"model":"` + m + `","messages":[{"role":"user","content":"hi"}],"options":{"temperature":-1}}`, "options.temperature", ""},
		{"/api/chat", `{"model":"` + m + `","messages":[{"role":"user","content":"hi"}],"options":{"top_k":-5}}`, "options.top_k", ""},
		{"/api/chat", `{"model":"` + m + `","messages":[{"role":"user","content":"hi"}],"options":{"num_ctx":-1}}`, "options.num_ctx", ""},
		{"/api/chat", `{"model":"` + m + `","messages":[{"role":"user","content":"hi"}],"options":{"num_predict":-7}}`, "options.num_predict", ""},
		{"/api/chat", `{"model":"` + m + `","messages":[{"role":"wizard","content":"hi"}]}`, "messages[0].role", ""},
		{"/api/generate", `{"model":"` + m + `","prompt":"hi","options":{"repeat_penalty":-2}}`, "options.repeat_penalty", ""},
		{"/api/embed", `{"model":"` + m + `","input":{"a":1}}`, "input", ""}, // an empty input loads the model, as in Ollama
		{"/api/pull", `{"model":"Org/Repo/x\n.gguf","stream":false}`, `segment "x\n.gguf"`, ""},
		{"/api/pull", `{"model":"Org/Repo/` + strings.Repeat("a", 300) + `.gguf","stream":false}`, "invalid model reference", ""},
		{"/v1/feedback", `{"request_id":"chatcmpl-nope","rating":1}`, "chatcmpl-nope", ""},
	} {
		r := p.post(t, c.path, c.body)
		want4xx(t, c.path+" "+tail(c.body, 120), r, c.want)
		if c.param != "" {
			if _, param := errorText(r.body); param != c.param {
				t.Errorf("%s %s: param %q, want %q", c.path, tail(c.body, 80), param, c.param)
			}
		}
	}
	p.alive(t)
}

// TestSocketAndStartRefusals: ruvllmd refuses to take over what is not its
// own, cleans up after a failed start and refuses stray arguments.
func TestSocketAndStartRefusals(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.gguf")
	writeModel(t, model)
	base := []string{"--state-dir", filepath.Join(dir, "state"), "--models-dir", filepath.Join(dir, "models"),
		"--cache-dir", filepath.Join(dir, "cache"), "-m", model, "--preload=false"}

	// --socket naming a regular file: refused, the file untouched.
	file := filepath.Join(dir, "precious.txt")
	os.WriteFile(file, []byte("keep me"), 0o600)
	code, out := runCmd(t, 10*time.Second, nil, append([]string{"--socket", file}, base...)...)
	if code == 0 || !strings.Contains(out, "not a socket") {
		t.Fatalf("--socket FILE: exit %d: %s", code, out)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep me" {
		t.Fatal("--socket FILE deleted or changed the file")
	}
	// A socket directory that is a symlink (the /tmp/ruvllm-<uid> attack).
	target := filepath.Join(dir, "elsewhere")
	os.Mkdir(target, 0o700)
	link := filepath.Join(dir, "linkdir")
	os.Symlink(target, link)
	code, out = runCmd(t, 10*time.Second, nil, append([]string{"--socket", filepath.Join(link, "s.sock")}, base...)...)
	if code == 0 || !strings.Contains(out, "symlink") {
		t.Fatalf("symlinked socket dir: exit %d: %s", code, out)
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Fatal("the daemon listened inside the symlink's target")
	}
	// Without XDG_RUNTIME_DIR the default is /tmp/ruvllm-<uid>; a symlink
	// there is refused too.
	tmp := t.TempDir()
	def := filepath.Join(tmp, fmt.Sprintf("ruvllm-%d", os.Getuid()))
	os.Symlink(target, def)
	code, out = runCmd(t, 10*time.Second, []string{"XDG_RUNTIME_DIR=", "TMPDIR=" + tmp, "RUVLLM_SOCKET="}, base...)
	if code == 0 || !strings.Contains(out, "symlink") {
		t.Fatalf("symlinked /tmp/ruvllm-<uid>: exit %d: %s", code, out)
	}
	// A busy --listen address: a clean failure, no socket left behind.
	busy, _ := net.Listen("tcp", "127.0.0.1:0")
	defer busy.Close()
	sock := filepath.Join(dir, "run", "s.sock")
	code, out = runCmd(t, 10*time.Second, nil, append([]string{"--socket", sock, "--listen", busy.Addr().String()}, base...)...)
	if code == 0 || !strings.Contains(out, "address already in use") {
		t.Fatalf("busy --listen: exit %d: %s", code, out)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("busy --listen left the socket file: %v", err)
	}
	// Stray positional arguments.
	code, out = runCmd(t, 10*time.Second, nil, append([]string{"--socket", sock, "model.gguf"}, base...)...)
	if code != 2 || !strings.Contains(out, `unexpected argument "model.gguf"`) {
		t.Fatalf("positional argument: exit %d: %s", code, out)
	}
}

// TestTokenAndTCP: the token file is trusted only when it is private and
// long; TCP wants "Bearer <token>", closes after a 401, bounds idle
// connections without touching the socket.
func TestTokenAndTCP(t *testing.T) {
	dir, err := os.MkdirTemp("", "hostile-tok-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.MkdirAll(filepath.Join(dir, "state"), 0o700)
	weak := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	os.WriteFile(filepath.Join(dir, "state", "token"), []byte(weak), 0o644)
	os.Chmod(filepath.Join(dir, "state", "token"), 0o644)
	p := start(t, startOptions{tcp: true, dir: dir, args: []string{"--require-token"}})
	if p.token == weak {
		t.Fatal("a world-readable token file was used")
	}
	if st, _ := os.Stat(filepath.Join(dir, "state", "token")); st.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v", st.Mode().Perm())
	}
	get := func(auth string) int {
		req, _ := http.NewRequest("GET", "http://"+p.addr+"/v1/models", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, auth := range []string{"", p.token, "Bearer " + weak, "Token " + p.token} {
		if code := get(auth); code != 401 {
			t.Errorf("Authorization %q: %d, want 401", auth, code)
		}
	}
	if code := get("Bearer " + p.token); code != 200 {
		t.Fatalf("the token: %d", code)
	}
	// 1,000 idle connections: the socket and TCP with the token still
	// answer, and the idle ones are closed at the header timeout.
	var idle []net.Conn
	for range 1000 {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatalf("connection %d: %v", len(idle), err)
		}
		idle = append(idle, c)
	}
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	if code := get("Bearer " + p.token); code != 200 {
		t.Fatalf("the owner over TCP with 1,000 idle connections open: %d", code)
	}
	p.alive(t)
	if testing.Short() {
		return
	}
	time.Sleep(daemon.TCPHeaderTimeout + time.Second)
	open := 0
	for _, c := range idle {
		c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && os.IsTimeout(err) {
			open++
		}
	}
	if open > 0 {
		t.Fatalf("%d connections that never sent a request still open after the header timeout", open)
	}
}

// TestDisconnectMidStream: clients that vanish mid-stream free their work
// and leave the daemon serving others.
func TestDisconnectMidStream(t *testing.T) {
	p := start(t, startOptions{})
	for i := range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		path, body := "/v1/chat/completions", `{"model":"`+p.model+`","stream":true,"messages":[{"role":"user","content":"tell me"}],"max_tokens":400}`
		if i%2 == 1 {
			path, body = "/api/chat", `{"model":"`+p.model+`","messages":[{"role":"user","content":"tell me"}],"options":{"num_predict":400}}`
		}
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://ruvllm"+path, strings.NewReader(body))
		resp, err := p.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Read(make([]byte, 64))
		cancel()
		resp.Body.Close()
	}
	r := p.post(t, "/v1/chat/completions", `{"model":"`+p.model+`","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`)
	if r.status != 200 {
		t.Fatalf("after 20 disconnects: %d %s", r.status, r.body)
	}
	var h struct {
		Loaded []struct {
			Active int `json:"active_requests"`
		} `json:"loaded"`
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		json.Unmarshal(p.do(t, "GET", "/v1/health", "", nil).body, &h)
		if len(h.Loaded) == 1 && h.Loaded[0].Active == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("requests of vanished clients still active: %+v", h)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestShadowingPull: a pull may not take the default model's name.
func TestShadowingPull(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "outside", "shadowed.gguf")
	writeModel(t, model)
	p := start(t, startOptions{model: model})
	r := p.post(t, "/api/pull", `{"model":"Org/Repo/shadowed.gguf","stream":false,"registry":"http://127.0.0.1:1"}`)
	if r.status != http.StatusConflict || !strings.Contains(string(r.body), "shadow") {
		t.Fatalf("shadowing pull: %d %s", r.status, r.body)
	}
	r = p.do(t, "DELETE", "/api/delete", "application/json", strings.NewReader(`{"model":"shadowed"}`))
	want4xx(t, "delete the default by name", r, "not in the models directory")
	p.alive(t)
	if _, err := os.Stat(model); err != nil {
		t.Fatal("the default model's file is gone")
	}
}
