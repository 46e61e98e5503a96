package llm

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// countingBackend is a CPU backend that counts MatMul calls and records
// Close, standing in for an accelerator wired in through NewBackend.
type countingBackend struct {
	*cpu.Backend
	matmuls int
	closed  bool
}

func (c *countingBackend) Name() string { return "counting" }

func (c *countingBackend) MatMul(dst, x, w compute.Tensor) {
	c.matmuls++
	c.Backend.MatMul(dst, x, w)
}

func (c *countingBackend) Close() {
	c.closed = true
	c.Backend.Close()
}

func TestNewBackendIsUsedAndClosed(t *testing.T) {
	path := synthetic(t, "llama", quant.F32)
	ref, err := Load(context.Background(), path, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	cb := &countingBackend{Backend: cpu.New(cpu.Options{Threads: 1})}
	m, err := Load(context.Background(), path, Options{NewBackend: func() (compute.Backend, error) { return cb, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Backend(); got != "counting" {
		t.Errorf("Backend() = %q, want counting", got)
	}
	if got := m.Threads(); got != 1 {
		t.Errorf("Threads() = %d, want the wrapped CPU backend's 1", got)
	}
	req := Request{Prompt: "hello", MaxTokens: 8, IgnoreEOS: true}
	want, _, _ := generate(t, ref, req)
	got, _, _ := generate(t, m, req)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("tokens through NewBackend %v, CPU %v", got, want)
	}
	if cb.matmuls == 0 {
		t.Error("the model never ran on the backend NewBackend returned")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if !cb.closed {
		t.Error("Close did not close the backend")
	}

	boom := errors.New("no device")
	_, err = Load(context.Background(), path, Options{NewBackend: func() (compute.Backend, error) { return nil, boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("Load with a failing NewBackend: %v, want %v", err, boom)
	}
}
