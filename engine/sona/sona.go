// Package sona learns from a user's feedback, on top of engine/train, in
// three loops per learning scope:
//
//   - the instant loop (Learner.Feedback): a correction, a thumbs-up, a
//     thumbs-down or a regenerate becomes a training example, and a few
//     AdamW steps on a rank-1–4 MicroLoRA apply it at once; the scope's
//     next requests use the new adapter;
//   - the background loop (Learner.Consolidate): the feedback the
//     MicroLoRA learned is trained into the scope's consolidated adapter
//     with EWC++ (an online diagonal Fisher estimate over the adapter's
//     values, a penalty holding important values near their consolidated
//     ones, a replay sample of earlier feedback), and the MicroLoRA
//     starts again from zero;
//   - the deep loop (Learner.Deep): a rank 8–16 LoRA fine-tuned over
//     every stored exchange replaces the consolidated adapter only if it
//     is better on held-back exchanges and no more than 2 % worse on
//     general text; otherwise it is kept as a rejected candidate with its
//     figures.
//
// A trajectory bank (Bank) with an HNSW index over prompt embeddings
// routes "adapters": "auto" requests to the installed adapter that did
// best on similar past requests.
//
// Objectives, per signal: a correction maximises the likelihood of the
// corrected answer and adds an unlikelihood term for the token where the
// rejected answer left it; a thumbs-up maximises the likelihood of the
// rated answer at half weight; a thumbs-down without correction minimises
// it with the unlikelihood loss −log(1−p) (Welleck et al. 2019) — chosen
// over a preference loss because a thumbs-down brings no preferred answer
// to compare with, and unlikelihood pushes only the rated tokens' own
// probabilities down, leaving the rest of the distribution to the base;
// a regenerate is the same term at 0.3 weight.
//
// A Scope's whole state (adapters, Fisher, optimizer moments, queued and
// replayed feedback, trajectories, undo point, candidates) serialises to
// bytes (Scope.MarshalBinary, UnmarshalScope): the daemon keeps it in its
// store; this package imports no storage.
package sona

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ruvllm/ruvllm/engine/train"
)

// Errors callers branch on.
var (
	// ErrPaused: the scope is paused; feedback is queued, not learned.
	ErrPaused = errors.New("learning is paused for this scope")
	// ErrNothingToUndo: no update since the scope was created or reset.
	ErrNothingToUndo = errors.New("no update to undo")
	// ErrUnlearnable: the feedback cannot become an example (no prompt,
	// an empty answer, tokens the model does not have); the scope did
	// not record it, and never will.
	ErrUnlearnable = errors.New("feedback cannot be learned")
)

// Signal is the kind of a feedback.
type Signal uint8

// The signals.
const (
	Correction Signal = iota + 1 // the user's corrected answer
	ThumbsUp
	ThumbsDown
	Regenerate // the user asked for another answer: a mild negative
)

func (s Signal) String() string {
	switch s {
	case Correction:
		return "correction"
	case ThumbsUp:
		return "thumbs-up"
	case ThumbsDown:
		return "thumbs-down"
	case Regenerate:
		return "regenerate"
	}
	return fmt.Sprintf("signal(%d)", uint8(s))
}

// Feedback is one signal about one exchange, as token ids: the prompt as
// the model saw it (template applied) and the answer it gave.
type Feedback struct {
	Signal Signal
	Prompt []int32
	Answer []int32
	// Correction is the user's answer (Signal Correction).
	Correction []int32
	// Embedding is the prompt's embedding (the model's own), stored as a
	// trajectory for routing when non-nil.
	Embedding []float32
	// Adapter names the installed adapter that produced the answer (""
	// for the base model or the scope's own learning), for routing.
	Adapter string
	At      time.Time
	// Key names what was rated (the daemon's request id): a signal with
	// the key of an earlier one replaces it (a reply rated again), which
	// leaves the records consolidation, replay and deep runs learn from.
	Key string
}

// Config tunes the loops. Zero fields take DefaultConfig's values; a
// negative count or strength switches that part off (no recent examples,
// no replay, no EWC penalty, no general-text Fisher).
type Config struct {
	// Instant loop.
	MicroRank  int     // 1–4
	MicroSteps int     // steps per feedback
	MicroLR    float64 // AdamW learning rate
	// MicroRecent is how many earlier queued examples join each
	// feedback's steps (so that the MicroLoRA keeps what it just learned).
	MicroRecent int
	// MicroWarmup ramps a fresh MicroLoRA's learning rate up over its
	// first steps (train.AdamW.Warmup; negative: none): Adam's first
	// step moves every value by about the learning rate, a jump on
	// general text the first step of a new MicroLoRA would publish.
	MicroWarmup int
	// MicroLayers restricts the MicroLoRA to the top layers (0: all):
	// gradients then stop there and a step costs less.
	MicroLayers int

	// Background loop.
	ConsolidatedRank int
	ConsolidateSteps int
	ConsolidateLR    float64
	// EWCLambda is the strength of the EWC++ penalty. The Fisher is of
	// the per-token mean NLL, so its values are small and λ large.
	EWCLambda   float64
	FisherDecay float64 // EWC++: F ← decay·F + (1−decay)·F_new
	ReplaySize  int     // replayed earlier examples per consolidation
	ReplayCap   int     // examples kept for replay
	// GeneralFisherRows is how many general-text examples seed the
	// Fisher with general text's sensitivity (default none: distillation
	// holds general text better, see DistillWeight; EWC++ then holds
	// only what earlier consolidations learned from feedback).
	GeneralFisherRows int

	// Distillation towards the base model on general text (the
	// learner's General examples, the base's next-token distributions
	// computed once): every instant step after the first and every
	// consolidation step add DistillRows of them, each position scored
	// by DistillWeight·KL(base ‖ adapted), relative to a feedback
	// token's weight 1. It holds the adapted model's distribution on
	// general text to the base's while the feedback is learned, where
	// EWC holds the adapter's values.
	DistillWeight float64
	DistillRows   int
	// ConsolidateTransfer weighs, in the background loop, the KL
	// divergence from the scope's current model (consolidated adapter
	// and MicroLoRA, what requests apply) to the adapter being trained,
	// on the queued feedback's answers: the consolidated adapter takes
	// over what the MicroLoRA learned, the way it generalised included,
	// on top of the feedback's own objective.
	ConsolidateTransfer float64

	// The general-text guard (guard.go): the last GuardRows examples of
	// the learner's general text are held out of distillation and of
	// the Fisher, and an instant step or a consolidation whose served
	// model is more than GuardBudget (relative perplexity, 0.015 =
	// +1.5 %) worse than the base on them is scaled back until it fits.
	// Negative values switch the guard off.
	GuardRows   int
	GuardBudget float64
	// GuardRepair is how many distillation-only steps an update over
	// the budget takes before it is scaled back (negative: none).
	GuardRepair int

	// Deep loop.
	// ValidationEvery reserves every n-th correction or thumbs-up as a
	// validation exchange (default 5; negative: none): stored, not
	// learned by the instant and background loops, so that the deep
	// loop compares its candidate with the current adapters on
	// exchanges neither has trained on.
	ValidationEvery int
	DeepRank        int
	DeepMin         int     // stored exchanges needed before a deep run
	DeepEpochs      int     // passes over the training exchanges
	DeepLR          float64 // AdamW learning rate
	DeepBatch       int     // examples per step
	// GeneralTolerance is how much worse (relative) general text may get
	// for a deep candidate to be accepted (0.02 = 2 %).
	GeneralTolerance float64
	MaxExchanges     int // stored exchanges kept (oldest dropped)

	// Weights of the signals' objectives.
	ThumbsUpWeight, ThumbsDownWeight, RegenerateWeight, AvoidWeight float32

	Seed uint64
}

// DefaultConfig is tuned on the shared 19M llama (BENCHMARKS.md).
func DefaultConfig() Config {
	return Config{
		MicroRank: 4, MicroSteps: 2, MicroLR: 1e-3, MicroRecent: 3, MicroWarmup: 4,
		ConsolidatedRank: 8, ConsolidateSteps: 30, ConsolidateLR: 1e-3, EWCLambda: 1e6, FisherDecay: 0.5,
		ReplaySize: 16, ReplayCap: 256, DistillWeight: 3, DistillRows: 2,
		GuardRows: 4, GuardBudget: 0.01, GuardRepair: 4,
		ValidationEvery: 5, DeepRank: 16, DeepMin: 20, DeepEpochs: 4, DeepLR: 1e-3, DeepBatch: 8,
		GeneralTolerance: 0.02, MaxExchanges: 4096,
		ThumbsUpWeight: 0.5, ThumbsDownWeight: 1, RegenerateWeight: 0.3, AvoidWeight: 0.5,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	fill := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	fillF := func(v *float64, def float64) {
		if *v == 0 {
			*v = def
		}
	}
	fill32 := func(v *float32, def float32) {
		if *v == 0 {
			*v = def
		}
	}
	fill(&c.MicroRank, d.MicroRank)
	fill(&c.MicroSteps, d.MicroSteps)
	fillF(&c.MicroLR, d.MicroLR)
	fill(&c.MicroRecent, d.MicroRecent)
	fill(&c.MicroWarmup, d.MicroWarmup)
	fill(&c.ConsolidatedRank, d.ConsolidatedRank)
	fill(&c.ConsolidateSteps, d.ConsolidateSteps)
	fillF(&c.ConsolidateLR, d.ConsolidateLR)
	fillF(&c.FisherDecay, d.FisherDecay)
	fill(&c.ReplaySize, d.ReplaySize)
	fillF(&c.EWCLambda, d.EWCLambda)
	fill(&c.GeneralFisherRows, d.GeneralFisherRows)
	fillF(&c.DistillWeight, d.DistillWeight)
	fill(&c.DistillRows, d.DistillRows)
	fillF(&c.ConsolidateTransfer, d.ConsolidateTransfer)
	fill(&c.GuardRows, d.GuardRows)
	fill(&c.GuardRepair, d.GuardRepair)
	fillF(&c.GuardBudget, d.GuardBudget)
	fill(&c.ReplayCap, d.ReplayCap)
	fill(&c.ValidationEvery, d.ValidationEvery)
	fill(&c.DeepRank, d.DeepRank)
	fill(&c.DeepMin, d.DeepMin)
	fill(&c.DeepEpochs, d.DeepEpochs)
	fillF(&c.DeepLR, d.DeepLR)
	fill(&c.DeepBatch, d.DeepBatch)
	fillF(&c.GeneralTolerance, d.GeneralTolerance)
	fill(&c.MaxExchanges, d.MaxExchanges)
	fill32(&c.ThumbsUpWeight, d.ThumbsUpWeight)
	fill32(&c.ThumbsDownWeight, d.ThumbsDownWeight)
	fill32(&c.RegenerateWeight, d.RegenerateWeight)
	fill32(&c.AvoidWeight, d.AvoidWeight)
	for _, v := range []*int{&c.MicroRecent, &c.ReplaySize, &c.GeneralFisherRows, &c.DistillRows, &c.GuardRows, &c.GuardRepair, &c.MicroWarmup} {
		*v = max(*v, 0)
	}
	c.EWCLambda = max(c.EWCLambda, 0)
	c.DistillWeight = max(c.DistillWeight, 0)
	c.ConsolidateTransfer = max(c.ConsolidateTransfer, 0)
	c.GuardBudget = max(c.GuardBudget, 0)
	return c
}

// Learner runs the loops of any number of scopes over one base model.
// Its methods may be called concurrently; training passes take turns on
// the trainer, and each scope is locked while it changes.
type Learner struct {
	tr  *train.Trainer
	cfg Config
	// microInit is every MicroLoRA's starting point (one seed: B = 0,
	// the same A), and microFisher general text's Fisher there, computed
	// once: the instant loop's EWC penalty holds the MicroLoRA near zero
	// where general text needs it.
	microMu     sync.Mutex
	microInit   *train.Adapter
	microFisher *train.Adapter
	// general is held-out general text, as examples: the deep loop's
	// second validation set and the Fisher's seed.
	general []train.Example
	// distill is general text with the base model as teacher, made
	// once (Config.DistillWeight).
	distillMu sync.Mutex
	distill   []train.Example
	// guardBaseNLL is the base model's NLL on the guard rows (guard.go).
	guardMu      sync.Mutex
	guardBaseNLL float64
	guardBaseSet bool
	log          *slog.Logger
}

// Options configures NewLearner.
type Options struct {
	Config Config
	// General is general text (tokenized, split into examples whose
	// answer is all but the first token) the deep loop validates on and
	// the consolidated adapter's Fisher is seeded with.
	General []train.Example
	Logger  *slog.Logger
}

// NewLearner returns a learner training with tr.
func NewLearner(tr *train.Trainer, o Options) *Learner {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Learner{tr: tr, cfg: o.Config.withDefaults(), general: o.General, log: o.Logger}
}

// Config returns the learner's configuration with defaults filled.
func (l *Learner) Config() Config { return l.cfg }

// GeneralExamples splits tokenized general text into examples of n
// tokens whose answer is every token but the first (perplexity chunks).
func GeneralExamples(tokens []int32, n int) []train.Example {
	var out []train.Example
	for i := 0; i+n <= len(tokens); i += n {
		out = append(out, train.Example{Tokens: tokens[i : i+n : i+n], Start: 1})
	}
	return out
}

// example builds the training example of a feedback.
func (l *Learner) example(fb *Feedback) (train.Example, error) {
	if len(fb.Prompt) == 0 {
		return train.Example{}, errors.New("feedback without a prompt")
	}
	c := l.cfg
	answer, weight := fb.Answer, float32(1)
	var avoid []train.Avoid
	switch fb.Signal {
	case Correction:
		if len(fb.Correction) == 0 {
			return train.Example{}, errors.New("correction without a corrected answer")
		}
		answer = fb.Correction
		// The token where the rejected answer left the corrected one is
		// to be avoided in that same context.
		for i := 0; i < len(fb.Answer) && i < len(answer); i++ {
			if fb.Answer[i] != answer[i] {
				avoid = []train.Avoid{{Pos: len(fb.Prompt) + i, Token: fb.Answer[i], Weight: c.AvoidWeight}}
				break
			}
		}
	case ThumbsUp:
		weight = c.ThumbsUpWeight
	case ThumbsDown:
		weight = -c.ThumbsDownWeight
	case Regenerate:
		weight = -c.RegenerateWeight
	default:
		return train.Example{}, fmt.Errorf("unknown signal %d", fb.Signal)
	}
	if len(answer) == 0 {
		return train.Example{}, errors.New("feedback without an answer")
	}
	tokens := append(append(make([]int32, 0, len(fb.Prompt)+len(answer)), fb.Prompt...), answer...)
	return train.Example{Tokens: tokens, Start: len(fb.Prompt), Weight: weight, Avoid: avoid}, nil
}

// Warm prepares what the first feedback would otherwise wait for: the
// MicroLoRA's starting point (with general text's Fisher there when
// GeneralFisherRows is set) and the base model's distributions on
// general text for distillation, and the base's perplexity on the
// guard's rows (a few forward and training passes). The daemon calls it
// when the model is loaded.
func (l *Learner) Warm(ctx context.Context) error {
	if _, _, err := l.newMicro(ctx); err != nil {
		return err
	}
	if _, err := l.distillSet(ctx); err != nil {
		return err
	}
	if len(l.guardRows()) > 0 {
		if _, err := l.guardBase(ctx); err != nil {
			return err
		}
	}
	return nil
}

// distillSet returns the general examples with the base model as their
// teacher (none when distillation is off or there is no general text),
// computing the teachers on first use.
func (l *Learner) distillSet(ctx context.Context) ([]train.Example, error) {
	c := l.cfg
	general := l.trainingGeneral()
	if c.DistillWeight <= 0 || c.DistillRows <= 0 || len(general) == 0 {
		return nil, nil
	}
	l.distillMu.Lock()
	defer l.distillMu.Unlock()
	if l.distill != nil {
		return l.distill, nil
	}
	teachers, err := l.tr.Teach(ctx, nil, general)
	if err != nil {
		return nil, fmt.Errorf("distillation teachers: %w", err)
	}
	out := make([]train.Example, len(general))
	for i, g := range general {
		out[i] = train.Example{Tokens: g.Tokens, Start: g.Start, Weight: float32(c.DistillWeight), Teacher: teachers[i]}
	}
	l.distill = out
	return out, nil
}

// distillRows returns Config.DistillRows distillation examples, the
// at-th group of them cycling through the set (none when off).
// Their weight is DistillWeight times mu (the guard's multiplier, 1
// when it has nothing to say).
func (l *Learner) distillRows(ctx context.Context, at int, mu float64) ([]train.Example, error) {
	set, err := l.distillSet(ctx)
	if err != nil || len(set) == 0 {
		return nil, err
	}
	n := min(l.cfg.DistillRows, len(set))
	out := make([]train.Example, n)
	for i := range out {
		out[i] = set[(at*n+i)%len(set)]
		out[i].Weight *= float32(max(mu, 1))
	}
	return out, nil
}

// newMicro returns a fresh MicroLoRA and the penalty that holds it near
// its start where general text is sensitive (nil without EWC or general
// text).
func (l *Learner) newMicro(ctx context.Context) (*train.Adapter, func(a, g *train.Adapter) float64, error) {
	l.microMu.Lock()
	defer l.microMu.Unlock()
	c := l.cfg
	if l.microInit == nil {
		cfg := train.AdapterConfig{Rank: c.MicroRank, Seed: c.Seed ^ 0x3c3c}
		if n := l.tr.Base().Config().Layers; c.MicroLayers > 0 && c.MicroLayers < n {
			for i := n - c.MicroLayers; i < n; i++ {
				cfg.Layers = append(cfg.Layers, i)
			}
		}
		m, err := train.NewAdapter(l.tr.Base(), cfg)
		if err != nil {
			return nil, nil, err
		}
		if gen := l.trainingGeneral(); c.EWCLambda > 0 && c.GeneralFisherRows > 0 && len(gen) > 0 {
			f, err := l.fisherOf(ctx, m, gen[:min(c.GeneralFisherRows, len(gen))])
			if err != nil {
				return nil, nil, fmt.Errorf("general Fisher: %w", err)
			}
			l.microFisher = f
		}
		l.microInit = m
	}
	var penalty func(a, g *train.Adapter) float64
	if l.microFisher != nil {
		penalty = l.ewcPenalty(l.microInit, l.microFisher, nil)
	}
	return l.microInit.Clone(), penalty, nil
}
