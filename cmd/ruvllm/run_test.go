package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestRunPrediction: run --prediction FILE drafts from the file and prints
// the same tokens as without it; a missing file is refused by name.
func TestRunPrediction(t *testing.T) {
	model := testpath.Shared(t, "models/ruvllm-test-llama-19m-f16.gguf")
	type result struct {
		Tokens  []int32 `json:"tokens"`
		Text    string  `json:"text"`
		Timings struct {
			PredictionTokens   int `json:"prediction_tokens"`
			PredictionAccepted int `json:"prediction_accepted"`
		} `json:"timings"`
	}
	run := func(extra ...string) result {
		t.Helper()
		// A fixed draft length: what is accepted must not depend on the step
		// timings the adaptive control weighs (a loaded machine).
		out, _, err := runCLI(t, newRunCmd(), append([]string{"-m", model, "-p", "The kernel", "-n", "48", "--temp", "0", "-t", "2", "--spec-fixed", "4", "--json"}, extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%q: %v", out, err)
		}
		return r
	}
	plain := run()
	file := filepath.Join(t.TempDir(), "expected.txt")
	if err := os.WriteFile(file, []byte(plain.Text), 0o600); err != nil {
		t.Fatal(err)
	}
	pred := run("--prediction", file)
	if !slices.Equal(pred.Tokens, plain.Tokens) || pred.Timings.PredictionAccepted < 24 || pred.Timings.PredictionAccepted > pred.Timings.PredictionTokens {
		t.Fatalf("with --prediction: %d tokens (%d of %d drafted from the prediction accepted), without: %d",
			len(pred.Tokens), pred.Timings.PredictionAccepted, pred.Timings.PredictionTokens, len(plain.Tokens))
	}
	if _, _, err := runCLI(t, newRunCmd(), "-m", model, "-p", "x", "--prediction", file+".missing"); err == nil || !strings.Contains(err.Error(), "--prediction") {
		t.Fatalf("a missing prediction file: %v", err)
	}
}

// TestRunRefusesPositionalPrompt: `ruvllm run -m MODEL "TEXT"` (the prompt
// without -p) and perplexity with a stray word are refused by name instead
// of generating from an empty prompt.
func TestRunRefusesPositionalPrompt(t *testing.T) {
	// The arguments are checked before the model is opened.
	model := filepath.Join(t.TempDir(), "model.gguf")
	for _, tc := range []struct {
		name string
		run  func() (string, string, error)
	}{
		{"run", func() (string, string, error) {
			return runCLI(t, newRunCmd(), "-m", model, "-n", "2", "-t", "1", "The cat sat")
		}},
		{"perplexity", func() (string, string, error) {
			return runCLI(t, newPerplexityCmd(), "-m", model, "-f", model, "stray")
		}},
	} {
		out, _, err := tc.run()
		if err == nil || !strings.Contains(err.Error(), "unexpected argument") {
			t.Errorf("%s: err %v, output %q: want the stray argument refused", tc.name, err, out)
		}
	}
}

// TestRunSystemNeedsChat: --system without --chat was ignored in silence
// (the same tokens as without it); it is refused, in process and remote.
func TestRunSystemNeedsChat(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "model.gguf")                  // never opened
	t.Setenv("RUVLLM_SOCKET", filepath.Join(dir, "none.sock")) // nor a daemon reached
	for _, extra := range [][]string{nil, {"--remote"}} {
		_, _, err := runCLI(t, newRunCmd(), append([]string{"-m", model, "-p", "hi", "--system", "Be a pirate."}, extra...)...)
		if err == nil || !strings.Contains(err.Error(), "--chat") {
			t.Errorf("run --system %v: err %v, want --chat asked for", extra, err)
		}
	}
}

// TestRunRefusesNonFiniteSampling: --temp NaN, --min-p Inf and the like
// are refused before the model is loaded, rather than sampled with.
func TestRunRefusesNonFiniteSampling(t *testing.T) {
	model := filepath.Join(t.TempDir(), "model.gguf") // never opened
	for _, args := range [][]string{{"--temp", "NaN"}, {"--temp", "+Inf"}, {"--min-p", "Inf"}, {"--top-p", "NaN"}, {"--repeat-penalty", "-Inf"}} {
		_, _, err := runCLI(t, newRunCmd(), append([]string{"-m", model, "-p", "hi"}, args...)...)
		if err == nil || !strings.Contains(err.Error(), args[0]+" ") || !strings.Contains(err.Error(), "finite") {
			t.Errorf("run %v: err %v, want the flag refused", args, err)
		}
	}
}

// TestRunRefusesSamplingOutOfRange: a sampling flag outside the range the
// daemon accepts is refused by name in process too: --min-p above 1 left
// no token to draw, and the run printed nothing and ended "stop".
func TestRunRefusesSamplingOutOfRange(t *testing.T) {
	model := filepath.Join(t.TempDir(), "model.gguf") // never opened
	for _, args := range [][]string{
		{"--min-p", "1.5"}, {"--min-p", "-0.1"}, {"--top-p", "2"}, {"--top-p", "-1"}, {"--typical-p", "3"},
		{"--repeat-penalty", "-1"}, {"--top-k", "-5"}, {"--repeat-last-n", "-2"},
	} {
		_, _, err := runCLI(t, newRunCmd(), append([]string{"-m", model, "-p", "hi"}, args...)...)
		if err == nil || !strings.Contains(err.Error(), args[0]+" "+args[1]) || !strings.Contains(err.Error(), "want") {
			t.Errorf("run %v: err %v, want the flag refused", args, err)
		}
	}
}

// TestRunInterrupted: a generation ended by Ctrl-C (its context
// cancelled) prints its JSON with finish_reason "interrupted", not
// "length", and returns an error, so the exit status is not 0.
func TestRunInterrupted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	o := testmodel.DefaultOptions()
	o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = 1, 32, 2, 1, 64, 256
	if err := testmodel.Write(context.Background(), o, path); err != nil {
		t.Fatal(err)
	}
	m, err := llm.Load(context.Background(), path, llm.Options{Threads: 1, ContextLength: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cmd := newRunCmd()
	var out, errw strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&errw)
	err = runLocal(ctx, cmd, m, llm.Request{Prompt: "hello", MaxTokens: 8}, 0, true)
	var r struct {
		Timings struct {
			FinishReason string `json:"finish_reason"`
		} `json:"timings"`
	}
	if jerr := json.Unmarshal([]byte(out.String()), &r); jerr != nil {
		t.Fatalf("%q: %v", out.String(), jerr)
	}
	if err == nil || r.Timings.FinishReason != "interrupted" {
		t.Errorf("err %v, finish_reason %q: want an error and interrupted", err, r.Timings.FinishReason)
	}
}

// TestPerplexityReportsChunkSize: --ctx 0 takes the default chunk of 512
// tokens, and the summary says so instead of "chunks of 0 tokens" (the text
// line) or "ctx": 0 (--json). (ruvllm refuses --ctx below 0 before the
// command runs: TestCountFlagsRefused.)
func TestPerplexityReportsChunkSize(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny.gguf")
	o := testmodel.DefaultOptions()
	o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = 1, 32, 2, 1, 64, 1024
	if err := testmodel.Write(context.Background(), o, model); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "text.txt")
	os.WriteFile(text, []byte(strings.Repeat("the cat sat on the mat ", 300)), 0o644)
	out, _, err := runCLI(t, newPerplexityCmd(), "-m", model, "-f", text, "--ctx", "0", "-t", "1")
	if err != nil || !strings.Contains(out, "chunks of 512 tokens") {
		t.Errorf("--ctx 0: %q %v, want chunks of 512 tokens", out, err)
	}
	out, _, err = runCLI(t, newPerplexityCmd(), "-m", model, "-f", text, "--ctx", "0", "-t", "1", "--json")
	var r struct{ Ctx int }
	if err != nil || json.Unmarshal([]byte(out), &r) != nil || r.Ctx != 512 {
		t.Errorf("--ctx 0 --json: %q %v, want ctx 512", out, err)
	}
}

// TestPerplexityKLDBaseKeptOnFailure: a perplexity run that fails (here a
// text shorter than one chunk) leaves the --kl-divergence-base file saved
// before as it was (os.Create truncated it to 0 bytes), with nothing beside
// it; a run that succeeds writes it.
func TestPerplexityKLDBaseKeptOnFailure(t *testing.T) {
	dir := t.TempDir()
	model := writeTinyPerplexityModel(t, dir)
	short, long, base := filepath.Join(dir, "short.txt"), filepath.Join(dir, "long.txt"), filepath.Join(dir, "base.kld")
	os.WriteFile(short, []byte("hi"), 0o644)
	os.WriteFile(long, []byte(strings.Repeat("the cat sat on the mat ", 40)), 0o644)
	saved := []byte("a base file saved before")
	os.WriteFile(base, saved, 0o644)
	if _, _, err := runCLI(t, newPerplexityCmd(), "-m", model, "-f", short, "--ctx", "16", "-t", "1", "--kl-divergence-base", base); err == nil {
		t.Fatal("a text shorter than a chunk: no error")
	}
	if got, _ := os.ReadFile(base); string(got) != string(saved) {
		t.Errorf("the base file is now %d bytes, want it kept", len(got))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 4 {
		t.Errorf("left behind: %v", ents)
	}
	if _, _, err := runCLI(t, newPerplexityCmd(), "-m", model, "-f", long, "--ctx", "16", "-t", "1", "--kl-divergence-base", base); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(base); err != nil || st.Size() <= int64(len(saved)) || st.Mode().Perm() != 0o644 {
		t.Errorf("base file after a good run: %v %v", st, err)
	}
}

// TestReadInputFileRefusesDevices: --grammar /dev/zero (and perplexity
// -f /dev/zero) read without end, gigabytes of memory in seconds; a
// character device is refused and a file past the limit is cut short,
// while a regular file reads as before.
func TestReadInputFileRefusesDevices(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		_, _, err := runCLI(t, newRunCmd(), "-m", filepath.Join(t.TempDir(), "model.gguf"), "-p", "hi", "--grammar", "/dev/zero")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "character device") {
			t.Errorf("--grammar /dev/zero: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("--grammar /dev/zero reads without end")
	}
	big := filepath.Join(t.TempDir(), "big.gbnf")
	os.WriteFile(big, make([]byte, 2048), 0o644)
	if _, err := readInputFile("--grammar", big, 1024); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a file past the limit: %v", err)
	}
	if b, err := readInputFile("--grammar", big, 4096); err != nil || len(b) != 2048 {
		t.Errorf("a file within the limit: %d bytes, %v", len(b), err)
	}
}

// TestRunRemoteInterrupted: Ctrl-C during `run --remote` ends it as it
// ends an in-process run: an "interrupted" error, so the exit status is
// not 0 (the remote run's shape and ending differed from the local one's).
func TestRunRemoteInterrupted(t *testing.T) {
	startTinyDaemon(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := newRunCmd()
	cmd.SetOut(&cancelOnWrite{cancel: cancel}) // Ctrl-C at the first text
	cmd.SetErr(&strings.Builder{})
	cmd.SetArgs([]string{"--remote", "-m", "tiny", "-p", "hello", "-n", "200", "--temp", "0"})
	if err := cmd.ExecuteContext(ctx); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("interrupted run --remote: %v, want an interrupted error", err)
	}
}

// TestInputFileErrorsNameTheFlag: a file that cannot be opened is an
// error naming the flag that gave it, as one that cannot be read is
// (perplexity -f, run --grammar and --json-schema, template render
// --template and --conversation said only "open NAME: ...").
func TestInputFileErrorsNameTheFlag(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.txt")
	for _, tc := range []struct {
		cmd  func() *cobra.Command
		args []string
		flag string
	}{
		{newPerplexityCmd, []string{"-m", "model.gguf", "-f", missing}, "-f"},
		{newRunCmd, []string{"-m", "model.gguf", "-p", "hi", "--grammar", missing}, "--grammar"},
		{newRunCmd, []string{"-m", "model.gguf", "-p", "hi", "--json-schema", missing}, "--json-schema"},
		{newTemplateCmd, []string{"render", "--template", missing, "--conversation", missing}, "--conversation"},
	} {
		_, _, err := runCLI(t, tc.cmd(), tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.flag+": open "+missing) {
			t.Errorf("%v: %v, want an error naming %s", tc.args, err, tc.flag)
		}
	}
}

// TestPerplexityKLDBaseRefusesOtherFiles: --kl-divergence-base FILE to
// save to must not name the model, the text, another GGUF model (the base
// model, given where its log-probabilities go) or a directory: the first
// three were replaced by log-probabilities without a word, and a directory
// failed only after the whole run, as "rename ...: file exists".
func TestPerplexityKLDBaseRefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	model := writeTinyPerplexityModel(t, dir)
	text, other, sub := filepath.Join(dir, "text.txt"), filepath.Join(dir, "other.gguf"), filepath.Join(dir, "sub")
	os.WriteFile(text, []byte(strings.Repeat("the cat sat on the mat ", 40)), 0o644)
	os.WriteFile(other, []byte("GGUF\x03\x00\x00\x00 another model"), 0o644)
	os.Mkdir(sub, 0o755)
	for _, tc := range []struct {
		name, base, want string
	}{
		{"the model", model, "the file of -m"},
		{"the text", text, "the file of -f"},
		{"another model", other, "is a GGUF model"},
		{"a directory", sub, "it is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := os.ReadFile(tc.base)
			_, _, err := runCLI(t, newPerplexityCmd(), "-m", model, "-f", text, "--ctx", "16", "-t", "1", "--kl-divergence-base", tc.base)
			if err == nil || !strings.Contains(err.Error(), "--kl-divergence-base") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("--kl-divergence-base %s: %v, want an error naming the flag and %q", tc.name, err, tc.want)
			}
			if after, _ := os.ReadFile(tc.base); !bytes.Equal(after, before) {
				t.Errorf("--kl-divergence-base %s: the file changed", tc.name)
			}
		})
	}
	// a new file, then the same one again (log-probabilities saved before)
	base := filepath.Join(dir, "base.kld")
	for range 2 {
		if _, _, err := runCLI(t, newPerplexityCmd(), "-m", model, "-f", text, "--ctx", "16", "-t", "1", "--kl-divergence-base", base); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := runCLI(t, newPerplexityCmd(), "-m", model, "--ctx", "16", "-t", "1", "--kl-divergence-base", filepath.Join(dir, "missing.kld"), "--kl-divergence"); err == nil || !strings.Contains(err.Error(), "--kl-divergence-base") {
		t.Errorf("a missing base file to read: %v, want an error naming --kl-divergence-base", err)
	}
}

// writeTinyPerplexityModel writes a one-layer synthetic model of 64
// positions to dir/tiny.gguf and returns its path.
func writeTinyPerplexityModel(t *testing.T, dir string) string {
	t.Helper()
	model := filepath.Join(dir, "tiny.gguf")
	o := testmodel.DefaultOptions()
	o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = 1, 32, 2, 1, 64, 64
	if err := testmodel.Write(context.Background(), o, model); err != nil {
		t.Fatal(err)
	}
	return model
}
