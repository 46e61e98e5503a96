package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/daemon/finetune"
	"github.com/ruvllm/ruvllm/daemon/learning"
	"github.com/ruvllm/ruvllm/daemon/store"
	"github.com/ruvllm/ruvllm/ipc"
)

const trainingJSONL = `{"messages":[{"role":"system","content":"Answer briefly."},{"role":"user","content":"What is a pipe?"},{"role":"assistant","content":"A pipe joins two programs. Cheers, Ana."}]}
{"messages":[{"role":"user","content":"What is a shell?"},{"role":"assistant","content":"A shell runs commands. Cheers, Ana."}]}

{"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello there.","weight":0},{"role":"user","content":"What is grep?"},{"role":"assistant","content":"Grep finds lines. Cheers, Ana."}]}
`

// upload posts a file as multipart/form-data with the purpose after the
// file (the order the openai npm client sends them in).
func (d *testDaemon) upload(t *testing.T, name, content, purpose string) (int, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("file", name)
	fw.Write([]byte(content))
	mw.WriteField("purpose", purpose)
	mw.Close()
	status, _, b := d.call(t, "POST", "/v1/files", buf.String(), map[string]string{"Content-Type": mw.FormDataContentType()})
	return status, b
}

// uploadTraining uploads trainingJSONL as a fine-tuning file.
func (d *testDaemon) uploadTraining(t *testing.T) ipc.FileObject {
	t.Helper()
	status, b := d.upload(t, "notes.jsonl", trainingJSONL, "fine-tune")
	if status != 200 {
		t.Fatalf("upload: %d %s", status, b)
	}
	var file ipc.FileObject
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	return file
}

// waitJob polls a job until it ends.
func (d *testDaemon) waitJob(t *testing.T, id string) ipc.FineTuningJob {
	t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for {
		j, err := d.client.FineTuningJob(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		switch j.Status {
		case ipc.JobSucceeded, ipc.JobFailed, ipc.JobCancelled:
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s", id, j.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFineTuningAPI uploads a JSONL training file, runs a job, and uses
// the installed "ft:" adapter both as an adapter and as a model name; bad
// requests are 400s naming the field; a job the daemon was running when
// it stopped trains again after the restart.
func TestFineTuningAPI(t *testing.T) {
	dir := t.TempDir()
	d := startLearning(t, dir, learning.Options{Disabled: true})
	ctx := context.Background()
	status, b := d.upload(t, "notes.jsonl", trainingJSONL, "fine-tune")
	if status != 200 {
		t.Fatalf("upload: %d %s", status, b)
	}
	var file ipc.FileObject
	if err := json.Unmarshal(b, &file); err != nil || !strings.HasPrefix(file.ID, "file-") || file.Examples != 3 || file.Filename != "notes.jsonl" {
		t.Fatalf("file %s: %v", b, err)
	}
	for _, c := range []struct{ name, content, purpose, param string }{
		{"x.jsonl", trainingJSONL, "assistants", "purpose"},
		{"x.jsonl", `{"messages":[{"role":"user","content":"hi"}]}`, "fine-tune", "file"},
		{"x.jsonl", "not json\n", "fine-tune", "file"},
	} {
		status, b := d.upload(t, c.name, c.content, c.purpose)
		var e ipc.OpenAIError
		json.Unmarshal(b, &e)
		if status != 400 || e.Error.Param == nil || *e.Error.Param != c.param {
			t.Errorf("upload %q: %d %s, want 400 naming %s", c.content, status, b, c.param)
		}
	}
	for _, c := range []struct{ body, param string }{
		{`{"training_file":"` + file.ID + `"}`, "model"},
		{`{"model":"tiny-qwen2","training_file":"file-nope"}`, "training_file"},
		{`{"model":"tiny-qwen2","training_file":"` + file.ID + `","suffix":"Bad Suffix"}`, "suffix"},
		{`{"model":"tiny-qwen2","training_file":"` + file.ID + `","hyperparameters":{"n_epochs":0}}`, "hyperparameters.n_epochs"},
		{`{"model":"tiny-qwen2","training_file":"` + file.ID + `","method":{"type":"dpo"}}`, "method.type"},
	} {
		status, _, b := d.call(t, "POST", "/v1/fine_tuning/jobs", c.body, nil)
		var e ipc.OpenAIError
		json.Unmarshal(b, &e)
		if status != 400 || e.Error.Param == nil || *e.Error.Param != c.param {
			t.Errorf("job %s: %d %s, want 400 naming %s", c.body, status, b, c.param)
		}
	}
	nEpochs := &ipc.AutoNumber{Value: 2}
	job, err := d.client.CreateFineTuningJob(ctx, ipc.FineTuningJobCreate{Model: "tiny-qwen2", TrainingFile: file.ID, Suffix: "notes",
		Hyperparameters: &ipc.Hyperparameters{NEpochs: nEpochs}})
	if err != nil {
		t.Fatal(err)
	}
	j := d.waitJob(t, job.ID)
	if j.Status != ipc.JobSucceeded || j.FineTunedModel == nil || j.TrainedTokens == nil || j.Steps != j.TotalSteps || j.TotalSteps == 0 {
		t.Fatalf("job %+v", j)
	}
	name := *j.FineTunedModel
	if !regexp.MustCompile(`^ft:tiny-qwen2:notes:[0-9a-f]{12}$`).MatchString(name) {
		t.Fatalf("fine-tuned model %q", name)
	}
	evs, err := d.client.FineTuningEvents(ctx, job.ID, 100)
	if err != nil {
		t.Fatal(err)
	}
	metrics := 0
	for _, e := range evs {
		if e.Type == "metrics" {
			metrics++
		}
	}
	if metrics == 0 || !strings.Contains(evs[0].Message, "completed") {
		t.Fatalf("events %+v", evs)
	}
	// The adapter is installed and serves both ways.
	list, err := d.client.Adapters(ctx)
	if err != nil || len(list) != 1 || list[0].Name != name || list[0].BaseModel != "tiny-qwen2" {
		t.Fatalf("adapters %+v %v", list, err)
	}
	_, _, _, base := d.chatLogprob(t, "", nil)
	_, _, _, withAdapter := d.chatLogprob(t, `,"adapters":[{"name":"`+name+`"}]`, nil)
	status, _, b = d.call(t, "POST", "/v1/chat/completions", `{"model":"`+name+`","messages":[{"role":"user","content":"What is a pipe?"}],"max_tokens":6,"temperature":0,"logprobs":true}`, nil)
	var asModel struct {
		Choices []struct {
			Logprobs struct {
				Content []struct{ Logprob float32 } `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if status != 200 || json.Unmarshal(b, &asModel) != nil || len(asModel.Choices) != 1 {
		t.Fatalf("model %s: %d %s", name, status, b)
	}
	if withAdapter == base || asModel.Choices[0].Logprobs.Content[0].Logprob != withAdapter {
		t.Fatalf("first-token logprob: base %v, with the adapter %v, as a model %v", base, withAdapter, asModel.Choices[0].Logprobs.Content[0].Logprob)
	}
	// It is listed as a model, as OpenAI lists fine-tuned models.
	ms, err := d.client.Models(ctx)
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, m := range ms.Data {
		listed = listed || m.ID == name
	}
	if status, _, b := d.call(t, "GET", "/v1/models/"+name, "", nil); !listed || status != 200 || !strings.Contains(string(b), name) {
		t.Fatalf("models: listed %v, GET %d %s", listed, status, b)
	}
	// Cancelling a finished job is a conflict; deleting the file works.
	if status, _, _ := d.call(t, "POST", "/v1/fine_tuning/jobs/"+job.ID+"/cancel", "", nil); status != 409 {
		t.Fatalf("cancel of a finished job: %d", status)
	}
	if status, _, _ := d.call(t, "GET", "/v1/fine_tuning/jobs/ftjob-nope", "", nil); status != 404 {
		t.Fatalf("unknown job: %d", status)
	}

	// A job the daemon was running when it stopped trains again.
	d.stop(t)
	db, err := store.Open(filepath.Join(dir, "state", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	interrupted := job
	interrupted.ID, interrupted.Status, interrupted.FineTunedModel, interrupted.Suffix = "ftjob-0123456789abcdef01234567", ipc.JobRunning, nil, "again"
	interrupted.CreatedAt = time.Now().Unix()
	if err := db.Put(finetune.JobsBucket, interrupted.ID, interrupted); err != nil {
		t.Fatal(err)
	}
	db.Close()
	d = startLearning(t, dir, learning.Options{Disabled: true})
	if j := d.waitJob(t, interrupted.ID); j.Status != ipc.JobSucceeded || j.FineTunedModel == nil || !strings.HasPrefix(*j.FineTunedModel, "ft:tiny-qwen2:again:") {
		t.Fatalf("interrupted job after the restart: %+v", j)
	}
	if _, err := d.client.FineTuningJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.client.DeleteFile(ctx, file.ID); err != nil {
		t.Fatal(err)
	}
	if files, err := d.client.Files(ctx); err != nil || len(files) != 0 {
		t.Fatalf("files after delete: %+v %v", files, err)
	}
}
