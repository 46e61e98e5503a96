package llm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// sharedChatModels loads the shared real models (llama2-style [INST]
// template, which refuses turns out of order, and ChatML), skipping
// without them.
func sharedChatModels(t *testing.T, o Options) map[string]*Model {
	t.Helper()
	dir := testpath.Shared(t, "models")
	out := map[string]*Model{}
	for _, f := range []string{"ruvllm-test-llama-19m-q8_0.gguf", "ruvllm-test-qwen2-13m-q8_0.gguf"} {
		path := filepath.Join(dir, f)
		if _, err := os.Stat(path); err != nil {
			t.Skipf("%s absent: %v", f, err)
		}
		o.Threads = 2
		m, err := Load(context.Background(), path, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		out[f] = m
	}
	return out
}

// longChat is a system prompt and n user/assistant turns ending with a
// user message.
func longChat(n int) []chat.Message {
	msgs := []chat.Message{{Role: "system", Content: "You answer questions about the kernel's documentation in one sentence."}}
	for i := range n {
		msgs = append(msgs,
			chat.Message{Role: "user", Content: fmt.Sprintf("Question %d: what does section %d of the memory management guide describe?", i, i)},
			chat.Message{Role: "assistant", Content: fmt.Sprintf("Section %d describes how pages are reclaimed under pressure, in detail.", i)})
	}
	return append(msgs, chat.Message{Role: "user", Content: "And what does the last section say about swap?"})
}

// TestDropOldestTurns: a chat too long for its context loses its oldest
// turns, never its system prompt nor its newest message; the prompt is the
// template's rendering of the turns kept, and it leaves room for the reply.
func TestDropOldestTurns(t *testing.T) {
	ctx := context.Background()
	for name, m := range sharedChatModels(t, Options{}) {
		t.Run(name, func(t *testing.T) {
			msgs := longChat(12)
			full, err := m.PromptTokens(Request{Messages: msgs})
			if err != nil {
				t.Fatal(err)
			}
			const ctxLen = 256
			if len(full) <= ctxLen {
				t.Fatalf("the chat is %d tokens: too short to overflow %d", len(full), ctxLen)
			}
			req := Request{Messages: msgs, ContextLimit: ctxLen, MaxTokens: 8, Overflow: OverflowDropOldest.Overflow()}
			if _, err := m.Generate(ctx, Request{Messages: msgs, ContextLimit: ctxLen, MaxTokens: 8}, func(Token) error { return nil }); !errors.Is(err, ErrContextExceeded) {
				t.Fatalf("without DropOldest: %v, want ErrContextExceeded", err)
			}
			f, err := m.fitPrompt(ctx, req, ctxLen)
			if err != nil {
				t.Fatal(err)
			}
			if f.droppedMessages == 0 || f.droppedMessages%2 != 0 || len(f.messages) != len(msgs)-f.droppedMessages {
				t.Fatalf("dropped %d messages, kept %d of %d: want whole turns", f.droppedMessages, len(f.messages), len(msgs))
			}
			if f.messages[0].Content != msgs[0].Content || f.messages[1].Role != "user" || f.messages[len(f.messages)-1].Content != msgs[len(msgs)-1].Content {
				t.Fatalf("kept %v: want the system prompt, then user turns up to the newest", f.messages)
			}
			if len(f.prompt) > ctxLen-8 {
				t.Fatalf("prompt of %d tokens leaves no room for 8 in %d", len(f.prompt), ctxLen)
			}
			// One turn more would not have fitted: the fewest were dropped.
			cut := len(msgs) - (len(f.messages) - 1)
			more := append([]chat.Message{msgs[0]}, msgs[cut-2:]...)
			if p, _ := m.PromptTokens(Request{Messages: more}); len(p) <= ctxLen-8 {
				t.Fatalf("dropped more than needed: %d messages render to %d tokens", len(more), len(p))
			}
			want, err := m.PromptTokens(Request{Messages: f.messages})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.prompt, want) {
				t.Fatal("the prompt is not the rendering of the kept turns")
			}
			sys, err := m.PromptTokens(Request{Messages: msgs[:2]})
			if err != nil {
				t.Fatal(err)
			}
			if keep := f.keep(); keep == 0 || keep >= len(sys) || !slices.Equal(f.prompt[:keep], sys[:keep]) {
				t.Fatalf("kept head of %d tokens: not the system part of %v", keep, sys)
			}
			if f.droppedTokens != len(full)-len(f.prompt) {
				t.Fatalf("dropped %d tokens, want %d", f.droppedTokens, len(full)-len(f.prompt))
			}
			// Generate reports the same, and answers as a request of the
			// kept turns alone would.
			_, text, res := generate(t, m, req)
			if res.DroppedMessages != f.droppedMessages || res.TruncatedTokens != f.droppedTokens || res.PromptTokens != len(f.prompt) {
				t.Fatalf("result %+v, want %d messages and %d tokens dropped", res, f.droppedMessages, f.droppedTokens)
			}
			if _, alone, _ := generate(t, m, Request{Messages: f.messages, MaxTokens: 8}); alone != text {
				t.Fatalf("reply %q, the kept turns alone answer %q", text, alone)
			}
		})
	}
}

// TestDropOldestLimits: a newest turn too long on its own keeps the system
// part and the end of the prompt; a system prompt that leaves no room is
// an error, never dropped.
func TestDropOldestLimits(t *testing.T) {
	ctx := context.Background()
	for name, m := range sharedChatModels(t, Options{}) {
		t.Run(name, func(t *testing.T) {
			sys := chat.Message{Role: "system", Content: "You answer in one short sentence."}
			long := chat.Message{Role: "user", Content: strings.Repeat("The page cache holds file data in memory. ", 60) + "Summarise."}
			msgs := []chat.Message{sys, {Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello."}, long}
			full, err := m.PromptTokens(Request{Messages: msgs})
			if err != nil {
				t.Fatal(err)
			}
			const ctxLen = 128
			req := Request{Messages: msgs, ContextLimit: ctxLen, Overflow: OverflowDropOldest.Overflow()}
			f, err := m.fitPrompt(ctx, req, ctxLen)
			if err != nil {
				t.Fatal(err)
			}
			head, err := m.PromptTokens(Request{Messages: []chat.Message{sys, long}})
			if err != nil {
				t.Fatal(err)
			}
			keep := f.keep()
			if f.droppedMessages != 2 || len(f.prompt) != ctxLen-ctxLen/4 || keep < 2 ||
				!slices.Equal(f.prompt[:keep], head[:keep]) || !slices.Equal(f.prompt[keep:], head[len(head)-(len(f.prompt)-keep):]) {
				t.Fatalf("kept %d tokens (head %d), dropped %d messages: want the system part and the end of the newest turn", len(f.prompt), keep, f.droppedMessages)
			}
			if f.droppedTokens != len(full)-len(f.prompt) {
				t.Fatalf("dropped %d tokens, want %d", f.droppedTokens, len(full)-len(f.prompt))
			}
			huge := []chat.Message{{Role: "system", Content: long.Content}, {Role: "user", Content: "Hi"}}
			_, err = m.Generate(ctx, Request{Messages: huge, ContextLimit: ctxLen, Overflow: OverflowShift.Overflow()}, func(Token) error { return nil })
			if !errors.Is(err, ErrContextExceeded) || !strings.Contains(err.Error(), "system") {
				t.Fatalf("a system prompt longer than the context: %v", err)
			}
		})
	}
}

// TestContextShift: a reply that fills the context goes on after a shift
// keeps the system part and discards the older half of the rest, and what
// follows a shift is exactly what a prompt of the remaining tokens gives.
func TestContextShift(t *testing.T) {
	ctx := context.Background()
	for name, m := range sharedChatModels(t, Options{}) {
		t.Run(name, func(t *testing.T) {
			msgs := longChat(1)
			const ctxLen, n = 128, 200
			req := Request{Messages: msgs, ContextLimit: ctxLen, MaxTokens: n, IgnoreEOS: true, Overflow: OverflowShift.Overflow()}
			f, err := m.fitPrompt(ctx, req, ctxLen)
			if err != nil {
				t.Fatal(err)
			}
			ids, _, res := generate(t, m, req)
			if res.CompletionTokens != n || len(ids) != n || res.FinishReason != FinishLength || res.ContextShifts < 2 {
				t.Fatalf("result %+v: want %d tokens after shifts", res, n)
			}
			// Replay the shifts: each run until the context is full, then
			// a fresh request of the shifted context must go on with the
			// same tokens.
			s := newShifter(req.Overflow, f.keep, ctxLen, n)
			history := slices.Clone(f.prompt)
			at := 0 // generated tokens checked
			for s.shifts < res.ContextShifts {
				take := ctxLen - s.inContext(history)
				history = append(history, ids[at:at+take]...)
				at += take
				prompt := s.shift(history)
				rest := ctxLen - s.keep
				if len(prompt) != s.keep+rest-rest/2 || !slices.Equal(prompt[:s.keep], f.prompt[:s.keep]) ||
					!slices.Equal(prompt[s.keep:], history[len(history)-(len(prompt)-s.keep):]) {
					t.Fatalf("shift %d: %d tokens: want the kept head and the newest %d of %d", s.shifts, len(prompt), rest-rest/2, rest)
				}
				want := min(16, n-at)
				got, _, _ := generate(t, m, Request{Tokens: prompt, MaxTokens: want, IgnoreEOS: true})
				if !slices.Equal(got, ids[at:at+want]) {
					t.Fatalf("after shift %d: %v, a fresh prompt of the shifted context gives %v", s.shifts, ids[at:at+want], got)
				}
			}
			if s.keep < 2 {
				t.Fatalf("a shift kept %d tokens: want the system part", s.keep)
			}
			if res.ShiftedTokens != s.discarded {
				t.Fatalf("%d tokens shifted out, want %d", res.ShiftedTokens, s.discarded)
			}
			// Without Shift the reply ends when the context is full.
			req.Overflow = OverflowDropOldest.Overflow()
			_, _, res = generate(t, m, req)
			if res.CompletionTokens != ctxLen-len(f.prompt) || res.FinishReason != FinishLength || res.ContextShifts != 0 {
				t.Fatalf("without shift: %+v", res)
			}
		})
	}
}

func TestParseOverflowMode(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Overflow
		err  bool
	}{
		{"error", Overflow{}, false},
		{"drop_oldest", Overflow{DropOldest: true}, false},
		{"shift", Overflow{DropOldest: true, Shift: true}, false},
		{"", Overflow{}, true},
		{"truncate", Overflow{}, true},
		{"Shift", Overflow{}, true},
	} {
		m, err := ParseOverflowMode(c.in)
		if (err != nil) != c.err || m.Overflow() != c.want {
			t.Errorf("%q: %v %+v, want %+v (error %v)", c.in, err, m.Overflow(), c.want, c.err)
		}
	}
}

// TestRequestContext: a request's Context (Ollama's) comes before its
// prompt, whose own BOS it replaces; the reply is the one the same tokens
// give as a token prompt; a context that does not fit is cut as a token
// prompt (its head's BOS and its end kept), and a token outside the
// vocabulary is refused.
func TestRequestContext(t *testing.T) {
	ctx := context.Background()
	for name, m := range sharedChatModels(t, Options{}) {
		t.Run(name, func(t *testing.T) {
			first := Request{Messages: []chat.Message{{Role: "user", Content: "Where do pages go under pressure?"}}, MaxTokens: 8}
			var reply []int32
			res, err := m.Generate(ctx, first, func(tk Token) error { reply = append(reply, tk.ID); return nil })
			if err != nil {
				t.Fatal(err)
			}
			earlier := append(slices.Clone(res.Prompt), reply...)
			next := Request{Messages: []chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Why?"},
				{Role: "assistant", Content: "Memory."}, {Role: "user", Content: "And swap?"}}, MaxTokens: 8}
			own, err := m.PromptTokens(next)
			if err != nil {
				t.Fatal(err)
			}
			next.Context = earlier
			got, err := m.PromptTokens(next)
			if err != nil {
				t.Fatal(err)
			}
			bos := m.tok.AddBOS() && own[0] == m.tok.BOS()
			want := append(slices.Clone(earlier), own...)
			if bos {
				want = append(slices.Clone(earlier), own[1:]...)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("prompt with context %v, want %v (BOS %v)", got, want, bos)
			}
			generate := func(req Request) (Result, string) {
				t.Helper()
				var text strings.Builder
				res, err := m.Generate(ctx, req, func(tk Token) error { text.WriteString(tk.Text); return nil })
				if err != nil {
					t.Fatal(err)
				}
				return res, text.String()
			}
			withCtx, a := generate(next)
			asTokens, b := generate(Request{Tokens: want, MaxTokens: 8})
			if a != b || !slices.Equal(withCtx.Prompt, want) || !slices.Equal(asTokens.Prompt, want) {
				t.Fatalf("with context %q (prompt of %d), as tokens %q (prompt of %d)", a, len(withCtx.Prompt), b, len(asTokens.Prompt))
			}
			if withCtx.CachedTokens < len(res.Prompt)-1 {
				t.Errorf("the context's first %d tokens were computed before; %d came from the cache", len(res.Prompt), withCtx.CachedTokens)
			}

			// Too long for the context: without DropOldest it fails, with
			// it the head's BOS and the end stay.
			const ctxLen = 40
			cut := next
			cut.ContextLimit = ctxLen
			if _, err := m.Generate(ctx, cut, func(Token) error { return nil }); !errors.Is(err, ErrContextExceeded) {
				t.Fatalf("without DropOldest: %v, want ErrContextExceeded", err)
			}
			cut.Overflow = OverflowDropOldest.Overflow()
			r, _ := generate(cut)
			keep := 0
			if bos {
				keep = 1
			}
			if len(want) <= ctxLen || len(r.Prompt) > ctxLen-6 || !slices.Equal(r.Prompt[:keep], want[:keep]) ||
				!slices.Equal(r.Prompt[keep:], want[len(want)-(len(r.Prompt)-keep):]) || r.TruncatedTokens != len(want)-len(r.Prompt) {
				t.Fatalf("cut prompt %v (%d truncated) of %v", r.Prompt, r.TruncatedTokens, want)
			}

			bad := next
			bad.Context = []int32{1, int32(m.Config().Vocab)}
			if _, err := m.PromptTokens(bad); !errors.Is(err, ErrTokenRange) {
				t.Fatalf("a context token outside the vocabulary: %v", err)
			}
		})
	}
}

// TestRawPrompt: a raw prompt (Ollama's raw mode) is tokenized as Ollama
// does, BOS first and special tokens read, with one BOS when the prompt
// writes its own.
func TestRawPrompt(t *testing.T) {
	for name, m := range sharedChatModels(t, Options{}) {
		t.Run(name, func(t *testing.T) {
			plain, err := m.PromptTokens(Request{Prompt: "Hello there"})
			if err != nil {
				t.Fatal(err)
			}
			raw, err := m.PromptTokens(Request{Prompt: "Hello there", Raw: true})
			if err != nil || !slices.Equal(raw, plain) {
				t.Fatalf("raw %v (%v), plain %v", raw, err, plain)
			}
			eos := m.tok.Piece(m.tok.EOS())
			withEOS, _ := m.PromptTokens(Request{Prompt: "Hello there" + eos, Raw: true})
			if withEOS[len(withEOS)-1] != m.tok.EOS() {
				t.Fatalf("raw %q: %v, the special token not read", "Hello there"+eos, withEOS)
			}
			if textEOS, _ := m.PromptTokens(Request{Prompt: "Hello there" + eos}); textEOS[len(textEOS)-1] == m.tok.EOS() {
				t.Fatalf("a plain prompt read %q as its special token", eos)
			}
			if !m.tok.AddBOS() {
				return
			}
			own, _ := m.PromptTokens(Request{Prompt: m.tok.Piece(m.tok.BOS()) + "Hello there", Raw: true})
			if !slices.Equal(own, plain) {
				t.Fatalf("a raw prompt writing its BOS: %v, want %v", own, plain)
			}
		})
	}
}

// TestChatTooManyTurnsToRender: a chat of so many short turns that its
// rendering exceeds the chat template's limits (fits a 32 MiB body) is a
// chat too long for the context like any other: drop_oldest keeps its
// newest turns, and without it the error is ErrContextExceeded. Every
// overflow mode failed with "template limit exceeded", naming nothing.
func TestChatTooManyTurnsToRender(t *testing.T) {
	ctx := context.Background()
	msgs := []chat.Message{{Role: "system", Content: "Be brief."}}
	for i := range 800_000 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, chat.Message{Role: role, Content: "x"})
	}
	msgs = append(msgs, chat.Message{Role: "assistant", Content: "x"}, chat.Message{Role: "user", Content: "And the last one?"})
	for name, m := range sharedChatModels(t, Options{}) {
		if !strings.Contains(name, "qwen2") {
			continue // ChatML: 800,000 turns render to more than 16 MiB
		}
		t.Run(name, func(t *testing.T) {
			const ctxLen = 256
			for _, tc := range []struct {
				mode    OverflowMode
				wantErr error
			}{
				{OverflowDropOldest, nil},
				{OverflowShift, nil},
				{OverflowError, ErrContextExceeded},
			} {
				req := Request{Messages: msgs, ContextLimit: ctxLen, MaxTokens: 8, Overflow: tc.mode.Overflow()}
				f, err := m.fitPrompt(ctx, req, ctxLen)
				if tc.wantErr != nil {
					if !errors.Is(err, tc.wantErr) {
						t.Errorf("%s: %v, want %v", tc.mode, err, tc.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", tc.mode, err)
				}
				if len(f.prompt) == 0 || len(f.prompt) > ctxLen {
					t.Fatalf("%s: prompt of %d tokens for a %d-token context", tc.mode, len(f.prompt), ctxLen)
				}
				if f.droppedMessages == 0 || f.droppedTokens < f.droppedMessages || f.messages[0].Content != "Be brief." || f.messages[len(f.messages)-1].Content != "And the last one?" {
					t.Fatalf("%s: dropped %d messages, kept %d: want the system prompt and the newest turns", tc.mode, f.droppedMessages, len(f.messages))
				}
			}
		})
	}
}
