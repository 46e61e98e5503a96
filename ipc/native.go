package ipc

import (
	"encoding/json"
	"time"
)

// Health answers GET /v1/health.
type Health struct {
	Status        string        `json:"status"` // "ok"
	Version       string        `json:"version"`
	PID           int           `json:"pid"`
	UptimeSeconds float64       `json:"uptime_seconds"`
	Loaded        []LoadedModel `json:"loaded"`
	// Socket is the Unix socket the daemon serves.
	Socket string `json:"socket,omitempty"`
	// TCPAddress is the loopback host:port of the TCP listener as bound
	// (the real port when --listen asked for port 0), "" without one.
	TCPAddress string `json:"tcp_address,omitempty"`
	// TokenFile holds the bearer token TCP clients send ("" without a
	// TCP listener).
	TokenFile string `json:"token_file,omitempty"`
	// TCPSameUserNoToken says TCP clients of the daemon's own uid need no
	// token (Linux, unless the daemon runs with --require-token).
	TCPSameUserNoToken bool `json:"tcp_same_user_no_token,omitempty"`
	// ServiceManager names what started the daemon and passed it its
	// socket: "systemd" or "launchd"; "" when it was started directly.
	ServiceManager string `json:"service_manager,omitempty"`
	// CacheDir holds the daemon's log (when started by the CLI) and its
	// prefix-cache snapshots.
	CacheDir string `json:"cache_dir,omitempty"`
}

// LoadedModel is a model held in memory by the daemon.
type LoadedModel struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	Arch     string `json:"architecture"`
	FileType string `json:"file_type"`
	Size     int64  `json:"size"`
	Context  int    `json:"context_length"`
	// KVBytes is the memory of the model's KV cache.
	KVBytes   int64     `json:"kv_bytes,omitempty"`
	Active    int       `json:"active_requests"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Event is one server-sent event of GET /v1/events.
type Event struct {
	Type string          `json:"type"` // "model.loaded", "model.unloaded", "request.finished", ...
	Time time.Time       `json:"time"`
	Data json.RawMessage `json:"data,omitempty"`
}

// CacheStats answers GET /v1/cache: the prefix cache of each loaded model.
type CacheStats struct {
	Models []ModelCache `json:"models"`
}

// ModelCache is one model's prefix-cache figures.
type ModelCache struct {
	Model       string  `json:"model"`
	Lookups     uint64  `json:"lookups"`
	Hits        uint64  `json:"hits"`
	HitTokens   uint64  `json:"hit_tokens"`
	MissTokens  uint64  `json:"miss_tokens"`
	HitRate     float64 `json:"hit_rate"` // hit tokens / prompt tokens
	Evictions   uint64  `json:"evictions"`
	Blocks      int     `json:"blocks"`
	BlockTokens int     `json:"block_tokens"`
	// WarmedTokens are the tokens computed ahead, after chat replies, so
	// that the next turns found their history cached.
	WarmedTokens uint64        `json:"warmed_tokens"`
	Top          []CachePrefix `json:"top"`
	// ColdBlocks of the blocks hold their keys and values quantized (the
	// KV cache's cold tier, --kv-type q8_0/q4_0).
	ColdBlocks int `json:"cold_blocks,omitempty"`
	// KV describes the model's KV cache memory.
	KV *KVInfo `json:"kv,omitempty"`
}

// KVInfo is a model's KV cache memory: its type ("f16", or the cold
// tier's "q8_0"/"q4_0" behind an f16 window of HotWindow positions), the
// budget both tiers draw on, what one position takes in each tier, and
// how many positions the budget holds once they are old.
type KVInfo struct {
	Type              string  `json:"type"`
	HotWindow         int     `json:"hot_window,omitempty"`
	BudgetBytes       int64   `json:"budget_bytes"`
	HotBytesPerToken  float64 `json:"hot_bytes_per_token"`
	ColdBytesPerToken float64 `json:"cold_bytes_per_token,omitempty"`
	CapacityTokens    int     `json:"capacity_tokens"`
}

// CachePrefix is one of the most reused cached prefixes.
type CachePrefix struct {
	Tokens int    `json:"tokens"`
	Hits   uint64 `json:"hits"`
	Head   string `json:"head"` // the prefix's first tokens as text
}

// RequestRecord is one entry of the request log (GET /v1/requests).
type RequestRecord struct {
	ID               string    `json:"id"`
	Time             time.Time `json:"time"`
	Client           string    `json:"client"`
	Model            string    `json:"model"`
	Endpoint         string    `json:"endpoint"`
	PromptTokens     int       `json:"prompt_tokens"`
	CachedTokens     int       `json:"cached_tokens"`
	CompletionTokens int       `json:"completion_tokens"`
	TTFTMillis       float64   `json:"ttft_ms"`
	TokensPerSecond  float64   `json:"tokens_per_second"`
	// DraftTokens, DraftAccepted and Verifications describe speculative
	// decoding: draft tokens verified, those accepted, verification steps.
	DraftTokens   int    `json:"draft_tokens,omitempty"`
	DraftAccepted int    `json:"draft_accepted,omitempty"`
	Verifications int    `json:"verifications,omitempty"`
	Status        string `json:"status"` // "ok", "cancelled", "error"
	Error         string `json:"error,omitempty"`
	// TTFT says where the time to the first token went (absent when no
	// token was generated).
	TTFT *TTFTBreakdown `json:"ttft_breakdown,omitempty"`
}

// TTFTBreakdown divides a request's time to its first token, in
// milliseconds. Handler runs from the decoded request to the engine's
// start (acquiring the model, loading it when it was not, adapters,
// compiling a grammar). The engine's parts follow, and add up to
// TTFTMillis: Prepare (chat template and tokenization), Queue (waiting for
// a place among running sequences), Prefill (computing the uncached prompt
// tokens, in PrefillSteps forward passes that other sequences' tokens may
// share) and Sample (sampling and decoding the first token). What a client
// measures adds reading the request and writing the answer.
type TTFTBreakdown struct {
	HandlerMillis float64 `json:"handler_ms"`
	PrepareMillis float64 `json:"prepare_ms"`
	QueueMillis   float64 `json:"queue_ms"`
	PrefillMillis float64 `json:"prefill_ms"`
	PrefillSteps  int     `json:"prefill_steps"`
	SampleMillis  float64 `json:"sample_ms"`
}

// APIError is a non-2xx answer, in either protocol's error shape.
type APIError struct {
	Status  int
	Message string
	Type    string
}

func (e *APIError) Error() string {
	if e.Type != "" {
		return e.Type + ": " + e.Message
	}
	return e.Message
}
