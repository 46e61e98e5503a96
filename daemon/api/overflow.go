package api

import (
	"fmt"

	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/ipc"
)

// OverflowAuto is the daemon's default context overflow mode: each
// protocol's own convention (see SetContextOverflow).
const OverflowAuto = "auto"

// CheckContextOverflow reports whether SetContextOverflow accepts mode.
func CheckContextOverflow(mode string) error {
	if mode == OverflowAuto || mode == "" {
		return nil
	}
	if _, err := llm.ParseOverflowMode(mode); err != nil {
		return fmt.Errorf("--context-overflow: %w (or auto)", err)
	}
	return nil
}

// SetContextOverflow sets what requests that do not name a context
// overflow mode get: "auto" (the default) gives chats (OpenAI chat
// completions, Responses, Anthropic messages) drop_oldest, Ollama's
// endpoints shift (Ollama's truncate and shift, both on by default) and
// raw OpenAI completions error; any mode llm.ParseOverflowMode reads
// applies to every endpoint instead. It fails as CheckContextOverflow
// does, changing nothing.
func (a *API) SetContextOverflow(mode string) error {
	if err := CheckContextOverflow(mode); err != nil {
		return err
	}
	m := llm.OverflowMode("")
	if mode != OverflowAuto {
		m = llm.OverflowMode(mode)
	}
	a.mu.Lock()
	a.overflow = m
	a.mu.Unlock()
	return nil
}

// overflowMode is the mode a request gets: its own field, else the
// daemon's default, else its protocol's.
func (a *API) overflowMode(field, param string, protocol llm.OverflowMode) (llm.OverflowMode, error) {
	if field != "" {
		m, err := llm.ParseOverflowMode(field)
		if err != nil {
			return "", badParam(param, "must be \"drop_oldest\", \"shift\" or \"error\", not %q", field)
		}
		return m, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.overflow != "" {
		return a.overflow, nil
	}
	return protocol, nil
}

// overflowPolicy is overflowMode's policy.
func (a *API) overflowPolicy(field, param string, protocol llm.OverflowMode) (llm.Overflow, error) {
	m, err := a.overflowMode(field, param, protocol)
	return m.Overflow(), err
}

// ollamaOverflow is an Ollama request's policy: context_overflow, else
// the daemon's default (shift, as Ollama's) changed by Ollama's own
// truncate and shift, with options.num_keep as the head a shift keeps.
func (a *API) ollamaOverflow(f ipc.OllamaOverflow, o *ipc.OllamaOptions) (llm.Overflow, error) {
	p, err := a.overflowPolicy(f.ContextOverflow, "context_overflow", llm.OverflowShift)
	if err != nil {
		return p, err
	}
	if f.ContextOverflow == "" {
		if f.Truncate != nil {
			p.DropOldest = *f.Truncate
		}
		if f.Shift != nil {
			p.Shift = *f.Shift
		}
	}
	if o != nil && o.NumKeep != nil {
		if *o.NumKeep < 0 {
			return p, badParam("options.num_keep", "must not be negative, not %d", *o.NumKeep)
		}
		p.Keep = *o.NumKeep
	}
	return p, nil
}

// overflowUsage reports what a request lost to the context (nil when
// nothing).
func overflowUsage(res llm.Result) *ipc.OverflowUsage {
	if res.TruncatedTokens == 0 && res.DroppedMessages == 0 && res.ContextShifts == 0 {
		return nil
	}
	return &ipc.OverflowUsage{DroppedMessages: res.DroppedMessages, DroppedTokens: res.TruncatedTokens,
		Shifts: res.ContextShifts, ShiftedTokens: res.ShiftedTokens}
}
