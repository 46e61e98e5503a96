package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/internal/backends"
)

// TestBackendFlag runs the in-process commands with each --backend value
// on a tiny synthetic model: cpu computes, metal is refused off macOS with
// the platform named, an unknown name is refused.
func TestBackendFlag(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny.gguf")
	o := testmodel.DefaultOptions()
	o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = "llama", 1, 32, 2, 2, 64, 256
	if err := testmodel.Write(context.Background(), o, model); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("the kernel maps pages into memory. ", 20)), 0o600); err != nil {
		t.Fatal(err)
	}
	commands := []struct {
		name string
		cmd  func() *cobra.Command
		args []string
		out  string // what stdout shows with --backend cpu
	}{
		{"run", newRunCmd, []string{"-m", model, "-p", "hello", "-n", "4", "--temp", "0", "-t", "1", "--json"}, `"tokens"`},
		{"bench", newBenchCmd, []string{"-m", model, "-p", "8", "-n", "4", "-r", "1", "-t", "1", "--json"}, `"backend":"cpu"`},
		{"perplexity", newPerplexityCmd, []string{"-m", model, "-f", text, "--ctx", "32", "-t", "1"}, "perplexity:"},
	}
	for _, c := range commands {
		out, _, err := runCLI(t, c.cmd(), append(c.args, "--backend", "cpu")...)
		if err != nil {
			t.Errorf("%s --backend cpu: %v", c.name, err)
		} else if !strings.Contains(out, c.out) {
			t.Errorf("%s --backend cpu printed %q, want %q in it", c.name, out, c.out)
		}
		_, _, err = runCLI(t, c.cmd(), append(c.args, "--backend", "tpu")...)
		if err == nil || !strings.Contains(err.Error(), `unknown backend "tpu"`) {
			t.Errorf("%s --backend tpu: %v, want unknown backend", c.name, err)
		}
		if runtime.GOOS == "darwin" {
			continue // metal is selectable there; the metal package tests it
		}
		_, _, err = runCLI(t, c.cmd(), append(c.args, "--backend", "metal")...)
		if !errors.Is(err, backends.ErrPlatform) || !strings.Contains(err.Error(), runtime.GOOS+"/"+runtime.GOARCH) {
			t.Errorf("%s --backend metal on %s: %v, want ErrPlatform naming the platform", c.name, runtime.GOOS, err)
		}
	}
	_, _, err := runCLI(t, newRunCmd(), "--remote", "-m", "x", "-p", "hi", "--backend", "metal")
	if err == nil || !strings.Contains(err.Error(), "--remote") {
		t.Errorf("run --remote --backend: %v, want a refusal", err)
	}
}

func TestBackendsCmd(t *testing.T) {
	out, _, err := runCLI(t, newBackendsCmd())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"BACKEND", "cpu", "metal", "coreml", "not a --backend"} {
		if !strings.Contains(out, want) {
			t.Errorf("ruvllm backends output lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runCLI(t, newBackendsCmd(), "--json")
	if err != nil {
		t.Fatal(err)
	}
	var st []backends.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("--json output %q: %v", out, err)
	}
	if len(st) != 3 || st[0].Name != "cpu" || !st[0].Available || st[2].Name != "coreml" || st[2].Selectable {
		t.Errorf("--json = %+v", st)
	}
}
