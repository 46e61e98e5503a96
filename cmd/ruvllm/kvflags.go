package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/ruvllm/ruvllm/daemon/serve"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/spec"
)

// parseSpeculation reads the --spec flag.
func parseSpeculation(s string) (spec.Kinds, error) {
	k, err := spec.ParseKinds(s)
	if err != nil {
		return 0, fmt.Errorf("--spec: %w", err)
	}
	return k, nil
}

// kvFlags are the KV cache flags shared by run, perplexity and bench.
type kvFlags struct {
	typ    string
	window int
	flags  *pflag.FlagSet
}

func (k *kvFlags) register(f *pflag.FlagSet) {
	k.flags = f
	f.StringVar(&k.typ, "kv-type", "f16", "KV cache type: f16, or q8_0/q4_0 for a quantized cold tier behind an f16 hot window")
	f.IntVar(&k.window, "kv-hot-window", 256, "positions of each sequence kept in f16 (at least 1; only with --kv-type q8_0/q4_0)")
}

// apply sets o's KV options from the flags.
func (k *kvFlags) apply(o *llm.Options) error {
	cold, err := llm.ParseKVType(k.typ)
	if err != nil {
		return err
	}
	if err := serve.CheckHotWindow(k.flags != nil && k.flags.Changed("kv-hot-window"), k.window, k.typ); err != nil {
		return err
	}
	o.KVCold, o.KVHotWindow = cold, k.window
	return nil
}
