package serve

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/ruvllm/ruvllm/daemon/learning"
	"github.com/ruvllm/ruvllm/ipc"
)

// TestFineTuningModelByPathRefused: a job whose model is given by path is
// refused when it is created, naming the model; it was queued, trained
// to the end and then failed, as "ft:/path/…" is no fine-tuned model name.
func TestFineTuningModelByPathRefused(t *testing.T) {
	// A lower-case directory: the job lower-cases its model's name, and
	// t.TempDir's path holds the test's name.
	dir, err := os.MkdirTemp("", "rvftpath")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := startLearning(t, dir, learning.Options{Disabled: true})
	file := d.uploadTraining(t)
	body, _ := json.Marshal(map[string]any{"model": d.model, "training_file": file.ID})
	status, _, b := d.call(t, "POST", "/v1/fine_tuning/jobs", string(body), nil)
	var e ipc.OpenAIError
	json.Unmarshal(b, &e)
	if status != 400 || e.Error.Param == nil || *e.Error.Param != "model" {
		t.Fatalf("job on %s: %d %s, want 400 naming model", d.model, status, b)
	}
	if list, err := d.client.FineTuningJobs(t.Context()); err != nil || len(list) != 0 {
		t.Fatalf("jobs %+v %v, want none", list, err)
	}
}
