package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/learning"
	"github.com/ruvllm/ruvllm/daemon/store"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/engine/sona"
	"github.com/ruvllm/ruvllm/ipc"
)

// startLearning runs a daemon with learning options of the test's own.
func startLearning(t *testing.T, dir string, lo learning.Options) *testDaemon {
	t.Helper()
	d := &testDaemon{dir: dir, sock: filepath.Join(dir, "run", "ruvllm.sock"), done: make(chan error, 1)}
	d.model = filepath.Join(dir, "models", "tiny-qwen2.gguf")
	if _, err := os.Stat(d.model); err != nil {
		d.model = writeModel(t, dir)
	}
	cfg := daemon.Config{SocketPath: d.sock, StateDir: filepath.Join(dir, "state"), ModelsDir: filepath.Join(dir, "models"),
		CacheDir: filepath.Join(dir, "cache"), MaxBodyBytes: 1 << 20, Threads: 2, Version: "test",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	go func() {
		d.done <- Run(ctx, Options{Config: cfg, Model: "tiny-qwen2", KeepAlive: time.Minute, Preload: true, Learning: lo})
	}()
	deadline := time.Now().Add(20 * time.Second)
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
	t.Cleanup(func() { d.stop(t) })
	return d
}

// call sends a request over the socket with optional headers.
func (d *testDaemon) call(t *testing.T, method, path, body string, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", d.sock)
	}}}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, "http://ruvllm"+path, rd)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// chatLogprob asks the fixed question greedily and returns the reply's
// id, text, the learning header and the first token's log-probability.
func (d *testDaemon) chatLogprob(t *testing.T, extra string, hdr map[string]string) (id, text, label string, lp float32) {
	t.Helper()
	body := `{"model":"tiny-qwen2","messages":[{"role":"user","content":"What is a pipe?"}],"max_tokens":6,"temperature":0,"logprobs":true` + extra + `}`
	status, h, b := d.call(t, "POST", "/v1/chat/completions", body, hdr)
	if status != 200 {
		t.Fatalf("chat: %d %s", status, b)
	}
	var resp struct {
		ID      string `json:"id"`
		Choices []struct {
			Message  struct{ Content string } `json:"message"`
			Logprobs struct {
				Content []struct {
					Logprob float32 `json:"logprob"`
				} `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &resp); err != nil || len(resp.Choices) != 1 || len(resp.Choices[0].Logprobs.Content) == 0 {
		t.Fatalf("chat answer %s: %v", b, err)
	}
	return resp.ID, resp.Choices[0].Message.Content, h.Get("X-Ruvllm-Learning"), resp.Choices[0].Logprobs.Content[0].Logprob
}

// learningScope returns the user scope of the test model.
func (d *testDaemon) learningScope(t *testing.T) ipc.LearningScope {
	t.Helper()
	st, err := d.client.Learning(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range st.Models {
		for _, s := range m.Scopes {
			if s.Scope == learning.UserScope {
				return s
			}
		}
	}
	return ipc.LearningScope{}
}

// waitScope polls the scope until ok or the time is up.
func (d *testDaemon) waitScope(t *testing.T, what string, ok func(ipc.LearningScope) bool) ipc.LearningScope {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := d.learningScope(t)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: scope %+v", what, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLearningEndToEnd drives learning through the daemon's API: a
// correction is learned by the instant loop and applied to the next
// request (its log-probabilities change, the response names the new
// version), a request can opt out, undo and reset bring the base model's
// outputs back exactly, export writes a GGUF LoRA file that loads against
// the model, and a restart restores the learned state.
func TestLearningEndToEnd(t *testing.T) {
	dir := t.TempDir()
	d := startLearning(t, dir, learning.Options{Config: learningTestConfig()})
	id, _, label, base := d.chatLogprob(t, "", nil)
	if label != "none" {
		t.Fatalf("before any feedback the reply applied %q", label)
	}
	// A correction: stored, then learned.
	status, _, b := d.call(t, "POST", "/v1/feedback", `{"request_id":"`+id+`","rating":-1,"correction":"A pipe joins two programs. Cheers, Ana."}`, nil)
	if status != 201 {
		t.Fatalf("feedback: %d %s", status, b)
	}
	var fb ipc.Feedback
	if err := json.Unmarshal(b, &fb); err != nil || fb.Learning == nil {
		t.Fatalf("feedback answer %s: %v", b, err)
	}
	switch fb.Learning.Status {
	case ipc.LearnApplied:
		if fb.Learning.AppliedAt == nil || fb.Learning.Version == 0 || fb.Learning.LatencyMillis <= 0 {
			t.Fatalf("applied without its figures: %+v", fb.Learning)
		}
	case ipc.LearnQueued: // the learner was still preparing; the scope says when
	default:
		t.Fatalf("feedback learning %+v", fb.Learning)
	}
	sc := d.waitScope(t, "the correction is learned", func(s ipc.LearningScope) bool { return s.Applied == 1 && s.Unlearned == 0 })
	if sc.Received != 1 || sc.Version == 0 || len(sc.History) != 1 || sc.History[0].Kind != "feedback" || !sc.CanUndo || len(sc.Adapters) != 1 {
		t.Fatalf("after one correction: %+v", sc)
	}
	t.Logf("feedback: %+v; scope after it: version %d, loss %v", *fb.Learning, sc.Version, sc.History[0])
	_, _, label, learned := d.chatLogprob(t, "", nil)
	t.Logf("first-token logprob: base %v, learned %v (%s)", base, learned, label)
	if !strings.HasPrefix(label, "user@v") || learned == base {
		t.Fatalf("after learning: label %q, logprob %v (base %v)", label, learned, base)
	}
	// Opting out: the base model exactly.
	if _, _, label, lp := d.chatLogprob(t, `,"adapters":"none"`, nil); label != "off" || lp != base {
		t.Fatalf(`"adapters":"none": label %q, logprob %v, want off and %v`, label, lp, base)
	}
	if _, _, label, lp := d.chatLogprob(t, "", map[string]string{"X-Ruvllm-Learning": "off"}); label != "off" || lp != base {
		t.Fatalf("X-Ruvllm-Learning: off: label %q, logprob %v, want off and %v", label, lp, base)
	}
	// Bad input names the field.
	for _, c := range []struct{ path, body, param string }{
		{"/v1/feedback", `{"request_id":"` + id + `","rating":1,"signal":"shrug"}`, "signal"},
		{"/v1/feedback", `{"request_id":"` + id + `","rating":1,"signal":"regenerate"}`, "rating"},
		{"/v1/learning/pause", `{"scope":"everyone"}`, "scope"},
	} {
		status, _, b := d.call(t, "POST", c.path, c.body, nil)
		var e ipc.OpenAIError
		json.Unmarshal(b, &e)
		if status != 400 || e.Error.Param == nil || *e.Error.Param != c.param {
			t.Errorf("%s %s: %d %s, want 400 naming %s", c.path, c.body, status, b, c.param)
		}
	}
	if status, _, b := d.call(t, "POST", "/v1/learning/forget", "", nil); status != 404 {
		t.Errorf("unknown action: %d %s", status, b)
	}
	// Undo: the base model's outputs exactly.
	res, err := d.client.LearningAction(context.Background(), "undo", "", "")
	if err != nil || len(res.Scopes) != 1 || res.Scopes[0].CanUndo || res.Scopes[0].Applied != 0 {
		t.Fatalf("undo: %+v %v", res, err)
	}
	if _, _, label, lp := d.chatLogprob(t, "", nil); label != "none" || lp != base {
		t.Fatalf("after undo: label %q, logprob %v, want none and %v", label, lp, base)
	}
	if _, err := d.client.LearningAction(context.Background(), "undo", "", ""); err == nil || !strings.Contains(err.Error(), "undo") {
		t.Fatalf("second undo: %v", err)
	}
	// Pause: feedback waits; resume learns it.
	if _, err := d.client.LearningAction(context.Background(), "pause", "", ""); err != nil {
		t.Fatal(err)
	}
	id2, _, _, _ := d.chatLogprob(t, "", nil)
	fb2, err := d.client.SendFeedback(context.Background(), ipc.FeedbackRequest{RequestID: id2, Rating: -1, Correction: "Pipes connect programs. Cheers, Ana."})
	if err != nil || fb2.Learning == nil {
		t.Fatalf("feedback while paused: %+v %v", fb2, err)
	}
	d.waitScope(t, "paused feedback is pending", func(s ipc.LearningScope) bool { return s.Paused && s.Pending == 1 && s.Unlearned == 0 })
	if _, _, label, lp := d.chatLogprob(t, "", nil); label != "none" || lp != base {
		t.Fatalf("paused: label %q, logprob %v", label, lp)
	}
	if res, err := d.client.LearningAction(context.Background(), "resume", "", ""); err != nil || res.Scopes[0].Pending != 0 || res.Scopes[0].Applied != 1 {
		t.Fatalf("resume: %+v %v", res, err)
	}
	// Export consolidates and writes a GGUF LoRA file of the model.
	var gg bytes.Buffer
	if _, err := d.client.ExportLearning(context.Background(), "", "", &gg); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(gg.Bytes())
	if err != nil {
		t.Fatalf("export is not GGUF: %v", err)
	}
	mf, err := gguf.Open(d.model)
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	if _, err := lora.LoadGGUF(f, mf, nil); err != nil {
		t.Fatalf("export does not load as a LoRA of the model: %v", err)
	}
	sc = d.learningScope(t)
	if sc.Consolidations != 1 || sc.Queued != 0 {
		t.Fatalf("after export: %+v", sc)
	}
	_, _, label, before := d.chatLogprob(t, "", nil)
	// A restart restores everything.
	d.stop(t)
	d = startLearning(t, dir, learning.Options{Config: learningTestConfig()})
	// The first request after the load applies what the scope learned: it
	// waits for the restore (it was answered without the adapters).
	if _, _, l0, lp0 := d.chatLogprob(t, "", nil); l0 != label || lp0 != before {
		t.Fatalf("first request after the restart: %q %v, before %q %v", l0, lp0, label, before)
	}
	again := d.waitScope(t, "restored", func(s ipc.LearningScope) bool { return s.Version == sc.Version })
	if again.Received != sc.Received || again.Consolidations != 1 || again.Applied != sc.Applied {
		t.Fatalf("restored %+v, saved %+v", again, sc)
	}
	// So does the request that loads the model (unloaded by keep_alive 0).
	if status, _, b := d.call(t, "POST", "/api/generate", `{"model":"tiny-qwen2","keep_alive":0}`, nil); status != 200 {
		t.Fatalf("unload: %d %s", status, b)
	}
	if _, _, l0, lp0 := d.chatLogprob(t, "", nil); l0 != label || lp0 != before {
		t.Fatalf("the request that loaded the model again: %q %v, before %q %v", l0, lp0, label, before)
	}
	if _, _, l2, lp := d.chatLogprob(t, "", nil); l2 != label || lp != before {
		t.Fatalf("after restart: %q %v, before %q %v", l2, lp, label, before)
	}
	// Reset: the base model exactly.
	if _, err := d.client.LearningAction(context.Background(), "reset", "", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, label, lp := d.chatLogprob(t, "", nil); label != "none" || lp != base {
		t.Fatalf("after reset: label %q, logprob %v, want none and %v", label, lp, base)
	}
}

// learningTestConfig keeps the tiny model's loops quick.
func learningTestConfig() sona.Config {
	c := sona.Config{}
	c.MicroSteps, c.ConsolidateSteps, c.GeneralFisherRows = 2, 4, 2
	return c
}

// TestLearningRoutingAndRegenerate: ratings of replies made with two
// installed adapters become trajectories, and "adapters": "auto" routes a
// like request to the adapter rated up; a conversation update that drops
// the last reply the way the app's regenerate does is learned as a
// regenerate signal.
func TestLearningRoutingAndRegenerate(t *testing.T) {
	dir := t.TempDir()
	d := startLearning(t, dir, learning.Options{Config: learningTestConfig()})
	ctx := context.Background()
	for i, name := range []string{"alpha", "beta"} {
		path := filepath.Join(dir, name+".gguf")
		f, err := gguf.Open(d.model)
		if err != nil {
			t.Fatal(err)
		}
		w, err := lora.Random(f, lora.RandomOptions{Rank: 2, Alpha: 2, Seed: uint64(i + 1)})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		if _, err := d.client.InstallAdapterPath(ctx, path, name); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		adapter string
		rating  int
	}{{"alpha", 1}, {"beta", -1}} {
		id, _, _, _ := d.chatLogprob(t, `,"adapters":[{"name":"`+c.adapter+`"}]`, nil)
		if _, err := d.client.SendFeedback(ctx, ipc.FeedbackRequest{RequestID: id, Rating: c.rating}); err != nil {
			t.Fatal(err)
		}
	}
	d.waitScope(t, "two ratings learned", func(s ipc.LearningScope) bool { return s.Received == 2 && s.Unlearned == 0 && s.Trajectories == 2 })
	_, h, b := d.call(t, "POST", "/v1/chat/completions",
		`{"model":"tiny-qwen2","messages":[{"role":"user","content":"What is a pipe?"}],"max_tokens":2,"adapters":"auto"}`, nil)
	if got := h.Get("X-Ruvllm-Adapter"); got != "alpha" {
		t.Fatalf(`"adapters":"auto" routed to %q, want alpha (%s)`, got, b)
	}
	// Ollama's options.adapters takes the same string forms.
	_, h, b = d.call(t, "POST", "/api/chat",
		`{"model":"tiny-qwen2","messages":[{"role":"user","content":"What is a pipe?"}],"stream":false,"options":{"num_predict":2,"adapters":"auto"}}`, nil)
	if got := h.Get("X-Ruvllm-Adapter"); got != "alpha" || !strings.HasPrefix(h.Get("X-Ruvllm-Learning"), "user@v") {
		t.Fatalf(`ollama "adapters":"auto": adapter %q, learning %q (%s)`, got, h.Get("X-Ruvllm-Learning"), b)
	}
	_, h, _ = d.call(t, "POST", "/api/generate", `{"model":"tiny-qwen2","prompt":"hi","stream":false,"options":{"num_predict":2,"adapters":"none"}}`, nil)
	if got := h.Get("X-Ruvllm-Learning"); got != "off" {
		t.Fatalf(`ollama "adapters":"none": learning %q`, got)
	}
	status, _, b := d.call(t, "POST", "/v1/chat/completions", `{"model":"tiny-qwen2","messages":[{"role":"user","content":"x"}],"adapters":"best"}`, nil)
	if status != 400 || !strings.Contains(string(b), "auto") {
		t.Fatalf(`"adapters":"best": %d %s`, status, b)
	}

	// Regenerate: the app cuts the thread after the user's message.
	id, text, _, _ := d.chatLogprob(t, "", nil)
	conv, err := d.client.CreateConversation(ctx, ipc.ConversationCreate{Title: "t", Messages: []ipc.ConversationMessage{
		{Role: "user", Content: "What is a pipe?"}, {Role: "assistant", Content: text, RequestID: id}}})
	if err != nil {
		t.Fatal(err)
	}
	kept := conv.Messages[:1]
	if _, err := d.client.UpdateConversation(ctx, conv.ID, ipc.ConversationUpdate{Messages: &kept}); err != nil {
		t.Fatal(err)
	}
	sc := d.waitScope(t, "regenerate learned", func(s ipc.LearningScope) bool { return s.Received == 3 && s.Unlearned == 0 })
	if last := sc.History[len(sc.History)-1]; last.Signal != "regenerate" {
		t.Fatalf("last learned signal %+v", last)
	}
	fbs, err := d.client.Feedback(ctx, 1)
	if err != nil || len(fbs) != 1 || fbs[0].Signal != ipc.SignalRegenerate || fbs[0].RequestID != id {
		t.Fatalf("stored regenerate: %+v %v", fbs, err)
	}
	// A regenerate does not replace a rating.
	if _, err := d.client.SendFeedback(ctx, ipc.FeedbackRequest{RequestID: id, Rating: 1}); err != nil {
		t.Fatal(err)
	}
	status, _, b = d.call(t, "POST", "/v1/feedback", `{"request_id":"`+id+`","signal":"regenerate"}`, nil)
	if status != 409 {
		t.Fatalf("regenerate of a rated reply: %d %s", status, b)
	}
}

// TestLearningPerAppBackgroundAndDeep: with per-app scopes, an app's
// feedback learns in its own scope; the background loop consolidates it
// and, once enough exchanges have accumulated, runs the deep loop.
func TestLearningPerAppBackgroundAndDeep(t *testing.T) {
	c := learningTestConfig()
	c.DeepMin, c.ValidationEvery, c.DeepEpochs = 2, 2, 2
	d := startLearning(t, t.TempDir(), learning.Options{Config: c, PerApp: true, Interval: 300 * time.Millisecond, DeepEvery: 2})
	notes := map[string]string{"X-Ruvllm-Client": "notes"}
	for i := range 4 {
		id, _, _, _ := d.chatLogprob(t, "", notes)
		body := `{"request_id":"` + id + `","rating":-1,"correction":"Answer ` + string(rune('a'+i)) + `. Cheers, Ana."}`
		if status, _, b := d.call(t, "POST", "/v1/feedback", body, nil); status != 201 {
			t.Fatalf("feedback: %d %s", status, b)
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		st, err := d.client.Learning(context.Background(), "app:notes", "")
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Models) != 1 || !st.PerApp {
			t.Fatalf("status %+v", st)
		}
		if len(st.Models[0].Scopes) == 1 {
			s := st.Models[0].Scopes[0]
			if s.Scope != "app:notes" || s.Received > 4 {
				t.Fatalf("scope %+v", s)
			}
			if s.Received == 4 && s.Consolidations > 0 && s.DeepRuns > 0 && len(s.Candidates) > 0 {
				t.Logf("notes: %d applied, %d reserved for validation, %d consolidations, deep candidate %+v", s.Applied, s.Validation, s.Consolidations, s.Candidates[0])
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no consolidation and deep run: %+v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if s := d.learningScope(t); s.Received != 0 {
		t.Fatalf("the user scope learned the app's feedback: %+v", s)
	}
}

// TestLearningStateSetAside: a stored state that does not decode (or fit
// the model) is moved aside, not lost, and the scope starts afresh.
func TestLearningStateSetAside(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "state"), 0o700)
	db, err := store.Open(filepath.Join(dir, "state", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SaveLearning(context.Background(), store.LearningKey("tiny-qwen2", "user"), []byte("SONA garbage"), nil, nil); err != nil {
		t.Fatal(err)
	}
	db.Close()
	d := startLearning(t, dir, learning.Options{Config: learningTestConfig()})
	for deadline := time.Now().Add(60 * time.Second); ; {
		st, err := d.client.Learning(context.Background(), "", "")
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Models) == 1 && st.Models[0].Status == "ready" {
			if len(st.Models[0].Scopes) != 0 {
				t.Fatalf("a damaged state was loaded: %+v", st.Models[0].Scopes)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	d.stop(t)
	db, err = store.Open(filepath.Join(dir, "state", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := db.LearningAside(); n != 1 {
		t.Fatalf("%d states set aside, want 1", n)
	}
	if st, err := db.LearningStates(context.Background(), "tiny-qwen2"); err != nil || len(st) != 0 {
		t.Fatalf("states left: %d %v", len(st), err)
	}
}

// TestLearningUnlearnableRating: a rating of an empty answer (the stop
// sequence cut it at its first character) is stored, counted once as
// unlearnable and cleared from the unlearned index, and the count
// survives a restart: received + unlearnable is every stored rating.
func TestLearningUnlearnableRating(t *testing.T) {
	dir := t.TempDir()
	d := startLearning(t, dir, learning.Options{Config: learningTestConfig()})
	ctx := context.Background()
	_, text, _, _ := d.chatLogprob(t, "", nil)
	if text == "" {
		t.Fatal("the greedy answer is empty already")
	}
	stop, _ := json.Marshal(text[:1])
	status, _, b := d.call(t, "POST", "/v1/chat/completions",
		`{"model":"tiny-qwen2","messages":[{"role":"user","content":"What is a pipe?"}],"max_tokens":6,"temperature":0,"stop":[`+string(stop)+`]}`, nil)
	var resp struct {
		ID      string `json:"id"`
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &resp); status != 200 || err != nil || len(resp.Choices) != 1 || resp.Choices[0].Message.Content != "" {
		t.Fatalf("chat cut by its stop sequence: %d %s %v", status, b, err)
	}
	if _, err := d.client.SendFeedback(ctx, ipc.FeedbackRequest{RequestID: resp.ID, Rating: 1}); err != nil {
		t.Fatal(err)
	}
	id, _, _, _ := d.chatLogprob(t, "", nil)
	if _, err := d.client.SendFeedback(ctx, ipc.FeedbackRequest{RequestID: id, Rating: 1}); err != nil {
		t.Fatal(err)
	}
	ok := func(s ipc.LearningScope) bool { return s.Received == 1 && s.Unlearnable == 1 && s.Unlearned == 0 }
	d.waitScope(t, "one rating learned, one unlearnable", ok)
	d.stop(t)
	d = startLearning(t, dir, learning.Options{Config: learningTestConfig()})
	// Give a replay (there must be none) the time to run.
	time.Sleep(500 * time.Millisecond)
	if s := d.waitScope(t, "the counts restored", ok); s.Received != 1 {
		t.Fatalf("after the restart: %+v", s)
	}
}
