package serve

import (
	"encoding/json"
	"testing"

	"github.com/ruvllm/ruvllm/daemon/learning"
	"github.com/ruvllm/ruvllm/ipc"
)

// TestFineTuningRefusesUnknownHyperparameters: a hyperparameter the
// daemon does not know (a misspelling, or OpenAI's names for what it does
// not serve) is a 400 naming it, as the README says, in either place a
// job takes hyperparameters; it used to queue a job that trained with
// "auto" in its place.
func TestFineTuningRefusesUnknownHyperparameters(t *testing.T) {
	d := startLearning(t, t.TempDir(), learning.Options{Disabled: true})
	file := d.uploadTraining(t)
	head := `{"model":"tiny-qwen2","training_file":"` + file.ID + `",`
	for _, c := range []struct{ body, param string }{
		{head + `"hyperparameters":{"learning_rate":0.1}}`, "hyperparameters.learning_rate"},
		{head + `"hyperparameters":{"n_epochs":2,"beta":0.1}}`, "hyperparameters.beta"},
		{head + `"integrations":[{"type":"wandb","wandb":{"project":"p"}}]}`, "integrations"}, // accepted and ignored before
		{head + `"hyperparameters":{"N_EPOCHS":2}}`, "hyperparameters.N_EPOCHS"},
		{head + `"method":{"type":"supervised","supervised":{"hyperparameters":{"epochs":2}}}}`, "method.supervised.hyperparameters.epochs"},
	} {
		status, _, b := d.call(t, "POST", "/v1/fine_tuning/jobs", c.body, nil)
		var e ipc.OpenAIError
		json.Unmarshal(b, &e)
		if status != 400 || e.Error.Param == nil || *e.Error.Param != c.param {
			t.Errorf("job %s: %d %s, want 400 naming %s", c.body, status, b, c.param)
		}
	}
	list, err := d.client.FineTuningJobs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 {
		t.Fatalf("refused requests queued %d jobs", len(list))
	}
}
