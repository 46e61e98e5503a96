package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/grammar"
	"github.com/ruvllm/ruvllm/engine/kv"
	"github.com/ruvllm/ruvllm/engine/mapfault"
	"github.com/ruvllm/ruvllm/engine/model"
	"github.com/ruvllm/ruvllm/engine/prefix"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/sched"
	"github.com/ruvllm/ruvllm/engine/spec"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
)

// ErrContextExceeded is returned when a prompt does not fit the context.
var ErrContextExceeded = errors.New("prompt exceeds the context length")

// ErrNoFIM is returned for a fill-in-the-middle request (Request.Suffix)
// to a model without fill-in-the-middle tokens.
var ErrNoFIM = errors.New("this model has no fill-in-the-middle tokens")

// ErrInvalidModel wraps every reason a model file is refused at load: it
// is not a GGUF file, its metadata is malformed or absurd, its tensors do
// not match it, or its tokenizer is unknown. A load that fails for any
// other reason (no memory, no backend, a file that cannot be opened or
// mapped) does not wrap it.
var ErrInvalidModel = errors.New("invalid model file")

// ErrTokenRange is returned for a prompt given as token ids that holds an
// id outside the vocabulary.
var ErrTokenRange = errors.New("token id outside the vocabulary")

// ErrEmptyInput is returned for an input with no tokens to read.
var ErrEmptyInput = errors.New("input has no tokens")

// ErrNoTemplate is returned for a chat request to a model without a chat
// template.
var ErrNoTemplate = errors.New("model has no chat template")

// ErrNonFinite is returned when a forward pass computes NaN or infinite
// values where a token or an embedding must come from: the model's weights
// (or an applied adapter's) hold NaN or Inf, or overflow float32. Without
// it such a model answered every request with an empty reply that ended
// with "stop", or an embedding of zeros.
var ErrNonFinite = errors.New("the model computed NaN or infinite values (its weights, or an adapter's, are not finite or overflow)")

// ErrBusy is returned for a request made while Options.MaxQueue requests
// already wait.
var ErrBusy = sched.ErrBusy

// Options configures Load.
type Options struct {
	// Threads for the CPU backend; 0 means all cores.
	Threads int
	// ContextLength caps each sequence; 0 means the model's trained
	// context, at most 4096.
	ContextLength int
	// BatchSize is the number of prompt tokens computed per forward pass
	// (default 256: the prefill's activations and scratch grow with it, and
	// a 512-token batch put a 0.5B model's peak RSS over file + KV + 64
	// MiB for about 2% more prompt speed).
	BatchSize int
	// KVType is the element type of the KV cache: F16 (default) or F32.
	KVType quant.Type
	// KVCold adds a cold tier to an F16 cache: Q8_0 or Q4_0 (0: none).
	// Each sequence's positions older than KVHotWindow (default 256) move
	// there in whole blocks, quantized, and so do a finished sequence's
	// blocks before the prefix cache keeps them; the cache's memory stays
	// that of an all-F16 cache, each block counting its real bytes, so
	// it holds longer contexts and more cached prefixes.
	KVCold      quant.Type
	KVHotWindow int
	// Sequences is how many full-length sequences the KV pool holds.
	Sequences int
	// MaxQueue bounds the requests waiting for the scheduler (0: no
	// bound); one more fails with ErrBusy.
	MaxQueue int
	// NoPrefixCache disables sharing computed prompt prefixes.
	NoPrefixCache bool
	// Speculate is the set of speculative decoding kinds requests may use
	// (zero: none); requests opt out with Request.NoSpeculation.
	Speculate spec.Kinds
	// Draft is a draft model's GGUF file for spec.KindDraft: any model
	// with the same vocabulary, e.g. a low-bit quantization of this one;
	// or SelfDraftPrefix and a file type ("self:Q4_0"): this model
	// converted to that type, made once into DraftDir and reused.
	Draft string
	// DraftDir keeps the drafts made from the model itself (Draft
	// "self:TYPE").
	DraftDir string
	// DraftOptional loads the model without its draft model, with a
	// warning, when the draft cannot be used (what Load would otherwise
	// return as an ErrDraft): a shared daemon keeps serving the model
	// without that speculation instead of failing its every request.
	DraftOptional bool
	// KVColdOptional loads a model whose shape the cold tier cannot take
	// (a head size the backend cannot quantize in rows, such as 80 or 48)
	// with an all-F16 cache, with a warning, instead of failing: a shared
	// daemon's --kv-type then costs that model its cold tier, not its
	// every request.
	KVColdOptional bool
	// SpecControl tunes how much is drafted (spec.Options; zero: adaptive
	// with the defaults).
	SpecControl spec.Options
	// DraftWindow, when positive, makes the draft model read only the
	// last DraftWindow tokens of a sequence's prompt (spec.ModelDrafter.
	// Window): reading a long prompt costs the draft model more than a
	// short reply's speculation saves.
	DraftWindow int
	// Exact makes the CPU backend compute llama.cpp's arithmetic rounding
	// for rounding (cpu.Options.Exact), so that greedy tokens equal
	// llama.cpp's; by default it takes its fastest arithmetic, within the
	// tolerance TestDefaultModeAccuracy checks. Ignored with NewBackend.
	Exact bool
	// LlamaBatching, with Exact, also follows llama.cpp's attention path
	// by batch size (cpu.Options.LlamaBatching): scoring (Perplexity,
	// KLDivergence, Logits) then gives llama-perplexity's figures, but a
	// sequence's results depend on its batching, so the prefix cache is
	// off.
	LlamaBatching bool
	// LlamaBuild, with Exact, picks which llama.cpp build's arithmetic
	// the CPU backend reproduces where x86-64 builds differ
	// (cpu.Options.Build: the prebuilt backends by default, or a native
	// AVX512-FP16 build).
	LlamaBuild cpu.LlamaBuild
	// AMX, with Exact, selects whether Q8_0 and F16 matrix products sum in
	// the order of llama.cpp's AMX kernels (cpu.Options.AMX). The zero
	// value follows llama.cpp on this CPU (on where it has AMX-INT8);
	// cpu.AMXOff matches a llama.cpp run without them (built without AMX,
	// or with --no-repack). Without Exact, cpu.AMXOff keeps BF16 and Q8_0
	// matrices off the AMX tiles, which the other values use where the CPU
	// has AMX-BF16 and AMX-INT8. Ignored with NewBackend.
	AMX cpu.AMXMode
	// Logger receives load and generation logs; nil discards them.
	Logger *slog.Logger
	// NewBackend, when set, creates the compute backend the model runs on;
	// nil selects the CPU backend with Threads threads. The binaries wire
	// accelerator backends (metal) in through it, so engine never imports
	// them. Model.Close calls the backend's Close method if it has one.
	NewBackend func() (compute.Backend, error)
}

// blockSize is the number of positions per KV block.
const blockSize = 16

// Model is a loaded model with its tokenizer, chat template, KV pool and
// backend. Generate and Embed may be called concurrently; they take turns
// on the backend.
type Model struct {
	info    Info
	file    *gguf.File
	tok     *tokenizer.Tokenizer
	tmpl    chat.Template
	hasTmpl bool
	tmplErr error // the file's chat template does not parse: chat requests fail with it
	// reasoningTags are a thinking model's <think> and </think> where the
	// vocabulary makes them control tokens: generated text shows them.
	reasoningTags []int32
	// fim holds the fill-in-the-middle tokens, read once (FIM).
	fimOnce sync.Once
	fim     FIMTokens
	hasFIM  bool
	net     model.Model
	backend compute.Backend
	// followsOutputs: passes tell the model which rows' outputs they read
	// (compute.OutputRowsFollower).
	followsOutputs bool
	kv             compute.KVStore
	pool           *kv.Pool
	opts           Options
	log            *slog.Logger

	sched     *sched.Scheduler
	cache     *prefix.Cache
	draft     *draftModel // nil without Options.Draft
	namespace string      // prefix-cache namespace: the model's identity
	// cacheLayout is the part of namespace that the options choose (the
	// arithmetic, the KV layout, the RoPE factors the context picks), for
	// CacheLayout.
	cacheLayout string
	warming     warmGroup
	warmed      atomic.Uint64 // tokens computed by follow-up warming

	gvOnce sync.Once // builds gvocab on first use
	gvocab *grammar.Vocab
	gvErr  error

	mu     sync.Mutex // serialises use of net, backend and kv
	closed bool
	// faulted is set once a pass faulted on the file's mapping (Faulted).
	faulted    atomic.Bool
	logits     []float32 // sized to the vocabulary
	stepLogits []float32
}

// Load opens a GGUF model and prepares it for generation. A fault reading
// the file's mapping (the file truncated while it loads) is an error
// wrapping mapfault.ErrFault.
func Load(ctx context.Context, path string, o Options) (*Model, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 256
	}
	if o.KVType == 0 {
		o.KVType = quant.F16
	}
	if o.Sequences <= 0 {
		o.Sequences = 2
	}
	if o.LlamaBatching {
		o.NoPrefixCache = true
	}
	var draftName string
	if typ, ok := strings.CutPrefix(o.Draft, SelfDraftPrefix); ok && o.Speculate&spec.KindDraft != 0 {
		p, err := selfDraft(ctx, path, typ, o.DraftDir, o.Logger)
		switch {
		case err == nil:
			draftName, o.Draft = o.Draft, p
		case o.DraftOptional:
			o.Logger.Warn("loading the model without its draft model", "model", path, "draft", o.Draft, "err", err)
			o.Draft = ""
		default:
			return nil, fmt.Errorf("%w %s: %w", ErrDraft, o.Draft, err)
		}
	}
	f, err := gguf.Open(path)
	var pathErr *fs.PathError
	switch {
	case errors.As(err, &pathErr):
		// The file could not be stat'ed, opened or mapped (permissions,
		// out of descriptors or memory, removed): a failure of the
		// environment, not of the file, which may load once it is fixed.
		return nil, err // gguf's errors name the path
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrInvalidModel, err) // gguf's errors name the path
	}
	m, err := load(f, path, o)
	if err != nil {
		f.Close()
		return nil, err // gguf's errors name the path
	}
	if m.draft != nil && draftName != "" {
		m.draft.name = draftName
	}
	return m, nil
}

// loadNet is model.Load, which reads (and repacks) the weights from the
// file's mapping: a file truncated meanwhile is an error wrapping
// mapfault.ErrFault.
func loadNet(f *gguf.File, b compute.Backend) (_ model.Model, err error) {
	defer mapfault.Catch(&err, mapfault.Arm())
	return model.Load(f, b)
}

// invalid marks err as a reason the file is refused (ErrInvalidModel).
func invalid(err error) error { return fmt.Errorf("%w: %w", ErrInvalidModel, err) }

func load(f *gguf.File, path string, o Options) (_ *Model, err error) {
	defer mapfault.Catch(&err, mapfault.Arm())
	// A LoRA adapter is a GGUF file too, but holds no tokenizer nor base
	// weights: say what it is rather than "missing tokenizer.ggml.model".
	if t, _ := f.String("general.type"); t == "adapter" {
		return nil, invalid(errors.New("this is a LoRA adapter (general.type \"adapter\"), not a model: load its base model and apply it (`ruvllm adapter add`, or `ruvllm adapter merge -m BASE.gguf -a ADAPTER -o OUT.gguf`)"))
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, invalid(err)
	}
	b, err := newBackend(o)
	if err != nil {
		return nil, err
	}
	// Before the weights load: it reads a little of each, whose pages
	// loading may give back. (load's guard catches a fault here.)
	ident := fileIdentity(f)
	net, err := loadNet(f, b)
	if errors.Is(err, mapfault.ErrFault) {
		closeBackend(b)
		return nil, err
	}
	if err != nil {
		closeBackend(b)
		return nil, invalid(err)
	}
	cfg := net.Config()
	if tok.VocabSize() > cfg.Vocab {
		closeBackend(b)
		return nil, invalid(fmt.Errorf("the tokenizer has %d tokens but token_embd.weight only %d rows", tok.VocabSize(), cfg.Vocab))
	}
	ctxLen := o.ContextLength
	if ctxLen <= 0 {
		ctxLen = min(cfg.ContextLength, 4096)
	}
	if ctxLen > model.MaxContextLength {
		closeBackend(b)
		return nil, fmt.Errorf("context length %d is above the supported %d", ctxLen, model.MaxContextLength)
	}
	o.ContextLength = ctxLen
	var ropeChoice string // what the context chose of the positions' encoding
	if cs, ok := net.(model.ContextSizer); ok {
		ropeChoice = cs.SizeContext(ctxLen)
	}
	blocks := o.Sequences * ((ctxLen + blockSize - 1) / blockSize)
	kvBytes, err := checkKVSize(f, cfg, blocks, o.KVType)
	if err != nil {
		closeBackend(b)
		return nil, invalid(err)
	}
	kvCfg := compute.KVConfig{
		Layers: cfg.Layers, Blocks: blocks, BlockSize: blockSize,
		KVHeads: cfg.KVHeads, HeadDim: cfg.HeadDim, Type: o.KVType,
	}
	if o.KVCold != 0 && o.KVHotWindow <= 0 {
		o.KVHotWindow = 256
	}
	pool, store, err := newKV(b, cfg, kvCfg, kvBytes, o.KVCold)
	if err != nil && o.KVCold != 0 && o.KVColdOptional {
		o.Logger.Warn("KV cold tier unavailable for this model: its cache is all F16", "model", path, "kv_type", o.KVCold, "err", err)
		o.KVCold = 0
		pool, store, err = newKV(b, cfg, kvCfg, kvBytes, 0)
	}
	if err != nil {
		closeBackend(b)
		return nil, err
	}
	m := &Model{
		file: f, tok: tok, net: net, backend: b, followsOutputs: followsOutputs(b), kv: store,
		pool: pool, opts: o, log: o.Logger,
		logits: make([]float32, cfg.Vocab),
	}
	jinja, variants := chat.TemplatesFromGGUF(f)
	switch t, err := chat.ForModel(jinja, variants, cfg.Arch, chat.SpecialTokensOf(tok)); {
	case err == nil:
		m.tmpl, m.hasTmpl = t, true
	case strings.TrimSpace(jinja) != "":
		// The file has a template this engine cannot render: chat requests
		// fail with the reason rather than guess a format.
		m.tmplErr = err
		o.Logger.Warn("chat template unusable", "err", err)
	}
	m.info = describe(f, path, cfg, ctxLen, tok, jinja)
	m.info.KVBytes = kvBytes
	switch {
	case m.hasTmpl:
		m.info.ChatFormat = m.tmpl.Describe()
		if m.info.Reasoning = m.tmpl.Reasoning(); m.info.Reasoning != nil {
			for _, tag := range []string{m.info.Reasoning.Open, m.info.Reasoning.Close} {
				if id, ok := tok.TokenID(tag); ok && tok.IsControl(id) {
					m.reasoningTags = append(m.reasoningTags, id)
				}
			}
		}
	case m.tmplErr != nil:
		m.info.ChatFormat = "unusable: " + m.tmplErr.Error()
	}
	m.namespace = fmt.Sprintf("%s/%d/%s", m.info.Name, m.info.FileSize, ident)
	if x, ok := b.(interface{ Arithmetic() string }); ok {
		// Keys computed in one arithmetic (llama.cpp's, the default mode's,
		// an earlier version of it) are not those of another: a snapshot
		// saved in one is not restored in the other.
		m.cacheLayout += "|" + x.Arithmetic()
	}
	if x, ok := store.(interface{ Layout() string }); ok {
		// The same arithmetic keeps keys transposed or in rows (with a
		// cold tier): blocks of one layout are not keys in the other.
		m.cacheLayout += "|" + x.Layout()
	}
	if ropeChoice != "" {
		// Phi-3's LongRoPE rotates keys by its long or short factors as
		// the context exceeds its original one or not: a snapshot saved
		// with --ctx-size on one side was restored on the other, and the
		// first answers after the restart came from wrongly rotated keys.
		m.cacheLayout += "|" + ropeChoice
	}
	if o.KVCold != 0 {
		// Cold blocks hold Q8_0 or Q4_0 rows: a snapshot of one cold type
		// is not restored in the other, so each keeps its own file.
		m.cacheLayout += "|cold-" + o.KVCold.String()
	}
	m.namespace += m.cacheLayout
	if m.followsOutputs {
		// Its products depend on the rows of a pass, so a prompt whose
		// prefix came from the cache would compute its rest with other
		// row counts than llama.cpp (which recomputes the prompt): as
		// with LlamaBatching, no prefix cache.
		o.NoPrefixCache = true
		m.opts.NoPrefixCache = true
	}
	if !o.NoPrefixCache {
		m.cache = prefix.New(m.pool)
	}
	if o.Draft != "" && o.Speculate&spec.KindDraft != 0 {
		if err := m.loadDraft(o.Draft, blocks); err != nil && o.DraftOptional {
			m.log.Warn("loading the model without its draft model", "model", path, "err", err)
		} else if err != nil {
			closeBackend(b)
			return nil, err
		}
	}
	m.sched = sched.New(runner{m}, m.pool, m.cache, sched.Options{
		MaxBatchTokens: o.BatchSize, MaxRunning: o.Sequences * 4, MaxSeqLen: ctxLen, MaxQueue: o.MaxQueue, Logger: o.Logger,
		Speculation: m.speculation(), HotWindow: o.KVHotWindow, CostClock: m.costClock(),
	})
	m.log.Info("model loaded", "name", m.info.Name, "arch", cfg.Arch, "params", m.info.Parameters,
		"type", m.info.FileType, "ctx", ctxLen, "kv_blocks", blocks)
	return m, nil
}

// newKV makes the block pool and the backend's KV store of kvCfg, with a
// cold tier of type cold (0: none) within the all-hot cache's kvBytes.
func newKV(b compute.Backend, cfg model.Config, kvCfg compute.KVConfig, kvBytes int64, cold quant.Type) (*kv.Pool, compute.KVStore, error) {
	pool := kv.NewPool(kvCfg.Blocks, kvCfg.BlockSize)
	if cold != 0 {
		// The budget of the all-hot cache, in cold blocks: as many as fit
		// when every block is cold.
		hotBytes, coldBytes, err := tierBytes(cfg, kvCfg.Type, cold)
		if err != nil {
			return nil, nil, err
		}
		kvCfg.ColdType, kvCfg.ColdBlocks = cold, int(kvBytes/coldBytes)
		pool = kv.NewTieredPool(kvCfg.Blocks, kvCfg.ColdBlocks, kvCfg.BlockSize)
		pool.SetBudget(kvBytes, hotBytes, coldBytes)
	}
	store, err := b.NewKVStore(kvCfg)
	if err != nil {
		return nil, nil, err
	}
	return pool, store, nil
}

// checkKVSize refuses a KV cache out of all proportion to the weights.
// Real models need well under their own size for a few sequences of their
// default context; only a file whose head sizes contradict its tensors
// (or absurd metadata) gets here, and it would otherwise be allocated.
// tierBytes returns the bytes of one hot block of type hot and one cold
// block of type cold for cfg's layers and KV heads.
func tierBytes(cfg model.Config, hot, cold quant.Type) (hotBytes, coldBytes int64, err error) {
	if cold != quant.Q8_0 && cold != quant.Q4_0 {
		return 0, 0, fmt.Errorf("KV cold tier %s: want Q8_0 or Q4_0", cold)
	}
	row := cfg.KVHeads * cfg.HeadDim
	hb, err := hot.RowBytes(row)
	if err != nil {
		return 0, 0, err
	}
	cb, err := cold.RowBytes(row)
	if err != nil {
		return 0, 0, fmt.Errorf("KV cold tier %s for rows of %d: %w", cold, row, err)
	}
	per := int64(2 * cfg.Layers * blockSize)
	return per * int64(hb), per * int64(cb), nil
}

func checkKVSize(f *gguf.File, cfg model.Config, blocks int, typ quant.Type) (int64, error) {
	var weights int64
	for _, t := range f.Tensors {
		weights += t.Size
	}
	elem := int64(2)
	if typ == quant.F32 {
		elem = 4
	}
	kv := int64(blocks) * blockSize * int64(cfg.Layers) * 2 * int64(cfg.KVHeads) * int64(cfg.HeadDim) * elem
	if limit := 16*weights + 4<<30; kv > limit {
		return 0, fmt.Errorf("the KV cache would need %d MiB for %d MiB of weights (%d layers, %d kv heads of %d): refusing the file's shape",
			kv>>20, weights>>20, cfg.Layers, cfg.KVHeads, cfg.HeadDim)
	}
	return kv, nil
}

func describe(f *gguf.File, path string, cfg model.Config, ctxLen int, tok *tokenizer.Tokenizer, jinja string) Info {
	var params uint64
	bytesByType := map[quant.Type]int64{}
	for _, t := range f.Tensors {
		params += t.Elements()
		if len(t.Shape) == 2 {
			bytesByType[t.Type] += t.Size
		}
	}
	var fileType quant.Type
	var most int64 = -1
	for t, n := range bytesByType {
		if n > most {
			fileType, most = t, n
		}
	}
	size := int64(0)
	if st, err := os.Stat(path); err == nil {
		size = st.Size()
	}
	return Info{
		Name:          NameFromPath(path),
		Path:          path,
		Architecture:  cfg.Arch,
		Parameters:    params,
		FileType:      fileType.String(),
		FileSize:      size,
		ContextLength: ctxLen,
		EmbeddingSize: cfg.Dim,
		VocabSize:     tok.VocabSize(),
		ChatTemplate:  jinja,
	}
}

// NameFromPath derives a model name from its file name:
// "Qwen2.5-0.5B-Instruct-Q4_K_M.gguf" → "qwen2.5-0.5b-instruct-q4_k_m".
func NameFromPath(path string) string {
	base := filepath.Base(path)
	base = strings.TrimSuffix(base, filepath.Ext(base))
	return strings.ToLower(base)
}

// Info describes the model.
func (m *Model) Info() Info { return m.info }

// Tokenizer returns the model's tokenizer.
func (m *Model) Tokenizer() *tokenizer.Tokenizer { return m.tok }

// Threads is the number of CPU threads the model computes with (for an
// accelerator backend, the threads of its CPU fallback; 0 if it has none).
func (m *Model) Threads() int {
	if t, ok := m.backend.(interface{ Threads() int }); ok {
		return t.Threads()
	}
	return 0
}

// costClock is the clock speculation's cost model weighs passes with: the
// process's CPU time on one thread, where other processes' load would
// swing wall time several-fold while the work per pass does not; wall time
// with several, whose helpers poll between parallel loops, so that CPU
// time counts their waiting as work (a 5-token pass measured at 6.5× a
// 1-token pass on two threads, and speculation never switched on).
func (m *Model) costClock() func() time.Duration {
	if m.Threads() == 1 {
		return cpuClock()
	}
	return nil // sched.Options.CostClock: nil is wall time
}

// Exact reports whether the model computes llama.cpp's arithmetic bit for
// bit (Options.Exact, on the CPU backend).
func (m *Model) Exact() bool {
	x, ok := m.backend.(interface{ Exact() bool })
	return ok && x.Exact()
}

// Backend names the compute backend the model runs on ("cpu", "metal").
func (m *Model) Backend() string { return m.backend.Name() }

// newBackend creates the backend Options select.
func newBackend(o Options) (compute.Backend, error) {
	if o.NewBackend == nil {
		return cpu.New(cpu.Options{Threads: o.Threads, Exact: o.Exact, LlamaBatching: o.LlamaBatching, Build: o.LlamaBuild, AMX: o.AMX}), nil
	}
	b, err := o.NewBackend()
	if err != nil {
		return nil, fmt.Errorf("compute backend: %w", err)
	}
	return b, nil
}

// closeBackend stops a backend that holds resources (worker threads,
// device handles).
func closeBackend(b compute.Backend) {
	if c, ok := b.(interface{ Close() }); ok {
		c.Close()
	}
}

// Config returns the model's hyperparameters.
func (m *Model) Config() model.Config { return m.net.Config() }

// Close releases the backend and the file mapping. The model must not be
// used afterwards.
func (m *Model) Close() error {
	m.sched.Close()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	closeBackend(m.backend)
	if m.draft != nil {
		m.draft.file.Close()
	}
	return m.file.Close()
}

// PromptTokens tokenizes a request's prompt as Generate would, after
// its Context.
func (m *Model) PromptTokens(req Request) ([]int32, error) {
	prompt, err := m.promptTokens(req)
	if err != nil || len(req.Context) == 0 {
		return prompt, err
	}
	if err := m.checkTokens(req.Context, "context token"); err != nil {
		return nil, err
	}
	if m.tok.StartsWithBOS(prompt) {
		prompt = prompt[1:]
	}
	return append(append(make([]int32, 0, len(req.Context)+len(prompt)), req.Context...), prompt...), nil
}

// checkTokens reports the first of ids outside the vocabulary
// (ErrTokenRange), naming it as what.
func (m *Model) checkTokens(ids []int32, what string) error {
	vocab := m.net.Config().Vocab
	for i, id := range ids {
		if id < 0 || int(id) >= vocab {
			return fmt.Errorf("%w: %s %d is %d, not in [0,%d)", ErrTokenRange, what, i, id, vocab)
		}
	}
	return nil
}

// promptTokens tokenizes a request's own prompt.
func (m *Model) promptTokens(req Request) ([]int32, error) {
	if req.Tokens != nil {
		if err := m.checkTokens(req.Tokens, "token"); err != nil {
			return nil, err
		}
		return req.Tokens, nil
	}
	if req.Messages != nil {
		text, err := m.chatPrompt(context.Background(), req, req.Messages)
		if err != nil {
			return nil, err
		}
		return m.encodeChat(text), nil
	}
	if req.Suffix != "" {
		fim, ok := m.FIM()
		if !ok {
			return nil, ErrNoFIM
		}
		var out []int32
		if m.tok.AddBOS() {
			out = append(out, m.tok.BOS())
		}
		plain := tokenizer.EncodeOptions{}
		out = append(out, fim.Prefix)
		out = append(out, m.tok.Encode(req.Prompt, plain)...)
		out = append(out, fim.Suffix)
		out = append(out, m.tok.Encode(req.Suffix, plain)...)
		return append(out, fim.Middle), nil
	}
	if req.Raw {
		out := m.tok.Encode(req.Prompt, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
		if m.tok.StartsWithBOS(out) && m.tok.StartsWithBOS(out[1:]) {
			out = out[1:] // the prompt wrote its BOS itself
		}
		return out, nil
	}
	return m.tok.Encode(req.Prompt, tokenizer.EncodeOptions{AddSpecial: true}), nil
}

// FIMTokens are a model's fill-in-the-middle tokens. Repo and FileSep,
// the repository-level tokens of models trained on whole repositories
// (Qwen2.5-Coder, StarCoder2), are -1 when the model has none.
type FIMTokens struct{ Prefix, Suffix, Middle, Repo, FileSep int32 }

// fimNames are the fill-in-the-middle token texts of the model families
// whose files do not name them in tokenizer.ggml.fim_*_token_id.
var fimNames = [][3]string{
	{"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"}, // Qwen2.5-Coder
	{"<fim_prefix>", "<fim_suffix>", "<fim_middle>"},       // StarCoder
	{"<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"},       // DeepSeek-Coder
	{"<|fim▁begin|>", "<|fim▁hole|>", "<|fim▁end|>"},       // DeepSeek-Coder (ASCII bars)
	{"▁<PRE>", "▁<SUF>", "▁<MID>"},                         // CodeLlama
	{"<PRE>", "<SUF>", "<MID>"},
	{"<|fim_begin|>", "<|fim_hole|>", "<|fim_end|>"},
}

// fimRepoNames and fimFileSepNames are the repository-level token texts.
var (
	fimRepoNames    = []string{"<|repo_name|>", "<reponame>", "<|fim_repo|>", "<fim-repo>", "<REPO>"}
	fimFileSepNames = []string{"<|file_sep|>", "<file_sep>", "<|file_separator|>"}
)

// FIM returns the model's fill-in-the-middle tokens, from the file's
// tokenizer.ggml.fim_*_token_id or the known token texts (read once).
func (m *Model) FIM() (FIMTokens, bool) {
	m.fimOnce.Do(func() { m.fim, m.hasFIM = FileFIM(m.file) })
	return m.fim, m.hasFIM
}

// FileFIM reads a GGUF file's fill-in-the-middle tokens (see Model.FIM).
func FileFIM(f *gguf.File) (FIMTokens, bool) {
	tokens, _ := f.Strings("tokenizer.ggml.tokens")
	vocab := int64(len(tokens))
	byKey := func(k string) int32 {
		v, ok := f.Int("tokenizer.ggml." + k + "_token_id")
		if !ok || v < 0 || v >= vocab {
			return -1
		}
		return int32(v)
	}
	index := map[string]int32{}
	for _, names := range fimNames {
		for _, n := range names {
			index[n] = -1
		}
	}
	for _, n := range append(slices.Clone(fimRepoNames), fimFileSepNames...) {
		index[n] = -1
	}
	for i, t := range tokens {
		if _, want := index[t]; want {
			index[t] = int32(i)
		}
	}
	byName := func(names []string) int32 {
		for _, n := range names {
			if id := index[n]; id >= 0 {
				return id
			}
		}
		return -1
	}
	fim := FIMTokens{Prefix: byKey("fim_pre"), Suffix: byKey("fim_suf"), Middle: byKey("fim_mid"), Repo: byKey("fim_rep"), FileSep: byKey("fim_sep")}
	if fim.Repo < 0 {
		fim.Repo = byName(fimRepoNames)
	}
	if fim.FileSep < 0 {
		fim.FileSep = byName(fimFileSepNames)
	}
	if fim.Prefix >= 0 && fim.Suffix >= 0 && fim.Middle >= 0 {
		return fim, true
	}
	for _, names := range fimNames {
		if p, s, m := index[names[0]], index[names[1]], index[names[2]]; p >= 0 && s >= 0 && m >= 0 {
			fim.Prefix, fim.Suffix, fim.Middle = p, s, m
			return fim, true
		}
	}
	return FIMTokens{Prefix: -1, Suffix: -1, Middle: -1, Repo: -1, FileSep: -1}, false
}

// chatTemplate returns the model's chat template, or why there is none.
func (m *Model) chatTemplate() (chat.Template, error) {
	switch {
	case m.tmplErr != nil:
		return chat.Template{}, m.tmplErr
	case !m.hasTmpl:
		return chat.Template{}, ErrNoTemplate
	}
	return m.tmpl, nil
}

// renderer is what renders req's messages: its own template, or the
// model's.
func (m *Model) renderer(req Request) (chat.Renderer, error) {
	if req.Template != nil {
		return req.Template, nil
	}
	return m.chatTemplate()
}

// chatPrompt renders msgs with req's tools and template variables and
// the assistant's generation prompt, as the text to tokenize with
// encodeChat: the messages' text is escaped (escapeMessages).
func (m *Model) chatPrompt(ctx context.Context, req Request, msgs []chat.Message) (string, error) {
	t, err := m.renderer(req)
	if err != nil {
		return "", err
	}
	msgs = m.escapeMessages(capMessageText(msgs, maxRenderedText))
	conv := chat.Conversation{Messages: msgs, Tools: m.escapeTools(req.Tools), AddGenerationPrompt: true, Vars: req.TemplateVars}
	if last := len(msgs) - 1; continuesLast(req, msgs) {
		// Hugging Face's continue_final_message, without its search for
		// the text (which a short one can match in the end of the turn):
		// render the conversation with a marker for the last message's
		// text and cut it there.
		const marker = "\ue000ruvllm-continue\ue000"
		marked := slices.Clone(msgs)
		marked[last].Content = marker
		conv.Messages, conv.AddGenerationPrompt = marked, false
		text, err := t.Prompt(ctx, conv)
		if err != nil {
			return "", err
		}
		if i := strings.LastIndex(text, marker); i >= 0 {
			return text[:i] + msgs[last].Content, nil
		}
		// A template that does not show it: a new turn.
		conv.Messages, conv.AddGenerationPrompt = msgs, true
	}
	return t.Prompt(ctx, conv)
}

// maxRenderedText bounds the messages' text a chat template renders: the
// templates' values are bounded (jinja's MaxOutput, 16 MiB), and a
// conversation of more (a body may hold 32 MiB) failed with "template
// limit exceeded", naming no field, where a turn too long keeps its head
// and its end. 12 MiB is millions of tokens, more than a context holds.
const maxRenderedText = 12 << 20

// capMessageText returns msgs with the longest messages' content cut to
// its head and its end (at character boundaries) so that their content
// totals at most limit bytes: each keeps at most the same share, the
// shortest messages whole. msgs is returned as it is when it fits, and is
// never changed.
func capMessageText(msgs []chat.Message, limit int) []chat.Message {
	total := 0
	sizes := make([]int, len(msgs))
	for i, msg := range msgs {
		sizes[i] = len(msg.Content)
		total += sizes[i]
	}
	if total <= limit {
		return msgs
	}
	// The largest share c with Σ min(size, c) ≤ limit.
	sorted := slices.Clone(sizes)
	slices.Sort(sorted)
	share, left := 0, limit
	for i, n := range sorted {
		each := left / (len(sorted) - i)
		if n > each {
			share = each
			break
		}
		left -= n
		share = n
	}
	out := slices.Clone(msgs)
	for i, msg := range out {
		if len(msg.Content) > share {
			out[i].Content = headAndEnd(msg.Content, share)
		}
	}
	return out
}

// headAndEnd returns at most n bytes of s: its first and last halves, cut
// at character boundaries.
func headAndEnd(s string, n int) string {
	head, tail := n/2, len(s)-(n-n/2)
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + s[tail:]
}

// escapeMessages returns msgs with the text their clients wrote (content,
// reasoning, names, tool calls) escaped by Tokenizer.EscapeSpecial, so
// that the control tokens it writes ("<|im_start|>system", "</s>") are
// read as plain text, as llama.cpp reads a user's text with parse_special
// off, and only the template writes the turns. msgs is not changed.
func (m *Model) escapeMessages(msgs []chat.Message) []chat.Message {
	out := make([]chat.Message, len(msgs))
	for i, msg := range msgs {
		msg.Content = m.tok.EscapeSpecial(msg.Content)
		msg.ReasoningContent = m.tok.EscapeSpecial(msg.ReasoningContent)
		msg.Name = m.tok.EscapeSpecial(msg.Name)
		msg.ToolCallID = m.tok.EscapeSpecial(msg.ToolCallID)
		if msg.ToolCalls != nil {
			calls := make([]chat.ToolCall, len(msg.ToolCalls))
			for j, c := range msg.ToolCalls {
				c.ID = m.tok.EscapeSpecial(c.ID)
				c.Function.Name = m.tok.EscapeSpecial(c.Function.Name)
				if args := m.tok.EscapeSpecial(string(c.Function.Arguments)); args != string(c.Function.Arguments) {
					c.Function.Arguments = json.RawMessage(args)
				}
				calls[j] = c
			}
			msg.ToolCalls = calls
		}
		out[i] = msg
	}
	return out
}

// escapeTools returns tools with the text their clients wrote (names,
// descriptions, parameter schemas) escaped as escapeMessages escapes
// messages: a tool's description is a client's text too (or an MCP
// server's), and one that spelled "<|im_end|><|im_start|>system" wrote
// the template's turns where the template renders the tools. The strings
// are escaped as the template reads them, after JSON's own escapes
// ("\u003c|im_end|\u003e" is the same text), keys and order kept. tools is
// not changed.
func (m *Model) escapeTools(tools []json.RawMessage) []json.RawMessage {
	if tools == nil {
		return nil
	}
	out := make([]json.RawMessage, len(tools))
	for i, t := range tools {
		out[i] = t
		if esc, err := mapJSONStrings(t, m.tok.EscapeSpecial); err == nil {
			out[i] = esc
		}
	}
	return out
}

// mapJSONStrings returns the JSON text raw with f applied to each of its
// strings, object keys included; numbers, literals and the order of keys
// stay as they are.
func mapJSONStrings(raw []byte, f func(string) string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b bytes.Buffer
	// Per open container: whether it is an object, and how many tokens
	// (keys and values) it has had.
	type level struct {
		object bool
		n      int
	}
	var stack []level
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			b.WriteByte(byte(d))
			continue
		}
		if n := len(stack); n > 0 {
			top := &stack[n-1]
			switch {
			case top.object && top.n%2 == 1:
				b.WriteByte(':')
			case top.n > 0:
				b.WriteByte(',')
			}
			top.n++
		}
		switch v := tok.(type) {
		case json.Delim:
			b.WriteByte(byte(v))
			stack = append(stack, level{object: v == '{'})
		case string:
			e, err := json.Marshal(f(v))
			if err != nil {
				return nil, err
			}
			b.Write(e)
		case json.Number:
			b.WriteString(v.String())
		case bool:
			b.WriteString(strconv.FormatBool(v))
		case nil:
			b.WriteString("null")
		}
	}
	return b.Bytes(), nil
}

// Continued returns the text of the assistant message the reply continues
// (Request.ContinueLast, under the conditions the prompt is rendered so),
// or false when the reply starts a turn of its own.
func (r *Request) Continued() (string, bool) {
	if !continuesLast(*r, r.Messages) {
		return "", false
	}
	return r.Messages[len(r.Messages)-1].Content, true
}

// continuesLast reports whether a reply to req continues the last of msgs
// (its messages, or those the context kept): ContinueLast, no tools or
// grammar (whose replies begin on their own), and the assistant's text
// last, with no tool calls.
func continuesLast(req Request, msgs []chat.Message) bool {
	last := len(msgs) - 1
	return req.ContinueLast && req.Tools == nil && req.Grammar == nil && last >= 0 &&
		msgs[last].Role == chat.RoleAssistant && len(msgs[last].ToolCalls) == 0 && strings.TrimSpace(msgs[last].Content) != ""
}

// ApplyChatTemplate renders conv with the model's chat template exactly
// as the template writes it (BOS text included): what the model reads for
// that conversation. It fails with ErrNoTemplate for a model without a
// template, and with the template's own error (a *jinja.RaiseError for
// raise_exception) when it refuses the conversation.
func (m *Model) ApplyChatTemplate(ctx context.Context, conv chat.Conversation) (string, error) {
	t, err := m.chatTemplate()
	if err != nil {
		return "", err
	}
	// As a chat request renders it: a message too large for a template
	// keeps its head and its end (capMessageText).
	conv.Messages = capMessageText(conv.Messages, maxRenderedText)
	return t.Apply(ctx, conv)
}

// EmbedOptions adjusts Embed.
type EmbedOptions struct {
	// Truncate keeps the first context-length tokens of an input that is
	// longer (Ollama's truncate); without it such an input is an error
	// wrapping ErrContextExceeded.
	Truncate bool
}

// Embed returns one embedding per input: the mean of the final hidden
// states over the input's tokens, L2-normalised, and the total number of
// tokens read.
//
// The model's lock is held for one forward pass at a time, not for the
// whole request, so generations keep streaming between an embedding
// request's chunks however many inputs it has.
func (m *Model) Embed(ctx context.Context, inputs []string, opts EmbedOptions) ([][]float32, int, error) {
	var out [][]float32
	total := 0
	for i, in := range inputs {
		tokens := m.tok.Encode(in, tokenizer.EncodeOptions{AddSpecial: true})
		mean, n, err := m.embedOne(ctx, tokens, i, opts)
		total += n
		if err != nil {
			return nil, total, err
		}
		var norm float64
		for _, v := range mean {
			norm += v * v
		}
		norm = math.Sqrt(norm)
		vec := make([]float32, len(mean))
		for j, v := range mean {
			if norm > 0 {
				vec[j] = float32(v / norm)
			}
		}
		out = append(out, vec)
	}
	return out, total, nil
}

// EmbedTokens returns, for each input given as token ids, the mean of the
// final hidden states over its tokens, not normalised (the caller
// normalises as its API says), and the total number of tokens read.
func (m *Model) EmbedTokens(ctx context.Context, inputs [][]int32, opts EmbedOptions) ([][]float32, int, error) {
	out := make([][]float32, 0, len(inputs))
	total := 0
	for i, tokens := range inputs {
		if err := m.checkTokens(tokens, fmt.Sprintf("input %d: token", i)); err != nil {
			return nil, total, err
		}
		mean, n, err := m.embedOne(ctx, tokens, i, opts)
		total += n
		if err != nil {
			return nil, total, err
		}
		vec := make([]float32, len(mean))
		for j, v := range mean {
			vec[j] = float32(v)
		}
		out = append(out, vec)
	}
	return out, total, nil
}

// embedOne returns the mean of the final hidden states over input i's
// tokens and how many tokens it read.
func (m *Model) embedOne(ctx context.Context, tokens []int32, i int, opts EmbedOptions) ([]float64, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if len(tokens) == 0 {
		return nil, 0, fmt.Errorf("input %d: %w", i, ErrEmptyInput)
	}
	if len(tokens) > m.opts.ContextLength {
		if !opts.Truncate {
			return nil, 0, fmt.Errorf("input %d: %w: %d tokens, context is %d", i, ErrContextExceeded, len(tokens), m.opts.ContextLength)
		}
		tokens = tokens[:m.opts.ContextLength]
	}
	dim := m.net.Config().Dim
	seq := kv.NewSequence(m.pool)
	defer seq.Release()
	sum := make([]float64, dim)
	var row []float32
	for rest := tokens; len(rest) > 0; {
		n := min(len(rest), m.opts.BatchSize)
		if err := m.reserveOutsideScheduler(ctx, seq, n); err != nil {
			return nil, len(tokens), fmt.Errorf("kv cache: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return nil, len(tokens), err
		}
		batch := &model.Batch{Tokens: rest[:n], Spans: []compute.Span{{N: n, Pos: seq.Len(), Blocks: seq.Blocks()}}}
		if cap(row) < n*dim {
			row = make([]float32, n*dim)
		}
		row = row[:n*dim]
		if err := m.forwardHidden(batch, row); err != nil {
			return nil, len(tokens), err
		}
		for j, v := range row {
			sum[j%dim] += float64(v)
		}
		seq.Advance(n)
		rest = rest[n:]
	}
	for j := range sum {
		sum[j] /= float64(len(tokens))
		if math.IsNaN(sum[j]) || math.IsInf(sum[j], 0) {
			return nil, len(tokens), fmt.Errorf("input %d: %w", i, ErrNonFinite)
		}
	}
	return sum, len(tokens), nil
}

// reserveOutsideScheduler makes room for n more positions of seq, a
// sequence run outside the scheduler (embeddings). The scheduler's
// sequences and the prefix cache share the block pool: when it is full,
// cached prefixes no one uses are evicted, and failing that the call waits
// for running sequences to give blocks back, until ctx ends.
func (m *Model) reserveOutsideScheduler(ctx context.Context, seq *kv.Sequence, n int) error {
	for wait := time.Millisecond; ; wait = min(2*wait, 20*time.Millisecond) {
		err := seq.Reserve(n, m.kv)
		if !errors.Is(err, kv.ErrPoolExhausted) {
			return err
		}
		if m.cache != nil && m.cache.Evict(n/blockSize+2) > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for KV cache room: %w", ctx.Err())
		case <-time.After(wait):
		}
	}
}

// forwardHidden runs one forward pass under the model's lock and copies
// its final hidden states into row.
func (m *Model) forwardHidden(batch *model.Batch, row []float32) (err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.usable(); err != nil {
		return err
	}
	defer m.noteFault(&err)
	defer mapfault.Catch(&err, mapfault.Arm())
	hidden := m.net.Forward(batch, m.kv)
	m.backend.Download(hidden, row)
	return nil
}

// followsOutputs reports whether b wants model.Batch.Outputs set.
func followsOutputs(b compute.Backend) bool {
	f, ok := b.(compute.OutputRowsFollower)
	return ok && f.FollowsOutputRows()
}

// errorClosed is returned by passes run after Close.
var errorClosed = errors.New("model closed")

// usable returns the error a pass must fail with (the model closed, or
// faulted), or nil; the caller holds m.mu.
func (m *Model) usable() error {
	if m.closed {
		return errorClosed
	}
	if m.faulted.Load() {
		return fmt.Errorf("%w; load the model again", mapfault.ErrFault)
	}
	return nil
}

// noteFault, deferred before mapfault.Catch, marks the model faulted when
// *err is a fault: what it computes, and its cached prefixes, can no
// longer be trusted (Faulted).
func (m *Model) noteFault(err *error) {
	if errors.Is(*err, mapfault.ErrFault) && !m.faulted.Swap(true) {
		m.opts.Logger.Error("reading the model file's mapping faulted: the file was truncated or overwritten while loaded; the model must be loaded again",
			"model", m.info.Name, "err", *err)
	}
}

// Faulted reports whether a pass faulted reading the model file's mapping
// (the file truncated or overwritten in place while loaded): every pass
// fails from then on, and the model must be closed and loaded again.
func (m *Model) Faulted() bool { return m.faulted.Load() }

// fileIdentity fingerprints the model's tensors (names, types, offsets,
// and the first and last identitySample bytes of each one's data) so two
// files with the same name and size never share cached prefixes. The
// layout alone was the same for another file of the same model and type
// (a re-quantization, a fine-tune, a re-upload with fixed weights): a file
// replaced by such a one restored the keys and values the old weights
// computed, and answered as the old model did.
func fileIdentity(f *gguf.File) string {
	h := fnv.New64a()
	for _, t := range f.Tensors {
		fmt.Fprintf(h, "%s/%d/%d/%v;", t.Name, t.Type, t.Offset, t.Shape)
		if data, err := f.TensorData(t.Name); err == nil {
			n := min(len(data), identitySample)
			h.Write(data[:n])
			h.Write(data[len(data)-n:])
		}
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// identitySample is how many bytes of each end of a tensor's data
// fileIdentity reads: a page or two of each tensor.
const identitySample = 256

// CacheStats returns the prefix cache's counters (zero when disabled).
func (m *Model) CacheStats() prefix.Stats {
	if m.cache == nil {
		return prefix.Stats{}
	}
	return m.cache.Stats()
}

// CacheTop returns the most reused cached prefixes.
func (m *Model) CacheTop(n int) []prefix.Prefix {
	if m.cache == nil {
		return nil
	}
	return m.cache.Top(n)
}

// ClearCache drops every cached prefix no request is using, after
// cancelling the warming of chats' next turns (WarmFollowUp) in flight
// and waiting for it to give back the blocks it held.
func (m *Model) ClearCache() {
	m.warming.cancelAll()
	if m.cache != nil {
		m.cache.Clear()
	}
}

// ParseKVType reads a KV cache type as the flags name it: "f16" (all
// F16, no cold tier) or the cold tier's type, "q8_0" or "q4_0", under an
// F16 hot window. It returns the cold tier's type (0 for f16).
func ParseKVType(s string) (quant.Type, error) {
	switch strings.ToLower(s) {
	case "", "f16":
		return 0, nil
	case "q8_0":
		return quant.Q8_0, nil
	case "q4_0":
		return quant.Q4_0, nil
	}
	return 0, fmt.Errorf("KV type %q: want f16, q8_0 or q4_0", s)
}
