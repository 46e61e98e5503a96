package train

import (
	"context"
	"errors"
	"testing"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// TestYieldEverywhere: a yield that fails at any of a pass's yield points
// (layers, weight products, the head's vocabulary blocks) stops the pass
// with its error and is not called again.
func TestYieldEverywhere(t *testing.T) {
	b := tinyBase(t, "llama", quant.F32)
	a := randomAdapter(t, b, 1, 1, nil)
	ex := gradExamples(b.cfg.Vocab)
	total := 0
	count := NewTrainer(b, Options{Threads: 1, Yield: func(context.Context) error { total++; return nil }})
	if _, err := count.Gradients(context.Background(), a, nil, ex, a.ZeroLike()); err != nil {
		t.Fatal(err)
	}
	if total < 3 {
		t.Fatalf("%d yields in a pass", total)
	}
	stop := errors.New("serving needs the machine")
	for k := 1; k <= total; k++ {
		calls := 0
		tr := NewTrainer(b, Options{Threads: 1, Yield: func(context.Context) error {
			calls++
			if calls == k {
				return stop
			}
			return nil
		}})
		if _, err := tr.Gradients(context.Background(), a, nil, ex, a.ZeroLike()); !errors.Is(err, stop) || calls != k {
			t.Fatalf("yield failing at %d of %d: err %v after %d calls", k, total, err, calls)
		}
	}
}
