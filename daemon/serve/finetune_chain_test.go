package serve

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/daemon/learning"
	"github.com/ruvllm/ruvllm/ipc"
)

// firstLogprob is the log-probability of model's first greedy token for a
// fixed question, with extra fields in the body.
func (d *testDaemon) firstLogprob(t *testing.T, model, extra string) float32 {
	t.Helper()
	body := `{"model":"` + model + `","messages":[{"role":"user","content":"What is a pipe?"}],"max_tokens":2,"temperature":0,"logprobs":true` + extra + `}`
	status, _, b := d.call(t, "POST", "/v1/chat/completions", body, nil)
	var resp struct {
		Choices []struct {
			Logprobs struct {
				Content []struct{ Logprob float32 } `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if status != 200 || json.Unmarshal(b, &resp) != nil || len(resp.Choices) != 1 || len(resp.Choices[0].Logprobs.Content) == 0 {
		t.Fatalf("chat with %s%s: %d %s", model, extra, status, b)
	}
	return resp.Choices[0].Logprobs.Content[0].Logprob
}

// TestFineTuneMadeModels: a fine-tuning job takes a fine-tuned model (as
// OpenAI continues one) or a created model as its model: it trains the
// base with that model's adapters frozen beneath the new one, and the new
// model runs them all and keeps the created model's settings. Both were a
// 400 "not found". The models they are made from cannot be deleted while
// they are (409).
func TestFineTuneMadeModels(t *testing.T) {
	d := startLearning(t, t.TempDir(), learning.Options{Disabled: true})
	file := d.uploadTraining(t)
	job := func(model, suffix string) string {
		t.Helper()
		status, _, b := d.call(t, "POST", "/v1/fine_tuning/jobs", `{"model":"`+model+`","training_file":"`+file.ID+`","suffix":"`+suffix+`","seed":7,"hyperparameters":{"n_epochs":1}}`, nil)
		var j ipc.FineTuningJob
		if status != 200 || json.Unmarshal(b, &j) != nil {
			t.Fatalf("job on %s: %d %s", model, status, b)
		}
		if j.Model != model {
			t.Fatalf("job on %s names its model %q", model, j.Model)
		}
		done := d.waitJob(t, j.ID)
		if done.Status != ipc.JobSucceeded || done.FineTunedModel == nil {
			t.Fatalf("job on %s: %+v", model, done)
		}
		if !regexp.MustCompile(`^ft:tiny-qwen2:` + suffix + `:[0-9a-f]{12}$`).MatchString(*done.FineTunedModel) {
			t.Fatalf("the model of a job on %s is named %q", model, *done.FineTunedModel)
		}
		return *done.FineTunedModel
	}
	first := job("tiny-qwen2", "one")
	second := job(first, "two")
	lpFirst, lpSecond := d.firstLogprob(t, first, ""), d.firstLogprob(t, second, "")
	stacked := d.firstLogprob(t, "tiny-qwen2", `,"adapters":[{"name":"`+first+`"},{"name":"`+second+`"}]`)
	alone := d.firstLogprob(t, "tiny-qwen2", `,"adapters":[{"name":"`+second+`"}]`)
	if lpSecond != stacked || lpSecond == lpFirst || lpSecond == alone {
		t.Fatalf("first-token logprob: first %v; second %v, base with both adapters %v, with the second alone %v", lpFirst, lpSecond, stacked, alone)
	}
	// The second trained with the first beneath it: the same job on the
	// base alone (same seed) learns another adapter.
	control := job("tiny-qwen2", "control")
	if c := d.firstLogprob(t, "tiny-qwen2", `,"adapters":[{"name":"`+control+`"}]`); c == alone {
		t.Fatalf("the second adapter is the one the base alone learns (%v): the first was not beneath it in training", c)
	}

	// A created model: its system prompt stays with the fine-tuned model.
	status, _, b := d.call(t, "POST", "/api/create", `{"model":"brief","stream":false,"from":"`+first+`","system":"Answer briefly."}`, nil)
	if status != 200 {
		t.Fatalf("create: %d %s", status, b)
	}
	third := job("brief", "three")
	status, _, b = d.call(t, "POST", "/api/show", `{"model":"`+third+`"}`, nil)
	if status != 200 || !strings.Contains(string(b), "Answer briefly.") || !strings.Contains(string(b), "ADAPTER "+first) {
		t.Fatalf("show %s: %d %s", third, status, b)
	}

	// The first is part of the others: deleting it is refused until they go.
	if status, _, b := d.call(t, "DELETE", "/api/delete", `{"model":"`+first+`"}`, nil); status != 409 || !strings.Contains(string(b), second) {
		t.Fatalf("deleting a model others are made from: %d %s", status, b)
	}
	for _, name := range []string{second, third, "brief", first} {
		if status, _, b := d.call(t, "DELETE", "/api/delete", `{"model":"`+name+`"}`, nil); status != 200 {
			t.Fatalf("delete %s: %d %s", name, status, b)
		}
	}
}
