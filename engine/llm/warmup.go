package llm

import (
	"context"
	"errors"
	"fmt"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/kv"
	"github.com/ruvllm/ruvllm/engine/mapfault"
	"github.com/ruvllm/ruvllm/engine/model"
)

// warmupTokens is the length of the warm-up batch: enough to size the
// prompt path's scratch buffers for a short prompt.
const warmupTokens = 8

// Warmup runs a short batch through the network and its output layer and
// throws the result away, as llama.cpp's server does after loading: the
// first real request then finds the weights paged in and the scratch
// buffers sized instead of paying for both. Its KV blocks are released at
// once and nothing enters the prefix cache or its counters.
func (m *Model) Warmup(ctx context.Context) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("warmup: model closed")
	}
	defer m.noteFault(&err)
	defer mapfault.Catch(&err, mapfault.Arm())
	n := min(warmupTokens, m.opts.ContextLength)
	seq := kv.NewSequence(m.pool)
	defer seq.Release()
	if err := seq.Reserve(n, m.kv); err != nil {
		return fmt.Errorf("warmup: kv cache: %w", err)
	}
	tokens := make([]int32, n)
	for i := range tokens {
		tokens[i] = max(m.tok.BOS(), 0)
	}
	batch := &model.Batch{Tokens: tokens, Spans: []compute.Span{{N: n, Blocks: seq.Blocks()}}}
	hidden := m.net.Forward(batch, m.kv)
	logits := make([]float32, m.net.Config().Vocab)
	m.backend.Download(m.net.Logits(hidden, []int32{int32(n - 1)}), logits)
	return nil
}
