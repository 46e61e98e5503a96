package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/kv"
	"github.com/ruvllm/ruvllm/engine/model"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/sample"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
)

// ErrContextExceeded is returned when a prompt does not fit the context.
var ErrContextExceeded = errors.New("prompt exceeds the context length")

// Options configures Load.
type Options struct {
	// Threads for the CPU backend; 0 means all cores.
	Threads int
	// ContextLength caps each sequence; 0 means the model's trained
	// context, at most 4096.
	ContextLength int
	// BatchSize is the number of prompt tokens computed per forward pass.
	BatchSize int
	// KVType is the element type of the KV cache: F16 (default) or F32.
	KVType quant.Type
	// Sequences is how many full-length sequences the KV pool holds.
	Sequences int
	// Logger receives load and generation logs; nil discards them.
	Logger *slog.Logger
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
	net     model.Model
	backend *cpu.Backend
	kv      compute.KVStore
	pool    *kv.Pool
	opts    Options
	log     *slog.Logger

	mu     sync.Mutex // serialises use of net, backend and kv
	logits []float32
	raw    []float32 // logits before sampling, for logprobs
}

// Load opens a GGUF model and prepares it for generation.
func Load(ctx context.Context, path string, o Options) (*Model, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 512
	}
	if o.KVType == 0 {
		o.KVType = quant.F16
	}
	if o.Sequences <= 0 {
		o.Sequences = 2
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	m, err := load(f, path, o)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("load %s: %w", filepath.Base(path), err)
	}
	return m, nil
}

func load(f *gguf.File, path string, o Options) (*Model, error) {
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, err
	}
	b := cpu.New(cpu.Options{Threads: o.Threads})
	net, err := model.Load(f, b)
	if err != nil {
		b.Close()
		return nil, err
	}
	cfg := net.Config()
	ctxLen := o.ContextLength
	if ctxLen <= 0 {
		ctxLen = min(cfg.ContextLength, 4096)
	}
	o.ContextLength = ctxLen
	blocks := o.Sequences * ((ctxLen + blockSize - 1) / blockSize)
	store, err := b.NewKVStore(compute.KVConfig{
		Layers: cfg.Layers, Blocks: blocks, BlockSize: blockSize,
		KVHeads: cfg.KVHeads, HeadDim: cfg.HeadDim, Type: o.KVType,
	})
	if err != nil {
		b.Close()
		return nil, err
	}
	m := &Model{
		file: f, tok: tok, net: net, backend: b, kv: store,
		pool: kv.NewPool(blocks, blockSize), opts: o, log: o.Logger,
		logits: make([]float32, cfg.Vocab), raw: make([]float32, cfg.Vocab),
	}
	jinja, _ := f.String("tokenizer.chat_template")
	if t, err := chat.Detect(jinja, cfg.Arch); err == nil {
		m.tmpl, m.hasTmpl = t, true
	}
	m.info = describe(f, path, cfg, ctxLen, tok, jinja)
	m.log.Info("model loaded", "name", m.info.Name, "arch", cfg.Arch, "params", m.info.Parameters,
		"type", m.info.FileType, "ctx", ctxLen, "kv_blocks", blocks)
	return m, nil
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

// Config returns the model's hyperparameters.
func (m *Model) Config() model.Config { return m.net.Config() }

// Close releases the backend and the file mapping. The model must not be
// used afterwards.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.backend.Close()
	return m.file.Close()
}

// PromptTokens tokenizes a request's prompt as Generate would.
func (m *Model) PromptTokens(req Request) ([]int32, error) {
	if req.Messages != nil {
		if !m.hasTmpl {
			return nil, errors.New("model has no chat template")
		}
		text, err := m.tmpl.Render(req.Messages, true)
		if err != nil {
			return nil, err
		}
		return m.tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true}), nil
	}
	return m.tok.Encode(req.Prompt, tokenizer.EncodeOptions{AddSpecial: !req.Raw, ParseSpecial: req.Raw}), nil
}

// Generate runs one request, calling onToken for every generated token in
// order. It stops at an end-of-generation token, a stop string, MaxTokens,
// the context limit, when ctx is cancelled, or when onToken returns an
// error (which Generate then returns).
func (m *Model) Generate(ctx context.Context, req Request, onToken func(Token) error) (Result, error) {
	start := time.Now()
	var res Result
	prompt, err := m.PromptTokens(req)
	if err != nil {
		return res, err
	}
	if len(prompt) == 0 {
		return res, errors.New("empty prompt: nothing to condition on")
	}
	ctxLen := m.opts.ContextLength
	if len(prompt) >= ctxLen {
		return res, fmt.Errorf("%w: %d tokens, context is %d", ErrContextExceeded, len(prompt), ctxLen)
	}
	res.PromptTokens = len(prompt)
	stops := append([]string(nil), req.Stop...)
	if req.Messages != nil {
		stops = append(stops, m.tmpl.StopStrings()...)
	}
	sampler := sample.New(req.Sampling)
	matcher := sample.NewStopMatcher(stops)
	dec := tokenizer.NewStreamDecoder(m.tok)

	m.mu.Lock()
	defer m.mu.Unlock()
	seq := kv.NewSequence(m.pool)
	defer seq.Release()

	if err := m.prefill(ctx, seq, prompt); err != nil {
		return res, err
	}
	res.Timings.PromptEval = time.Since(start)
	history := append(make([]int32, 0, len(prompt)+req.MaxTokens), prompt...)
	res.FinishReason = FinishLength
	var evalStart time.Time
	wantLogprobs := req.Logprobs || req.TopLogprobs > 0
	// finish flushes text held back by the decoder and the stop matcher.
	finish := func() error {
		text, _ := matcher.Push(dec.Flush())
		if text += matcher.Flush(); text != "" {
			return onToken(Token{ID: -1, Text: text})
		}
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if wantLogprobs {
			copy(m.raw, m.logits)
		}
		id := sampler.Sample(m.logits, history)
		tok := Token{ID: id}
		if wantLogprobs {
			tok.Logprob, tok.Top = m.logprobs(id, req.TopLogprobs)
		}
		if res.CompletionTokens == 0 {
			res.Timings.TTFT = time.Since(start)
			evalStart = time.Now()
		}
		res.CompletionTokens++
		history = append(history, id)
		if m.tok.IsEOG(id) {
			res.FinishReason = FinishStop
			if err := finish(); err != nil {
				return res, err
			}
			break
		}
		text, stopped := matcher.Push(dec.Add(id))
		tok.Text = text
		if err := onToken(tok); err != nil {
			return res, err
		}
		if stopped {
			res.FinishReason = FinishStop
			break
		}
		if (req.MaxTokens > 0 && res.CompletionTokens >= req.MaxTokens) || seq.Len()+1 >= ctxLen {
			if err := finish(); err != nil {
				return res, err
			}
			break
		}
		if err := m.step(seq, []int32{id}); err != nil {
			return res, err
		}
	}
	if !evalStart.IsZero() {
		res.Timings.Eval = time.Since(evalStart)
	}
	res.Timings.Total = time.Since(start)
	return res, nil
}

// prefill computes the prompt in chunks of BatchSize, leaving the logits of
// its last token in m.logits. It checks ctx between chunks.
func (m *Model) prefill(ctx context.Context, seq *kv.Sequence, tokens []int32) error {
	for len(tokens) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(len(tokens), m.opts.BatchSize)
		if err := m.step(seq, tokens[:n]); err != nil {
			return err
		}
		tokens = tokens[n:]
	}
	return nil
}

// step runs one forward pass of tokens appended to seq and keeps the last
// token's logits.
func (m *Model) step(seq *kv.Sequence, tokens []int32) error {
	if err := seq.Reserve(len(tokens), m.kv); err != nil {
		return fmt.Errorf("kv cache: %w", err)
	}
	batch := &model.Batch{Tokens: tokens, Spans: []compute.Span{{Row: 0, N: len(tokens), Pos: seq.Len(), Blocks: seq.Blocks()}}}
	hidden := m.net.Forward(batch, m.kv)
	logits := m.net.Logits(hidden, []int32{int32(len(tokens) - 1)})
	m.backend.Download(logits, m.logits)
	seq.Advance(len(tokens))
	return nil
}

// logprobs returns the log-probability of id and the top-n alternatives
// under the model's distribution (the logits saved before sampling).
func (m *Model) logprobs(id int32, n int) (float32, []TokenLogprob) {
	maxv := float32(math.Inf(-1))
	for _, v := range m.raw {
		maxv = max(maxv, v)
	}
	var sum float64
	for _, v := range m.raw {
		sum += math.Exp(float64(v - maxv))
	}
	chosen := m.raw[id] - maxv - float32(math.Log(sum))
	var top []TokenLogprob
	if n > 0 {
		for _, c := range sample.TopLogprobs(m.raw, n) {
			top = append(top, TokenLogprob{ID: c.ID, Text: m.tok.Decode([]int32{c.ID}, tokenizer.DecodeOptions{}), Logprob: c.Logprob})
		}
	}
	return chosen, top
}

// Embed returns one embedding per input: the mean of the final hidden
// states over the input's tokens, L2-normalised, and the total number of
// tokens read.
func (m *Model) Embed(ctx context.Context, inputs []string) ([][]float32, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dim := m.net.Config().Dim
	var out [][]float32
	total := 0
	for i, in := range inputs {
		if err := ctx.Err(); err != nil {
			return nil, total, err
		}
		tokens := m.tok.Encode(in, tokenizer.EncodeOptions{AddSpecial: true})
		if len(tokens) == 0 {
			return nil, total, fmt.Errorf("input %d is empty", i)
		}
		if len(tokens) > m.opts.ContextLength {
			return nil, total, fmt.Errorf("input %d: %w: %d tokens, context is %d", i, ErrContextExceeded, len(tokens), m.opts.ContextLength)
		}
		total += len(tokens)
		seq := kv.NewSequence(m.pool)
		sum := make([]float64, dim)
		row := make([]float32, 0)
		err := func() error {
			defer seq.Release()
			for rest := tokens; len(rest) > 0; {
				n := min(len(rest), m.opts.BatchSize)
				if err := seq.Reserve(n, m.kv); err != nil {
					return fmt.Errorf("kv cache: %w", err)
				}
				batch := &model.Batch{Tokens: rest[:n], Spans: []compute.Span{{N: n, Pos: seq.Len(), Blocks: seq.Blocks()}}}
				hidden := m.net.Forward(batch, m.kv)
				if cap(row) < n*dim {
					row = make([]float32, n*dim)
				}
				row = row[:n*dim]
				m.backend.Download(hidden, row)
				for j, v := range row {
					sum[j%dim] += float64(v)
				}
				seq.Advance(n)
				rest = rest[n:]
			}
			return nil
		}()
		if err != nil {
			return nil, total, err
		}
		var norm float64
		for j := range sum {
			sum[j] /= float64(len(tokens))
			norm += sum[j] * sum[j]
		}
		norm = math.Sqrt(norm)
		vec := make([]float32, dim)
		for j, v := range sum {
			if norm > 0 {
				vec[j] = float32(v / norm)
			}
		}
		out = append(out, vec)
	}
	return out, total, nil
}
