package servebench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"

	"github.com/ruvllm/ruvllm/ipc"
)

// kvWords make the kv workload's prompts: distinct texts of common words.
var kvWords = strings.Fields(`the a of to and in is it that for on with as was by this be are from or have an they which one
you were her all she there would their we him been has when who will more no if out so said what up its about into than them
can only other new some could time these two may then do first any my now such like our over man me even most made after also
did many before must through back years where much your way well down should because each just those people how too little
state good very make world still own see men work long get here between both life being under never day same another know
while last might us great old year off come since against go came right used take three page file list value memory kernel`)

// runKV: how many cached prefixes the daemon's KV budget holds. The cache
// is cleared, then prompts of distinct text (about 500 tokens each) are
// sent one after another, one token generated each, until the cache
// starts evicting; the number of whole prompts it holds then is the
// figure (compare it between daemons started with different --kv-type).
func runKV(ctx context.Context, a, _ *ipc.Client, o Options) ([]Figures, error) {
	if err := clearCache(ctx, a); err != nil {
		return nil, err
	}
	before, err := modelCache(ctx, a, o.Model)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(17, 18))
	f := Figures{Workload: "kv-capacity", Cache: true}
	prompts, tokens := 0, 0
	for i := 0; i < 4096; i++ {
		var b strings.Builder
		fmt.Fprintf(&b, "Note %d:", i)
		for range 400 {
			b.WriteString(" " + kvWords[r.IntN(len(kvWords))])
		}
		req := ipc.CompletionRequest{Model: o.Model, Prompt: ipc.CompletionPrompt{Text: b.String()}}
		temp := float32(0)
		req.Temperature, req.MaxTokens, req.Speculation = &temp, 1, "off"
		var resp ipc.CompletionResponse
		if err := a.Do(ctx, http.MethodPost, "/v1/completions", req, &resp); err != nil {
			return nil, fmt.Errorf("kv: %w", err)
		}
		if resp.Usage != nil {
			tokens += resp.Usage.PromptTokens
		}
		prompts++
		mc, err := modelCache(ctx, a, o.Model)
		if err != nil {
			return nil, err
		}
		if mc.Evictions > before.Evictions {
			per := float64(tokens) / float64(prompts)
			f.Requests, f.PromptTokens = prompts, int(per)
			f.CachedPrefixes = int(float64(mc.Blocks*mc.BlockTokens) / per)
			if kv := mc.KV; kv != nil {
				f.KVType, f.KVBudgetBytes, f.KVBytesPerToken = kv.Type, kv.BudgetBytes, kv.HotBytesPerToken
				if kv.ColdBytesPerToken > 0 {
					f.KVBytesPerToken = kv.ColdBytesPerToken
				}
			}
			return []Figures{f}, clearCache(ctx, a)
		}
	}
	return nil, fmt.Errorf("kv: no eviction after %d prompts", prompts)
}

// modelCache returns the cache figures of model (the only loaded model
// when it is empty).
func modelCache(ctx context.Context, c *ipc.Client, model string) (ipc.ModelCache, error) {
	st, err := c.Cache(ctx)
	if err != nil {
		return ipc.ModelCache{}, err
	}
	for _, m := range st.Models {
		if model == "" || m.Model == model {
			return m, nil
		}
	}
	return ipc.ModelCache{}, fmt.Errorf("kv: no prefix cache figures for model %q", model)
}

// printKV writes the kv workload's figures.
func printKV(w io.Writer, figs []Figures) {
	for _, f := range figs {
		if f.Workload != "kv-capacity" {
			continue
		}
		fmt.Fprintf(w, "\nKV %s: %.0f bytes per cached token, budget %.1f MiB: %d cached prompts of ~%d tokens when eviction began (after %d requests)\n",
			f.KVType, f.KVBytesPerToken, float64(f.KVBudgetBytes)/(1<<20), f.CachedPrefixes, f.PromptTokens, f.Requests)
	}
}
