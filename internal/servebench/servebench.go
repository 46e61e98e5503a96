// Package servebench drives a running ruvllmd over its socket with
// realistic workloads and measures what users feel: time to first token
// with the shared prefix cache on and off, and throughput with many
// concurrent streams.
package servebench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ruvllm/ruvllm/ipc"
)

// Options configures a run.
type Options struct {
	Model       string
	Requests    int // requests per workload, and per stream of the streams workload (default 8)
	Concurrency int // streams of the concurrent workload (default 8)
	MaxTokens   int // generated tokens per request (default 32)
	// TurnPause is the time between a reply and the next question of the
	// multi-turn chat (default 300ms; a user reads and types for longer).
	TurnPause time.Duration
	// Workloads names the workloads to run, from [WorkloadNames]; empty
	// runs them all but spec.
	Workloads []string
	// Spec lists the speculation settings the spec workload compares
	// (default off, lookup, lookup+tree, draft, all); SpecTokens is what
	// each of its requests generates (default 96).
	Spec       []string
	SpecTokens int
}

// WorkloadNames are the workloads Run knows, in the order it runs them.
var WorkloadNames = []string{"chat", "rag", "multiturn", "streams", "spec", "kv"}

// wants reports whether the run includes the named workload.
func (o Options) wants(name string) bool {
	if len(o.Workloads) == 0 {
		return name != "spec" && name != "kv" // these two run when named
	}
	for _, w := range o.Workloads {
		if w == name {
			return true
		}
	}
	return false
}

// Figures are one workload's measurements.
type Figures struct {
	Workload     string  `json:"workload"`
	Cache        bool    `json:"cache"`
	Requests     int     `json:"requests"`
	TTFTp50      float64 `json:"ttft_p50_ms"`
	TTFTp95      float64 `json:"ttft_p95_ms"`
	PromptTokens int     `json:"mean_prompt_tokens"`
	CachedTokens int     `json:"mean_cached_tokens"`
	TokensPerSec float64 `json:"tokens_per_second"` // aggregate generation throughput
	// Speculation figures (the spec workload): the setting, decode speed
	// over the same requests without speculation (median of the
	// repetitions' ratios), draft acceptance, tokens per verification,
	// and whether every reply equalled the reply without speculation.
	Speculation           string  `json:"speculation,omitempty"`
	Speedup               float64 `json:"speedup,omitempty"`
	AcceptanceRate        float64 `json:"acceptance_rate,omitempty"`
	TokensPerVerification float64 `json:"tokens_per_verification,omitempty"`
	Identical             bool    `json:"identical,omitempty"`
	// KV figures (the kv workload): the daemon's KV type, what a cached
	// position takes (its cold tier's bytes where it has one), and how
	// many prompts of PromptTokens the cache held when it began evicting.
	KVType          string  `json:"kv_type,omitempty"`
	KVBytesPerToken float64 `json:"kv_bytes_per_token,omitempty"`
	KVBudgetBytes   int64   `json:"kv_budget_bytes,omitempty"`
	CachedPrefixes  int     `json:"cached_prefixes,omitempty"`
}

// A long, fixed system prompt (about 1000 tokens on small vocabularies)
// like the ones editor and mail integrations send with every request.
func systemPrompt() string {
	var b strings.Builder
	b.WriteString("You are the assistant built into a code editor. Follow these rules exactly.\n")
	for i := 1; b.Len() < 4200; i++ {
		fmt.Fprintf(&b, "Rule %d: when the user asks about file %d of the project, answer with the relevant function names, keep answers short, and never invent APIs that the project does not have.\n", i, i)
	}
	return b.String()
}

func document(i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Document %d: notes on the scheduler.\n", i)
	for j := 0; b.Len() < 3000; j++ {
		fmt.Fprintf(&b, "Section %d.%d describes how runnable tasks are picked, how priorities decay and how the load balancer moves work between cores.\n", i, j)
	}
	return b.String()
}

type sample struct {
	reply          string
	ttft           time.Duration
	prompt, cached int
	completion     int
	elapsed        time.Duration
}

func (o Options) defaults() Options {
	if o.Requests <= 0 {
		o.Requests = 8
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = 32
	}
	if o.TurnPause <= 0 {
		o.TurnPause = 300 * time.Millisecond
	}
	if o.SpecTokens <= 0 {
		o.SpecTokens = 96
	}
	return o
}

// one sends a streaming chat request and measures it.
func one(ctx context.Context, c *ipc.Client, o Options, msgs []ipc.Message) (sample, error) {
	req := ipc.ChatCompletionRequest{Model: o.Model, Messages: msgs}
	temp := float32(0)
	req.Temperature, req.MaxTokens = &temp, o.MaxTokens
	var s sample
	start := time.Now()
	err := c.ChatStream(ctx, req, func(ch ipc.ChatCompletionChunk) error {
		for _, choice := range ch.Choices {
			if choice.Delta.Content != "" && s.ttft == 0 {
				s.ttft = time.Since(start)
			}
			s.reply += choice.Delta.Content
		}
		if ch.Usage != nil {
			s.prompt, s.completion = ch.Usage.PromptTokens, ch.Usage.CompletionTokens
			if ch.Usage.PromptTokensDetails != nil {
				s.cached = ch.Usage.PromptTokensDetails.CachedTokens
			}
		}
		return nil
	})
	s.elapsed = time.Since(start)
	if s.ttft == 0 {
		s.ttft = s.elapsed
	}
	return s, err
}

func clearCache(ctx context.Context, c *ipc.Client) error {
	return c.Do(ctx, http.MethodDelete, "/v1/cache", nil, nil)
}

func summarize(name string, cache bool, ss []sample, wall time.Duration) Figures {
	f := Figures{Workload: name, Cache: cache, Requests: len(ss)}
	if len(ss) == 0 {
		return f
	}
	ttfts := make([]float64, len(ss))
	gen := 0
	for i, s := range ss {
		ttfts[i] = float64(s.ttft.Microseconds()) / 1000
		f.PromptTokens += s.prompt
		f.CachedTokens += s.cached
		gen += s.completion
	}
	sort.Float64s(ttfts)
	f.TTFTp50 = ttfts[len(ttfts)/2]
	f.TTFTp95 = ttfts[min(len(ttfts)-1, int(float64(len(ttfts))*0.95))]
	f.PromptTokens /= len(ss)
	f.CachedTokens /= len(ss)
	f.TokensPerSec = float64(gen) / wall.Seconds()
	return f
}

// Run executes the workloads against the daemon clients a and b (two
// connections standing for two different apps).
func Run(ctx context.Context, a, b *ipc.Client, o Options) ([]Figures, error) {
	o = o.defaults()
	for _, w := range o.Workloads {
		if !slices.Contains(WorkloadNames, w) {
			return nil, fmt.Errorf("servebench: unknown workload %q (want one of %s)", w, strings.Join(WorkloadNames, ", "))
		}
	}
	// Warm the model up so loading is not measured.
	if _, err := one(ctx, a, o, []ipc.Message{{Role: "user", Content: "warm up"}}); err != nil {
		return nil, err
	}
	var out []Figures
	for _, w := range []struct {
		name string
		run  func(context.Context, *ipc.Client, *ipc.Client, Options) ([]Figures, error)
	}{{"chat", runChat}, {"rag", runRAG}, {"multiturn", runMultiTurn}, {"streams", runStreams}, {"spec", runSpec}, {"kv", runKV}} {
		if !o.wants(w.name) {
			continue
		}
		figs, err := w.run(ctx, a, b, o)
		if err != nil {
			return nil, fmt.Errorf("servebench: %s: %w", w.name, err)
		}
		out = append(out, figs...)
	}
	return out, nil
}

// runChat: two apps share the same long system prompt.
func runChat(ctx context.Context, a, b *ipc.Client, o Options) ([]Figures, error) {
	var out []Figures
	sys := systemPrompt()
	for _, cache := range []bool{false, true} {
		if err := clearCache(ctx, a); err != nil {
			return nil, err
		}
		var ss []sample
		start := time.Now()
		for i := 0; i < o.Requests; i++ {
			if !cache {
				if err := clearCache(ctx, a); err != nil {
					return nil, err
				}
			}
			c := a
			if i%2 == 1 {
				c = b
			}
			s, err := one(ctx, c, o, []ipc.Message{{Role: "system", Content: sys}, {Role: "user", Content: fmt.Sprintf("What does file %d do?", i)}})
			if err != nil {
				return nil, err
			}
			if i > 0 || !cache { // the first cached request is a cold miss
				ss = append(ss, s)
			}
		}
		out = append(out, summarize("chat-2-clients", cache, ss, time.Since(start)))
	}
	return out, nil
}

// runRAG: a few long documents, varying questions.
func runRAG(ctx context.Context, a, _ *ipc.Client, o Options) ([]Figures, error) {
	var out []Figures
	for _, cache := range []bool{false, true} {
		if err := clearCache(ctx, a); err != nil {
			return nil, err
		}
		var ss []sample
		start := time.Now()
		for i := 0; i < o.Requests+3; i++ {
			if !cache {
				if err := clearCache(ctx, a); err != nil {
					return nil, err
				}
			}
			s, err := one(ctx, a, o, []ipc.Message{{Role: "user", Content: document(i%3) + fmt.Sprintf("\nQuestion %d: what moves work between cores?", i)}})
			if err != nil {
				return nil, err
			}
			if i >= 3 || !cache { // the first pass over each document fills the cache
				ss = append(ss, s)
			}
		}
		out = append(out, summarize("rag-3-docs", cache, ss, time.Since(start)))
	}
	return out, nil
}

// runMultiTurn: one conversation of o.Requests turns, each sending the
// whole history back with the model's replies of 2·MaxTokens tokens. TTFT is measured
// from the second turn on. With the cache on, each turn should compute
// only its new message: the daemon warms the next turn's history after
// every reply.
func runMultiTurn(ctx context.Context, a, _ *ipc.Client, o Options) ([]Figures, error) {
	var out []Figures
	o2 := o
	o2.MaxTokens = 2 * o.MaxTokens
	for _, cache := range []bool{false, true} {
		if err := clearCache(ctx, a); err != nil {
			return nil, err
		}
		msgs := []ipc.Message{{Role: "system", Content: "You are a concise assistant for questions about operating systems."}}
		var ss []sample
		start := time.Now()
		for i := 0; i <= o.Requests; i++ {
			if !cache {
				if err := clearCache(ctx, a); err != nil {
					return nil, err
				}
			}
			msgs = append(msgs, ipc.Message{Role: "user", Content: fmt.Sprintf("Question %d: how does the kernel schedule task %d?", i, i)})
			s, err := one(ctx, a, o2, msgs)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, ipc.Message{Role: "assistant", Content: s.reply})
			if i > 0 { // the first turn has no history
				ss = append(ss, s)
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(o.TurnPause):
			}
		}
		out = append(out, summarize("multi-turn", cache, ss, time.Since(start)))
	}
	return out, nil
}

// runStreams: concurrent streams against a single stream. Each stream is
// a client that sends o.Requests requests of 64 tokens one after another,
// so the figures cover sustained generation rather than one burst; the
// throughput is every stream's tokens over the wall time of the whole run.
func runStreams(ctx context.Context, a, _ *ipc.Client, o Options) ([]Figures, error) {
	var out []Figures
	for _, n := range []int{1, o.Concurrency} {
		var mu sync.Mutex
		var ss []sample
		var wg sync.WaitGroup
		errs := make(chan error, n)
		start := time.Now()
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o2 := o
				o2.MaxTokens = 64
				for k := range o.Requests {
					s, err := one(ctx, a, o2, []ipc.Message{{Role: "user", Content: fmt.Sprintf("Stream %d, question %d: tell me about interrupts.", i, k)}})
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					ss = append(ss, s)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return nil, err
		}
		out = append(out, summarize(fmt.Sprintf("streams-%d", n), true, ss, time.Since(start)))
	}
	return out, nil
}

// Print writes the figures as a table.
func Print(w io.Writer, figs []Figures) {
	fmt.Fprintf(w, "| %-16s | %-5s | %4s | %12s | %12s | %13s | %13s | %10s |\n", "workload", "cache", "reqs", "TTFT p50 ms", "TTFT p95 ms", "prompt tokens", "cached tokens", "gen tok/s")
	fmt.Fprintf(w, "|%s|%s|%s|%s|%s|%s|%s|%s|\n", strings.Repeat("-", 18), strings.Repeat("-", 7), strings.Repeat("-", 6), strings.Repeat("-", 14), strings.Repeat("-", 14), strings.Repeat("-", 15), strings.Repeat("-", 15), strings.Repeat("-", 12))
	for _, f := range figs {
		cache := "off"
		if f.Cache {
			cache = "on"
		}
		if f.Speculation != "" || f.KVType != "" || f.Workload == "kv-capacity" {
			continue
		}
		fmt.Fprintf(w, "| %-16s | %-5s | %4d | %12.1f | %12.1f | %13d | %13d | %10.1f |\n", f.Workload, cache, f.Requests, f.TTFTp50, f.TTFTp95, f.PromptTokens, f.CachedTokens, f.TokensPerSec)
	}
	printSpec(w, figs)
	printKV(w, figs)
}
