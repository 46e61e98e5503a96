package llm

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/kv"
	"github.com/ruvllm/ruvllm/engine/mapfault"
	"github.com/ruvllm/ruvllm/engine/model"
	"github.com/ruvllm/ruvllm/engine/prefix"
	"github.com/ruvllm/ruvllm/engine/sched"
	"github.com/ruvllm/ruvllm/engine/spec"
)

// ErrDraftVocab is returned when a draft model's vocabulary differs from
// the target's: its token ids would mean other text.
var ErrDraftVocab = errors.New("draft model vocabulary differs from the model's")

// ErrDraft is wrapped by Load's errors that come from the draft model
// (Options.Draft) alone: the model itself would load without it.
var ErrDraft = errors.New("draft model")

// draftModel is a second, cheaper model loaded beside the target for
// speculative decoding (Options.Draft): it shares the target's backend
// and lock, and has its own KV pool and prefix cache.
type draftModel struct {
	file    *gguf.File
	net     model.Model
	kv      compute.KVStore
	pool    *kv.Pool
	drafter *spec.ModelDrafter
	name    string
	// faulted is set once a draft pass faulted on the draft file's
	// mapping: the draft model drafts nothing more, and the target, whose
	// own file is whole, goes on without it until it is loaded again.
	faulted atomic.Bool
}

// loadDraft opens the draft model at path on the target's backend, with
// KV room for as many sequences as the target's.
func (m *Model) loadDraft(path string, blocks int) error {
	f, err := gguf.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDraft, err)
	}
	d, err := m.openDraft(f, blocks)
	if err != nil {
		f.Close()
		return fmt.Errorf("%w %s: %w", ErrDraft, filepath.Base(path), err)
	}
	d.name = NameFromPath(path)
	m.draft = d
	return nil
}

func (m *Model) openDraft(f *gguf.File, blocks int) (*draftModel, error) {
	want, _ := m.file.Strings("tokenizer.ggml.tokens")
	got, _ := f.Strings("tokenizer.ggml.tokens")
	if len(want) == 0 || !slices.Equal(want, got) {
		if len(got) != len(want) {
			return nil, fmt.Errorf("%w (%d tokens against %d)", ErrDraftVocab, len(got), len(want))
		}
		// As many tokens, other ones: "(8192 tokens against 8192)" read as
		// no difference at all. Name the first that differs.
		i := 0
		for i < len(want) && want[i] == got[i] {
			i++
		}
		return nil, fmt.Errorf("%w (both have %d tokens, but token %d is %q in the draft and %q in the model)", ErrDraftVocab, len(want), i, got[i], want[i])
	}
	ident := fileIdentity(f) // before the weights load, as for the model
	net, err := model.Load(f, m.backend)
	if err != nil {
		return nil, err
	}
	cfg := net.Config()
	if cfg.Vocab != m.net.Config().Vocab {
		return nil, fmt.Errorf("%w: %d logits against %d", ErrDraftVocab, cfg.Vocab, m.net.Config().Vocab)
	}
	store, err := m.backend.NewKVStore(compute.KVConfig{
		Layers: cfg.Layers, Blocks: blocks, BlockSize: blockSize,
		KVHeads: cfg.KVHeads, HeadDim: cfg.HeadDim, Type: m.opts.KVType,
	})
	if err != nil {
		return nil, err
	}
	d := &draftModel{file: f, net: net, kv: store, pool: kv.NewPool(blocks, blockSize)}
	var cache *prefix.Cache
	if !m.opts.NoPrefixCache {
		cache = prefix.New(d.pool)
	}
	d.drafter = spec.NewModelDrafter(draftRunner{m}, d.pool, cache, "draft/"+ident)
	if m.opts.Speculate&spec.KindTree != 0 {
		d.drafter.AltBelow = 0.3
	}
	d.drafter.Window = m.opts.DraftWindow
	return d, nil
}

// errDraftFaulted is what a draft pass fails with once the draft model's
// file faulted.
var errDraftFaulted = errors.New("the draft model's file faulted; no drafts until the model is loaded again")

// draftRunner runs the draft model for the scheduler's drafter, under the
// model's lock like the target's passes.
type draftRunner struct{ m *Model }

func (r draftRunner) Vocab() int          { return r.m.draft.net.Config().Vocab }
func (r draftRunner) KV() compute.KVStore { return r.m.draft.kv }

func (r draftRunner) Step(batch *model.Batch, rows []int32, out [][]float32) (err error) {
	m := r.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.usable(); err != nil {
		return err
	}
	d := m.draft
	if d.faulted.Load() {
		return errDraftFaulted
	}
	defer func() {
		if errors.Is(err, mapfault.ErrFault) && !d.faulted.Swap(true) {
			m.opts.Logger.Error("reading the draft model file's mapping faulted: the file was truncated or overwritten while loaded; decoding goes on without the draft model until the model is loaded again",
				"model", m.info.Name, "draft", d.name, "err", err)
		}
	}()
	defer mapfault.Catch(&err, mapfault.Arm())
	hidden := d.net.Forward(batch, d.kv)
	return m.copyLogits(d.net, hidden, rows, out)
}

// speculation returns the scheduler's speculation settings for o.
func (m *Model) speculation() *sched.Speculation {
	if m.opts.Speculate&(spec.KindLookup|spec.KindDraft) == 0 {
		return nil
	}
	sp := &sched.Speculation{Control: m.opts.SpecControl}
	if m.opts.Speculate&spec.KindLookup != 0 {
		l := &spec.Lookup{}
		if m.opts.Speculate&spec.KindTree != 0 {
			l.Branches = 3
		}
		sp.Lookup = l
	}
	if m.draft != nil && m.opts.Speculate&spec.KindDraft != 0 {
		sp.Drafter = m.draft.drafter
	}
	return sp
}

// DraftName is the draft model's name ("" without one).
func (m *Model) DraftName() string {
	if m.draft == nil {
		return ""
	}
	return m.draft.name
}

// Speculation is the set of speculation kinds the model offers requests.
func (m *Model) Speculation() spec.Kinds {
	k := m.opts.Speculate
	if m.draft == nil {
		k &^= spec.KindDraft
	}
	return k
}

// SpecStats returns speculative decoding's counters since the model was
// loaded.
func (m *Model) SpecStats() sched.SpecStats { return m.sched.SpecStats() }
