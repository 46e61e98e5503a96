package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestStrayArgumentRefused: a command that takes no arguments refuses one
// as an unexpected argument, before it does anything. `ruvllm ps NAME`
// listed every model as if NAME had been read. (`ruvllm stop MODEL`
// unloads MODEL, as ollama stop does: TestStopUnloadsModels.)
func TestStrayArgumentRefused(t *testing.T) {
	// No daemon answers here: a command that ignored the argument and
	// went on would fail with another error.
	t.Setenv(ipc.EnvSocket, filepath.Join(t.TempDir(), "none.sock"))
	for _, path := range []string{
		"ps", "models", "cache", "status", "env", "socket", "backends", "chat",
		"bench serve", "learn status", "learn pause", "learn export", "adapter list",
		"service status", "service install", "service uninstall", "template render", "testmodel",
	} {
		t.Run(path, func(t *testing.T) {
			root := newRootCmd()
			var out, errw bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&errw)
			root.SetArgs(append(strings.Fields(path), "bogus"))
			err := root.ExecuteContext(context.Background())
			if err == nil || !strings.Contains(err.Error(), `unexpected argument "bogus"`) {
				t.Fatalf("ruvllm %s bogus: %v (stdout %q)", path, err, out.String())
			}
		})
	}
}

// TestArgErrorsShowTheSubcommandPath: a subcommand's argument errors name
// it with its parents and show a usage line that can be typed: they said
// "render: ... (usage: ruvllm render ...)" and "add: ... (usage: ruvllm
// add FILE)", commands that do not exist.
func TestArgErrorsShowTheSubcommandPath(t *testing.T) {
	t.Setenv(ipc.EnvSocket, filepath.Join(t.TempDir(), "none.sock"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"template", "render", "bogus"}, `template render: unexpected argument "bogus" (usage: ruvllm template render (`},
		{[]string{"adapter", "add"}, "adapter add: missing the adapter file or PEFT folder (usage: ruvllm adapter add FILE)"},
		{[]string{"learn", "pause", "bogus"}, `learn pause: unexpected argument "bogus" (usage: ruvllm learn pause)`},
		{[]string{"inspect"}, "inspect: missing the model file (usage: ruvllm inspect FILE.gguf"},
	} {
		root := newRootCmd()
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		root.SetArgs(tc.args)
		if err := root.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ruvllm %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
