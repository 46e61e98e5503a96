package llm

import (
	"context"
	"fmt"
	"math"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/kv"
	"github.com/ruvllm/ruvllm/engine/model"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
)

// PerplexityResult is the outcome of a perplexity run.
type PerplexityResult struct {
	Perplexity float64
	Chunks     int
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
	var res PerplexityResult
	if ctxLen <= 0 {
		ctxLen = 512
	}
	if ctxLen > m.opts.ContextLength {
		return res, fmt.Errorf("--ctx %d exceeds the model's context %d", ctxLen, m.opts.ContextLength)
	}
	tokens := m.tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true})
	chunks := len(tokens) / ctxLen
	if chunks == 0 {
		return res, fmt.Errorf("need at least %d tokens for one chunk, the text has %d", ctxLen, len(tokens))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	vocab := m.net.Config().Vocab
	first := ctxLen / 2
	rows := make([]int32, ctxLen-1-first)
	for i := range rows {
		rows[i] = int32(first + i)
	}
	logits := make([]float32, len(rows)*vocab)
	var nll float64
	for c := 0; c < chunks; c++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		chunk := append([]int32(nil), tokens[c*ctxLen:(c+1)*ctxLen]...)
		if m.tok.AddBOS() {
			chunk[0] = m.tok.BOS()
		}
		seq := kv.NewSequence(m.pool)
		err := func() error {
			defer seq.Release()
			if m.pool.ColdBlocks() == 0 {
				if err := seq.Reserve(ctxLen, m.kv); err != nil {
					return fmt.Errorf("kv cache: %w", err)
				}
				batch := &model.Batch{Tokens: chunk, Spans: []compute.Span{{N: ctxLen, Blocks: seq.Blocks()}}}
				hidden := m.net.Forward(batch, m.kv)
				m.backend.Download(m.net.Logits(hidden, rows), logits)
				return nil
			}
			return m.perplexityTiered(seq, chunk, first, logits)
		}()
		if err != nil {
			return res, err
		}
		for i := range rows {
			l := logits[i*vocab : (i+1)*vocab]
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
	res.Chunks = chunks
	res.Perplexity = math.Exp(nll / float64(res.Scored))
	return res, nil
}

// perplexityTiered computes chunk a block at a time into seq, moving its
// blocks older than the hot window to the cold tier after each, and
// writes the logits of positions first to len(chunk)-2 into logits.
func (m *Model) perplexityTiered(seq *kv.Sequence, chunk []int32, first int, logits []float32) error {
	d, ok := m.kv.(kv.Demoter)
	if !ok {
		return fmt.Errorf("kv cache: the store has no cold tier")
	}
	vocab := m.net.Config().Vocab
	var rows []int32
	for p := 0; p < len(chunk); p += blockSize {
		n := min(blockSize, len(chunk)-p)
		if err := seq.Reserve(n, m.kv); err != nil {
			return fmt.Errorf("kv cache: %w", err)
		}
		batch := &model.Batch{Tokens: chunk[p : p+n], Spans: []compute.Span{{N: n, Pos: p, Blocks: seq.Blocks()}}}
		hidden := m.net.Forward(batch, m.kv)
		rows = rows[:0]
		lo := max(first, p)
		for i := lo; i < min(p+n, len(chunk)-1); i++ {
			rows = append(rows, int32(i-p))
		}
		if len(rows) > 0 {
			m.backend.Download(m.net.Logits(hidden, rows), logits[(lo-first)*vocab:(lo-first+len(rows))*vocab])
		}
		seq.Advance(n)
		if _, err := seq.Demote(m.opts.KVHotWindow, d); err != nil {
			return fmt.Errorf("kv cache: %w", err)
		}
	}
	return nil
}
