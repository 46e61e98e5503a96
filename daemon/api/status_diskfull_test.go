package api

import (
	"fmt"
	"net/http"
	"os"
	"syscall"
	"testing"

	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/mapfault"
)

// TestStatusOfDiskFull: a state-store write that ran out of space (an
// append to a conversation, a rating on a full disk) is a 507, as the
// daemon's other writes are, not a 500.
func TestStatusOfDiskFull(t *testing.T) {
	err := fmt.Errorf("append to conversation conv-1: %w", &os.PathError{Op: "write", Path: "state.db", Err: syscall.ENOSPC})
	if got := statusOf(err); got != http.StatusInsufficientStorage {
		t.Fatalf("statusOf(%v) = %d, want 507", err, got)
	}
	if got := statusOf(fmt.Errorf("boom")); got != http.StatusInternalServerError {
		t.Fatalf("statusOf(boom) = %d", got)
	}
}

// TestStatusOfModelFault: a pass that faulted on the model file's mapping
// (the file overwritten while loaded) is a 503 — the next request loads
// the file again — not a 500.
func TestStatusOfModelFault(t *testing.T) {
	err := fmt.Errorf("generate: %w", mapfault.Error("fault"))
	if got := statusOf(err); got != http.StatusServiceUnavailable {
		t.Fatalf("statusOf(%v) = %d, want 503", err, got)
	}
}

// TestStatusOfBusy: a request past the model's --max-queue is a 503, as
// Ollama's past OLLAMA_MAX_QUEUE.
func TestStatusOfBusy(t *testing.T) {
	if got := statusOf(fmt.Errorf("generate: %w", llm.ErrBusy)); got != http.StatusServiceUnavailable {
		t.Fatalf("statusOf(busy) = %d, want 503", got)
	}
}
