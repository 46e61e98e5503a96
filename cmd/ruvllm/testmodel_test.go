package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTestmodelSaysFallbacks: testmodel --type q4_k at the default width
// (64, under a K-quant's 256-element super-block) says which matrices took
// llama.cpp's fallback type; it wrote Q5_0 without a word, though its own
// help gives q4_k as an example.
func TestTestmodelSaysFallbacks(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m.gguf")
	_, errOut, err := runCLI(t, newTestmodelCmd(), "--type", "q4_k", "-o", out)
	if err != nil || !strings.Contains(errOut, "note:") || !strings.Contains(errOut, "Q5_0") {
		t.Fatalf("stderr %q, err %v; want a note naming Q5_0", errOut, err)
	}
	_, errOut, err = runCLI(t, newTestmodelCmd(), "--type", "q8_0", "-o", out)
	if err != nil || strings.Contains(errOut, "note:") {
		t.Fatalf("q8_0: stderr %q, err %v; want no note", errOut, err)
	}
}
