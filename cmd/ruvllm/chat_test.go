package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/daemon/serve"
	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/ipc"
)

// TestChatConversationsAndFeedback chats through the daemon with a real
// synthetic model, then resumes the saved conversation, rates replies from
// the REPL and with `ruvllm feedback`, and lists, shows and removes
// conversations.
func TestChatConversationsAndFeedback(t *testing.T) {
	startTinyDaemon(t)
	ctx := context.Background()
	c, err := ipc.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// A new chat saves every turn in a new conversation.
	_, errOut, err := runCLIIn(t, strings.NewReader("hello there\n/up\nsecond question\n/bye\nnot sent\n"),
		newChatCmd(), "--temp", "0", "-n", "4", "--system", "Be brief.")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`saved as conversation (conv-[0-9a-f]+)`).FindStringSubmatch(errOut)
	if m == nil || !strings.Contains(errOut, "(feedback saved)") || strings.Contains(errOut, "error") {
		t.Fatalf("chat stderr %q", errOut)
	}
	id := m[1]
	conv, err := c.Conversation(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(conv.Messages) != 4 || conv.System != "Be brief." || conv.Model != "tiny" || conv.Title != "hello there" ||
		conv.Sampling == nil || conv.Sampling.Temperature == nil || *conv.Sampling.Temperature != 0 {
		t.Fatalf("conversation %+v", conv)
	}
	for i, want := range []string{"user", "assistant", "user", "assistant"} {
		msg := conv.Messages[i]
		if msg.Role != want || (want == "assistant") != (msg.RequestID != "" && msg.Stats != nil && msg.Stats.CompletionTokens > 0) {
			t.Fatalf("message %d %+v", i, msg)
		}
	}
	if conv.Messages[2].Content != "second question" {
		t.Fatalf("message 2 %+v", conv.Messages[2])
	}
	fbs, err := c.Feedback(ctx, 10)
	if err != nil || len(fbs) != 1 {
		t.Fatalf("feedback %+v %v", fbs, err)
	}
	if fb := fbs[0]; fb.Rating != 1 || fb.RequestID != conv.Messages[1].RequestID || fb.ConversationID != id ||
		fb.MessageID != conv.Messages[1].ID || len(fb.Prompt) != 2 || fb.Prompt[0].Content != "Be brief." ||
		fb.Prompt[1].Content != "hello there" || fb.Answer != conv.Messages[1].Content {
		t.Fatalf("REPL feedback %+v", fb)
	}

	// --conversation resumes it: the next request carries the system
	// prompt and the whole history, and the turn is appended.
	_, errOut, err = runCLIIn(t, strings.NewReader("third\n"), newChatCmd(), "--conversation", id, "-n", "4")
	if err != nil || !strings.Contains(errOut, `continuing "hello there", 4 messages`) || strings.Contains(errOut, "saved as") {
		t.Fatalf("resume: %v, stderr %q", err, errOut)
	}
	conv, err = c.Conversation(ctx, id)
	if err != nil || len(conv.Messages) != 6 || conv.Messages[4].Content != "third" || *conv.Sampling.Temperature != 0 {
		t.Fatalf("resumed conversation %+v %v", conv, err)
	}
	last := conv.Messages[5]
	if _, _, err := runCLI(t, newFeedbackCmd(), conv.Messages[1].RequestID+"x", "up", "--conversation", id); err == nil ||
		!strings.Contains(err.Error(), "has no reply") {
		t.Fatalf("feedback on a reply not in the conversation: %v", err)
	}
	out, _, err := runCLI(t, newFeedbackCmd(), last.RequestID, "down", "--correction", "Fine.", "--conversation", id)
	if err != nil || !strings.Contains(out, "rated "+last.RequestID+" down (tiny)") {
		t.Fatalf("feedback: %q %v", out, err)
	}
	fbs, _ = c.Feedback(ctx, 10)
	if len(fbs) != 2 {
		t.Fatalf("feedback %+v", fbs)
	}
	fb := fbs[0]
	var roles []string
	for _, p := range fb.Prompt {
		roles = append(roles, p.Role)
	}
	if fb.Rating != -1 || fb.Correction != "Fine." || fb.RequestID != last.RequestID || fb.Answer != last.Content ||
		fb.ConversationID != id || fb.MessageID != last.ID ||
		strings.Join(roles, ",") != "system,user,assistant,user,assistant,user" || fb.Prompt[0].Content != "Be brief." ||
		fb.Prompt[1].Content != "hello there" || fb.Prompt[5].Content != "third" {
		t.Fatalf("CLI feedback %+v", fb)
	}
	if _, _, err := runCLI(t, newFeedbackCmd(), last.RequestID, "sideways"); err == nil || !strings.Contains(err.Error(), "want up or down") {
		t.Fatalf("bad rating: %v", err)
	}
	if _, _, err := runCLI(t, newFeedbackCmd(), "chatcmpl-nope", "up"); err == nil || !strings.Contains(err.Error(), "unknown request_id") {
		t.Fatalf("unknown id: %v", err)
	}

	// --no-save chats without storing anything.
	if _, errOut, err := runCLIIn(t, strings.NewReader("hi\n"), newChatCmd(), "--no-save", "-n", "2"); err != nil || strings.Contains(errOut, "saved as") {
		t.Fatalf("--no-save: %v %q", err, errOut)
	}

	out, _, err = runCLI(t, newConversationsCmd())
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 2 || !strings.HasPrefix(lines[0], "ID ") || !regexp.MustCompile(`^`+id+`\s+\d+s ago\s+6\s+tiny\s+hello there$`).MatchString(lines[1]) {
		t.Fatalf("list: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, newConversationsCmd(), "show", id)
	for _, want := range []string{id + "  hello there", "model:  tiny", "system: Be brief.", "[user] third", "(" + last.RequestID + ", "} {
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("show lacks %q (%v):\n%s", want, err, out)
		}
	}
	if _, _, err := runCLI(t, newConversationsCmd(), "frobnicate"); err == nil || !strings.Contains(err.Error(), "unknown action") {
		t.Fatalf("bad action: %v", err)
	}
	// A missing id is reported and does not keep the others.
	if out, _, err := runCLI(t, newConversationsCmd(), "rm", "conv-nosuch", id); err == nil || !strings.Contains(err.Error(), "conv-nosuch") || strings.TrimSpace(out) != "removed "+id {
		t.Fatalf("rm: %q %v", out, err)
	}
	if _, _, err := runCLI(t, newConversationsCmd(), "show", id); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("show after rm: %v", err)
	}
	if _, _, err := runCLIIn(t, strings.NewReader("x\n"), newChatCmd(), "--conversation", id); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("resume after rm: %v", err)
	}
	if out, _, err := runCLI(t, newConversationsCmd(), "list"); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("list after rm: %q %v", out, err)
	}
}

func TestReplyStatsOverflow(t *testing.T) {
	for _, c := range []struct {
		u    *ipc.Usage
		want ipc.ReplyStats
	}{
		{&ipc.Usage{PromptTokens: 9, CompletionTokens: 3}, ipc.ReplyStats{PromptTokens: 9, CompletionTokens: 3}},
		{&ipc.Usage{PromptTokens: 900, CompletionTokens: 1, ContextOverflow: &ipc.OverflowUsage{DroppedMessages: 4, DroppedTokens: 310, Shifts: 2}},
			ipc.ReplyStats{PromptTokens: 900, CompletionTokens: 1, DroppedMessages: 4, DroppedTokens: 310, ContextShifts: 2}},
	} {
		got := replyStats(c.u, 0, 0)
		if got == nil || *got != c.want {
			t.Errorf("replyStats(%+v) = %+v, want %+v", c.u, got, c.want)
		}
	}
	if replyStats(nil, 0, 0) != nil {
		t.Error("stats without usage")
	}
}

// TestReplyPrinter: a thinking model's reasoning goes to the error stream
// between markers (or nowhere with --hide-thinking), the answer alone to
// the output, and both are kept for the history.
func TestReplyPrinter(t *testing.T) {
	deltas := []ipc.Delta{{ReasoningContent: "Let me "}, {ReasoningContent: "see."}, {Content: "Hello"}, {Content: " there"}}
	for _, c := range []struct {
		hide    bool
		deltas  []ipc.Delta
		out, er string
	}{
		{false, deltas, "Hello there\n", "Thinking...\nLet me see.\n...done thinking.\n\n"},
		{true, deltas, "Hello there\n", ""},
		{false, deltas[:2], "\n", "Thinking...\nLet me see.\n...done thinking.\n"}, // cut off while thinking
		{false, deltas[2:], "Hello there\n", ""},
	} {
		var out, er strings.Builder
		p := &replyPrinter{out: &out, errw: &er, hideThinking: c.hide}
		for _, d := range c.deltas {
			p.delta(d)
		}
		p.end()
		if out.String() != c.out || er.String() != c.er {
			t.Errorf("hide %v, %d deltas: out %q, err %q; want %q, %q", c.hide, len(c.deltas), out.String(), er.String(), c.out, c.er)
		}
		if len(c.deltas) == 4 && (p.answer.String() != "Hello there" || p.reasoning.String() != "Let me see.") {
			t.Errorf("kept answer %q, reasoning %q", p.answer.String(), p.reasoning.String())
		}
	}
}

// TestChatFromPipeFails: chat reading a pipe or file exits with an error
// when a turn fails (an unknown model), instead of printing "error: ..."
// for every line and exiting 0; bad --temp and --max-tokens values are
// refused before anything is sent.
func TestChatFromPipeFails(t *testing.T) {
	startTinyDaemon(t)
	var err error
	for _, args := range [][]string{{"--temp", "NaN"}, {"--temp", "-3"}, {"--temp", "+Inf"}, {"--max-tokens", "-5"}} {
		_, _, err = runCLIIn(t, strings.NewReader("hello\n"), newChatCmd(), args...)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("chat %v: err %v, want the flag refused", args, err)
		}
	}
	_, _, err = runCLIIn(t, strings.NewReader("hello\nagain\n"), newChatCmd(), "-m", "nosuch", "-n", "2", "--no-save")
	if err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("chat -m nosuch from a pipe: err %v, want the failed turn's error", err)
	}
	out, _, err := runCLIIn(t, strings.NewReader("hello\n"), newChatCmd(), "-n", "2", "--temp", "0", "--no-save")
	if err != nil || out == "" {
		t.Errorf("chat with the default model: %q, %v", out, err)
	}
}

// TestChatSystemCleared: "/system" without text clears the system prompt
// and says so; it said "(system prompt set)". No daemon is reached before a
// conversation exists.
func TestChatSystemCleared(t *testing.T) {
	var errw strings.Builder
	s := &chatSession{out: io.Discard, errw: &errw, opts: chatOptions{system: "Be brief."}}
	if err := s.repl(context.Background(), strings.NewReader("/system\n/system Be kind.\n")); err != nil {
		t.Fatal(err)
	}
	if got := errw.String(); got != "(system prompt cleared)\n(system prompt set)\n" || s.opts.system != "Be kind." {
		t.Errorf("stderr %q, system %q", got, s.opts.system)
	}
}

// TestChatLineTooLong: a line over the limit is refused in words that say
// what happened, not "bufio.Scanner: token too long". No daemon is reached.
func TestChatLineTooLong(t *testing.T) {
	s := &chatSession{out: io.Discard, errw: io.Discard}
	err := s.repl(context.Background(), strings.NewReader(strings.Repeat("a", maxChatLine+10)+"\n"))
	if err == nil || !strings.Contains(err.Error(), "longer than 1 MiB") {
		t.Errorf("err %v", err)
	}
}

// TestChatResumeStoresFlagsWithAReply: the flags given on resume (-m,
// --system, --temp) are stored in the conversation with the first reply
// saved. A mistyped -m was stored at once, though no turn could use it,
// breaking every later resume; and --no-save stored them too.
func TestChatResumeStoresFlagsWithAReply(t *testing.T) {
	startTinyDaemon(t)
	ctx := context.Background()
	c, err := ipc.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, errOut, err := runCLIIn(t, strings.NewReader("hello\n"), newChatCmd(), "--temp", "0", "-n", "2", "--system", "Be brief.")
	m := regexp.MustCompile(`saved as conversation (conv-[0-9a-f]+)`).FindStringSubmatch(errOut)
	if err != nil || m == nil {
		t.Fatalf("chat: %v %q", err, errOut)
	}
	id := m[1]
	stored := func() ipc.Conversation {
		t.Helper()
		conv, err := c.Conversation(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return conv
	}
	runCLIIn(t, strings.NewReader("again\n"), newChatCmd(), "--conversation", id, "-m", "nosuch", "-n", "2")
	if conv := stored(); conv.Model != "tiny" || len(conv.Messages) != 2 {
		t.Fatalf("after a failed turn with -m nosuch: model %q, %d messages", conv.Model, len(conv.Messages))
	}
	runCLIIn(t, strings.NewReader("again\n"), newChatCmd(), "--conversation", id, "--no-save", "--system", "Be long.", "--temp", "0.5", "-n", "2")
	if conv := stored(); conv.System != "Be brief." || *conv.Sampling.Temperature != 0 || len(conv.Messages) != 2 {
		t.Fatalf("after --no-save: system %q, temp %v, %d messages", conv.System, *conv.Sampling.Temperature, len(conv.Messages))
	}
	if _, errOut, err := runCLIIn(t, strings.NewReader("again\n"), newChatCmd(), "--conversation", id, "--system", "Be long.", "-n", "2"); err != nil {
		t.Fatalf("resume: %v %q", err, errOut)
	}
	if conv := stored(); conv.System != "Be long." || len(conv.Messages) != 4 {
		t.Fatalf("after a saved turn with --system: system %q, %d messages", conv.System, len(conv.Messages))
	}
}

// cancelOnWrite cancels a context at the first byte written to it.
type cancelOnWrite struct {
	cancel context.CancelFunc
	n      int
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.n += len(p)
	w.cancel()
	return len(p), nil
}

// TestChatReplyInterrupted: at a terminal, Ctrl-C during a reply stops the
// reply and the chat goes on (it ended the chat); the cut reply is not
// kept in the history, and the next turn works.
func TestChatReplyInterrupted(t *testing.T) {
	startTinyDaemon(t)
	ctx := context.Background()
	c, err := ipc.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var errw strings.Builder
	w := &cancelOnWrite{}
	s := &chatSession{c: c, opts: chatOptions{temp: 0, maxTokens: 0, noSave: true}, out: w, errw: &errw}
	s.replyContext = func(ctx context.Context) (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithCancel(ctx)
		w.cancel = cancel // the "Ctrl-C": at the reply's first text
		return ctx, cancel
	}
	s.turn(ctx, "hello", true)
	if !strings.Contains(errw.String(), "(reply interrupted)") || strings.Contains(errw.String(), "error") || len(s.history) != 0 {
		t.Fatalf("stderr %q, history %d messages", errw.String(), len(s.history))
	}
	s.replyContext = nil
	s.opts.maxTokens = 2
	s.out = io.Discard
	s.turn(ctx, "hello again", false)
	if len(s.history) != 2 {
		t.Errorf("the next turn: history %d messages, stderr %q", len(s.history), errw.String())
	}
}

// TestLearningLine: what `ruvllm feedback` says learning made of a rating;
// a failure's reason followed its status with no separator ("failed the
// rated answer is empty").
func TestLearningLine(t *testing.T) {
	for _, c := range []struct {
		l    ipc.FeedbackLearning
		want string
	}{
		{ipc.FeedbackLearning{Status: ipc.LearnApplied, LatencyMillis: 41.6, Scope: "user", Version: 3}, "learned in 42 ms: scope user is at version 3"},
		{ipc.FeedbackLearning{Status: "failed", Error: "the rated answer is empty"}, "learning: failed: the rated answer is empty"},
		{ipc.FeedbackLearning{Status: "queued"}, "learning: queued"},
	} {
		if got := learningLine(&c.l); got != c.want {
			t.Errorf("%+v: %q, want %q", c.l, got, c.want)
		}
	}
}

// TestConnectWithoutDaemon: a command that needs a running daemon says
// that none is and how to start one, not the dial's own words ("dial unix
// ...: no such file or directory"), and the error is still ErrNotRunning.
func TestConnectWithoutDaemon(t *testing.T) {
	t.Setenv("RUVLLM_SOCKET", filepath.Join(t.TempDir(), "none.sock"))
	_, err := connect(context.Background(), false)
	if err == nil || !errors.Is(err, ipc.ErrNotRunning) || !strings.Contains(err.Error(), "start it with") || strings.Contains(err.Error(), "dial unix") {
		t.Fatalf("connect without a daemon: %v", err)
	}
}

// startTinyDaemon runs a daemon for the test (RUVLLM_SOCKET set) serving a
// synthetic model named "tiny".
func startTinyDaemon(t *testing.T) {
	t.Helper()
	dir, err := os.MkdirTemp("", "rvchat")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) }) // after the daemon stops
	mdir := filepath.Join(dir, "models")
	os.MkdirAll(mdir, 0o700)
	o := testmodel.DefaultOptions()
	o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = "qwen2", 1, 32, 2, 1, 64, 2048
	if err := testmodel.Write(context.Background(), o, filepath.Join(mdir, "tiny.gguf")); err != nil {
		t.Fatal(err)
	}
	startDaemon(t, dir, serve.Options{Model: "tiny", KeepAlive: time.Minute, MaxLoaded: 1})
}
