// Command ruvllm is the command-line client of ruvllm: it inspects and runs
// GGUF models directly, and talks to the ruvllmd daemon for everything else.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "ruvllm",
		Short:         "A warm local LLM runtime shared by every app on your desktop",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		// Subcommands register here, one constructor per file.
		newRunCmd(),
		newBenchCmd(),
		newPerplexityCmd(),
		newInspectCmd(),
		newTestmodelCmd(),
		newDaemonCmd(),
		newChatCmd(),
		newConversationsCmd(),
		newFeedbackCmd(),
		newPsCmd(),
		newModelsCmd(),
		newCacheCmd(),
		newAdapterCmd(),
		newPullCmd(),
		newRmCmd(),
		newServiceCmd(),
		newTokenizeCmd(),
		newBackendsCmd(),
		newTemplateCmd(),
		newStatusCmd(),
		newSocketCmd(),
		newEnvCmd(),
		newStopCmd(),
		newLearnCmd(),
		newTrainCmd(),
		newQuantizeCmd(),
	)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "ruvllm:", err)
		os.Exit(1)
	}
}

// exactArgs is cobra.ExactArgs with an error that says what is missing
// or extra and shows the command's usage line.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < n:
			return fmt.Errorf("%s: missing %s (usage: ruvllm %s)", cmd.Name(), what, cmd.Use)
		case len(args) > n:
			return fmt.Errorf("%s: unexpected argument %q (usage: ruvllm %s)", cmd.Name(), args[n], cmd.Use)
		}
		return nil
	}
}
