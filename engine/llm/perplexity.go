package llm

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/kldiv"
	"github.com/ruvllm/ruvllm/engine/kv"
	"github.com/ruvllm/ruvllm/engine/mapfault"
	"github.com/ruvllm/ruvllm/engine/model"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
)

// PerplexityResult is the outcome of a perplexity run.
type PerplexityResult struct {
	Perplexity float64
	Chunks     int
	Ctx        int // tokens per chunk, after the default for 0
	Scored     int // tokens whose probability was scored
	// ChunkPPL is the running perplexity after each chunk, as
	// llama-perplexity prints it.
	ChunkPPL []float64
}

// Perplexity scores text the way llama-perplexity does: the tokens are cut
// into chunks of ctx tokens, each chunk starts with BOS when the model adds
// one, and only the second half of each chunk is scored so every scored
// token sees at least ctx/2 tokens of context. With a cold KV tier
// (Options.KVCold) a chunk is computed one block of positions at a time,
// its blocks older than the hot window moving to the cold tier in
// between, as they do while a sequence decodes, so that the score shows
// what reading old positions quantized costs.
func (m *Model) Perplexity(ctx context.Context, text string, ctxLen int, progress func(chunk int, ppl float64)) (PerplexityResult, error) {
	return m.perplexity(ctx, text, ctxLen, nil, progress)
}

// SaveLogProbs computes Perplexity and writes the log-probabilities of
// every scored position to w in the file format of llama-perplexity
// --kl-divergence-base, which llama-perplexity --kl-divergence (and
// KLDivergence) can score another model against.
func (m *Model) SaveLogProbs(ctx context.Context, text string, ctxLen int, w io.Writer, progress func(chunk int, ppl float64)) (PerplexityResult, error) {
	return m.perplexity(ctx, text, ctxLen, w, progress)
}

func (m *Model) perplexity(ctx context.Context, text string, ctxLen int, w io.Writer, progress func(chunk int, ppl float64)) (PerplexityResult, error) {
	var res PerplexityResult
	if ctxLen <= 0 {
		ctxLen = 512
	}
	// A chunk scores the tokens of its second half that have a next one:
	// ctx-1-ctx/2 of them, none below 3 (and the logits of no rows panicked).
	if ctxLen < 3 {
		return res, fmt.Errorf("--ctx %d is too small: a chunk scores its second half, so it needs at least 3 tokens", ctxLen)
	}
	if ctxLen > m.opts.ContextLength {
		return res, fmt.Errorf("--ctx %d exceeds the model's context %d", ctxLen, m.opts.ContextLength)
	}
	tokens := m.tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true})
	chunks := len(tokens) / ctxLen
	if chunks == 0 {
		return res, fmt.Errorf("need at least %d tokens for one chunk, the text has %d", ctxLen, len(tokens))
	}
	vocab := m.net.Config().Vocab
	first := ctxLen / 2
	rows := make([]int32, ctxLen-1-first)
	for i := range rows {
		rows[i] = int32(first + i)
	}
	logits := make([]float32, len(rows)*vocab)
	var kw *kldiv.Writer
	if w != nil {
		var err error
		kw, err = kldiv.NewWriter(w, &kldiv.Header{Ctx: ctxLen, Vocab: vocab, Chunks: chunks, Tokens: tokens[:chunks*ctxLen]})
		if err != nil {
			return res, err
		}
	}
	var nll float64
	for c := 0; c < chunks; c++ {
		chunk := append([]int32(nil), tokens[c*ctxLen:(c+1)*ctxLen]...)
		if m.tok.AddBOS() {
			chunk[0] = m.tok.BOS()
		}
		if err := m.Logits(ctx, chunk, rows, logits); err != nil {
			return res, err
		}
		for i := range rows {
			l := logits[i*vocab : (i+1)*vocab]
			if kw != nil {
				if err := kw.Write(l); err != nil {
					return res, err
				}
			}
			target := chunk[first+i+1]
			maxv := math.Inf(-1)
			for _, v := range l {
				maxv = math.Max(maxv, float64(v))
			}
			var sum float64
			for _, v := range l {
				sum += math.Exp(float64(v) - maxv)
			}
			nll += -(float64(l[target]) - maxv - math.Log(sum))
			res.Scored++
		}
		ppl := math.Exp(nll / float64(res.Scored))
		res.ChunkPPL = append(res.ChunkPPL, ppl)
		if progress != nil {
			progress(c, ppl)
		}
	}
	res.Chunks, res.Ctx = chunks, ctxLen
	res.Perplexity = math.Exp(nll / float64(res.Scored))
	if kw != nil {
		if err := kw.Flush(); err != nil {
			return res, err
		}
	}
	return res, nil
}

// Logits computes the logits of a sequence of tokens teacher-forced, as
// one fresh sequence (no prefix cache) in one forward pass, and writes
// those of the positions in rows (each predicting the token after it) to
// dst, len(rows)·vocabulary floats. With a cold KV tier (Options.KVCold)
// the tokens are computed one block of positions at a time, the blocks
// older than the hot window moving to the cold tier in between, as they do
// while a sequence decodes, so that the logits show what reading old
// positions quantized costs.
func (m *Model) Logits(ctx context.Context, tokens []int32, rows []int32, dst []float32) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	vocab := m.net.Config().Vocab
	if len(tokens) == 0 || len(tokens) > m.opts.ContextLength {
		return fmt.Errorf("%d tokens for a context of %d", len(tokens), m.opts.ContextLength)
	}
	if len(dst) != len(rows)*vocab {
		return fmt.Errorf("logits: %d floats for %d rows of %d", len(dst), len(rows), vocab)
	}
	for _, r := range rows {
		if r < 0 || int(r) >= len(tokens) {
			return fmt.Errorf("logits of row %d of %d tokens", r, len(tokens))
		}
	}
	for _, t := range tokens {
		if t < 0 || int(t) >= vocab {
			return fmt.Errorf("token %d outside the vocabulary of %d", t, vocab)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.usable(); err != nil {
		return err
	}
	defer m.noteFault(&err)
	defer mapfault.Catch(&err, mapfault.Arm())
	seq := kv.NewSequence(m.pool)
	defer seq.Release()
	if m.pool.ColdBlocks() > 0 {
		if err := m.logitsTiered(seq, tokens, rows, dst); err != nil {
			return err
		}
		return finiteLogits(rows, dst)
	}
	if err := seq.Reserve(len(tokens), m.kv); err != nil {
		return fmt.Errorf("kv cache: %w", err)
	}
	batch := &model.Batch{Tokens: tokens, Spans: []compute.Span{{N: len(tokens), Blocks: seq.Blocks()}}}
	hidden := m.net.Forward(batch, m.kv)
	m.backend.Download(m.net.Logits(hidden, rows), dst)
	return finiteLogits(rows, dst)
}

// finiteLogits returns ErrNonFinite, naming the row, when dst (the logits
// of rows, one vocabulary each) holds NaN or an infinity: a perplexity
// or KL divergence computed from them printed NaN and exited 0 (and
// --json failed on encoding NaN), where generation reports the model.
func finiteLogits(rows []int32, dst []float32) error {
	if len(rows) == 0 {
		return nil
	}
	vocab := len(dst) / len(rows)
	for i, v := range dst {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("logits of position %d: %w", rows[i/vocab], ErrNonFinite)
		}
	}
	return nil
}

// logitsTiered is Logits with a cold tier: tokens are computed a block at
// a time into seq, its blocks older than the hot window moving to the
// cold tier after each.
func (m *Model) logitsTiered(seq *kv.Sequence, tokens, rows []int32, dst []float32) error {
	d, ok := m.kv.(kv.Demoter)
	if !ok {
		return fmt.Errorf("kv cache: the store has no cold tier")
	}
	vocab := m.net.Config().Vocab
	var local []int32
	var out []int
	buf := make([]float32, blockSize*vocab)
	for p := 0; p < len(tokens); p += blockSize {
		n := min(blockSize, len(tokens)-p)
		if err := seq.Reserve(n, m.kv); err != nil {
			return fmt.Errorf("kv cache: %w", err)
		}
		batch := &model.Batch{Tokens: tokens[p : p+n], Spans: []compute.Span{{N: n, Pos: p, Blocks: seq.Blocks()}}}
		hidden := m.net.Forward(batch, m.kv)
		local, out = local[:0], out[:0]
		for i, r := range rows {
			if int(r) >= p && int(r) < p+n {
				local, out = append(local, r-int32(p)), append(out, i)
			}
		}
		if len(local) > 0 {
			m.backend.Download(m.net.Logits(hidden, local), buf[:len(local)*vocab])
			for k, i := range out {
				copy(dst[i*vocab:(i+1)*vocab], buf[k*vocab:(k+1)*vocab])
			}
		}
		seq.Advance(n)
		if _, err := seq.Demote(m.opts.KVHotWindow, d); err != nil {
			return fmt.Errorf("kv cache: %w", err)
		}
	}
	return nil
}

// KLDivergence scores the model against a base model's log-probabilities
// saved by llama-perplexity --kl-divergence-base (read from r): on the
// file's own tokens, chunk by chunk as llama-perplexity cuts them, the
// mean KL divergence of this model's next-token distributions from the
// base's, how often both rank the same token first, and both perplexities.
// progress, when set, is called after each chunk.
func (m *Model) KLDivergence(ctx context.Context, r io.Reader, progress func(chunk int, s kldiv.Summary)) (kldiv.Summary, error) {
	rd, err := kldiv.NewReader(r)
	if err != nil {
		return kldiv.Summary{}, err
	}
	h := rd.Header()
	vocab := m.net.Config().Vocab
	if h.Vocab != vocab {
		return kldiv.Summary{}, fmt.Errorf("the base file has a vocabulary of %d, the model %d", h.Vocab, vocab)
	}
	if h.Ctx > m.opts.ContextLength {
		return kldiv.Summary{}, fmt.Errorf("the base file's chunks of %d tokens exceed the model's context %d (--ctx)", h.Ctx, m.opts.ContextLength)
	}
	first := h.First()
	rows := make([]int32, h.Scored())
	for i := range rows {
		rows[i] = int32(first + i)
	}
	logits := make([]float32, len(rows)*vocab)
	base := make([]float64, vocab)
	var scratch []float64
	var st kldiv.Stats
	for c := range h.Chunks {
		chunk := append([]int32(nil), h.Tokens[c*h.Ctx:(c+1)*h.Ctx]...)
		if m.tok.AddBOS() {
			chunk[0] = m.tok.BOS()
		}
		if err := m.Logits(ctx, chunk, rows, logits); err != nil {
			return st.Summary(), err
		}
		for i := range rows {
			if err := rd.Next(base); err != nil {
				return st.Summary(), fmt.Errorf("chunk %d position %d: %w", c, first+i, err)
			}
			scratch = st.Add(base, logits[i*vocab:(i+1)*vocab], chunk[first+i+1], scratch)
		}
		if progress != nil {
			progress(c, st.Summary())
		}
	}
	return st.Summary(), nil
}
