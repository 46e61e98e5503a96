package llm

import (
	"context"
	"fmt"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/kv"
	"github.com/ruvllm/ruvllm/engine/mapfault"
	"github.com/ruvllm/ruvllm/engine/model"
)

// ScoreTokens returns, for each token of a prompt after the first, its
// log-probability given the tokens before it and the top alternatives
// there (what OpenAI's completions return for the prompt with echo and
// logprobs). Entry i scores tokens[i+1]. The prompt runs outside the
// scheduler, a chunk at a time under the model's lock, so generations keep
// streaming meanwhile.
func (m *Model) ScoreTokens(ctx context.Context, tokens []int32, top int) ([]Token, error) {
	if len(tokens) > m.opts.ContextLength {
		return nil, fmt.Errorf("%w: %d tokens, context is %d", ErrContextExceeded, len(tokens), m.opts.ContextLength)
	}
	vocab := m.net.Config().Vocab
	for _, id := range tokens {
		if id < 0 || int(id) >= vocab {
			return nil, fmt.Errorf("%w: %d is not in [0,%d)", ErrTokenRange, id, vocab)
		}
	}
	if len(tokens) < 2 {
		return nil, nil
	}
	seq := kv.NewSequence(m.pool)
	defer seq.Release()
	out := make([]Token, 0, len(tokens)-1)
	var logits []float32
	for start := 0; start < len(tokens)-1; {
		n := min(len(tokens)-1-start, m.opts.BatchSize)
		if err := m.reserveOutsideScheduler(ctx, seq, n); err != nil {
			return nil, err
		}
		rows := make([]int32, n)
		for i := range rows {
			rows[i] = int32(i)
		}
		if cap(logits) < n*vocab {
			logits = make([]float32, n*vocab)
		}
		logits = logits[:n*vocab]
		batch := &model.Batch{Tokens: tokens[start : start+n], Spans: []compute.Span{{N: n, Pos: seq.Len(), Blocks: seq.Blocks()}}}
		if err := m.forwardLogits(batch, rows, logits); err != nil {
			return nil, err
		}
		seq.Advance(n)
		for i := range n {
			row := logits[i*vocab : (i+1)*vocab]
			id := tokens[start+i+1]
			lp, topTokens := m.logprobs(row, id, top)
			out = append(out, Token{ID: id, Text: string(m.tok.TokenBytes(nil, id)), Logprob: lp, Top: topTokens})
		}
		start += n
	}
	return out, nil
}

// forwardLogits runs one forward pass under the model's lock and copies the
// logits of rows into dst.
func (m *Model) forwardLogits(batch *model.Batch, rows []int32, dst []float32) (err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.usable(); err != nil {
		return err
	}
	defer m.noteFault(&err)
	defer mapfault.Catch(&err, mapfault.Arm())
	hidden := m.net.Forward(batch, m.kv)
	m.backend.Download(m.net.Logits(hidden, rows), dst)
	return nil
}
