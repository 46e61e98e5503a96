package main

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/modelinfo"
)

func newInspectCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect FILE.gguf [--json]",
		Short: "Describe a GGUF model: architecture, size, quantization, tokenizer, metadata, tensors",
		Long: "inspect prints the architecture, parameter count, file size, quantization mix, key\n" +
			"hyperparameters, tokenizer, chat template, the remaining metadata (arrays abbreviated) and\n" +
			"the tensor table. With --json it prints the same facts as one JSON object.",
		Args: exactArgs(1, "the model file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := gguf.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			s := modelinfo.Describe(f, args[0])
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(s)
			}
			return s.WriteText(cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
