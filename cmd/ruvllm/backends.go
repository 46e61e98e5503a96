package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/internal/backends"
)

func newBackendsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "backends",
		Short: "List the compute backends (--backend values) and the accelerators this machine has",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			st := backends.Statuses(cmd.Context())
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(st)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "BACKEND\tSELECTABLE\tAVAILABLE\tNOTE")
			yes := map[bool]string{true: "yes", false: "no"}
			for _, s := range st {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", s.Name, yes[s.Selectable], yes[s.Available], s.Note)
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
