package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

func newTestmodelCmd() *cobra.Command {
	o := testmodel.DefaultOptions()
	var (
		typeName  string
		byteVocab bool
		out       string
	)
	cmd := &cobra.Command{
		Use: "testmodel -o OUT.gguf",
		Example: "  ruvllm testmodel --arch qwen3moe --experts 8 --experts-used 2 -o moe.gguf\n" +
			"  ruvllm testmodel --arch qwen2 --ctx 4096 --rope-scaling yarn --rope-factor 4 --rope-orig-ctx 1024 -o yarn.gguf\n" +
			"  ruvllm testmodel --arch phi3 --ctx 4096 --rope-scaling longrope --rope-orig-ctx 512 -o phi35.gguf",
		Short: "Write a deterministic random-weight GGUF model of a given shape",
		Long: "testmodel generates a model with random weights (same seed, same file) for tests and\n" +
			"benchmarks. Tensor names and metadata follow llama.cpp for " + strings.Join(testmodel.Arches(), ", ") + ".\n" +
			"The vocabulary is copied from --vocab-from FILE.gguf or is a built-in byte-level BPE one.",
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("missing -o OUT.gguf")
			}
			if byteVocab && o.VocabFrom != "" {
				return errors.New("--byte-vocab and --vocab-from exclude each other")
			}
			// The vocabulary's model was replaced by a random one.
			if o.VocabFrom != "" && sameFile(o.VocabFrom, out) {
				return fmt.Errorf("-o %s is the --vocab-from file: the output must be another file", out)
			}
			t, err := quant.ParseType(typeName)
			if err != nil {
				return err
			}
			o.Type = t
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			if err := testmodel.Write(ctx, o, out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", out)
			// Matrices whose rows cannot hold the type's blocks take
			// llama.cpp's fallback type: said, not silent.
			if f, err := gguf.Open(out); err == nil {
				fell := map[quant.Type]int{}
				for _, ti := range f.Tensors {
					if len(ti.Shape) == 2 && ti.Type != t && testmodel.MatrixType(t, int(ti.Shape[0])) == ti.Type {
						fell[ti.Type]++
					}
				}
				f.Close()
				for ft, n := range fell {
					fmt.Fprintf(cmd.ErrOrStderr(), "note: %d matrices have rows that cannot hold %s's %d-element super-blocks: they are %s, as llama.cpp falls back (--dim and --ff multiples of %d avoid it)\n",
						n, t, quant.QKK, ft, quant.QKK)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Arch, "arch", o.Arch, "architecture: "+strings.Join(testmodel.Arches(), ", "))
	f.IntVar(&o.Layers, "layers", o.Layers, "transformer blocks (0: the default)")
	f.IntVar(&o.Dim, "dim", o.Dim, "embedding size (0: the default)")
	f.IntVar(&o.Heads, "heads", o.Heads, "attention heads (0: the default)")
	f.IntVar(&o.KVHeads, "kv-heads", o.KVHeads, "key/value heads (0: same as --heads)")
	f.IntVar(&o.FF, "ff", o.FF, "feed-forward size (0: the default)")
	f.IntVar(&o.ContextLength, "ctx", o.ContextLength, "context length (0: the default; at most 16777216)")
	f.IntVar(&o.HeadDim, "head-dim", 0, "head size, qwen3 and gemma3 (0: dim/heads)")
	f.IntVar(&o.SlidingWindow, "swa", 0, "gemma2/gemma3 sliding window (0: ctx/2)")
	f.IntVar(&o.SWAPattern, "swa-pattern", 0, "gemma3: every n-th layer is global (0: 6)")
	f.IntVar(&o.Experts, "experts", 0, "experts per layer: llama (Mixtral layout), qwen2moe, qwen3moe (0: dense; 4 for the qwen MoE arches)")
	f.IntVar(&o.ExpertsUsed, "experts-used", 0, "experts per token (0: 2 for the qwen MoE arches)")
	f.IntVar(&o.ExpertFF, "expert-ff", 0, "expert width, qwen2moe/qwen3moe (0: ff/2; llama experts are --ff wide)")
	f.IntVar(&o.SharedFF, "shared-ff", 0, "qwen2moe shared expert width (0: ff)")
	f.Float64Var(&o.RopeBase, "rope-base", 0, "rope.freq_base (0: 10000)")
	f.Float64Var(&o.RopeBaseSWA, "rope-base-swa", 0, "gemma3 local layers' rope base (0: 10000)")
	f.StringVar(&o.RopeScaling, "rope-scaling", "", "context extension: "+strings.Join(testmodel.RopeScalings(), ", ")+" (llama3: llama only, longrope: phi3 only)")
	f.Float64Var(&o.RopeFactor, "rope-factor", 0, "scaling factor (0: 4, llama3 8; longrope: the largest long factor)")
	f.IntVar(&o.RopeOrigCtx, "rope-orig-ctx", 0, "original training context of the extension (0: ctx/4)")
	f.Float64Var(&o.RopeAttnFactor, "rope-attn-factor", 0, "yarn: rope.scaling.attn_factor, multiplying YaRN's own scale (0: not written)")
	f.Float64Var(&o.RopeLowFreq, "rope-low-freq", 0, "llama3 low_freq_factor (0: 1)")
	f.Float64Var(&o.RopeHighFreq, "rope-high-freq", 0, "llama3 high_freq_factor (0: 4)")
	f.StringVar(&o.VocabFrom, "vocab-from", "", "copy the tokenizer.* metadata from this GGUF file")
	f.BoolVar(&byteVocab, "byte-vocab", false, "use the built-in byte-level vocabulary (the default)")
	f.StringVar(&typeName, "type", "f32", "element type of weight matrices, e.g. f32, f16, bf16, q8_0, q4_k")
	f.Uint64Var(&o.Seed, "seed", 1, "random seed")
	f.StringVarP(&out, "output", "o", "", "output file")
	return cmd
}
