package sona

import (
	"fmt"
	"time"

	"github.com/ruvllm/ruvllm/engine/train"
)

// stateMagic and stateVersion open a serialised scope.
const (
	stateMagic   = "SONA"
	stateVersion = 2 // 2: records carry their feedback's key; 1 still reads
)

// MarshalBinary serialises the scope's whole state: adapters, Fisher,
// anchor, optimizer moments, queued, pending, replayed and stored
// feedback, counters, candidates, trajectories and the undo point. The
// daemon stores it after every update; UnmarshalScope reads it back.
func (s *Scope) MarshalBinary() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.marshal(true), nil
}

// marshal serialises the state; the caller holds the lock. The full
// form (withUndo) holds the undo point and the trajectory bank; an undo
// point itself holds neither (trajectories record what happened, which
// undoing an update does not change, and the bank can be large).
func (s *Scope) marshal(withUndo bool) []byte { return s.marshalVersion(stateVersion, withUndo) }

// marshalVersion is marshal in format version (tests write version 1).
func (s *Scope) marshalVersion(version uint32, withUndo bool) []byte {
	e := &encoder{version: version}
	e.b = append(e.b, stateMagic...)
	e.u32(version)
	e.str(s.Name)
	e.bool(s.paused)
	e.u64(s.version)
	e.u64(s.seed)
	e.adapter(s.micro)
	e.optimizer(s.microOpt)
	e.adapter(s.cons)
	e.adapter(s.fisher)
	e.adapter(s.generalFisher)
	e.adapter(s.anchor)
	e.int(s.positives)
	for _, rs := range [][]record{s.queue, s.pending, s.replay, s.exchanges, s.validation} {
		e.u64(uint64(len(rs)))
		for _, r := range rs {
			e.record(r)
		}
	}
	st := s.stats
	for _, v := range []int{st.Received, st.Applied, st.Steps, st.Consolidations, st.DeepRuns, st.DeepAccepted} {
		e.int(v)
	}
	e.u64(uint64(st.LastUpdate.UnixNano()))
	e.f64(st.LastLoss)
	e.u64(uint64(len(s.candidates)))
	for _, c := range s.candidates {
		e.u64(uint64(c.At.UnixNano()))
		e.bool(c.Accepted)
		e.str(c.Reason)
		e.int(c.Train)
		e.int(c.Holdout)
		for _, v := range []float64{c.HoldoutNLL, c.CurrentHoldoutNLL, c.GeneralPPL, c.CurrentGeneralPPL} {
			e.f64(v)
		}
		e.u64(uint64(c.Duration))
		e.adapter(c.Adapter)
	}
	e.bool(withUndo)
	if withUndo {
		e.bank(s.bank)
	}
	if withUndo && s.undo != nil {
		e.bool(true)
		e.u64(uint64(len(s.undo)))
		e.b = append(e.b, s.undo...)
	} else {
		e.bool(false)
	}
	return e.b
}

func (e *encoder) record(r record) {
	e.u64(r.id)
	e.u8(uint8(r.signal))
	e.i32s(r.ex.Tokens)
	e.int(r.ex.Start)
	e.f32(r.ex.Weight)
	e.u64(uint64(len(r.ex.Avoid)))
	for _, a := range r.ex.Avoid {
		e.int(a.Pos)
		e.u32(uint32(a.Token))
		e.f32(a.Weight)
	}
	e.u64(uint64(r.at.UnixNano()))
	if e.version >= 2 {
		e.str(r.key)
	}
}

func (d *decoder) record() record {
	r := record{id: d.u64(), signal: Signal(d.u8())}
	r.ex.Tokens = d.i32s()
	r.ex.Start = d.int()
	r.ex.Weight = d.f32()
	n := d.count(maxItems, 16)
	for range n {
		r.ex.Avoid = append(r.ex.Avoid, train.Avoid{Pos: d.int(), Token: int32(d.u32()), Weight: d.f32()})
	}
	r.at = time.Unix(0, int64(d.u64()))
	if d.version >= 2 {
		r.key = d.str()
	}
	if d.err == nil && (r.signal < Correction || r.signal > Regenerate || r.ex.Start < 1 || r.ex.Start >= len(r.ex.Tokens)) {
		d.fail("feedback record %d", r.id)
	}
	return r
}

// UnmarshalScope reads a scope serialised by MarshalBinary. A damaged
// state is an error wrapping ErrCorrupt, never a panic. The caller
// should check the adapters fit its base model (Learner.Fits).
func UnmarshalScope(data []byte) (*Scope, error) {
	return unmarshalScope(data, true)
}

// unmarshalScope decodes a state in its full form (MarshalBinary's) or,
// with full false, an undo point.
func unmarshalScope(data []byte, full bool) (*Scope, error) {
	d := &decoder{b: data}
	if string(d.take(len(stateMagic))) != stateMagic {
		return nil, fmt.Errorf("%w: not a learning state", ErrCorrupt)
	}
	if d.version = d.u32(); (d.version < 1 || d.version > stateVersion) && d.err == nil {
		return nil, fmt.Errorf("%w: state version %d, want 1 to %d", ErrCorrupt, d.version, stateVersion)
	}
	s := &Scope{Name: d.str(), paused: d.bool(), version: d.u64(), seed: d.u64()}
	s.micro = d.adapter()
	s.microOpt = d.optimizer()
	s.cons = d.adapter()
	s.fisher = d.adapter()
	s.generalFisher = d.adapter()
	s.anchor = d.adapter()
	s.positives = d.int()
	for _, dst := range []*[]record{&s.queue, &s.pending, &s.replay, &s.exchanges, &s.validation} {
		n := d.count(maxItems, 32)
		for range n {
			*dst = append(*dst, d.record())
		}
	}
	st := &s.stats
	for _, v := range []*int{&st.Received, &st.Applied, &st.Steps, &st.Consolidations, &st.DeepRuns, &st.DeepAccepted} {
		*v = d.int()
	}
	st.LastUpdate = time.Unix(0, int64(d.u64()))
	st.LastLoss = d.f64()
	n := d.count(maxCandidates, 40)
	for range n {
		c := Candidate{At: time.Unix(0, int64(d.u64())), Accepted: d.bool(), Reason: d.str(), Train: d.int(), Holdout: d.int()}
		c.HoldoutNLL, c.CurrentHoldoutNLL, c.GeneralPPL, c.CurrentGeneralPPL = d.f64(), d.f64(), d.f64(), d.f64()
		c.Duration = time.Duration(d.u64())
		c.Adapter = d.adapter()
		s.candidates = append(s.candidates, c)
	}
	if d.bool() != full && d.err == nil {
		d.fail("an undo point where a scope's state was expected, or the reverse")
	}
	if full {
		s.bank = d.bank()
	}
	if d.bool() {
		n := d.count(len(data), 1)
		s.undo = append([]byte(nil), d.take(n)...)
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the state", ErrCorrupt, len(d.b))
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	if s.bank == nil { // an undo point's
		s.bank = NewBank(BankOptions{})
	}
	s.servedMicro, s.servedCons = nil, nil
	if s.micro != nil && !s.micro.IsZero() {
		s.servedMicro = s.micro.Clone()
	}
	if s.cons != nil && !s.cons.IsZero() {
		s.servedCons = s.cons.Clone()
	}
	s.storePublication()
	return s, nil
}

// check verifies the invariants between the parts of a decoded state.
func (s *Scope) check() error {
	bad := func(what string) error { return fmt.Errorf("%w: %s", ErrCorrupt, what) }
	if (s.micro == nil) != (s.microOpt == nil) {
		return bad("MicroLoRA without its optimizer")
	}
	if s.micro != nil && !s.micro.SameShape(s.microOpt.M) {
		return bad("optimizer shaped unlike the MicroLoRA")
	}
	if s.cons != nil {
		if s.fisher == nil || s.anchor == nil || !s.cons.SameShape(s.fisher) || !s.cons.SameShape(s.anchor) {
			return bad("consolidated adapter without a matching Fisher and anchor")
		}
		if s.generalFisher != nil && !s.cons.SameShape(s.generalFisher) {
			return bad("general Fisher shaped unlike the consolidated adapter")
		}
	}
	return nil
}

// Fits reports whether every adapter of a decoded scope fits the
// learner's base model (a state saved for another model does not).
func (l *Learner) Fits(s *Scope) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := l.tr.Base()
	for _, a := range []*train.Adapter{s.micro, s.cons} {
		if a == nil {
			continue
		}
		if _, err := a.LoRA("check", b); err != nil {
			return err
		}
	}
	for _, r := range [][]record{s.queue, s.pending, s.replay, s.exchanges, s.validation} {
		for _, rec := range r {
			if err := b.Check(rec.ex); err != nil {
				return fmt.Errorf("stored feedback %d: %w", rec.id, err)
			}
		}
	}
	return nil
}
