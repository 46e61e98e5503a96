package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/store"
	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/ipc"
)

// TestShutdownEndsStreamsInTheirProtocol stops the daemon while an OpenAI
// and an Ollama stream are generating, with a short grace period: each
// stream gets its protocol's error event (and OpenAI's [DONE]) instead of
// a cut connection, and the cut requests are on record afterwards.
func TestShutdownEndsStreamsInTheirProtocol(t *testing.T) {
	dir := t.TempDir()
	model := writeModel(t, dir)
	ids, err := testmodel.ControlTokens(model)
	if err != nil {
		t.Fatal(err)
	}
	bans := map[string]float32{}
	for _, id := range ids {
		bans[fmt.Sprint(id)] = -100
	}
	sock := filepath.Join(dir, "run", "ruvllm.sock")
	cfg := daemon.Config{SocketPath: sock, StateDir: filepath.Join(dir, "state"), ModelsDir: filepath.Join(dir, "models"),
		CacheDir: filepath.Join(dir, "cache"), MaxBodyBytes: 64 << 10, Threads: 2, Version: "test",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Config: cfg, Model: "tiny-qwen2", KeepAlive: time.Minute, Grace: 300 * time.Millisecond})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := ipc.Dial(context.Background(), ipc.WithSocket(sock))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return ipc.DialSocket(ctx, sock)
	}}}
	biasJSON, _ := json.Marshal(bans)
	open := func(path, body string) *bufio.Reader {
		resp, err := hc.Post("http://ruvllm"+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return bufio.NewReader(resp.Body)
	}
	// Endless replies: control tokens banned, no limit but the context.
	openai := open("/v1/chat/completions", fmt.Sprintf(`{"model":"tiny-qwen2","stream":true,"messages":[{"role":"user","content":"go on"}],"logit_bias":%s,"temperature":0}`, biasJSON))
	ollama := open("/api/chat", `{"model":"tiny-qwen2","messages":[{"role":"user","content":"go on and on"}],"options":{"temperature":0,"num_predict":-1}}`)
	for _, r := range []*bufio.Reader{openai, ollama} {
		if _, err := r.ReadString('\n'); err != nil { // the first chunk: both are streaming
			t.Fatal(err)
		}
	}
	cancel() // SIGTERM
	readAll := func(r *bufio.Reader) []string {
		var lines []string
		for {
			l, err := r.ReadString('\n')
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
			if err != nil {
				return lines
			}
		}
	}
	ol := readAll(openai)
	if len(ol) < 2 || ol[len(ol)-1] != "data: [DONE]" || !strings.Contains(ol[len(ol)-2], `"error"`) ||
		!strings.Contains(ol[len(ol)-2], "shutting down") {
		t.Fatalf("OpenAI stream ended with %q", ol[max(len(ol)-2, 0):])
	}
	nl := readAll(ollama)
	last := nl[len(nl)-1]
	var e struct{ Error string }
	if json.Unmarshal([]byte(last), &e) != nil || !strings.Contains(e.Error, "shutting down") {
		// The Ollama reply may have reached the end of the context first.
		if !strings.Contains(last, `"done":true`) {
			t.Fatalf("Ollama stream ended with %q", last)
		}
		t.Logf("the Ollama reply ended before the shutdown (%d lines)", len(nl))
	} else {
		t.Logf("the Ollama stream ended with %s", last)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("daemon did not stop")
	}
	// The cut requests were recorded before the store closed.
	db, err := store.Open(filepath.Join(dir, "state", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	recs, err := db.RecentRequests(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	endpoints := map[string]bool{}
	for _, r := range recs {
		endpoints[r.Endpoint] = true
	}
	if !endpoints["chat.completions"] || !endpoints["api.chat"] {
		t.Fatalf("request log after shutdown: %+v", recs)
	}
}
