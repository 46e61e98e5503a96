package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchBatchSizeRange: bench -b under 1 is refused before the model is
// read; it ran with the default 256 instead.
func TestBenchBatchSizeRange(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.gguf")
	for _, v := range []string{"0", "-5"} {
		_, _, err := runCLI(t, newBenchCmd(), "-m", missing, "-b", v)
		if err == nil || !strings.Contains(err.Error(), "-b "+v) {
			t.Errorf("-b %s: %v, want an error naming -b", v, err)
		}
	}
}
