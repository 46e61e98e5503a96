package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// TestQuantizeCmd converts a small F16 model to IQ4_XS and Q4_K_M and
// checks the result's types and summary line, and the errors for a bad
// type, a missing input and an output that is the input.
func TestQuantizeCmd(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m-f16.gguf")
	o := testmodel.DefaultOptions()
	o.Dim, o.FF, o.Heads, o.KVHeads, o.Type = 256, 256, 4, 1, quant.F16
	if err := testmodel.Write(context.Background(), o, in); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		typ  string
		want map[string]quant.Type
	}{
		{"IQ4_XS", map[string]quant.Type{"blk.0.attn_q.weight": quant.IQ4_XS, "blk.0.attn_norm.weight": quant.F32, "output.weight": quant.Q6_K}},
		{"q4_k_m", map[string]quant.Type{"blk.0.attn_q.weight": quant.Q4_K, "blk.0.ffn_down.weight": quant.Q4_K, "blk.1.ffn_down.weight": quant.Q6_K, "output.weight": quant.Q6_K}},
	} {
		out := filepath.Join(dir, "m-"+tc.typ+".gguf")
		cmd := newQuantizeCmd()
		var stdout, stderr bytes.Buffer
		cmd.SetOut(&stdout)
		cmd.SetErr(&stderr)
		cmd.SetArgs([]string{"-t", "2", in, out, tc.typ})
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%s: %v", tc.typ, err)
		}
		if !strings.Contains(stdout.String(), "quantized") {
			t.Errorf("%s: summary %q", tc.typ, stdout.String())
		}
		f, err := gguf.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range tc.want {
			if ti, ok := f.Tensor(name); !ok || ti.Type != want {
				t.Errorf("%s: %s is %s, want %s", tc.typ, name, ti.Type, want)
			}
		}
		f.Close()
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{in, filepath.Join(dir, "x.gguf"), "Q4_K_X"}, "Q4_K_X"},
		{[]string{filepath.Join(dir, "missing.gguf"), filepath.Join(dir, "x.gguf"), "Q8_0"}, "missing.gguf"},
		{[]string{in, in, "Q8_0"}, "another file"},
		// A quantized input: the engine's error, with the CLI's flag named
		// (the daemon's /api/create names none).
		{[]string{filepath.Join(dir, "m-q4_k_m.gguf"), filepath.Join(dir, "x.gguf"), "Q8_0"}, "--allow-requantize"},
		{[]string{"--imatrix", filepath.Join(dir, "none.dat"), in, filepath.Join(dir, "x.gguf"), "Q8_0"}, "none.dat"},
	} {
		cmd := newQuantizeCmd()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(tc.args)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("quantize %v: error %v, want one naming %q", tc.args, err, tc.want)
		}
	}
}

// TestQuantizeInterruptedBar: an interrupted quantize leaves its bar where
// it stopped and fails; the bar was filled to 100 %.
func TestQuantizeInterruptedBar(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m-f16.gguf")
	o := testmodel.DefaultOptions()
	o.Dim, o.FF, o.Heads, o.KVHeads, o.Type = 256, 256, 4, 1, quant.F16
	if err := testmodel.Write(context.Background(), o, in); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	cmd := newQuantizeCmd()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(io.MultiWriter(&cancelOnWrite{cancel: cancel}, &stderr)) // stop at the bar's first frame
	cmd.SetArgs([]string{"-t", "1", in, filepath.Join(dir, "out.gguf"), "Q8_0"})
	if err := cmd.ExecuteContext(ctx); err == nil {
		t.Fatal("an interrupted quantize succeeded")
	}
	if strings.Contains(stderr.String(), "100%") {
		t.Fatalf("the interrupted quantize's bar reads 100%%:\n%q", stderr.String())
	}
}

// TestOutputThatIsTheInputRefused: quantize and testmodel refuse an
// output that names their input through a linked directory (quantize
// compared absolute paths, and replaced its F16 input with the result) or
// at all (testmodel -o X --vocab-from X replaced the model X with a
// random one); the input is left as it was.
func TestOutputThatIsTheInputRefused(t *testing.T) {
	dir := t.TempDir()
	real, link := filepath.Join(dir, "real"), filepath.Join(dir, "link")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	in := filepath.Join(real, "m.gguf")
	o := testmodel.DefaultOptions()
	o.Type = quant.F16
	if err := testmodel.Write(context.Background(), o, in); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd  func() *cobra.Command
		args []string
		want string
	}{
		{newQuantizeCmd, []string{"-q", in, filepath.Join(link, "m.gguf"), "Q8_0"}, "another file than the input"},
		{newTestmodelCmd, []string{"--vocab-from", in, "-o", in}, "is the --vocab-from file"},
		{newTestmodelCmd, []string{"--vocab-from", in, "-o", filepath.Join(link, "m.gguf")}, "is the --vocab-from file"},
	} {
		cmd := tc.cmd()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(tc.args)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want an error saying %q", cmd.Name(), tc.args, err, tc.want)
		}
		if after, _ := os.ReadFile(in); !bytes.Equal(after, before) {
			t.Fatalf("%s %v replaced the input", cmd.Name(), tc.args)
		}
	}
}
