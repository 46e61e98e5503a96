package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
)

func newTokenizeCmd() *cobra.Command {
	var model string
	var noBOS, special, pieces bool
	cmd := &cobra.Command{
		Use:   "tokenize -m FILE.gguf [--no-bos] [--special] TEXT",
		Short: "Print the token ids of TEXT as a JSON array, tokenized like llama.cpp",
		Long: "tokenize builds the model's tokenizer from its GGUF metadata alone (no weights are read)\n" +
			"and prints the ids of TEXT as a JSON array. BOS/EOS are added as the model says unless\n" +
			"--no-bos; --special parses special-token text such as <|im_start|> into its token.\n" +
			"--pieces prints [id, piece] pairs instead.",
		Args: exactArgs(1, "the TEXT to tokenize"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if model == "" {
				return fmt.Errorf("tokenize: -m FILE.gguf is required")
			}
			f, err := gguf.Open(model)
			if err != nil {
				return err
			}
			defer f.Close()
			tok, err := tokenizer.FromGGUF(f)
			if err != nil {
				return fmt.Errorf("tokenize %s: %w", model, err)
			}
			ids := tok.Encode(args[0], tokenizer.EncodeOptions{AddSpecial: !noBOS, ParseSpecial: special})
			if ids == nil {
				ids = []int32{}
			}
			var out any = ids
			if pieces {
				pairs := make([][2]any, len(ids))
				for i, id := range ids {
					pairs[i] = [2]any{id, tok.Piece(id)}
				}
				out = pairs
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetEscapeHTML(false)
			return enc.Encode(out)
		},
	}
	cmd.Flags().StringVarP(&model, "model", "m", "", "GGUF model file")
	cmd.Flags().BoolVar(&noBOS, "no-bos", false, "do not add BOS/EOS")
	cmd.Flags().BoolVar(&special, "special", false, "parse special-token text (e.g. <|im_end|>) as special tokens")
	cmd.Flags().BoolVar(&pieces, "pieces", false, "print [id, piece] pairs")
	return cmd
}
