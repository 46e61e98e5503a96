package api

import (
	"net/http"
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/models"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/prefix"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
	"github.com/ruvllm/ruvllm/ipc"
)

// cacheModel is a model with a prefix cache to report on (*llm.Model).
type cacheModel interface {
	CacheStats() prefix.Stats
	CacheTop(n int) []prefix.Prefix
	ClearCache()
	Tokenizer() *tokenizer.Tokenizer
	WarmedTokens() uint64
}

// cacheModels returns the loaded models that have a prefix cache.
func cacheModels(mgr *models.Manager) map[string]cacheModel {
	out := map[string]cacheModel{}
	for name, m := range mgr.Models() {
		if cm, ok := m.(cacheModel); ok {
			out[name] = cm
		}
	}
	return out
}

// cache answers GET /v1/cache: each loaded model's prefix-cache figures
// and its most reused prefixes.
func (a *API) cache(w http.ResponseWriter, r *http.Request) {
	out := ipc.CacheStats{Models: []ipc.ModelCache{}}
	for name, m := range cacheModels(a.models) {
		st := m.CacheStats()
		mc := ipc.ModelCache{Model: name, Lookups: st.Lookups, Hits: st.Hits, HitTokens: st.HitTokens, MissTokens: st.MissTokens,
			Evictions: st.Evictions, Blocks: st.Blocks, ColdBlocks: st.ColdBlocks, BlockTokens: st.BlockTokens, WarmedTokens: m.WarmedTokens(), Top: []ipc.CachePrefix{}}
		if total := st.HitTokens + st.MissTokens; total > 0 {
			mc.HitRate = float64(st.HitTokens) / float64(total)
		}
		if k, ok := m.(interface{ KVInfo() llm.KVInfo }); ok {
			i := k.KVInfo()
			mc.KV = &ipc.KVInfo{Type: i.Type, HotWindow: i.HotWindow, BudgetBytes: i.BudgetBytes, HotBytesPerToken: i.HotBytesPerToken,
				ColdBytesPerToken: i.ColdBytesPerToken, CapacityTokens: i.CapacityTokens}
		}
		for _, p := range m.CacheTop(10) {
			mc.Top = append(mc.Top, ipc.CachePrefix{Tokens: p.Tokens, Hits: p.Hits, Head: m.Tokenizer().Decode(p.Head, tokenizer.DecodeOptions{Special: true})})
		}
		out.Models = append(out.Models, mc)
	}
	sort.Slice(out.Models, func(i, j int) bool { return out.Models[i].Model < out.Models[j].Model })
	daemon.WriteJSON(w, http.StatusOK, out)
}

// clearCache answers DELETE /v1/cache: drop every unused cached prefix,
// those of the loaded models and those saved for the others.
func (a *API) clearCache(w http.ResponseWriter, r *http.Request) {
	for _, m := range cacheModels(a.models) {
		m.ClearCache()
	}
	if err := a.models.ClearSnapshots(); err != nil {
		a.log.Error("clear prefix cache", "err", err)
		openAIError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// cacheCollector exports prefix-cache figures of loaded models to
// Prometheus at scrape time.
type cacheCollector struct{ m *models.Manager }

var (
	descHitTokens  = prometheus.NewDesc("ruvllm_prefix_cache_hit_tokens_total", "Prompt tokens served from the prefix cache.", []string{"model"}, nil)
	descMissTokens = prometheus.NewDesc("ruvllm_prefix_cache_miss_tokens_total", "Prompt tokens computed.", []string{"model"}, nil)
	descEvictions  = prometheus.NewDesc("ruvllm_prefix_cache_evictions_total", "Cached KV blocks evicted.", []string{"model"}, nil)
	descBlocks     = prometheus.NewDesc("ruvllm_prefix_cache_blocks", "KV blocks held by the prefix cache.", []string{"model"}, nil)
	descWarmed     = prometheus.NewDesc("ruvllm_prefix_cache_warmed_tokens_total", "Tokens computed ahead after chat replies, so that next turns find their history cached.", []string{"model"}, nil)
)

func (c cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descHitTokens
	ch <- descMissTokens
	ch <- descEvictions
	ch <- descBlocks
	ch <- descWarmed
}

func (c cacheCollector) Collect(ch chan<- prometheus.Metric) {
	for name, m := range cacheModels(c.m) {
		st := m.CacheStats()
		ch <- prometheus.MustNewConstMetric(descHitTokens, prometheus.CounterValue, float64(st.HitTokens), name)
		ch <- prometheus.MustNewConstMetric(descMissTokens, prometheus.CounterValue, float64(st.MissTokens), name)
		ch <- prometheus.MustNewConstMetric(descEvictions, prometheus.CounterValue, float64(st.Evictions), name)
		ch <- prometheus.MustNewConstMetric(descBlocks, prometheus.GaugeValue, float64(st.Blocks), name)
		ch <- prometheus.MustNewConstMetric(descWarmed, prometheus.CounterValue, float64(m.WarmedTokens()), name)
	}
}
