package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSpecFixedRange: --spec-fixed outside 0..maxSpecFixed is refused,
// naming the flag, before the model is read; above the bound it was cut
// to it without a word.
func TestSpecFixedRange(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.gguf")
	for _, v := range []string{"-1", "8", "100"} {
		_, _, err := runCLI(t, newRunCmd(), "-m", missing, "-p", "x", "--spec-fixed", v)
		if err == nil || !strings.Contains(err.Error(), "--spec-fixed") {
			t.Errorf("--spec-fixed %s: %v, want an error naming the flag", v, err)
		}
	}
}
