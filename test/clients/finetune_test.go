package clients

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNPMFineTuning runs finetune.mjs: the official openai npm client
// uploads a training file, runs a fine-tuning job to its end, follows its
// events, chats with the fine-tuned model and cancels a job.
func TestNPMFineTuning(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	if _, err := os.Stat(filepath.Join("node_modules", "openai", "package.json")); err != nil {
		t.Skip("node_modules/openai missing: run `npm ci` in test/clients")
	}
	d := startDaemon(t, "ruvllm-test-qwen2-13m-q8_0", false)
	ctx, stop := context.WithTimeout(context.Background(), 4*time.Minute)
	defer stop()
	cmd := exec.CommandContext(ctx, node, "finetune.mjs")
	cmd.Env = append(os.Environ(), "RUVLLM_URL=http://"+d.addr, "RUVLLM_TOKEN="+d.token, "RUVLLM_MODEL="+d.model)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("finetune.mjs: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("finetune.mjs output: %s", out)
	}
	t.Logf("%s", out)
}
