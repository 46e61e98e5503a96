package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

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
		Use:   "testmodel -o OUT.gguf",
		Short: "Write a deterministic random-weight GGUF model of a given shape",
		Long: "testmodel generates a model with random weights (same seed, same file) for tests and\n" +
			"benchmarks. Tensor names and metadata follow llama.cpp for " + strings.Join(testmodel.Arches(), ", ") + ".\n" +
			"The vocabulary is copied from --vocab-from FILE.gguf or is a built-in byte-level BPE one.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("missing -o OUT.gguf")
			}
			if byteVocab && o.VocabFrom != "" {
				return errors.New("--byte-vocab and --vocab-from exclude each other")
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
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Arch, "arch", o.Arch, "architecture: "+strings.Join(testmodel.Arches(), ", "))
	f.IntVar(&o.Layers, "layers", o.Layers, "transformer blocks")
	f.IntVar(&o.Dim, "dim", o.Dim, "embedding size")
	f.IntVar(&o.Heads, "heads", o.Heads, "attention heads")
	f.IntVar(&o.KVHeads, "kv-heads", o.KVHeads, "key/value heads (0: same as --heads)")
	f.IntVar(&o.FF, "ff", o.FF, "feed-forward size")
	f.IntVar(&o.ContextLength, "ctx", o.ContextLength, "context length")
	f.StringVar(&o.VocabFrom, "vocab-from", "", "copy the tokenizer.* metadata from this GGUF file")
	f.BoolVar(&byteVocab, "byte-vocab", false, "use the built-in byte-level vocabulary (the default)")
	f.StringVar(&typeName, "type", "f32", "element type of weight matrices, e.g. f32, f16, bf16, q8_0, q4_k")
	f.Uint64Var(&o.Seed, "seed", 1, "random seed")
	f.StringVarP(&out, "output", "o", "", "output file")
	return cmd
}
