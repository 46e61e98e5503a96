package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestWarmFollowUp plays two turns of a chat. After the first reply,
// WarmFollowUp computes the next turn's history; the second turn must then
// find all of it in the cache, the reply included, and still answer
// exactly what a model without a cache answers. Without warming, the
// shared llama model (llama2 template, replies that start with a newline)
// recomputes its previous reply, which the test checks too, so that the
// warming is shown to matter.
func TestWarmFollowUp(t *testing.T) {
	paths := map[string]string{"synthetic-qwen2": synthetic(t, "qwen2", quant.Q8_0)}
	if dir := testpath.SharedIfPresent(t, "models"); dir != "" {
		for _, f := range []string{"ruvllm-test-llama-19m-q8_0.gguf", "ruvllm-test-qwen2-13m-q8_0.gguf"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				paths[f] = filepath.Join(dir, f)
			}
		}
	} else {
		t.Log("../shared/models absent: only the synthetic model is played")
	}
	ctx := context.Background()
	for name, path := range paths {
		t.Run(name, func(t *testing.T) {
			load := func(o Options) *Model {
				o.Threads = 2
				m, err := Load(ctx, path, o)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { m.Close() })
				return m
			}
			warm, cold, alone := load(Options{}), load(Options{}), load(Options{NoPrefixCache: true})
			first := Request{Messages: []chat.Message{
				{Role: "system", Content: "You are a helpful assistant who answers questions about files."},
				{Role: "user", Content: "How do I open a file?"},
			}, MaxTokens: 40}
			_, reply, _ := generate(t, warm, first)
			if _, r, _ := generate(t, cold, first); r != reply {
				t.Fatalf("two models answered differently: %q and %q", reply, r)
			}
			follow := warm.FollowUpTokens(first, reply)
			if len(follow) == 0 {
				t.Fatal("no follow-up tokens")
			}
			n, err := warm.WarmFollowUp(ctx, first, reply)
			if err != nil {
				t.Fatal(err)
			}
			if want := len(follow) / blockSize * blockSize; n != want {
				t.Errorf("warmed %d tokens, want %d of %d", n, want, len(follow))
			}
			second := first
			second.Messages = append(append([]chat.Message(nil), first.Messages...),
				chat.Message{Role: "assistant", Content: reply},
				chat.Message{Role: "user", Content: "And how do I close it?"})
			prompt, err := warm.PromptTokens(second)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(prompt[:len(follow)]) != fmt.Sprint(follow) {
				t.Fatalf("follow-up tokens are not a prefix of the next prompt:\n%v\n%v", follow, prompt)
			}
			wantIDs, _, _ := generate(t, alone, second)
			gotIDs, _, res := generate(t, warm, second)
			if fmt.Sprint(gotIDs) != fmt.Sprint(wantIDs) {
				t.Fatalf("second turn after warming: %v, without a cache: %v", gotIDs, wantIDs)
			}
			if res.CachedTokens < n {
				t.Errorf("second turn reused %d of %d prompt tokens; %d were warmed", res.CachedTokens, res.PromptTokens, n)
			}
			_, _, coldRes := generate(t, cold, second)
			t.Logf("prompt %d tokens, reply %q: cached %d after warming, %d without", res.PromptTokens, reply, res.CachedTokens, coldRes.CachedTokens)
			if name == "ruvllm-test-llama-19m-q8_0.gguf" && coldRes.CachedTokens >= res.CachedTokens {
				t.Errorf("without warming the second turn reused %d tokens, with it %d: warming made no difference", coldRes.CachedTokens, res.CachedTokens)
			}
			warm.ClearCache()
			if free := warm.pool.Free(); free != warm.pool.Blocks() {
				t.Fatalf("leak: %d of %d blocks free when idle", free, warm.pool.Blocks())
			}
		})
	}
}

// TestFollowUpTokensNeedsAChat checks the cases that have no follow-up:
// raw prompts and models without a chat template.
func TestFollowUpTokensNeedsAChat(t *testing.T) {
	m, err := Load(context.Background(), synthetic(t, "llama", quant.Q8_0), Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := m.FollowUpTokens(Request{Prompt: "hello"}, "world"); got != nil {
		t.Errorf("raw prompt: %v", got)
	}
	if n, err := m.WarmFollowUp(context.Background(), Request{Prompt: "hello"}, "world"); n != 0 || err != nil {
		t.Errorf("raw prompt warmed %d tokens, err %v", n, err)
	}
}

// TestWarmGroupCancelsWhatJoined checks that ClearCache's cancelAll ends
// the warming that joined before it, waits until that work stopped, and
// leaves the warming that joins after it alone.
func TestWarmGroupCancelsWhatJoined(t *testing.T) {
	var g warmGroup
	before, stopBefore := g.join(context.Background())
	var stopped atomic.Bool
	go func() { // the work: it ends when cancelled
		<-before.Done()
		time.Sleep(10 * time.Millisecond)
		stopped.Store(true)
		stopBefore()
	}()
	g.cancelAll()
	if !stopped.Load() {
		t.Fatal("cancelAll returned before the cancelled work stopped")
	}
	after, stopAfter := g.join(context.Background())
	if after.Err() != nil {
		t.Fatal("warming that joined after cancelAll was cancelled")
	}
	stopAfter()
	if after.Err() == nil {
		t.Fatal("stop did not end the joined context")
	}
	g.cancelAll() // nothing left to wait for
	g.wg.Wait()
}

// TestWarmFollowUpFileTemplates plays two turns of a chat, with tools, on
// a synthetic model carrying real models' Jinja templates from
// ../shared/templates: the file template renders the prompt, follow-up
// warming computes the next turn's history, and the next turn finds it
// in the cache and answers what a model without a cache answers. Qwen3's
// template renders the last assistant turn with an empty <think> block
// and earlier ones without, so only the history as the next request
// renders it can be warmed.
func TestWarmFollowUpFileTemplates(t *testing.T) {
	dir := testpath.Shared(t, "templates")
	ctx := context.Background()
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}`)}
	for _, name := range []string{"Qwen-Qwen3-0.6B", "meta-llama-Llama-3.1-8B-Instruct", "mistralai-Mistral-Nemo-Instruct-2407"} {
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(dir, name+".jinja"))
			if err != nil {
				t.Fatal(err)
			}
			o := testmodel.DefaultOptions()
			o.Arch, o.Type, o.Seed, o.ContextLength, o.ChatTemplate = "qwen2", quant.Q8_0, 7, 2048, string(src)
			path := filepath.Join(t.TempDir(), "m.gguf")
			if err := testmodel.Write(ctx, o, path); err != nil {
				t.Fatal(err)
			}
			load := func(o Options) *Model {
				o.Threads = 2
				m, err := Load(ctx, path, o)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { m.Close() })
				return m
			}
			warm, alone := load(Options{}), load(Options{NoPrefixCache: true})
			if f := warm.Info().ChatFormat; !strings.Contains(f, "from the file") {
				t.Fatalf("chat format %q, want the file's template", f)
			}
			first := Request{Messages: []chat.Message{
				{Role: "system", Content: "You answer questions about the weather."},
				{Role: "user", Content: "Is it raining in Paris?"},
			}, Tools: tools, MaxTokens: 24}
			prompt, err := warm.PromptTokens(first)
			if err != nil {
				t.Fatal(err)
			}
			want, err := warm.ApplyChatTemplate(ctx, chat.Conversation{Messages: first.Messages, Tools: tools, AddGenerationPrompt: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := warm.Tokenizer().Decode(prompt, tokenizer.DecodeOptions{Special: true}); !strings.Contains(want, "get_weather") || got != want {
				t.Fatalf("prompt decodes to\n%q\nwant the template's rendering\n%q", got, want)
			}
			_, reply, _ := generate(t, warm, first)
			n, err := warm.WarmFollowUp(ctx, first, reply)
			if err != nil {
				t.Fatal(err)
			}
			second := first
			second.Messages = append(append([]chat.Message(nil), first.Messages...),
				chat.Message{Role: "assistant", Content: reply},
				chat.Message{Role: "user", Content: "And in Rome?"})
			next, err := warm.PromptTokens(second)
			if err != nil {
				t.Fatal(err)
			}
			if n < len(prompt)/blockSize*blockSize {
				t.Fatalf("warmed %d tokens; the first prompt alone has %d", n, len(prompt))
			}
			wantIDs, _, _ := generate(t, alone, second)
			gotIDs, _, res := generate(t, warm, second)
			if fmt.Sprint(gotIDs) != fmt.Sprint(wantIDs) {
				t.Fatalf("second turn after warming: %v, without a cache: %v", gotIDs, wantIDs)
			}
			if res.CachedTokens < n {
				t.Errorf("second turn reused %d of %d prompt tokens; %d were warmed", res.CachedTokens, len(next), n)
			}
			t.Logf("first prompt %d tokens, reply %d bytes; second prompt %d tokens, %d from the cache", len(prompt), len(reply), len(next), res.CachedTokens)
		})
	}
}

// TestFollowUpTokensThinkingModel: a thinking model's reply comes back
// from the APIs as content with its reasoning apart, and its template
// renders the two its own way: the follow-up renders the reply so, not as
// the raw text with the <think> block inside the content.
func TestFollowUpTokensThinkingModel(t *testing.T) {
	const tmpl = `{%- for m in messages %}<|im_start|>{{ m.role }}
{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}{{ m.content }}<|im_end|>
{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}`
	m := loadWithTemplate(t, tmpl)
	if m.Info().Reasoning == nil {
		t.Fatal("the template's reasoning was not found")
	}
	first := Request{Messages: []chat.Message{{Role: "user", Content: "Hi"}}}
	follow := m.FollowUpTokens(first, "<think>\nLet me see.\n</think>\n\nHello there")
	second := Request{Messages: []chat.Message{{Role: "user", Content: "Hi"},
		{Role: "assistant", Content: "Hello there", ReasoningContent: "Let me see."}, {Role: "user", Content: "Again"}}}
	prompt, err := m.PromptTokens(second)
	if err != nil {
		t.Fatal(err)
	}
	if len(follow) == 0 || len(follow) > len(prompt) || fmt.Sprint(prompt[:len(follow)]) != fmt.Sprint(follow) {
		t.Fatalf("follow-up tokens are not a prefix of the next prompt:\n%v\n%v", follow, prompt)
	}
	if text := m.tok.Decode(follow, tokenizer.DecodeOptions{}); !strings.Contains(text, "<think>Let me see.</think>Hello there\n") {
		t.Fatalf("follow-up %q", text)
	}
}

// TestWarmBacklogTrack: past its bound the backlog cancels its oldest
// entries, exactly those, and an entry that stops leaves it.
func TestWarmBacklogTrack(t *testing.T) {
	for _, tc := range []struct{ max, n int }{{3, 2}, {3, 3}, {3, 7}, {1, 5}} {
		t.Run(fmt.Sprintf("max%d-n%d", tc.max, tc.n), func(t *testing.T) {
			var g warmGroup
			ctxs := make([]context.Context, tc.n)
			untracks := make([]func(), tc.n)
			for i := range tc.n {
				ctx, cancel := context.WithCancel(context.Background())
				ctxs[i], untracks[i] = ctx, g.track(cancel, tc.max)
				if len(g.backlog) > tc.max {
					t.Fatalf("backlog of %d past its bound %d", len(g.backlog), tc.max)
				}
			}
			for i, ctx := range ctxs {
				if evicted := i < tc.n-tc.max; (ctx.Err() != nil) != evicted {
					t.Errorf("entry %d of %d: cancelled %v, want %v", i, tc.n, ctx.Err() != nil, evicted)
				}
			}
			for _, untrack := range untracks {
				untrack()
			}
			if len(g.backlog) != 0 {
				t.Fatalf("%d entries left after all stopped", len(g.backlog))
			}
		})
	}
}

// TestWarmBacklogBoundedUnderLoad: warming a chat's next turn waits until
// no request runs. While one does, every reply used to add a warming that
// waited, holding its goroutine and its conversation, for as long as the
// load lasted. Now at most MaxWarmBacklog wait, and the older ones end at
// once.
func TestWarmBacklogBoundedUnderLoad(t *testing.T) {
	m, err := Load(context.Background(), synthetic(t, "qwen2", quant.Q8_0), Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// The load: a request that decodes until it is cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	running, fg := make(chan struct{}), make(chan error, 1)
	go func() {
		first := true
		_, err := m.Generate(ctx, Request{Prompt: "hello", MaxTokens: 1 << 30, IgnoreEOS: true, Overflow: OverflowShift.Overflow()},
			func(Token) error {
				if first {
					first = false
					close(running)
				}
				return nil
			})
		fg <- err
	}()
	<-running
	var started []*backlogEntry
	for i := range 3 * MaxWarmBacklog {
		req := Request{Messages: []chat.Message{
			{Role: "system", Content: "You are a helpful assistant who answers questions about files and directories."},
			{Role: "user", Content: fmt.Sprintf("Question number %d: how do I open a file, read it and close it again?", i)},
		}}
		if len(m.FollowUpTokens(req, "Use open.")) < blockSize {
			t.Fatal("the conversation is too short to be warmed")
		}
		m.startWarmFollowUp(req, "Use open.")
		m.warming.mu.Lock()
		n := len(m.warming.backlog)
		started = append(started, m.warming.backlog[n-1])
		m.warming.mu.Unlock()
		if n > MaxWarmBacklog {
			t.Fatalf("%d warmings wait under load, more than %d", n, MaxWarmBacklog)
		}
	}
	for i, e := range started[:len(started)-MaxWarmBacklog] {
		select {
		case <-e.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("warming %d, dropped from the backlog, still waits", i)
		}
	}
	cancel()
	<-fg
	m.WaitWarming()
	if n := len(m.warming.backlog); n != 0 {
		t.Fatalf("%d warmings left in the backlog after all ended", n)
	}
}
