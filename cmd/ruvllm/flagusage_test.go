package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestFlagPlaceholders: every flag's help shows a one-word placeholder for
// its value. pflag takes the first `quoted` words of a usage string as
// the placeholder, so service install's "(default: ... else `ruvllm
// daemon`)" showed as "--exec ruvllm daemon", a flag value it is not.
func TestFlagPlaceholders(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if name, _ := pflag.UnquoteUsage(f); strings.ContainsAny(name, " \t") {
				t.Errorf("%s --%s: value placeholder %q", c.CommandPath(), f.Name, name)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd())
}
