package llm

import (
	"context"
	"fmt"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/kv"
	"github.com/ruvllm/ruvllm/engine/model"
)

// ForcedLogits runs a generation teacher-forced, batched as a request is:
// the prompt in passes of up to Options.BatchSize tokens, then each of
// forced in a pass of its own, calling fn with the logits that predict
// forced[0] (after the prompt), forced[1] (after forced[0]), and so on:
// len(forced) calls, each with the vocabulary's logits, valid only during
// the call. It compares an engine's arithmetic with another's step by
// step along the same tokens (bench/iquant/agree), which the tokens alone
// cannot show past the first difference. The sequence is fresh (no prefix
// cache) and runs outside the scheduler under the model's lock.
func (m *Model) ForcedLogits(ctx context.Context, prompt, forced []int32, fn func(step int, logits []float32) error) error {
	if len(prompt) == 0 {
		return fmt.Errorf("forced logits: empty prompt")
	}
	if len(prompt)+len(forced) > m.opts.ContextLength {
		return fmt.Errorf("%w: %d tokens, context is %d", ErrContextExceeded, len(prompt)+len(forced), m.opts.ContextLength)
	}
	vocab := m.net.Config().Vocab
	for _, ts := range [][]int32{prompt, forced} {
		for _, id := range ts {
			if id < 0 || int(id) >= vocab {
				return fmt.Errorf("%w: %d is not in [0,%d)", ErrTokenRange, id, vocab)
			}
		}
	}
	seq := kv.NewSequence(m.pool)
	defer seq.Release()
	logits := make([]float32, vocab)
	last := []int32{0}
	pass := func(tokens []int32) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := len(tokens)
		if err := m.reserveOutsideScheduler(ctx, seq, n); err != nil {
			return err
		}
		last[0] = int32(n - 1)
		batch := &model.Batch{Tokens: tokens, Spans: []compute.Span{{N: n, Pos: seq.Len(), Blocks: seq.Blocks()}}}
		if m.followsOutputs {
			batch.Outputs = last
		}
		if err := m.forwardLogits(batch, last, logits); err != nil {
			return err
		}
		seq.Advance(n)
		return nil
	}
	for start := 0; start < len(prompt); start += m.opts.BatchSize {
		end := min(start+m.opts.BatchSize, len(prompt))
		if err := pass(prompt[start:end]); err != nil {
			return err
		}
	}
	for i, id := range forced {
		if err := fn(i, logits); err != nil {
			return err
		}
		if i+1 < len(forced) {
			if err := pass([]int32{id}); err != nil {
				return err
			}
		}
	}
	return nil
}
