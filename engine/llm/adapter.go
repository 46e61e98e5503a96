package llm

import (
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
