package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestUnknownSubcommandFails: a word that is no subcommand of a group
// command (ruvllm learn rest, ruvllm adapter lsit, ...) is an error, not
// the group's help and exit status 0; the group alone still shows its help.
func TestUnknownSubcommandFails(t *testing.T) {
	for _, group := range []string{"adapter", "learn", "service", "template"} {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs([]string{group, "bogusx"})
		if err := root.Execute(); err == nil || !strings.Contains(err.Error(), `unknown command "bogusx"`) {
			t.Errorf("ruvllm %s bogusx: err %v, want unknown command", group, err)
		}
		root = newRootCmd()
		out.Reset()
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs([]string{group})
		if err := root.Execute(); err != nil || !strings.Contains(out.String(), "Available Commands") {
			t.Errorf("ruvllm %s: err %v, output %q: want its help", group, err, out.String())
		}
	}
}
