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

// TestCountFlagsRefused: a count flag under its least value is refused by
// name before the command runs; bench -r 0 ran five repetitions.
func TestCountFlagsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "-m", "x.gguf", "-r", "0"},
		{"bench", "-m", "x.gguf", "-r", "-3"},
		{"bench", "-m", "x.gguf", "--parallel", "-1"},
		{"quantize", "-t", "-1", "a.gguf", "b.gguf", "q8_0"},
		{"run", "-m", "x.gguf", "-p", "hi", "--ctx", "-5"},
		{"run", "-m", "x.gguf", "-p", "hi", "--kv-hot-window", "-1"},
		{"perplexity", "-m", "x.gguf", "-f", "t.txt", "--ctx", "-4"},
	} {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(args)
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), "must be at least") {
			t.Errorf("ruvllm %s: %v", strings.Join(args, " "), err)
		}
	}
}
