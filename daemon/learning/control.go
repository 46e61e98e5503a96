package learning

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ruvllm/ruvllm/engine/sona"
	"github.com/ruvllm/ruvllm/ipc"
)

// Control actions (POST /v1/learning/{action}).
const (
	ActionPause  = "pause"
	ActionResume = "resume"
	ActionReset  = "reset"
	ActionUndo   = "undo"
)

// Actions lists the control actions.
var Actions = []string{ActionPause, ActionResume, ActionReset, ActionUndo}

// ErrNothingToUndo: the scope has no update to undo.
var ErrNothingToUndo = sona.ErrNothingToUndo

// ErrNothingLearned: the scope has nothing to export.
var ErrNothingLearned = sona.ErrNothingLearned

// ErrDisabled: the daemon runs with learning switched off.
var ErrDisabled = errors.New("learning is switched off in this daemon")

// ErrModelRequired: several models are loaded and the call must name one.
var ErrModelRequired = errors.New("several models are loaded: name one")

// Status describes learning on every loaded model (or model), for every
// scope (or scope).
func (s *Service) Status(scope, model string) ipc.LearningStatus {
	out := ipc.LearningStatus{Enabled: !s.o.Disabled, PerApp: s.o.PerApp, Models: []ipc.LearningModel{}}
	for _, ms := range s.loaded() {
		if model != "" && ms.name != model {
			continue
		}
		out.Models = append(out.Models, ms.statusOf(scope))
	}
	return out
}

// targets returns the loaded models an action applies to: model, or all.
func (s *Service) targets(model string) ([]*modelState, error) {
	if s.o.Disabled {
		return nil, ErrDisabled
	}
	var out []*modelState
	for _, ms := range s.loaded() {
		if model == "" || ms.name == model {
			out = append(out, ms)
		}
	}
	if len(out) == 0 {
		if model != "" {
			return nil, fmt.Errorf("%w: %s", ErrNotLoaded, model)
		}
		return nil, fmt.Errorf("%w: no model is loaded", ErrNotLoaded)
	}
	return out, nil
}

// Control pauses, resumes, resets or undoes the scope on model (every
// loaded model when ""), in the scope's worker after the feedback queued
// before it, saves the scope and returns its state. Resume learns the
// feedback received while paused before it returns.
func (s *Service) Control(ctx context.Context, action, model, scope string) ([]ipc.LearningScope, error) {
	ms, err := s.targets(model)
	if err != nil {
		return nil, err
	}
	var out []ipc.LearningScope
	var errs []error
	for _, m := range ms {
		if m.failed() != nil {
			if model != "" {
				errs = append(errs, fmt.Errorf("%s: %w", m.name, m.failed()))
			}
			continue
		}
		sc := m.scope(scope)
		err := sc.do(ctx, func(ctx context.Context) error { return sc.control(ctx, action) })
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.name, err))
			continue
		}
		out = append(out, sc.status())
	}
	if len(out) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// control runs an action in the worker.
func (sc *scopeState) control(ctx context.Context, action string) error {
	learner, _ := sc.ms.trainer()
	s := sc.sc()
	switch action {
	case ActionPause:
		s.Pause()
	case ActionResume:
		if err := learner.Resume(ctx, s); err != nil {
			return err
		}
	case ActionReset:
		s.Reset()
	case ActionUndo:
		if err := s.Undo(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown action %q", action)
	}
	sc.serve()
	if action == ActionReset || action == ActionUndo {
		sc.addHistory(ipc.LearningPoint{At: time.Now().UTC(), Kind: action, Version: s.Version()})
	}
	if err := sc.save(); err != nil {
		return err
	}
	past := map[string]string{ActionPause: "paused", ActionResume: "resumed", ActionReset: "reset", ActionUndo: "undone"}[action]
	sc.ms.publish("learning."+past, map[string]any{"model": sc.ms.name, "scope": sc.name, "version": s.Version()})
	return nil
}

// Export prepares the scope's consolidated adapter on model as a
// llama.cpp GGUF LoRA file: it returns the file's name and a function
// that writes it. Feedback only the MicroLoRA holds is consolidated first,
// so that the file holds everything learned. model may be "" when one
// model is loaded.
func (s *Service) Export(ctx context.Context, model, scope string) (string, func(io.Writer) error, error) {
	ms, err := s.targets(model)
	if err != nil {
		return "", nil, err
	}
	if len(ms) > 1 {
		return "", nil, fmt.Errorf("%w (%d are)", ErrModelRequired, len(ms))
	}
	m := ms[0]
	if err := m.failed(); err != nil {
		return "", nil, err
	}
	sc := m.existingScope(scope)
	if sc == nil {
		return "", nil, fmt.Errorf("%w: scope %s has learned nothing on %s", ErrNothingLearned, scope, m.name)
	}
	name := "ruvllm-learned-" + m.name + "-" + sanitize(scope)
	var file func(io.Writer) error
	err = sc.do(ctx, func(ctx context.Context) error {
		if err := sc.consolidate(ctx, "export"); err != nil {
			return err
		}
		learner, _ := m.trainer()
		gw, err := learner.Export(sc.sc(), name)
		if err != nil {
			return err
		}
		file = func(w io.Writer) error {
			_, err := gw.WriteTo(w)
			return err
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	return name + ".gguf", file, nil
}

// sanitize makes a scope name fit a file name.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	return string(b)
}
