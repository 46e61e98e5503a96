package llm

import (
	"context"
	"fmt"
	"testing"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/lora"
)

// TestWarmFollowUpUnderAdapter: a chat under an adapter (a learned
// adapter's: every chat of a user who gave feedback) has its next turn
// warmed under that adapter, and the next turn reuses it and answers as a
// model without a cache does; warming skipped every chat with adapters.
func TestWarmFollowUpUnderAdapter(t *testing.T) {
	basePath, adapterPath, _ := adapterFixture(t, 1)
	ctx := context.Background()
	warm, alone := loadTest(t, basePath), loadTestNoCache(t, basePath)
	wa, err := warm.LoadAdapter(adapterPath)
	if err != nil {
		t.Fatal(err)
	}
	aa, err := alone.LoadAdapter(adapterPath)
	if err != nil {
		t.Fatal(err)
	}
	first := Request{Messages: []chat.Message{
		{Role: "system", Content: "You are a helpful assistant who answers questions about files and folders."},
		{Role: "user", Content: "How do I open a file?"},
	}, MaxTokens: 24, IgnoreEOS: true, Adapters: []lora.Applied{{Adapter: wa, Scale: 1}}}
	_, reply, _ := generate(t, warm, first)
	n, err := warm.WarmFollowUp(ctx, first, reply)
	if err != nil || n == 0 {
		t.Fatalf("WarmFollowUp = %d, %v; want the next turn's history warmed", n, err)
	}
	second := first
	second.Messages = append(append([]chat.Message(nil), first.Messages...),
		chat.Message{Role: "assistant", Content: reply}, chat.Message{Role: "user", Content: "And how do I close it?"})
	gotIDs, _, res := generate(t, warm, second)
	if res.CachedTokens < n {
		t.Errorf("the next turn reused %d prompt tokens; %d were warmed", res.CachedTokens, n)
	}
	ref := second
	ref.Adapters = []lora.Applied{{Adapter: aa, Scale: 1}}
	wantIDs, _, _ := generate(t, alone, ref)
	if fmt.Sprint(gotIDs) != fmt.Sprint(wantIDs) {
		t.Fatalf("next turn after warming under the adapter: %v, without a cache: %v", gotIDs, wantIDs)
	}
}

func loadTestNoCache(t *testing.T, path string) *Model {
	t.Helper()
	m, err := Load(context.Background(), path, Options{Threads: 2, ContextLength: 256, NoPrefixCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}
