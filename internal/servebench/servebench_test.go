package servebench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/internal/testdaemon"
	"github.com/ruvllm/ruvllm/ipc"
)

// TestRunAgainstDaemon drives a real in-process daemon with the synthetic
// model: every workload reports figures, the cached runs of chat and RAG
// reuse the long prefixes, and a workload selection runs only what it
// names.
func TestRunAgainstDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a daemon")
	}
	ctx := context.Background()
	d, err := testdaemon.Start(ctx, testdaemon.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	b, err := ipc.Dial(ctx, ipc.WithSocket(d.Socket), ipc.WithApp("servebench-b"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	figs, err := Run(ctx, d.Client, b, Options{Requests: 2, Concurrency: 3, MaxTokens: 4, TurnPause: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Figures{}
	for _, f := range figs {
		key := f.Workload
		if f.Cache {
			key += "/on"
		}
		byName[key] = f
	}
	for _, want := range []string{"chat-2-clients", "chat-2-clients/on", "rag-3-docs", "rag-3-docs/on", "multi-turn", "multi-turn/on", "streams-1/on", "streams-3/on"} {
		f, ok := byName[want]
		if !ok {
			t.Fatalf("no %s figures in %+v", want, figs)
		}
		if f.Requests == 0 || f.TTFTp50 <= 0 || f.TokensPerSec <= 0 || f.PromptTokens <= 0 {
			t.Errorf("%s: %+v", want, f)
		}
	}
	if f := byName["chat-2-clients"]; f.CachedTokens != 0 {
		t.Errorf("chat with the cache cleared before each request reused %d tokens", f.CachedTokens)
	}
	if f := byName["chat-2-clients/on"]; f.CachedTokens < f.PromptTokens/2 {
		t.Errorf("chat with the cache reused %d of %d prompt tokens", f.CachedTokens, f.PromptTokens)
	}
	if f := byName["rag-3-docs/on"]; f.CachedTokens < f.PromptTokens/2 {
		t.Errorf("rag with the cache reused %d of %d prompt tokens", f.CachedTokens, f.PromptTokens)
	}
	if f := byName["multi-turn/on"]; f.Requests != 2 || f.CachedTokens < f.PromptTokens/2 {
		t.Errorf("multi-turn with the cache: %+v", f)
	}
	if f := byName["streams-3/on"]; f.Requests != 6 {
		t.Errorf("streams-3 ran %d requests, want 2 from each of 3 streams", f.Requests)
	}

	figs, err = Run(ctx, d.Client, b, Options{Requests: 1, Concurrency: 2, MaxTokens: 2, Workloads: []string{"streams"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 2 || figs[0].Workload != "streams-1" || figs[1].Workload != "streams-2" {
		t.Errorf("streams only: %+v", figs)
	}
	var out strings.Builder
	Print(&out, figs)
	if !strings.Contains(out.String(), "| streams-2 ") {
		t.Errorf("table:\n%s", out.String())
	}

	// The spec workload: each setting over all workloads, then each
	// workload alone, against no speculation.
	figs, err = Run(ctx, d.Client, b, Options{Requests: 1, Workloads: []string{"spec"}, Spec: []string{"off", "lookup"}, SpecTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, f := range figs {
		rows = append(rows, f.Workload+" "+f.Speculation)
		want := 1
		if f.Workload == "spec" {
			want = 3
		}
		if f.Requests != want || !f.Identical || f.TokensPerSec <= 0 || f.Speedup <= 0 {
			t.Errorf("%s %s: %+v, want %d requests, identical replies", f.Workload, f.Speculation, f, want)
		}
		if f.Speculation == "off" && f.Speedup != 1 {
			t.Errorf("%s off: speed-up %v, want 1", f.Workload, f.Speedup)
		}
	}
	if got := strings.Join(rows, ", "); got != "spec off, spec lookup, spec/rag off, spec/rag lookup, spec/summary off, spec/summary lookup, spec/code-edit off, spec/code-edit lookup" {
		t.Errorf("spec figures: %s", got)
	}
	out.Reset()
	Print(&out, figs)
	if !strings.Contains(out.String(), "| spec/summary   | lookup ") {
		t.Errorf("table:\n%s", out.String())
	}

	if _, err := Run(ctx, d.Client, b, Options{Workloads: []string{"chat", "nope"}}); err == nil || !strings.Contains(err.Error(), `unknown workload "nope"`) {
		t.Errorf("unknown workload: err = %v", err)
	}
}
