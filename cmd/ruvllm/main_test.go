package main

import (
	"bytes"
	"os"
	"path/filepath"
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
		{"run", "-m", "x.gguf", "-p", "hi", "--kv-type", "q8_0", "--kv-hot-window", "0"}, // 0 was read as 256
		{"daemon", "--kv-type", "q4_0", "--kv-hot-window", "0"},
		{"bench", "-m", "x.gguf", "-p", "-1"},
		{"bench", "-m", "x.gguf", "-t", "100000"},
		{"perplexity", "-m", "x.gguf", "-f", "t.txt", "--ctx", "-4"},
	} {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(args)
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), "must be at") {
			t.Errorf("ruvllm %s: %v", strings.Join(args, " "), err)
		}
	}
}

// TestHotWindowNeedsColdTier: --kv-hot-window given for an f16 cache, which
// has no cold tier to bound, is refused instead of ignored, in process and
// by the daemon's flags.
func TestHotWindowNeedsColdTier(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "x.gguf") // never opened
	text := filepath.Join(dir, "t.txt")
	if err := os.WriteFile(text, []byte("some text"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"run", "-m", model, "-p", "hi", "--kv-hot-window", "64"},
		{"perplexity", "-m", model, "-f", text, "--kv-type", "f16", "--kv-hot-window", "64"},
		{"daemon", "--kv-hot-window", "64"},
	} {
		root := newRootCmd()
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		root.SetArgs(args)
		if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "--kv-type q8_0 or q4_0") {
			t.Errorf("ruvllm %s: %v, want the cold tier asked for", strings.Join(args, " "), err)
		}
	}
}
