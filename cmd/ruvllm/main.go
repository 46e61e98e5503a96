// Command ruvllm is the command-line client of ruvllm: it inspects and runs
// GGUF models directly, and talks to the ruvllmd daemon for everything else.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/daemon/serve"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "ruvllm:", err)
		os.Exit(1)
	}
}

// newRootCmd builds the ruvllm command tree.
func newRootCmd() *cobra.Command {
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
		newListCmd(),
		newShowCmd(),
		newCpCmd(),
		newCreateCmd(),
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
	refuseUnknownSubcommands(root)
	guardCounts(root)
	return root
}

// countFlags are the count flags of every command and the least value
// each takes; a value under it was silently replaced by a default (bench
// -r 0 ran 5 repetitions, -t -1 all cores).
var countFlags = map[string]int{"threads": 0, "ctx": 0, "parallel": 0, "kv-hot-window": 1, "reps": 1}

// guardCounts makes every command below root refuse a count flag under
// its least value, by name, before it runs.
func guardCounts(root *cobra.Command) {
	for _, c := range root.Commands() {
		guardCounts(c)
		if c.PreRunE == nil && c.PreRun == nil {
			c.PreRunE = checkCounts
		}
	}
}

func checkCounts(cmd *cobra.Command, _ []string) error {
	for name, least := range countFlags {
		f := cmd.Flags().Lookup(name)
		if f == nil || !f.Changed {
			continue
		}
		if v, err := cmd.Flags().GetInt(name); err == nil && v < least {
			return fmt.Errorf("--%s %d: must be at least %d", name, v, least)
		}
	}
	// -t 100000 started 100,000 threads.
	if f := cmd.Flags().Lookup("threads"); f != nil && f.Changed {
		if v, err := cmd.Flags().GetInt("threads"); err == nil && v > serve.MaxThreads {
			return fmt.Errorf("--threads %d: must be at most %d", v, serve.MaxThreads)
		}
	}
	return nil
}

// refuseUnknownSubcommands makes every group command below root (adapter,
// learn, service, template) refuse a word that is none of its subcommands.
// Cobra shows the help of a command that cannot run and exits 0, so
// `ruvllm learn rest` (for reset) looked like a success.
func refuseUnknownSubcommands(root *cobra.Command) {
	for _, c := range root.Commands() {
		refuseUnknownSubcommands(c)
		if c.HasSubCommands() && !c.Runnable() {
			c.Args = cobra.NoArgs // "unknown command %q for %q"
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
	}
}

// exactArgs is cobra.ExactArgs with an error that says what is missing
// or extra and shows the command's usage line.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		name, usage := commandPath(cmd)
		switch {
		case len(args) < n:
			return fmt.Errorf("%s: missing %s (usage: %s)", name, what, usage)
		case len(args) > n:
			return fmt.Errorf("%s: unexpected argument %q (usage: %s)", name, args[n], usage)
		}
		return nil
	}
}

// commandPath returns a command's words after "ruvllm" ("template render")
// and its usage line with its parents ("ruvllm template render --template
// ..."): a subcommand's errors showed its name and Use alone, as in
// "usage: ruvllm render ..." or "ruvllm add FILE", commands that do not
// exist.
func commandPath(cmd *cobra.Command) (name, usage string) {
	name = cmd.Name()
	usage = cmd.Use
	for p := cmd.Parent(); p != nil && p.Name() != "ruvllm"; p = p.Parent() {
		name = p.Name() + " " + name
		usage = p.Name() + " " + usage
	}
	return name, "ruvllm " + usage
}
