// Package model holds the transformer families ruvllm runs, one file each
// (llama incl. Mixtral-style experts, qwen2, qwen2moe, qwen3, qwen3moe,
// phi3, gemma, gemma2, gemma3), written as plain Go against the
// compute.Backend interface so any backend can run them.
package model

import (
	"errors"
	"fmt"
	"sort"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/lora"
)

// ErrUnsupportedArch is returned for a GGUF architecture no family handles.
var ErrUnsupportedArch = errors.New("unsupported model architecture")

// Config holds the hyperparameters a forward pass needs, read from GGUF
// metadata.
type Config struct {
	Arch          string
	Layers        int
	Dim           int // embedding size
	Heads         int
	KVHeads       int
	HeadDim       int // key/value head size
	FF            int // feed-forward size
	Vocab         int
	ContextLength int
	NormEps       float32
	RoPE          compute.RoPE
	// Window is the sliding-window size for layers that use one (0: none).
	Window int
	// AttnSoftcap and FinalSoftcap cap attention scores and logits (gemma2).
	AttnSoftcap, FinalSoftcap float32
	// Experts and ExpertsUsed are a mixture-of-experts model's expert
	// count and experts per token (0 for dense models).
	Experts, ExpertsUsed int
}

// Batch is the input of one forward pass: the tokens of one or more
// sequences, laid out span after span.
type Batch struct {
	Tokens []int32
	Spans  []compute.Span
	// Adapters, when non-nil, runs parallel to Spans: the LoRA adapters
	// (with their scales) applied to that span's tokens; a nil entry means
	// none. Spans using the same adapter share its matrix products.
	Adapters [][]lora.Applied
	// Outputs, when non-nil, lists the rows whose final hidden states the
	// caller will read (for a backend that is a compute.OutputRowsFollower):
	// the last layer's feed-forward network of those rows is then computed
	// on them alone, as llama.cpp computes it, and their rows of the result
	// hold that. The other rows' results are as without it.
	Outputs []int32
}

// Model is a loaded transformer.
type Model interface {
	Config() Config
	// Forward runs the batch, storing each token's keys and values in kv,
	// and returns the final normalised hidden state of every token
	// (len(Tokens)×Dim). The tensor is reused by the next Forward.
	Forward(b *Batch, kv compute.KVStore) compute.Tensor
	// Logits projects the given rows of hidden to vocabulary logits
	// (len(rows)×Vocab). The tensor is reused by the next call.
	Logits(hidden compute.Tensor, rows []int32) compute.Tensor
}

// ContextSizer is implemented by models whose computation depends on the
// context they run with: Phi-3's LongRoPE picks its long factors when the
// per-sequence context exceeds the original training context, as
// llama.cpp does by its context size. Callers that choose the context
// after Load call SizeContext with it before the first Forward. It
// returns what the context chose ("" when nothing): keys computed under
// one choice are not those of another, so a prefix-cache snapshot saved
// under one must not be restored under the other.
type ContextSizer interface {
	SizeContext(n int) string
}

type family func(l *loader) (Model, error)

// families maps GGUF general.architecture values to constructors; a
// registration table, filled by each family's file.
var families = map[string]family{}

// configs maps the architectures whose hyperparameters ReadConfig reads
// to the function their loader reads them with; a registration table.
var configs = map[string]func(l *loader) (Config, error){}

// Architectures lists the supported general.architecture values.
func Architectures() []string {
	var out []string
	for k := range families {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ReadConfig reads the hyperparameters of f exactly as Load does, without
// loading any weight (the trainer in engine/train builds its own view of
// the weights). It supports the families that register a config reader
// (llama, qwen2).
func ReadConfig(f *gguf.File) (Config, error) {
	arch := f.Architecture()
	read, ok := configs[arch]
	if !ok {
		return Config{}, fmt.Errorf("%w %q for its configuration alone", ErrUnsupportedArch, arch)
	}
	c, err := read(&loader{f: f, arch: arch})
	if err != nil {
		return c, fmt.Errorf("read %s configuration: %w", arch, err)
	}
	return c, nil
}

// Load builds the model described by f on backend b. Weights are wrapped,
// not copied, so f must stay open while the model is used.
func Load(f *gguf.File, b compute.Backend) (Model, error) {
	arch := f.Architecture()
	fam, ok := families[arch]
	if !ok {
		return nil, fmt.Errorf("%w %q (supported: %v)", ErrUnsupportedArch, arch, Architectures())
	}
	l := &loader{f: f, b: b, arch: arch}
	m, err := fam(l)
	if err == nil {
		err = l.releaseAgain()
	}
	if err != nil {
		return nil, fmt.Errorf("load %s model: %w", arch, err)
	}
	return m, nil
}
