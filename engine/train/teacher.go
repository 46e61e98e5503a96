package train

import (
	"context"
	"fmt"

	"github.com/ruvllm/ruvllm/engine/mapfault"
)

// Teacher is a model's next-token distributions over one example's
// answer positions, for distillation: an example that carries one is
// scored by the KL divergence from the teacher's distribution to the
// trained model's at every answer position, instead of the likelihood of
// its answer tokens. It holds the teacher's final (normed) hidden state
// of every position that predicts an answer token; the trainer turns
// them into distributions through the base's output matrix when it
// scores the example, so a teacher costs D floats per position rather
// than the vocabulary. Trainer.Teach makes teachers; a Teacher is
// read-only and may be shared by any number of examples and passes.
type Teacher struct {
	rows, dim int
	hidden    []float32 // rows×dim
	ident     string    // the base it was computed on
}

// Positions is the number of answer positions the teacher covers.
func (t *Teacher) Positions() int { return t.rows }

// Teach runs examples forward with adapters applied (none: the base
// model itself) and returns each example's teacher, in order: the
// distributions that model gives at the example's answer positions. An
// example's Weight, Avoid and Teacher are ignored here.
func (t *Trainer) Teach(ctx context.Context, adapters []Applied, examples []Example) (_ []*Teacher, err error) {
	defer mapfault.Catch(&err, mapfault.Arm())
	if len(examples) == 0 {
		return nil, fmt.Errorf("teach: no examples")
	}
	plain := make([]Example, len(examples))
	for i, e := range examples {
		plain[i] = Example{Tokens: e.Tokens, Start: e.Start}
		if err := plain[i].validate(t.b); err != nil {
			return nil, fmt.Errorf("teach: example %d: %w", i, err)
		}
	}
	for _, ap := range adapters {
		if ap.Adapter != nil && !t.b.fits(ap.Adapter) {
			return nil, fmt.Errorf("teach: adapter does not fit the base")
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.n
	D := t.b.cfg.Dim
	out := make([]*Teacher, len(plain))
	for _, idx := range packBatches(plain, t.o.MaxTokens) {
		bt := makeBatch(plain, idx, 1)
		set := newAdapterSet[float32](len(t.b.layers), adapters, nil, nil, nil)
		p, err := n.forward(ctx, bt, set, false)
		if err != nil {
			return nil, fmt.Errorf("teach: %w", err)
		}
		for k, i := range idx {
			e := plain[i]
			sp := bt.spans[k]
			rows := e.scored()
			h := make([]float32, rows*D)
			first := sp.row + e.Start - 1
			copy(h, p.hN[first*D:(first+rows)*D])
			out[i] = &Teacher{rows: rows, dim: D, hidden: h, ident: t.b.ident}
		}
	}
	return out, nil
}

// check reports whether the teacher fits example e of base b.
func (t *Teacher) check(e *Example, b *Base) error {
	if t.ident != b.ident || t.dim != b.cfg.Dim {
		return fmt.Errorf("teacher computed on another base model")
	}
	if t.rows != e.scored() || len(t.hidden) != t.rows*t.dim {
		return fmt.Errorf("teacher of %d positions for an answer of %d", t.rows, e.scored())
	}
	return nil
}
