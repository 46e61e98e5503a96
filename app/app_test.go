package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/internal/testdaemon"
	"github.com/ruvllm/ruvllm/ipc"
)

// recorder collects emitted events.
type recorder struct {
	mu     sync.Mutex
	events []recorded
	notify chan struct{}
}

type recorded struct {
	name string
	data any
}

func newRecorder() *recorder { return &recorder{notify: make(chan struct{}, 1)} }

func (r *recorder) emit(name string, data any) {
	r.mu.Lock()
	r.events = append(r.events, recorded{name, data})
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// wait returns the first event after index from named name that matches
// ok, failing the test after a timeout.
func (r *recorder) wait(t *testing.T, from int, ok func(recorded) bool) (recorded, int) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		r.mu.Lock()
		for i := from; i < len(r.events); i++ {
			if ok(r.events[i]) {
				e := r.events[i]
				r.mu.Unlock()
				return e, i
			}
		}
		r.mu.Unlock()
		select {
		case <-r.notify:
		case <-deadline:
			t.Fatalf("event not seen; got %d events", r.len())
		}
	}
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// tokens joins the chat:token texts of a conversation from index from.
func (r *recorder) tokens(from int, conv string) (string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	n := 0
	for _, e := range r.events[from:] {
		if tok, ok := e.data.(ChatToken); ok && tok.ConversationID == conv {
			b.WriteString(tok.Text)
			n++
		}
	}
	return b.String(), n
}

func named(name string) func(recorded) bool {
	return func(e recorded) bool { return e.name == name }
}

// ended matches chat:done or chat:error of a conversation.
func ended(conv string) func(recorded) bool {
	return func(e recorded) bool {
		switch d := e.data.(type) {
		case ChatDone:
			return d.ConversationID == conv
		case ChatError:
			return d.ConversationID == conv
		}
		return false
	}
}

// startApp runs a daemon with the synthetic model and an App connected
// to it.
func startApp(t *testing.T) (*App, *recorder, *testdaemon.Daemon) {
	t.Helper()
	return startAppWith(t, testdaemon.Options{})
}

// startAppWith is startApp with the daemon's options (its directory is
// the test's).
func startAppWith(t *testing.T, o testdaemon.Options) (*App, *recorder, *testdaemon.Daemon) {
	t.Helper()
	o.Dir = t.TempDir()
	d, err := testdaemon.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	rec := newRecorder()
	a := New(Config{Socket: d.Socket, Model: testdaemon.ModelName, TracePath: filepath.Join(t.TempDir(), "trace.jsonl")}, rec.emit)
	a.Start(context.Background())
	t.Cleanup(a.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return a, rec, d
}

func greedy(t *testing.T, a *App, conv string, maxTokens int) {
	t.Helper()
	temp := float32(0)
	if _, err := a.SetSampling(conv, Sampling{Temperature: &temp, MaxTokens: maxTokens}); err != nil {
		t.Fatal(err)
	}
}

func TestSendMessageStreamsAndStores(t *testing.T) {
	a, rec, d := startApp(t)
	if st := a.Status(); st.State != StateReady || st.Version != "test" || st.Started {
		t.Fatalf("status %+v", st)
	}
	conv, err := a.CreateConversation("")
	if err != nil {
		t.Fatal(err)
	}
	greedy(t, a, conv.ID, 16)
	from := rec.len()
	user, err := a.SendMessage(conv.ID, "  What is a spinlock?  ")
	if err != nil {
		t.Fatal(err)
	}
	if user.ID == "" || user.Role != "user" || user.Content != "What is a spinlock?" {
		t.Fatalf("stored user message %+v", user)
	}
	e, _ := rec.wait(t, from, ended(conv.ID))
	done, ok := e.data.(ChatDone)
	if !ok {
		t.Fatalf("reply failed: %+v", e.data)
	}
	text, n := rec.tokens(from, conv.ID)
	if n == 0 || text != done.Message.Content {
		t.Fatalf("streamed %q in %d tokens, stored %q", text, n, done.Message.Content)
	}
	if !strings.HasPrefix(done.CompletionID, "chatcmpl") || done.Message.RequestID != done.CompletionID || done.Message.ID == "" {
		t.Fatalf("done %+v", done)
	}
	if s := done.Stats; s.CompletionTokens == 0 || s.CompletionTokens > 16 || s.PromptTokens < 5 || s.TTFTMillis <= 0 {
		t.Fatalf("stats %+v", s)
	}
	got, err := a.LoadConversation(conv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 2 || got.Messages[1].Content != done.Message.Content || got.Title != "What is a spinlock?" {
		t.Fatalf("stored conversation %+v", got)
	}
	// The daemon logged the request under the app's name.
	recs, err := d.Client.Requests(context.Background(), 1)
	if err != nil || len(recs) != 1 || recs[0].Client != AppName || recs[0].CompletionTokens != done.Stats.CompletionTokens {
		t.Fatalf("request log %+v, %v", recs, err)
	}
	// A second turn reuses the cached prefix of the first.
	from = rec.len()
	if _, err := a.SendMessage(conv.ID, "And a mutex?"); err != nil {
		t.Fatal(err)
	}
	e, _ = rec.wait(t, from, ended(conv.ID))
	if d2, ok := e.data.(ChatDone); !ok || d2.Stats.CachedTokens == 0 {
		t.Fatalf("second reply %+v: want cached prompt tokens", e.data)
	}
	// The trace file has one line per reply.
	f, err := os.Open(a.cfg.TracePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []TraceLine
	ready := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l TraceLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		switch l.Event {
		case EventChatDone:
			lines = append(lines, l)
		case EventStatus:
			ready = ready || l.State == StateReady
		}
	}
	if len(lines) != 2 || lines[0].CompletionID != done.CompletionID || lines[0].ConversationID != conv.ID ||
		lines[0].Tokens != done.Stats.CompletionTokens || lines[1].Prompt != "And a mutex?" {
		t.Fatalf("trace %+v", lines)
	}
	if !ready {
		t.Fatal("trace has no ready line")
	}
	st, err := a.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Replies) != 2 || len(st.Cache) != 1 || st.Cache[0].HitTokens == 0 || st.Memory <= 0 || len(st.Loaded) != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestStopCancelsWithinATokenAndKeepsText(t *testing.T) {
	a, rec, d := startApp(t)
	conv, err := a.CreateConversation("stop me")
	if err != nil {
		t.Fatal(err)
	}
	bans, err := testdaemon.ControlTokenBans(d.ModelPath)
	if err != nil {
		t.Fatal(err)
	}
	// The tiny model decodes thousands of tokens a second: forbid it to end
	// on its own so the stop is what ends the reply.
	if _, err := a.update(conv.ID, ipc.ConversationUpdate{Sampling: &ipc.SamplingFields{MaxTokens: 4000, LogitBias: bans}}); err != nil {
		t.Fatal(err)
	}
	from := rec.len()
	if _, err := a.SendMessage(conv.ID, "go on forever"); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, from, named(EventChatToken))
	if _, err := a.SendMessage(conv.ID, "again"); !errors.Is(err, ErrBusy) {
		t.Fatalf("second send while streaming: %v", err)
	}
	a.Stop(conv.ID)
	if a.Streaming(conv.ID) {
		t.Fatal("still streaming after Stop returned")
	}
	e, _ := rec.wait(t, from, ended(conv.ID))
	ce, ok := e.data.(ChatError)
	if !ok || !ce.Stopped || ce.Message == nil {
		t.Fatalf("end event %+v: want stopped with the partial message", e.data)
	}
	text, _ := rec.tokens(from, conv.ID)
	if ce.Message.Content != text {
		t.Fatalf("kept %q, streamed %q", ce.Message.Content, text)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs, _ := d.Client.Requests(context.Background(), 1)
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
}

func TestRegenerateReplacesLastReply(t *testing.T) {
	a, rec, _ := startApp(t)
	conv, err := a.CreateConversation("regen")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Regenerate(conv.ID); err == nil {
		t.Fatal("regenerate of an empty conversation succeeded")
	}
	// Sampled, not greedy: two replies differ with a different seed.
	temp, seed := float32(1.5), int64(1)
	if _, err := a.SetSampling(conv.ID, Sampling{Temperature: &temp, Seed: &seed, MaxTokens: 12}); err != nil {
		t.Fatal(err)
	}
	from := rec.len()
	a.SendMessage(conv.ID, "hello")
	e, _ := rec.wait(t, from, ended(conv.ID))
	first := e.data.(ChatDone)
	seed = 2
	a.SetSampling(conv.ID, Sampling{Temperature: &temp, Seed: &seed, MaxTokens: 12})
	from = rec.len()
	if err := a.Regenerate(conv.ID); err != nil {
		t.Fatal(err)
	}
	e, _ = rec.wait(t, from, ended(conv.ID))
	second, ok := e.data.(ChatDone)
	if !ok || second.CompletionID == first.CompletionID || second.Message.ID == first.Message.ID {
		t.Fatalf("regenerated %+v after %+v", e.data, first)
	}
	got, _ := a.LoadConversation(conv.ID)
	if len(got.Messages) != 2 || got.Messages[0].Content != "hello" || got.Messages[1].ID != second.Message.ID {
		t.Fatalf("thread after regenerate: %+v", got.Messages)
	}
	if second.Message.Content == first.Message.Content {
		t.Fatalf("regenerated reply equals the first (%q) despite a new seed", first.Message.Content)
	}
}

// TestLongChatLeavesEarlierMessagesOut: once a conversation outgrows the
// model's context (256 tokens here), a reply still comes, its stats say
// how many earlier messages were left out (what the app shows), and they
// are stored with the reply. (engine/llm's tests prove which messages go.)
func TestLongChatLeavesEarlierMessagesOut(t *testing.T) {
	a, rec, d := startAppWith(t, testdaemon.Options{ContextLength: 256})
	conv, err := a.CreateConversation("long")
	if err != nil {
		t.Fatal(err)
	}
	greedy(t, a, conv.ID, 8)
	if _, err := a.SetSystemPrompt(conv.ID, "You explain the kernel."); err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for turn := 0; turn < 12 && dropped == 0; turn++ {
		from := rec.len()
		if _, err := a.SendMessage(conv.ID, fmt.Sprintf("Turn %d: tell me about page reclaim.", turn)); err != nil {
			t.Fatal(err)
		}
		e, _ := rec.wait(t, from, ended(conv.ID))
		done, ok := e.data.(ChatDone)
		if !ok {
			t.Fatalf("turn %d failed: %+v", turn, e.data)
		}
		if dropped = done.Stats.DroppedMessages; dropped > 0 {
			if done.Stats.DroppedTokens == 0 || done.Stats.PromptTokens >= 256 || dropped%2 != 0 {
				t.Fatalf("turn %d stats %+v: want whole turns and their tokens left out", turn, done.Stats)
			}
			stored, err := a.LoadConversation(conv.ID)
			if err != nil {
				t.Fatal(err)
			}
			last := stored.Messages[len(stored.Messages)-1]
			if last.Stats == nil || last.Stats.DroppedMessages != dropped {
				t.Fatalf("stored reply stats %+v", last.Stats)
			}
		}
	}
	if dropped == 0 {
		t.Fatal("12 turns never outgrew a 256-token context")
	}
	// The request asked for that: context_overflow shift, from the app.
	recs, err := d.Client.Requests(context.Background(), 1)
	if err != nil || len(recs) != 1 || recs[0].PromptTokens >= 256 {
		t.Fatalf("request log %+v, %v", recs, err)
	}
}

func TestConversationSettingsReachTheRequest(t *testing.T) {
	a, rec, d := startApp(t)
	conv, err := a.CreateConversation("settings")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := a.RenameConversation(conv.ID, " Kernel chat "); err != nil || c.Title != "Kernel chat" {
		t.Fatalf("rename: %+v, %v", c, err)
	}
	if _, err := a.RenameConversation(conv.ID, "  "); err == nil {
		t.Fatal("empty title accepted")
	}
	sys := strings.Repeat("You are terse. ", 30)
	if c, err := a.SetSystemPrompt(conv.ID, sys); err != nil || c.System != sys {
		t.Fatalf("system: %+v, %v", c, err)
	}
	models, err := a.Models()
	if err != nil || len(models) != 1 || models[0] != testdaemon.ModelName {
		t.Fatalf("models %v, %v", models, err)
	}
	if c, err := a.SetModel(conv.ID, models[0]); err != nil || c.Model != models[0] {
		t.Fatalf("model: %+v, %v", c, err)
	}
	bad := float32(9)
	if _, err := a.SetSampling(conv.ID, Sampling{Temperature: &bad}); err == nil {
		t.Fatal("temperature 9 accepted")
	}
	greedy(t, a, conv.ID, 3)
	from := rec.len()
	a.SendMessage(conv.ID, "hi")
	e, _ := rec.wait(t, from, ended(conv.ID))
	done, ok := e.data.(ChatDone)
	if !ok {
		t.Fatalf("reply: %+v", e.data)
	}
	// max_tokens and the long system prompt reached the daemon.
	if done.Stats.CompletionTokens > 3 || done.Stats.PromptTokens < 100 {
		t.Fatalf("stats %+v: want ≤3 tokens and the system prompt in the prompt", done.Stats)
	}
	// An unknown model fails the reply with the daemon's reason.
	a.SetModel(conv.ID, "no-such-model")
	from = rec.len()
	a.SendMessage(conv.ID, "hi again")
	e, _ = rec.wait(t, from, ended(conv.ID))
	if ce, ok := e.data.(ChatError); !ok || !strings.Contains(ce.Error, "no-such-model") {
		t.Fatalf("unknown model: %+v", e.data)
	}
	// Adapters: install one, enable it with a scale, a reply uses it.
	path := filepath.Join(t.TempDir(), "style.gguf")
	if err := testdaemon.WriteAdapter(d.ModelPath, path, 7); err != nil {
		t.Fatal(err)
	}
	from = rec.len()
	info, err := a.InstallAdapter(path)
	if err != nil {
		t.Fatal(err)
	}
	if ev, _ := rec.wait(t, from, func(e recorded) bool {
		ai, ok := e.data.(AdapterInstall)
		return ok && ai.State != "installing"
	}); ev.data.(AdapterInstall).State != "installed" {
		t.Fatalf("install event %+v", ev.data)
	}
	list, err := a.Adapters()
	if err != nil || len(list) != 1 || list[0].Name != info.Name {
		t.Fatalf("adapters %+v, %v", list, err)
	}
	if _, err := a.SetAdapters(conv.ID, []ipc.AdapterRef{{Name: info.Name, Scale: 9}}); err == nil {
		t.Fatal("scale 9 accepted")
	}
	a.SetModel(conv.ID, "")
	if c, err := a.SetAdapters(conv.ID, []ipc.AdapterRef{{Name: info.Name, Scale: 0.5}}); err != nil || len(c.Adapters) != 1 {
		t.Fatalf("set adapters: %+v, %v", c, err)
	}
	from = rec.len()
	a.SendMessage(conv.ID, "with the adapter")
	if e, _ := rec.wait(t, from, ended(conv.ID)); e.name != EventChatDone {
		t.Fatalf("reply with adapter: %+v", e.data)
	}
	if err := a.RemoveAdapter(info.Name); err != nil {
		t.Fatal(err)
	}
	// A file that is no adapter is rejected with the daemon's reason.
	junk := filepath.Join(t.TempDir(), "junk.gguf")
	os.WriteFile(junk, []byte("not a gguf file"), 0o600)
	from = rec.len()
	a.HandleFileDrop([]string{junk})
	ev, _ := rec.wait(t, from, func(e recorded) bool {
		ai, ok := e.data.(AdapterInstall)
		return ok && ai.State != "installing"
	})
	if ai := ev.data.(AdapterInstall); ai.State != "rejected" || ai.Error == "" || ai.Name != "junk.gguf" {
		t.Fatalf("junk drop: %+v", ai)
	}
	if err := a.DeleteConversation(conv.ID); err != nil {
		t.Fatal(err)
	}
	if list, _ := a.ListConversations(); len(list) != 0 {
		t.Fatalf("after delete: %+v", list)
	}
}

func TestFeedbackOnAReply(t *testing.T) {
	a, rec, d := startApp(t)
	if a.Status().Notice != "" {
		t.Skip("the daemon has no /v1/conversations and /v1/feedback yet: " + a.Status().Notice)
	}
	conv, _ := a.CreateConversation("fb")
	greedy(t, a, conv.ID, 6)
	from := rec.len()
	a.SendMessage(conv.ID, "2+2?")
	e, _ := rec.wait(t, from, ended(conv.ID))
	done := e.data.(ChatDone)
	if _, err := a.SendFeedback(conv.ID, done.Message.ID, 0, ""); err == nil {
		t.Fatal("rating 0 accepted")
	}
	user, _ := a.LoadConversation(conv.ID)
	if _, err := a.SendFeedback(conv.ID, user.Messages[0].ID, 1, ""); err == nil {
		t.Fatal("feedback on a user message accepted")
	}
	fb, err := a.SendFeedback(conv.ID, done.Message.ID, -1, " 4 ")
	if err != nil {
		t.Fatal(err)
	}
	if fb.RequestID != done.CompletionID || fb.Rating != -1 || fb.Correction != "4" || fb.Answer != done.Message.Content {
		t.Fatalf("feedback %+v", fb)
	}
	list, err := d.Client.Feedback(context.Background(), 5)
	if err != nil || len(list) != 1 || list[0].MessageID != done.Message.ID {
		t.Fatalf("stored feedback %+v, %v", list, err)
	}
}

func TestMemStoreSemantics(t *testing.T) {
	ctx := context.Background()
	m := newMemStore()
	a, _ := m.Create(ctx, ipc.ConversationCreate{Title: "a"})
	time.Sleep(time.Millisecond)
	b, _ := m.Create(ctx, ipc.ConversationCreate{Title: "b", Messages: []ipc.ConversationMessage{{Role: "user", Content: "x"}}})
	if b.MessageCount != 1 || b.Messages[0].ID == "" || b.Messages[0].Time.IsZero() {
		t.Fatalf("create %+v", b)
	}
	time.Sleep(time.Millisecond)
	if _, err := m.Append(ctx, a.ID, ipc.ConversationMessage{Role: "user", Content: "y"}); err != nil {
		t.Fatal(err)
	}
	list, _ := m.List(ctx)
	if len(list) != 2 || list[0].ID != a.ID || list[0].Messages != nil || list[0].MessageCount != 1 {
		t.Fatalf("list %+v: want a first (updated last), without messages", list)
	}
	empty := []ipc.ConversationMessage{}
	title := "renamed"
	c, err := m.Update(ctx, b.ID, ipc.ConversationUpdate{Title: &title, Messages: &empty})
	if err != nil || c.Title != "renamed" || c.MessageCount != 0 {
		t.Fatalf("update %+v, %v", c, err)
	}
	var apiErr *ipc.APIError
	if err := m.Delete(ctx, "nope"); !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
		t.Fatalf("delete unknown: %v", err)
	}
	if _, err := m.Get(ctx, "nope"); err == nil {
		t.Fatal("get unknown succeeded")
	}
}

// TestStartsDaemonWhenNoneAnswers builds ruvllmd, points the app at an
// empty socket path and checks it starts the daemon, reports the model
// loading, chats, and stops the daemon it started on Close.
func TestStartsDaemonWhenNoneAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ruvllmd")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ruvllmd")
	build := exec.Command("go", "build", "-o", bin, "github.com/ruvllm/ruvllm/cmd/ruvllmd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build ruvllmd: %v\n%s", err, out)
	}
	model, err := testdaemon.WriteModel(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "run", "ruvllm.sock")
	rec := newRecorder()
	a := New(Config{Socket: sock, Daemon: bin, Model: model, StopDaemon: true,
		DaemonArgs: []string{"--state-dir", filepath.Join(dir, "state"), "--models-dir", filepath.Join(dir, "models"),
			"--cache-dir", filepath.Join(dir, "cache"), "--adapters-dir", filepath.Join(dir, "drop"), "--threads", "2"}}, rec.emit)
	a.Start(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := a.WaitReady(ctx); err != nil {
		a.Close()
		t.Fatal(err)
	}
	var states []State
	for _, e := range rec.events {
		if s, ok := e.data.(Status); ok && (len(states) == 0 || states[len(states)-1] != s.State) {
			states = append(states, s.State)
		}
	}
	if len(states) < 3 || states[0] != StateConnecting || states[1] != StateStarting || states[len(states)-1] != StateReady {
		t.Fatalf("states %v: want connecting, starting, … ready", states)
	}
	if st := a.Status(); !st.Started || len(st.Loaded) != 1 {
		t.Fatalf("status %+v: want started with the model loaded", st)
	}
	conv, err := a.CreateConversation("")
	if err != nil {
		t.Fatal(err)
	}
	greedy(t, a, conv.ID, 4)
	from := rec.len()
	a.SendMessage(conv.ID, "hello")
	if e, _ := rec.wait(t, from, ended(conv.ID)); e.name != EventChatDone {
		t.Fatalf("reply: %+v", e.data)
	}
	a.Close()
	dctx, dcancel := context.WithTimeout(context.Background(), time.Second)
	defer dcancel()
	if _, err := ipc.Dial(dctx, ipc.WithSocket(sock)); !errors.Is(err, ipc.ErrNotRunning) {
		t.Fatalf("daemon still answers after Close: %v", err)
	}
}

// TestStartTimeoutStopsTheDaemon checks that a daemon the app started and
// that never answered within StartTimeout is stopped when the app gives
// up, not left running beside the failure.
func TestStartTimeoutStopsTheDaemon(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	bin := filepath.Join(dir, "ruvllmd")
	script := "#!/bin/sh\necho $$ > " + pidFile + "\nexec sleep 600\n"
	if err := os.WriteFile(bin, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	a := New(Config{Socket: filepath.Join(dir, "s.sock"), Daemon: bin, StartTimeout: 3 * time.Second}, nil)
	a.Start(context.Background())
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := a.WaitReady(ctx)
	if err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("WaitReady = %v, want the daemon not answering", err)
	}
	b, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatalf("the fake daemon did not start within the start timeout: %v", rerr)
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	// The app reaps what it stops before it reports: the pid is gone.
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the daemon that never answered (pid %d) still runs after the app gave up (kill 0: %v)", pid, err)
	}
}

// TestDaemonAnswersAppendWithoutThread runs the app against a daemon that
// answers an append with a conversation holding no messages: the app
// reports an error instead of panicking, whether the append stored the
// user's message or the reply.
func TestDaemonAnswersAppendWithoutThread(t *testing.T) {
	for _, tc := range []struct {
		name      string
		emptyRole string // the role whose append is answered with no messages
	}{
		{"user message", "user"},
		{"reply", "assistant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "s.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			mux := http.NewServeMux()
			answer := func(w http.ResponseWriter, v any) {
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(v)
			}
			empty := ipc.Conversation{ID: "c1", Title: "t"}
			mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, _ *http.Request) { answer(w, ipc.Health{Status: "ok"}) })
			mux.HandleFunc("GET /v1/events", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				<-r.Context().Done()
			})
			mux.HandleFunc("GET /v1/conversations", func(w http.ResponseWriter, _ *http.Request) { answer(w, ipc.ConversationList{}) })
			mux.HandleFunc("POST /v1/conversations", func(w http.ResponseWriter, _ *http.Request) { answer(w, empty) })
			mux.HandleFunc("POST /v1/conversations/c1/messages", func(w http.ResponseWriter, r *http.Request) {
				var body ipc.MessagesAppend
				json.NewDecoder(r.Body).Decode(&body)
				c := empty
				if len(body.Messages) > 0 && body.Messages[0].Role != tc.emptyRole {
					c.Messages = body.Messages
				}
				answer(w, c)
			})
			mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n")
			})
			srv := &http.Server{Handler: mux}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })
			rec := newRecorder()
			a := New(Config{Socket: sock, Model: "m"}, rec.emit)
			a.Start(context.Background())
			t.Cleanup(a.Close)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := a.WaitReady(ctx); err != nil {
				t.Fatal(err)
			}
			from := rec.len()
			_, err = a.SendMessage("c1", "hello")
			if tc.emptyRole == "user" {
				if err == nil || !strings.Contains(err.Error(), "without the thread") {
					t.Fatalf("SendMessage = %v, want the empty answer named", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			e, _ := rec.wait(t, from, ended("c1"))
			if ce, ok := e.data.(ChatError); !ok || !strings.Contains(ce.Error, "without the thread") {
				t.Fatalf("reply ended with %s %+v, want chat:error naming the empty answer", e.name, e.data)
			}
		})
	}
}

// TestStartedDaemonRefusesModel points the app at a model file the daemon
// refuses: the app is ready at once, with a notice giving the daemon's
// reason, instead of showing "Loading…" until StartTimeout.
func TestStartedDaemonRefusesModel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ruvllmd")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ruvllmd")
	build := exec.Command("go", "build", "-o", bin, "github.com/ruvllm/ruvllm/cmd/ruvllmd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build ruvllmd: %v\n%s", err, out)
	}
	model := filepath.Join(dir, "junk.gguf")
	if err := os.WriteFile(model, []byte("not a model"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "run", "ruvllm.sock")
	a := New(Config{Socket: sock, Daemon: bin, Model: model, StopDaemon: true, StartTimeout: 10 * time.Minute,
		DaemonArgs: []string{"--state-dir", filepath.Join(dir, "state"), "--models-dir", filepath.Join(dir, "models"),
			"--cache-dir", filepath.Join(dir, "cache"), "--adapters-dir", filepath.Join(dir, "drop"), "--threads", "1"}}, nil)
	a.Start(context.Background())
	defer a.Close()
	// Well within StartTimeout: the load fails at once.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady: %v (the app waits for a model the daemon refused)", err)
	}
	if st := a.Status(); st.State != StateReady || !strings.Contains(st.Notice, "could not be loaded") || !strings.Contains(st.Notice, "GGUF") {
		t.Fatalf("status %+v: want ready with a notice giving the daemon's reason", st)
	}
}

func TestNewConversationBoundsReplies(t *testing.T) {
	a, _, _ := startApp(t)
	conv, err := a.CreateConversation("  bounded  ")
	if err != nil {
		t.Fatal(err)
	}
	if conv.Title != "bounded" || conv.Sampling == nil || conv.Sampling.MaxTokens != DefaultMaxTokens {
		t.Fatalf("new conversation %+v sampling %+v", conv, conv.Sampling)
	}
	c, _, _ := a.conn()
	req, err := a.chatRequest(context.Background(), c, conv)
	if err != nil {
		t.Fatal(err)
	}
	if req.MaxTokens != DefaultMaxTokens || req.Model != testdaemon.ModelName {
		t.Fatalf("request max_tokens %d model %q", req.MaxTokens, req.Model)
	}
}

func TestConfigModelName(t *testing.T) {
	for _, tc := range []struct{ model, want string }{
		{"", ""},
		{"qwen2.5-0.5b-instruct-q4_k_m", "qwen2.5-0.5b-instruct-q4_k_m"},
		{"/models/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf", "qwen2.5-0.5b-instruct-q4_k_m"},
		{"../shared/models/ruvllm-test-llama-19m-q8_0.GGUF", "ruvllm-test-llama-19m-q8_0"},
	} {
		if got := (Config{Model: tc.model}).modelName(); got != tc.want {
			t.Errorf("modelName(%q) = %q, want %q", tc.model, got, tc.want)
		}
	}
}

// TestReplyEndedBeforeDone: when chat:done (or chat:error) is heard, the
// reply no longer runs, so an app that sends the next message on hearing
// it is not refused as busy (the run was removed only after the event).
func TestReplyEndedBeforeDone(t *testing.T) {
	d, err := testdaemon.Start(context.Background(), testdaemon.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop() })
	var (
		a         *App
		mu        sync.Mutex
		streaming = map[string]bool{}
	)
	rec := newRecorder()
	emit := func(name string, data any) {
		if e, ok := data.(ChatDone); ok && name == EventChatDone {
			mu.Lock()
			streaming[e.ConversationID] = a.Streaming(e.ConversationID)
			mu.Unlock()
		}
		rec.emit(name, data)
	}
	a = New(Config{Socket: d.Socket, Model: testdaemon.ModelName}, emit)
	a.Start(context.Background())
	t.Cleanup(a.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	conv, err := a.CreateConversation("quick")
	if err != nil {
		t.Fatal(err)
	}
	greedy(t, a, conv.ID, 4)
	from := rec.len()
	if _, err := a.SendMessage(conv.ID, "hello"); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, from, ended(conv.ID))
	mu.Lock()
	defer mu.Unlock()
	if busy, heard := streaming[conv.ID]; !heard || busy {
		t.Fatalf("at chat:done the reply was still running: %v (heard %v)", busy, heard)
	}
}

// TestSamplingWithinTheDaemonsRange: the app refuses a temperature the
// daemon's chat endpoint refuses (it took up to 5, and every reply of the
// conversation then failed), and keeps one it takes.
func TestSamplingWithinTheDaemonsRange(t *testing.T) {
	a, _, _ := startApp(t)
	conv, err := a.CreateConversation("range")
	if err != nil {
		t.Fatal(err)
	}
	hot, ok := float32(2.5), float32(2)
	if _, err := a.SetSampling(conv.ID, Sampling{Temperature: &hot}); err == nil || !strings.Contains(err.Error(), "between 0 and 2") {
		t.Fatalf("temperature 2.5: %v", err)
	}
	if _, err := a.SetSampling(conv.ID, Sampling{Temperature: &ok}); err != nil {
		t.Fatalf("temperature 2: %v", err)
	}
}
