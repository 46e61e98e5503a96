package api

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/ruvllm/ruvllm/engine/llm"
)

// TestStatusOfNonFinite checks that a model computing NaN (its file's
// fault, as a file refused at load) is a 422, not a 500.
func TestStatusOfNonFinite(t *testing.T) {
	err := fmt.Errorf("embed: input 0: %w", llm.ErrNonFinite)
	if got := statusOf(err); got != http.StatusUnprocessableEntity {
		t.Fatalf("statusOf(%v) = %d, want 422", err, got)
	}
}
