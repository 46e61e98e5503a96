package llm

import (
	"context"
	"errors"
	"fmt"

	"github.com/ruvllm/ruvllm/engine/lora"
)

// ErrForeignAdapter is returned for a request whose adapter was not loaded
// by this model's LoadAdapter (another model, or never placed on a backend).
var ErrForeignAdapter = errors.New("adapter was not loaded for this model")

// LoadAdapter loads a LoRA adapter — a GGUF LoRA file or a PEFT directory
// — validated against this model, and places it on the model's backend.
// The adapter is immutable: requests may share it, and loading a newer
// version never disturbs requests using this one.
func (m *Model) LoadAdapter(path string) (*lora.Adapter, error) {
	// Read and validate on the host first; only placing the matrices on
	// the backend waits for the forward pass in progress.
	a, err := lora.Load(path, m.file, nil)
	if err != nil {
		return nil, err
	}
	a.Base = m.namespace
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errors.New("model closed")
	}
	if err := a.Upload(m.backend); err != nil {
		return nil, fmt.Errorf("load adapter %s: %w", a.Name, err)
	}
	m.log.Info("adapter loaded", "name", a.Name, "format", a.Format, "rank", a.Rank,
		"alpha", a.Alpha, "targets", len(a.Targets), "bytes", a.Bytes())
	return a, nil
}

// adapterNamespace checks a request's adapters belong to this model and
// returns the prefix-cache namespace of the request: cached keys and
// values depend on the adapters and their scales.
func (m *Model) adapterNamespace(as []lora.Applied) (string, error) {
	if len(as) == 0 {
		return m.namespace, nil
	}
	for _, ap := range as {
		if ap.Adapter == nil {
			return "", fmt.Errorf("%w: nil adapter", ErrForeignAdapter)
		}
		if ap.Adapter.Base != m.namespace {
			return "", fmt.Errorf("%w: %s", ErrForeignAdapter, ap.Adapter.Name)
		}
		if ap.Scale != ap.Scale || ap.Scale > 1e6 || ap.Scale < -1e6 {
			return "", fmt.Errorf("adapter %s: scale %v out of range", ap.Adapter.Name, ap.Scale)
		}
	}
	return m.namespace + "|lora:" + lora.Identity(as), nil
}

// UseAdapter validates an adapter built in memory (a trainer's result,
// lora.FromDense) against this model and places it on the model's
// backend, as LoadAdapter does for a file; afterwards it is immutable and
// requests may apply it.
func (m *Model) UseAdapter(a *lora.Adapter) error {
	if err := lora.Validate(a, m.file); err != nil {
		return fmt.Errorf("use adapter %s: %w", a.Name, err)
	}
	a.Base = m.namespace
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("model closed")
	}
	if err := a.Upload(m.backend); err != nil {
		return fmt.Errorf("use adapter %s: %w", a.Name, err)
	}
	return nil
}

// Yield blocks while the model's scheduler has requests to serve and
// until it has been idle for its background delay: training and other
// work outside the scheduler call it between steps (engine/train's
// Options.Yield) so that serving keeps priority.
func (m *Model) Yield(ctx context.Context) error { return m.sched.Yield(ctx) }
