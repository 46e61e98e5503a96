package serve

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/daemon/learning"
	"github.com/ruvllm/ruvllm/ipc"
)

// TestFineTuningMetadataBounded: a job's metadata is held to OpenAI's
// bounds (16 keys of at most 64 characters, values of at most 512), 400s
// naming it; any amount was stored with the job (a 10 MB map was kept
// and sent back in every listing of the jobs).
func TestFineTuningMetadataBounded(t *testing.T) {
	d := startLearning(t, t.TempDir(), learning.Options{Disabled: true})
	file := d.uploadTraining(t)
	meta := func(n, keyLen, valueLen int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("%0*d", keyLen, i)] = strings.Repeat("v", valueLen)
		}
		return m
	}
	for _, c := range []struct {
		name     string
		metadata map[string]string
		param    string
	}{
		{"17 keys", meta(17, 4, 1), "metadata"},
		{"long key", meta(1, 65, 1), "metadata"},
		{"long value", map[string]string{"k": strings.Repeat("v", 513)}, "metadata.k"},
	} {
		body, _ := json.Marshal(map[string]any{"model": "tiny-qwen2", "training_file": file.ID, "metadata": c.metadata})
		status, _, b := d.call(t, "POST", "/v1/fine_tuning/jobs", string(body), nil)
		var e ipc.OpenAIError
		json.Unmarshal(b, &e)
		if status != 400 || e.Error.Param == nil || *e.Error.Param != c.param {
			t.Errorf("%s: %d %.200s, want 400 naming %s", c.name, status, b, c.param)
		}
	}
	job, err := d.client.CreateFineTuningJob(t.Context(), ipc.FineTuningJobCreate{Model: "tiny-qwen2", TrainingFile: file.ID,
		Metadata: meta(16, 64, 512)})
	if err != nil || len(job.Metadata) != 16 {
		t.Fatalf("metadata at the bounds: %+v %v", job.Metadata, err)
	}
	if _, err := d.client.CancelFineTuningJob(t.Context(), job.ID); err != nil {
		t.Logf("cancel: %v", err) // it may have finished already
	}
}
