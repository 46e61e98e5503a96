//go:build linux || darwin

package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/mapfault"
	"github.com/ruvllm/ruvllm/engine/mapfault/mapfaulttest"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// TestTruncatedBaseFaultsAsError: training reads the weights it keeps no
// dense copy of from the model file's mapping, on several goroutines; a
// file truncated under it (overwritten while the daemon learns) must fail
// the pass with an error wrapping mapfault.ErrFault instead of ending the
// process, and so must preparing a base from such a mapping.
func TestTruncatedBaseFaultsAsError(t *testing.T) {
	mapfaulttest.RequireFaultAddresses(t)
	path := filepath.Join(t.TempDir(), "base.gguf")
	o := testmodel.Options{Arch: "llama", Layers: 2, Dim: 64, Heads: 4, KVHeads: 2, FF: 128, ContextLength: 64, Type: quant.Q8_0, Seed: 7}
	if err := testmodel.Write(context.Background(), o, path); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := NewBase(f, BaseOptions{DenseBytes: 1}) // no dense copies: every pass reads the mapping
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTrainer(b, Options{Threads: 2})
	examples := gradExamples(b.cfg.Vocab)
	if _, err := tr.Evaluate(context.Background(), nil, examples); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Evaluate(context.Background(), nil, examples); !errors.Is(err, mapfault.ErrFault) {
		t.Fatalf("evaluate after truncation: err = %v, want ErrFault", err)
	}
	if _, err := tr.Teach(context.Background(), nil, examples); !errors.Is(err, mapfault.ErrFault) {
		t.Fatalf("teach after truncation: err = %v, want ErrFault", err)
	}
	if _, err := NewBase(f, BaseOptions{}); !errors.Is(err, mapfault.ErrFault) {
		t.Fatalf("NewBase of a truncated mapping: err = %v, want ErrFault", err)
	}
}

// TestParallelPartsCarryFaults: the passes' parallel parts run on
// goroutines of their own; a fault on one reaches the caller's guard.
func TestParallelPartsCarryFaults(t *testing.T) {
	mapfaulttest.RequireFaultAddresses(t)
	mapped := mapfaulttest.TruncatedMapping(t, 1)
	n := &net[float32]{threads: 4}
	read := func(i int) { faultSink += int(mapped[i%len(mapped)]) }
	for name, run := range map[string]func(){
		"par":   func() { n.par(64, 1, func(lo, hi int) { read(lo) }) },
		"tasks": func() { n.tasks(8, read) },
	} {
		var err error
		func() {
			defer mapfault.Catch(&err, mapfault.Arm())
			run()
		}()
		if !errors.Is(err, mapfault.ErrFault) {
			t.Fatalf("%s: err = %v, want ErrFault", name, err)
		}
	}
}

// faultSink keeps the reads of the faulting parts.
var faultSink int
