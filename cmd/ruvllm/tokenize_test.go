package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sharedModel finds shared/models/<name> above the package directory.
func sharedModel(t *testing.T, name string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, "shared", "models", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skipf("shared model %s not found above the package", name)
		}
		dir = parent
	}
}

func TestTokenizeCmd(t *testing.T) {
	llama := sharedModel(t, "ruvllm-test-llama-19m-f16.gguf")
	qwen := sharedModel(t, "ruvllm-test-qwen2-13m-f16.gguf")
	for _, tc := range []struct {
		args []string
		want string
	}{
		// Ids as llama.cpp gave them (shared/golden).
		{[]string{"-m", llama, "The kernel"}, "[1,348,591]"},
		{[]string{"-m", llama, "--no-bos", "Hello world"}, "[5749,308,3077]"},
		{[]string{"-m", qwen, "--special", "<|endoftext|>"}, "[0]"},
		{[]string{"-m", qwen, "<|endoftext|>"}, "[30,94,468,81,802,590,94,32]"},
		{[]string{"-m", qwen, "--special", "--pieces", "<|im_end|>"}, `[[2,"<|im_end|>"]]`},
		{[]string{"-m", llama, ""}, "[1]"},
	} {
		cmd := newTokenizeCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs(tc.args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got := strings.TrimSpace(out.String()); got != tc.want {
			t.Errorf("tokenize %v = %s, want %s", tc.args[1:], got, tc.want)
		}
	}
	cmd := newTokenizeCmd()
	cmd.SetArgs([]string{"text"})
	cmd.SetOut(&bytes.Buffer{})
	if err := cmd.Execute(); err == nil {
		t.Error("tokenize without -m succeeded")
	}
}
