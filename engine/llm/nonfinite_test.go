package llm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// TestNonFiniteWeightsAreAnError checks that a model whose weights make
// its forward pass NaN fails generation, embeddings, perplexity and KL
// divergence with ErrNonFinite:
// it answered every request with an empty reply ending in "stop" (no token
// could be drawn from NaN logits) and embeddings of zeros, as if all were
// well.
func TestNonFiniteWeightsAreAnError(t *testing.T) {
	ctx := context.Background()
	base := filepath.Join(t.TempDir(), "base.gguf")
	if err := testmodel.Write(ctx, testmodel.DefaultOptions(), base); err != nil {
		t.Fatal(err)
	}
	// perplexity and KL divergence printed NaN and exited 0 for such a
	// model; the base log-probabilities come from the finite one
	text := strings.Repeat("the cat sat on the mat ", 20)
	var logProbs bytes.Buffer
	bm, err := Load(ctx, base, Options{Threads: 1, ContextLength: 128, Sequences: 1, NoPrefixCache: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bm.SaveLogProbs(ctx, text, 16, &logProbs, nil)
	bm.Close()
	if err != nil {
		t.Fatal(err)
	}
	baseLogProbs := logProbs.Bytes()
	for _, tc := range []struct {
		name    string
		norm    float32 // every element of output_norm.weight (0: unchanged)
		wantErr bool
	}{
		{"finite", 0, false},
		{"nan", float32(math.NaN()), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := base
			if tc.norm != 0 {
				path = withTensorValue(t, base, "output_norm.weight", tc.norm)
			}
			m, err := Load(ctx, path, Options{Threads: 1, ContextLength: 128, Sequences: 1, NoPrefixCache: true})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			check := func(what string, err error) {
				t.Helper()
				if got := errors.Is(err, ErrNonFinite); got != tc.wantErr {
					t.Errorf("%s: err = %v, want ErrNonFinite: %v", what, err, tc.wantErr)
				}
				if !tc.wantErr && err != nil {
					t.Errorf("%s: %v", what, err)
				}
			}
			_, err = m.Generate(ctx, Request{Tokens: []int32{1, 5, 9}, MaxTokens: 4}, func(Token) error { return nil })
			check("Generate", err)
			_, _, err = m.Embed(ctx, []string{"hello"}, EmbedOptions{})
			check("Embed", err)
			_, _, err = m.EmbedTokens(ctx, [][]int32{{1, 5, 9}}, EmbedOptions{})
			check("EmbedTokens", err)
			_, err = m.Perplexity(ctx, text, 16, nil)
			check("Perplexity", err)
			_, err = m.SaveLogProbs(ctx, text, 16, io.Discard, nil)
			check("SaveLogProbs", err)
			_, err = m.KLDivergence(ctx, bytes.NewReader(baseLogProbs), nil)
			check("KLDivergence", err)
		})
	}
}

// withTensorValue copies the model at path with every element of the F32
// tensor name set to v, and returns the copy's path.
func withTensorValue(t *testing.T, path, name string, v float32) string {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	info, ok := f.Tensor(name)
	start := f.DataOffset + int64(info.Offset)
	f.Close()
	if !ok {
		t.Fatalf("%s has no tensor %s", path, name)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := start; i < start+info.Size; i += 4 {
		binary.LittleEndian.PutUint32(b[i:], math.Float32bits(v))
	}
	out := filepath.Join(t.TempDir(), "changed.gguf")
	if err := os.WriteFile(out, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}
