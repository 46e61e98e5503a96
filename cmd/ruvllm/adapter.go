package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/engine/lora"
)

func newAdapterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "adapter",
		Short: "Manage LoRA adapters: list, add, rm (through the daemon) and merge (offline)",
	}
	cmd.AddCommand(newAdapterListCmd(), newAdapterAddCmd(), newAdapterRmCmd(), newAdapterMergeCmd())
	return cmd
}

func newAdapterListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the adapters installed in the daemon",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), false)
			if err != nil {
				return err
			}
			list, err := c.Adapters(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tRANK\tALPHA\tTARGETS\tBASE\tSHA256\tINSTALLED")
			for _, a := range list {
				fmt.Fprintf(tw, "%s\t%d\t%g\t%d\t%s\t%s\t%s\n", a.Name, a.Rank, a.Alpha, len(a.Targets), a.BaseModel,
					a.SHA256[:min(12, len(a.SHA256))], a.InstalledAt.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}
}

func newAdapterAddCmd() *cobra.Command {
	var name string
	var upload bool
	cmd := &cobra.Command{
		Use:   "add FILE",
		Short: "Install a GGUF LoRA adapter into the daemon (validated against its default model)",
		Args:  exactArgs(1, "the adapter file or PEFT folder"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), true)
			if err != nil {
				return err
			}
			install := c.InstallAdapterPath
			if upload {
				install = c.UploadAdapter
			}
			info, err := install(cmd.Context(), args[0], name)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "installed %s (rank %d, %d targets, sha256 %s)\n", info.Name, info.Rank, len(info.Targets), info.SHA256[:12])
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "adapter name (default: the file name)")
	cmd.Flags().BoolVar(&upload, "upload", false, "send the file's bytes instead of its path")
	return cmd
}

func newAdapterRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME",
		Short: "Uninstall an adapter (requests using it finish normally)",
		Args:  exactArgs(1, "the adapter name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), false)
			if err != nil {
				return err
			}
			return c.RemoveAdapter(cmd.Context(), args[0])
		},
	}
}

func newAdapterMergeCmd() *cobra.Command {
	var base, out string
	var specs []string
	cmd := &cobra.Command{
		Use:   "merge -m BASE.gguf -a ADAPTER[:SCALE]... -o OUT.gguf",
		Short: "Write a model with LoRA adapters merged into its weights, re-quantized to the base's types",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			if base == "" || out == "" || len(specs) == 0 {
				return fmt.Errorf("need -m BASE.gguf, at least one -a ADAPTER[:SCALE] and -o OUT.gguf")
			}
			var ss []lora.Spec
			for _, s := range specs {
				sp, err := lora.ParseSpec(s)
				if err != nil {
					return err
				}
				ss = append(ss, sp)
			}
			start := time.Now()
			if err := lora.MergeFile(cmd.Context(), base, ss, out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s in %v\n", out, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	cmd.Flags().StringVarP(&base, "model", "m", "", "base model (GGUF)")
	cmd.Flags().StringArrayVarP(&specs, "adapter", "a", nil, "adapter file or PEFT directory, with an optional :SCALE (repeatable)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "merged model to write")
	return cmd
}
