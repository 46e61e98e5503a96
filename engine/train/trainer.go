// Package train fine-tunes LoRA adapters over a frozen base model of any
// weight type: a forward pass that keeps its activations, the backward
// pass of the llama block (llama, qwen2) with gradients for the adapters'
// A and B matrices only, cross-entropy on answer tokens (and
// unlikelihood terms for answers to avoid), AdamW with gradient clipping,
// and sequence packing (several examples in one batch, attention kept
// inside each).
//
// The trainer computes in float32 on the host, reading the base's weights
// as float32 (dense copies within a memory budget, dequantized on the fly
// beyond it), independently of the serving backend; it shares nothing
// with a loaded llm.Model but the file. Adapters it produces become
// engine/lora adapters (Adapter.LoRA) that serving applies per request
// and that export as llama.cpp GGUF LoRA files.
//
// Training is background work: Options.Yield is called between products,
// so a daemon passes its scheduler's yield there and requests keep
// priority (see docs/DESIGN.md).
package train

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/ruvllm/ruvllm/engine/mapfault"
)

// Options configures a Trainer.
type Options struct {
	// Threads computing a pass (default: the number of CPUs).
	Threads int
	// MaxTokens bounds the tokens of one packed batch (default 512):
	// activations grow with it.
	MaxTokens int
	// Yield, when set, is called before every layer and every weight
	// product of a forward or backward pass; it blocks while serving has
	// work and returns an error to abandon the pass (the daemon's
	// scheduler implements it).
	Yield func(ctx context.Context) error
}

// Trainer runs training passes over a Base. Its methods may be called
// from several goroutines; they run one at a time.
type Trainer struct {
	b  *Base
	o  Options
	mu sync.Mutex
	n  *net[float32]
}

// NewTrainer returns a trainer over b.
func NewTrainer(b *Base, o Options) *Trainer {
	if o.Threads <= 0 {
		o.Threads = runtime.NumCPU()
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = 512
	}
	return &Trainer{b: b, o: o, n: newNet[float32](b, o.Threads, o.Yield)}
}

// Base returns the trainer's base model.
func (t *Trainer) Base() *Base { return t.b }

// Loss is what a pass over examples measured.
type Loss struct {
	// Objective is the weighted loss the gradients descend: the sum of
	// every term divided by the number of answer positions.
	Objective float64
	// Scored is the number of answer positions.
	Scored int
	// NLL is the mean −log p of the answer tokens of examples with a
	// positive weight (nats per token).
	NLL float64
	// Examples holds each example's −log p sum and token count (zero
	// for unlikelihood examples), in the order given.
	Examples []ExampleLoss
}

// ExampleLoss is one example's likelihood figures.
type ExampleLoss struct {
	NLL    float64 // sum of −log p over the answer tokens
	Tokens int
}

// Evaluate runs examples forward with adapters applied and returns
// their losses; nothing is trained.
func (t *Trainer) Evaluate(ctx context.Context, adapters []Applied, examples []Example) (Loss, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return run(ctx, t.n, adapters, nil, nil, nil, examples, t.o.MaxTokens)
}

// Gradients adds to grads (shaped like a) the gradient of the objective
// over examples with respect to a's values, with the frozen adapters
// applied beneath a, and returns the loss.
func (t *Trainer) Gradients(ctx context.Context, a *Adapter, frozen []Applied, examples []Example, grads *Adapter) (Loss, error) {
	if !a.SameShape(grads) {
		return Loss{}, fmt.Errorf("gradients: buffer shaped unlike the adapter")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return run(ctx, t.n, frozen, a, pairsOf[float32](a), pairsOf[float32](grads), examples, t.o.MaxTokens)
}

// StepConfig configures one optimisation step.
type StepConfig struct {
	// Frozen adapters are applied beneath the trained one (a scope's
	// consolidated adapter under its MicroLoRA).
	Frozen []Applied
	// ClipNorm bounds the gradient's L2 norm (0: 1; negative: no clip).
	ClipNorm float64
	// Penalty, when set, adds a regulariser's gradient to grads and
	// returns its value (EWC's pull towards consolidated values).
	Penalty func(a, grads *Adapter) float64
}

// StepResult reports one step.
type StepResult struct {
	Loss
	Penalty  float64
	GradNorm float64 // before clipping
}

// Step runs one optimisation step on a: gradients over examples (one
// or more packed batches), the penalty, clipping, and opt's update.
func (t *Trainer) Step(ctx context.Context, a *Adapter, opt *AdamW, examples []Example, c StepConfig) (StepResult, error) {
	grads := a.ZeroLike()
	loss, err := t.Gradients(ctx, a, c.Frozen, examples, grads)
	if err != nil {
		return StepResult{}, err
	}
	res := StepResult{Loss: loss}
	if c.Penalty != nil {
		res.Penalty = c.Penalty(a, grads)
	}
	clip := c.ClipNorm
	if clip == 0 {
		clip = 1
	}
	res.GradNorm = Clip(grads, clip)
	if err := opt.Step(a, grads); err != nil {
		return res, err
	}
	return res, nil
}

// run evaluates (grads nil) or differentiates the objective over the
// examples, packed into batches of at most maxTokens tokens.
func run[F Float](ctx context.Context, n *net[F], frozen []Applied, train *Adapter, pairs, grads map[string]*pairF[F], examples []Example, maxTokens int) (_ Loss, err error) {
	// The base's weights are read from the model file's mapping: a file
	// truncated under it is this pass's error, not the daemon's end.
	defer mapfault.Catch(&err, mapfault.Arm())
	var res Loss
	if len(examples) == 0 {
		return res, fmt.Errorf("no examples")
	}
	for i := range examples {
		if err := examples[i].validate(n.b); err != nil {
			return res, fmt.Errorf("example %d: %w", i, err)
		}
		res.Scored += examples[i].scored()
	}
	for _, ap := range frozen {
		if ap.Adapter != nil && !n.b.fits(ap.Adapter) {
			return res, fmt.Errorf("frozen adapter does not fit the base")
		}
	}
	if train != nil && !n.b.fits(train) {
		return res, fmt.Errorf("trained adapter does not fit the base")
	}
	res.Examples = make([]ExampleLoss, len(examples))
	norm := float64(res.Scored)
	var nll float64
	var nllTokens int
	for _, idx := range packBatches(examples, maxTokens) {
		bt := makeBatch(examples, idx, norm)
		set := newAdapterSet(len(n.b.layers), frozen, train, pairs, grads)
		p, err := n.forward(ctx, bt, set, grads != nil)
		if err != nil {
			return res, err
		}
		loss, stats, dhN := n.head(p, grads != nil)
		if p.err != nil { // a yield in the head gave up (ctx ended)
			return res, p.err
		}
		res.Objective += loss
		for k, i := range idx {
			res.Examples[i] = ExampleLoss{NLL: stats[k].nll, Tokens: stats[k].tokens}
			nll += stats[k].nll
			nllTokens += stats[k].tokens
		}
		if grads != nil {
			if err := n.backward(ctx, p, dhN); err != nil {
				return res, err
			}
		}
	}
	if nllTokens > 0 {
		res.NLL = nll / float64(nllTokens)
	}
	return res, nil
}

// fits reports whether every pair of a matches a weight of b.
func (b *Base) fits(a *Adapter) bool {
	if a.Rank < 1 || a.Rank > MaxRank {
		return false
	}
	for k, p := range a.Targets {
		if p.Layer < 0 || p.Layer >= len(b.layers) {
			return false
		}
		kind := kindIndex(p.Kind)
		if kind < 0 || k != keyOf(p) {
			return false
		}
		w := b.layers[p.Layer].w[kind]
		if p.In != w.cols || p.Out != w.rows || len(p.A) != a.Rank*p.In || len(p.B) != p.Out*a.Rank {
			return false
		}
	}
	return true
}
