package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runBenchCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newBenchCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestBenchCmd(t *testing.T) {
	path := sharedModel(t, "ruvllm-test-qwen2-13m-q8_0.gguf")

	out, err := runBenchCmd(t, "-m", path, "-p", "8", "-n", "4", "-r", "2", "-t", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got benchOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	r := got.BenchReport
	if r == nil || r.Model != "ruvllm-test-qwen2-13m-q8_0" || r.FileType != "Q8_0" || r.Threads != 1 || r.Backend != "cpu" {
		t.Fatalf("report %+v", r)
	}
	if len(r.Results) != 2 || r.Results[0].Test != "pp8" || r.Results[1].Test != "tg4" || len(r.Results[1].Samples) != 2 {
		t.Errorf("results %+v: want pp8 and tg4 with 2 samples each", r.Results)
	}
	// Tied embeddings: every weight is read per token, so the figure is the
	// file less its header and norms — close to, and below, the file size.
	if r.WeightBytesPerToken <= 0 || r.WeightBytesPerToken >= r.FileSize || r.WeightBytesPerToken < r.FileSize*9/10 {
		t.Errorf("weight bytes per token %d for a %d-byte file", r.WeightBytesPerToken, r.FileSize)
	}
	if r.PeakRSS < r.WeightBytesPerToken/2 || r.KVBytes <= 0 {
		t.Errorf("peak RSS %d, KV %d", r.PeakRSS, r.KVBytes)
	}
	if got.MemBW != nil || got.DecodeBoundTPS != 0 {
		t.Errorf("bandwidth measured without --membw: %+v", got)
	}

	// --parallel adds the aggregate of concurrent generations.
	out, err = runBenchCmd(t, "-m", path, "-p", "0", "-n", "4", "-r", "2", "-t", "1", "--parallel", "3", "--json")
	if err != nil {
		t.Fatal(err)
	}
	got = benchOutput{}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if r := got.BenchReport.Results; len(r) != 2 || r[0].Test != "tg4" || r[1].Test != "tg4x3" || r[1].Tokens != 12 ||
		len(r[1].Samples) != 2 || r[1].Mean <= 0 {
		t.Errorf("--parallel 3 results %+v: want tg4 and tg4x3", r)
	}

	// -d runs both tests after a context, and sizes the KV cache for it:
	// 6 layers × K and V × 2 KV heads of 64 × F16 = 3 KiB per token.
	out, err = runBenchCmd(t, "-m", path, "-p", "8", "-n", "4", "-d", "48", "-r", "1", "-t", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	got = benchOutput{}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if r := got.BenchReport; len(r.Results) != 2 || r.Results[0].Test != "pp8 @ d48" || r.Results[1].Test != "tg4 @ d48" ||
		r.ContextLength != 48+8+16 || r.KVBytesPerToken != 3072 || r.KVBytes != 3072*80 {
		t.Errorf("-d 48: context %d, KV %d (%v per token), results %+v", r.ContextLength, r.KVBytes, r.KVBytesPerToken, r.Results)
	}
	// --ctx sizes the cache for a longer context than the tests need.
	out, err = runBenchCmd(t, "-m", path, "-p", "0", "-n", "0", "--ctx", "32768", "-t", "1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "KV cache: 96.0 MiB for a context of 32768 tokens, 3.0 KiB per token") {
		t.Errorf("--ctx 32768:\n%s", out)
	}

	out, err = runBenchCmd(t, "-m", path, "-p", "8", "-n", "4", "-r", "1", "-t", "1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| model ", "| ruvllm-test-qwen2-13m-q8_0 Q8_0 ", "pp8 |", "tg4 |", "peak RSS ", "+ 64 MiB ="} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}

	// The columns line up: every row has its bars where the header has them.
	var bars []int
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		var at []int
		for i, r := range []rune(line) {
			if r == '|' {
				at = append(at, i)
			}
		}
		if bars == nil {
			bars = at
		} else if fmt.Sprint(at) != fmt.Sprint(bars) {
			t.Errorf("misaligned row %q: bars at %v, header's at %v", line, at, bars)
		}
	}
	if len(bars) != 8 {
		t.Errorf("table header has %d bars, want 8:\n%s", len(bars), out)
	}

	if _, err := runBenchCmd(t, "-p", "8"); err == nil {
		t.Error("no -m and no --membw: no error")
	}
}

// TestBenchKVPromptRefused: --kv-prompt under one KV block (16 tokens)
// is refused by name before the model loads; -1 and 5 panicked in the
// prefix capacity.
func TestBenchKVPromptRefused(t *testing.T) {
	path := sharedModel(t, "ruvllm-test-qwen2-13m-q8_0.gguf")
	for _, n := range []string{"-1", "0", "5", "15"} {
		t.Run(n, func(t *testing.T) {
			_, err := runBenchCmd(t, "-m", path, "-p", "0", "-n", "0", "-t", "1", "--kv-types", "f16", "--kv-ctx", "64", "--kv-prompt", n)
			if err == nil || !strings.Contains(err.Error(), "--kv-prompt "+n) {
				t.Errorf("--kv-prompt %s: %v, want an error naming --kv-prompt", n, err)
			}
		})
	}
}

// TestBenchEmptyPPLFileRefused: an empty --ppl-file fails as a text too
// short for one chunk, as `ruvllm perplexity` does; the KV report was
// printed without its perplexity column, without a word.
func TestBenchEmptyPPLFileRefused(t *testing.T) {
	path := sharedModel(t, "ruvllm-test-qwen2-13m-q8_0.gguf")
	for _, text := range []string{"", "\n"} {
		file := filepath.Join(t.TempDir(), "text.txt")
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := runBenchCmd(t, "-m", path, "-p", "0", "-n", "0", "-t", "1", "--kv-types", "f16", "--kv-ctx", "64", "--kv-prompt", "16", "--ppl-file", file)
		if err == nil || !strings.Contains(err.Error(), "tokens for one chunk") {
			t.Errorf("--ppl-file of %q: %v, want an error that the text is too short", text, err)
		}
	}
}

// TestBenchParallelNotIgnored: --parallel where the parallel test cannot
// run (with -d, with -n 0, or of one sequence) is refused by name; it was
// accepted and no tgNxP line came.
func TestBenchParallelNotIgnored(t *testing.T) {
	path := sharedModel(t, "ruvllm-test-qwen2-13m-q8_0.gguf")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-p", "8", "-n", "4", "-d", "16", "--parallel", "2"}, "--parallel 2 with -d 16"},
		{[]string{"-p", "8", "-n", "0", "--parallel", "2"}, "--parallel 2 with -n 0"},
		{[]string{"-p", "8", "-n", "4", "--parallel", "1"}, "--parallel 1"},
	} {
		_, err := runBenchCmd(t, append([]string{"-m", path, "-r", "1", "-t", "1"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bench %v: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
}

// TestBenchFlagsThatDoNotApply: the KV report's flags without --kv-types
// and --draft without --spec are refused by name, before the model loads
// (bench --ppl-file FILE printed no perplexity, without a word), and so
// is a KV report context under one token.
func TestBenchFlagsThatDoNotApply(t *testing.T) {
	path := sharedModel(t, "ruvllm-test-qwen2-13m-q8_0.gguf")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--ppl-file", path}, "--ppl-file applies to the KV report"},
		{[]string{"--kv-ctx", "512"}, "--kv-ctx applies to the KV report"},
		{[]string{"--kv-prompt", "64"}, "--kv-prompt applies to the KV report"},
		{[]string{"--kv-hot-window", "64"}, "--kv-hot-window applies to the KV report"},
		{[]string{"--kv-types", "f16", "--kv-ctx", "-5"}, "--kv-ctx -5"},
		{[]string{"--draft", path}, "--draft applies to the speculation workloads"},
	} {
		_, err := runBenchCmd(t, append([]string{"-m", path, "-p", "8", "-n", "4", "-r", "1", "-t", "1"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bench %v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestBenchSpecNeedsTokens: --spec with -n 0 or 1 is refused by name; the
// speculation table showed decode speeds of 0.0 and speed-ups of "NaNx",
// and --json failed on encoding NaN.
func TestBenchSpecNeedsTokens(t *testing.T) {
	path := sharedModel(t, "ruvllm-test-qwen2-13m-q8_0.gguf")
	for _, n := range []string{"0", "1"} {
		_, err := runBenchCmd(t, "-m", path, "-p", "0", "-n", n, "-r", "1", "-t", "1", "--spec", "lookup", "--json")
		if err == nil || !strings.Contains(err.Error(), "-n "+n) {
			t.Errorf("--spec lookup -n %s: %v, want an error naming -n", n, err)
		}
	}
}

// TestBenchDepthWholeBlocks: a depth that is not a multiple of the KV
// block (16 tokens) is refused by name before the model loads; -d 17 ran
// and timed 33 prompt tokens at depth 16 as "pp32 @ d17".
func TestBenchDepthWholeBlocks(t *testing.T) {
	path := sharedModel(t, "ruvllm-test-qwen2-13m-q8_0.gguf")
	for _, d := range []string{"-16", "-5", "5", "15", "17", "100"} {
		t.Run(d, func(t *testing.T) {
			_, err := runBenchCmd(t, "-m", path, "-p", "8", "-n", "4", "-r", "1", "-t", "1", "-d", d)
			if err == nil || !strings.Contains(err.Error(), "-d "+d+": ") || !strings.Contains(err.Error(), "multiple of 16") {
				t.Errorf("-d %s: %v, want an error naming -d and the 16-token block", d, err)
			}
		})
	}
}

// TestBenchCtxExact: --ctx sizes the cache for exactly that context, and
// one too small for the tests is refused by name with the least that
// fits; it was enlarged without a word (--ctx 32 -p 64 ran in 80).
func TestBenchCtxExact(t *testing.T) {
	path := sharedModel(t, "ruvllm-test-qwen2-13m-q8_0.gguf")
	for _, tc := range []struct {
		args []string
		ctx  int    // the context the report shows, when it runs
		want string // the error, when it does not
	}{
		{args: []string{"-p", "64", "-n", "8", "--ctx", "32"}, want: "--ctx 32: -p 64 -n 8 need a context of at least 66 tokens"},
		{args: []string{"-p", "64", "-n", "8", "--ctx", "65"}, want: "--ctx 65: -p 64 -n 8 need a context of at least 66 tokens"},
		{args: []string{"-p", "8", "-n", "4", "-d", "32", "--ctx", "41"}, want: "--ctx 41: -p 8 -n 4 -d 32 need a context of at least 42 tokens"},
		{args: []string{"-p", "64", "-n", "8", "--ctx", "66"}, ctx: 66},
		{args: []string{"-p", "8", "-n", "4", "-d", "32", "--ctx", "42"}, ctx: 42},
		{args: []string{"-p", "8", "-n", "4", "--ctx", "100"}, ctx: 100},
		{args: []string{"-p", "8", "-n", "4"}, ctx: 8 + 16},
	} {
		out, err := runBenchCmd(t, append([]string{"-m", path, "-r", "1", "-t", "1", "--json"}, tc.args...)...)
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("bench %v: %v, want %q", tc.args, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("bench %v: %v", tc.args, err)
			continue
		}
		var got benchOutput
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v in %s", err, out)
		}
		if r := got.BenchReport; r.ContextLength != tc.ctx || len(r.Results) != 2 {
			t.Errorf("bench %v: context %d, results %+v; want a context of %d and both tests", tc.args, r.ContextLength, r.Results, tc.ctx)
		}
	}
}
