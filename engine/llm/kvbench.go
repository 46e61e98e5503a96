package llm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// KVInfo describes the memory of the model's KV cache.
type KVInfo struct {
	// Type is "f16" (or "f32"), or the cold tier's "q8_0"/"q4_0".
	Type      string `json:"type"`
	HotWindow int    `json:"hot_window,omitempty"`
	// BudgetBytes is the cache's memory: both tiers draw on it.
	BudgetBytes int64 `json:"budget_bytes"`
	// HotBytesPerToken and ColdBytesPerToken are what one position takes
	// in each tier (keys and values of every layer).
	HotBytesPerToken  float64 `json:"hot_bytes_per_token"`
	ColdBytesPerToken float64 `json:"cold_bytes_per_token,omitempty"`
	// CapacityTokens is how many positions the budget holds once they are
	// old: every block cold where there is a cold tier.
	CapacityTokens int `json:"capacity_tokens"`
}

// KVInfo returns the KV cache's memory layout.
func (m *Model) KVInfo() KVInfo {
	cfg := m.kv.Config()
	hot := float64(m.kv.BlockBytes()) / float64(cfg.BlockSize)
	info := KVInfo{Type: "f16", BudgetBytes: int64(m.kv.BlockBytes()) * int64(cfg.Blocks), HotBytesPerToken: hot,
		CapacityTokens: cfg.Blocks * cfg.BlockSize}
	if cfg.Type == quant.F32 {
		info.Type = "f32"
	}
	if m.opts.KVCold != 0 {
		info.Type = strings.ToLower(m.opts.KVCold.String())
		info.HotWindow = m.opts.KVHotWindow
		cb := m.kv.(interface{ ColdBlockBytes() int }).ColdBlockBytes()
		info.ColdBytesPerToken = float64(cb) / float64(cfg.BlockSize)
		info.CapacityTokens = cfg.ColdBlocks * cfg.BlockSize
	}
	return info
}

// BytesPerToken is the mean memory per position of a sequence of n
// positions: the last HotWindow of them hot, the rest cold.
func (k KVInfo) BytesPerToken(n int) float64 {
	if k.ColdBytesPerToken == 0 || n <= k.HotWindow {
		return k.HotBytesPerToken
	}
	return (float64(k.HotWindow)*k.HotBytesPerToken + float64(n-k.HotWindow)*k.ColdBytesPerToken) / float64(n)
}

// PrefixCapacity fills the prefix cache with distinct prompts of
// promptTokens random tokens, one request at a time (one token
// generated each), until the cache starts evicting, and returns how many
// whole prompts it holds then: the number of cached prefixes the KV
// budget keeps. It clears the cache before and after.
func (m *Model) PrefixCapacity(ctx context.Context, promptTokens int) (int, error) {
	if m.cache == nil {
		return 0, fmt.Errorf("prefix capacity: the prefix cache is off")
	}
	// Only whole blocks are cached, and a prompt's count of them divides
	// the cached blocks: a prompt under one block (or a negative count)
	// panicked, dividing by zero or making a slice of negative length.
	if promptTokens < blockSize {
		return 0, fmt.Errorf("prefix capacity: prompts of %d tokens: at least %d (one KV block) are needed to cache one", promptTokens, blockSize)
	}
	if promptTokens+1 >= m.opts.ContextLength {
		return 0, fmt.Errorf("prefix capacity: prompts of %d tokens do not fit the context of %d", promptTokens, m.opts.ContextLength)
	}
	m.ClearCache()
	defer m.ClearCache()
	vocab := m.net.Config().Vocab
	r := rand.New(rand.NewPCG(7, uint64(promptTokens)))
	start := m.cache.Stats().Evictions
	perPrompt := promptTokens / blockSize
	for i := 0; i < 1<<16; i++ {
		toks := make([]int32, promptTokens)
		for k := range toks {
			toks[k] = int32(r.IntN(vocab))
		}
		if _, err := m.Generate(ctx, Request{Tokens: toks, MaxTokens: 1, IgnoreEOS: true, NoSpeculation: true}, func(Token) error { return nil }); err != nil {
			return 0, fmt.Errorf("prefix capacity: %w", err)
		}
		if m.cache.Stats().Evictions > start {
			return m.cache.Stats().Blocks / perPrompt, nil
		}
	}
	return 0, fmt.Errorf("prefix capacity: no eviction after 65536 prompts")
}
