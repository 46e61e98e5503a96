package sched

import (
	"sync/atomic"
	"time"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/spec"
)

// Speculation configures speculative decoding: in a step where every
// running request is decoding, each one whose Job.Speculate allows it
// appends drafted tokens to its span, the batch computes logits for all
// of them in the one forward pass it runs anyway, and Job.Next is called
// along the draft for as long as the token it returns is a drafted one.
// Next samples exactly as without speculation (a drafted token is kept
// only when Next picks it, which for a draft token of probability 1 under
// the drafter is the standard rejection-sampling rule), so greedy output
// is the same tokens and sampled output the same distribution (with a
// fixed seed, the same tokens). Rejected tokens' keys and values are
// dropped: the sequence's length never covers them, so they are neither
// read nor given to the prefix cache.
type Speculation struct {
	// Lookup drafts from the sequence itself (nil: no prompt lookup).
	Lookup *spec.Lookup
	// Drafter drafts with a draft model (nil: none).
	Drafter *spec.ModelDrafter
	// Control sizes the drafts (spec.Options).
	Control spec.Options
}

// SpecStats counts speculative decoding's work since the scheduler
// started.
type SpecStats struct {
	// Verifications is the number of sequence-steps that verified a draft.
	Verifications uint64 `json:"verifications"`
	// Drafted and Accepted count verified draft tokens and those kept, by
	// source.
	Drafted  map[string]uint64 `json:"drafted"`
	Accepted map[string]uint64 `json:"accepted"`
}

// specCounters are SpecStats' atomics.
type specCounters struct {
	verifications     atomic.Uint64
	drafted, accepted [spec.NumSources]atomic.Uint64 // by spec.Source
}

// SpecStats returns speculative decoding's counters.
func (s *Scheduler) SpecStats() SpecStats {
	out := SpecStats{Verifications: s.specStats.verifications.Load(), Drafted: map[string]uint64{}, Accepted: map[string]uint64{}}
	for src := range spec.NumSources {
		name := spec.Source(src).String()
		out.Drafted[name] += s.specStats.drafted[src].Load()
		out.Accepted[name] += s.specStats.accepted[src].Load()
	}
	return out
}

// treeCapable reports whether the runner verifies branching drafts: its
// backend honours compute.Span.Tree and its KV store moves positions.
func (s *Scheduler) treeCapable() bool {
	t, ok := s.run.(compute.TreeAttender)
	if !ok || !t.TreeSpans() {
		return false
	}
	_, ok = s.run.KV().(compute.RowMover)
	return ok
}

// guardStep is a decode step's class for the speculation guard
// (spec.Controller.StepDone): the number of decoding jobs (0 for another
// step or one where no job may speculate), the kinds they speculate
// with, and whether the guard allowed speculation in it. When the guard
// keeps a draft model off for kinds that include prompt lookup, the step
// speculates as the guard of the kinds without the draft model says
// (lookup's drafts cost nothing to make, and a draft model that does not
// pay must not take lookup's gains with it), and counts for both: for
// kinds as a step without the draft model, for lookup as itself.
type guardStep struct {
	decoding int
	kinds    spec.Kinds
	allowed  bool
	lookup   spec.Kinds // kinds less the draft model, in such a step (0: none)
	lookupOK bool
}

// done records the step, which made tokens tokens verifying verified
// draft tokens in d, with the guard.
func (g guardStep) done(ctl *spec.Controller, tokens, verified int, d time.Duration) {
	if g.decoding <= 0 {
		return
	}
	ctl.StepDone(g.decoding, g.kinds, tokens, verified, d, g.allowed)
	if g.lookup != 0 {
		ctl.StepDone(g.decoding, g.lookup, tokens, verified, d, g.lookupOK)
	}
}

// planDrafts fills the drafts of the jobs that will speculate in this
// step: only when every job with tokens to run is a request decoding one
// token (a step with prompt chunks is bound by them, and its timing says
// nothing about decode), each job whose kinds allow it, within the
// context length and the step's token budget. It returns the step's
// guard class.
func (s *Scheduler) planDrafts(jobs []*Job) guardStep {
	if s.ctl == nil {
		return guardStep{}
	}
	var decoding int
	var kinds spec.Kinds
	for _, j := range jobs {
		j.draft.Reset()
	}
	for _, j := range jobs {
		if j.seq == nil || j.finished || j.Background || s.pending(j) == 0 {
			continue // background jobs wait while requests have tokens to run
		}
		if s.pending(j) != 1 {
			s.draftCatchUp(jobs)
			return guardStep{}
		}
		decoding++
		kinds |= s.kindsOf(j)
	}
	if decoding == 0 || kinds&(spec.KindLookup|spec.KindDraft) == 0 {
		return guardStep{}
	}
	g := guardStep{decoding: decoding, kinds: kinds, allowed: s.ctl.Allowed(decoding, kinds)}
	if !g.allowed && kinds&spec.KindDraft != 0 && kinds&spec.KindLookup != 0 {
		g.lookup = kinds &^ spec.KindDraft
		g.lookupOK = s.ctl.Allowed(decoding, g.lookup)
	}
	if !g.allowed && !g.lookupOK {
		return g
	}
	o := s.ctl.Options()
	budget := (s.o.MaxBatchTokens - decoding) / max(1, decoding)
	maxNodes := min(o.MaxDraft, budget)
	if o.Fixed > 0 {
		maxNodes = min(o.Fixed, budget)
	}
	if maxNodes <= 0 {
		return g
	}
	s.specSeqs, s.specDrafts, s.specReqs = s.specSeqs[:0], s.specDrafts[:0], s.specReqs[:0]
	var modelSeqs []*spec.Seq
	for _, j := range jobs {
		if j.seq == nil || j.finished || j.Background || s.pending(j) != 1 || s.kindsOf(j)&(spec.KindLookup|spec.KindDraft) == 0 {
			continue
		}
		room := maxNodes
		if s.o.MaxSeqLen > 0 {
			room = min(room, s.o.MaxSeqLen-len(j.tokens))
		}
		if room <= 0 {
			continue
		}
		tree := j.Speculate&spec.KindTree != 0 && s.tree
		if j.Speculate&spec.KindLookup != 0 && s.spec.Lookup != nil {
			l := *s.spec.Lookup
			nodes := room
			if !tree {
				l.Branches = 1
			} else {
				nodes = min(2*room, s.o.MaxBatchTokens/max(1, decoding)-1)
			}
			s.proposeLookup(j, l, room, nodes)
		}
		if g.lookup == 0 && j.Speculate&spec.KindDraft != 0 && s.spec.Drafter != nil && (tree || j.draft.Len() == 0) {
			nodes := room
			if tree {
				nodes = max(j.draft.Len()+room, min(2*room, s.o.MaxBatchTokens/max(1, decoding)-1))
			}
			s.specReqs = append(s.specReqs, spec.Request{ID: j.order, Tokens: j.tokens, Draft: &j.draft, MaxNodes: nodes, Alternatives: tree})
			modelSeqs = append(modelSeqs, &j.Spec)
		}
		s.specSeqs = append(s.specSeqs, &j.Spec)
		s.specDrafts = append(s.specDrafts, &j.draft)
	}
	if len(s.specReqs) > 0 {
		if k := s.ctl.DraftSteps(modelSeqs, decoding); k > 0 {
			if err := s.spec.Drafter.Draft(s.specReqs, min(k, maxNodes)); err != nil {
				if !s.draftFailing {
					s.log.Warn("draft model pass failed; no drafts while it fails", "err", err)
				}
				s.draftFailing = true
				for _, d := range s.specDrafts {
					d.Reset()
				}
			} else {
				s.draftFailing = false
			}
		}
		clear(s.specReqs)
	}
	s.ctl.Trim(s.specSeqs, s.specDrafts, decoding)
	clear(s.specSeqs)
	clear(s.specDrafts)
	return g
}

// proposeLookup drafts j's next tokens by prompt lookup (j.draft is
// empty): from its predicted output first, what follows the prediction's
// best match of the sequence's last tokens (its pending sampled token among
// them), unless the sequence's own best match is longer (the output has
// left the prediction at an edit and repeats itself) or the prediction has
// none; then from the sequence itself.
func (s *Scheduler) proposeLookup(j *Job, l spec.Lookup, room, nodes int) {
	own := l.Propose(&j.draft, j.tokens, room, nodes)
	if len(j.Prediction) == 0 {
		return
	}
	// The output so far, its pending token included, has taken this many
	// of the prediction's tokens if it follows it.
	expect := len(j.tokens) - len(j.Prompt)
	var n int
	n, j.predBuf = l.ProposePrediction(&j.predAlt, j.predBuf, j.Prediction, j.tokens, expect, room, nodes)
	if n > 0 && own <= n {
		j.draft, j.predAlt = j.predAlt, j.draft
	}
	j.predAlt.Reset()
}

// kindsOf is the speculation j may use here: its kinds, less those the
// scheduler has no drafter for or cannot verify.
func (s *Scheduler) kindsOf(j *Job) spec.Kinds {
	if j.NextN != nil { // it may feed several tokens of its own: no room for a draft
		return 0
	}
	k := j.Speculate
	if s.spec.Lookup == nil {
		k &^= spec.KindLookup
	}
	if s.spec.Drafter == nil {
		k &^= spec.KindDraft
	}
	if !s.tree || k&(spec.KindLookup|spec.KindDraft) == 0 {
		k &^= spec.KindTree
	}
	return k
}

// draftCatchUp lets the draft model read the prompts of the requests that
// are prefilling in this step and will draft with it, so that it has
// caught up when they start to decode; not while the guard keeps the
// draft model off for as many sequences.
func (s *Scheduler) draftCatchUp(jobs []*Job) {
	if s.spec.Drafter == nil {
		return
	}
	n, kinds := 0, spec.Kinds(0)
	for _, j := range jobs {
		if j.seq != nil && !j.finished && !j.Background && s.pending(j) > 0 {
			n++
			kinds |= s.kindsOf(j)
		}
	}
	if kinds&spec.KindDraft == 0 || !s.ctl.Allowed(max(n, 1), kinds) {
		return
	}
	reqs := s.specReqs[:0]
	for _, j := range jobs {
		if j.seq == nil || j.finished || j.Background || s.pending(j) <= 1 || s.kindsOf(j)&spec.KindDraft == 0 {
			continue
		}
		reqs = append(reqs, spec.Request{ID: j.order, Tokens: j.tokens, Draft: &j.draft})
	}
	if len(reqs) > 0 {
		if err := s.spec.Drafter.CatchUp(reqs); err != nil {
			s.log.Warn("draft model pass failed", "err", err)
		}
	}
	clear(reqs)
	s.specReqs = reqs[:0]
}

// draftSpan returns the span rows' tree of j's draft below its pending
// token (nil for a chain, which any backend verifies).
func (s *Scheduler) draftSpan(j *Job) []int32 {
	d := &j.draft
	if d.Chain() {
		return nil
	}
	t := append(j.tree[:0], -1)
	for _, p := range d.Parents {
		t = append(t, p+1)
	}
	j.tree = t
	return t
}

// acceptDraft walks j's verified draft: Next gets the logits of the
// pending token (logits[0]) and then, for as long as the token it returns
// is a child in the draft, that child's logits (logits[1+i] for draft
// token i). The accepted tokens' keys and values are moved to
// consecutive positions when they came from branches of a tree, and the
// sequence keeps them and nothing after.
func (s *Scheduler) acceptDraft(j *Job, sp compute.Span, logits [][]float32) (calls int) {
	d := &j.draft
	path := j.path[:0]
	node := int32(-1)
	mismatched := false
	for {
		tok, done := s.next(j, logits[node+1])
		calls++
		if done || (s.o.MaxSeqLen > 0 && len(j.tokens) >= s.o.MaxSeqLen) {
			j.finished = true
			break
		}
		j.tokens = append(j.tokens, tok)
		c := d.Child(node, tok)
		if c < 0 {
			mismatched = true
			break
		}
		path = append(path, c)
		node = c
	}
	j.path = path
	if sp.Tree != nil {
		dst, src := j.moveDst[:0], j.moveSrc[:0]
		for k, c := range path {
			if int(c) != k {
				dst, src = append(dst, sp.Pos+1+k), append(src, sp.Pos+1+int(c))
			}
		}
		if len(dst) > 0 {
			s.run.KV().(compute.RowMover).MoveRows(sp.Blocks, dst, src)
		}
		j.moveDst, j.moveSrc = dst, src
	}
	j.seq.Advance(1 + len(path))
	j.fed += 1 + len(path)
	j.seq.Trim()
	s.demote(j, s.o.HotWindow)
	s.notePrefilled(j)
	s.ctl.Observe(&j.Spec, d, path, mismatched)
	s.specStats.verifications.Add(1)
	for i := range d.Tokens {
		s.specStats.drafted[d.Src[i]].Add(1)
	}
	for _, c := range path {
		s.specStats.accepted[d.Src[c]].Add(1)
	}
	return calls
}

// forgetDraft drops what the drafters hold for j.
func (s *Scheduler) forgetDraft(j *Job) {
	j.draft.Reset()
	if s.spec != nil && s.spec.Drafter != nil {
		s.spec.Drafter.Forget(j.order)
	}
}

// timeStep records a forward pass's duration for the speculation cost
// model when every token in it needed logits (decode steps, with or
// without drafts).
func (s *Scheduler) timeStep(tokens, rows int, d time.Duration) {
	if s.ctl != nil && tokens == rows {
		s.ctl.StepTime(tokens, d)
	}
}
