package ipc

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
)

// The OpenAI files and fine-tuning API, as ruvllmd serves it: training
// files are JSONL chat examples ({"messages": [...]}, one per line), and
// a job trains a LoRA adapter over a loaded model, installed when it
// succeeds as "ft:<model>:<suffix>:<job id>" (usable like any adapter,
// or as the model name of a request).

// FilePurposeFineTune is the purpose of training files.
const FilePurposeFineTune = "fine-tune"

// FileObject is an uploaded file (OpenAI's file object).
type FileObject struct {
	ID        string `json:"id"`
	Object    string `json:"object"` // "file"
	Bytes     int64  `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
	Status    string `json:"status"` // "processed"
	// Examples is the number of training examples (assistant turns) the
	// file holds: a ruvllm extension.
	Examples int `json:"examples,omitempty"`
}

// FileList answers GET /v1/files.
type FileList struct {
	Object  string       `json:"object"` // "list"
	Data    []FileObject `json:"data"`
	HasMore bool         `json:"has_more"`
}

// DeletedObject answers DELETE /v1/files/{id}.
type DeletedObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// Fine-tuning job statuses.
const (
	JobValidating = "validating_files"
	JobQueued     = "queued"
	JobRunning    = "running"
	JobSucceeded  = "succeeded"
	JobFailed     = "failed"
	JobCancelled  = "cancelled"
)

// AutoNumber is a hyperparameter: the string "auto" (the daemon picks)
// or a number.
type AutoNumber struct {
	Auto  bool
	Value float64
}

// MarshalJSON writes "auto" or the number.
func (n AutoNumber) MarshalJSON() ([]byte, error) {
	if n.Auto {
		return []byte(`"auto"`), nil
	}
	return json.Marshal(n.Value)
}

// UnmarshalJSON reads "auto" or a number.
func (n *AutoNumber) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == `"auto"` || string(b) == "null" {
		*n = AutoNumber{Auto: true}
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		// A type error, so that the decoder adds the field's path (a
		// server's error can name "hyperparameters.n_epochs").
		return &json.UnmarshalTypeError{Value: jsonValueKind(b), Type: reflect.TypeFor[AutoNumber]()}
	}
	*n = AutoNumber{Value: v}
	return nil
}

// jsonValueKind names the kind of the JSON value b, as the decoder's type
// errors do: "string", "number", "object", "array" or "bool".
func jsonValueKind(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	}
	return "number"
}

// Hyperparameters of a fine-tuning job. Absent fields are "auto".
type Hyperparameters struct {
	NEpochs                *AutoNumber `json:"n_epochs,omitempty"`
	BatchSize              *AutoNumber `json:"batch_size,omitempty"`
	LearningRateMultiplier *AutoNumber `json:"learning_rate_multiplier,omitempty"`
	// LoRARank is the adapter's rank (ruvllm extension; default 8).
	LoRARank *AutoNumber `json:"lora_rank,omitempty"`
	// Unknown lists, sorted, the keys of the decoded JSON object that name
	// none of the above (a misspelt or unsupported hyperparameter), so that
	// the server can refuse them instead of training with "auto". Never
	// encoded.
	Unknown []string `json:"-"`
}

// HyperparameterNames are the JSON keys of Hyperparameters.
var HyperparameterNames = []string{"n_epochs", "batch_size", "learning_rate_multiplier", "lora_rank"}

// UnmarshalJSON decodes the known hyperparameters and records the other
// keys in Unknown.
func (h *Hyperparameters) UnmarshalJSON(b []byte) error {
	type plain Hyperparameters
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	p.Unknown = nil
	for k := range keys {
		if !slices.Contains(HyperparameterNames, k) {
			p.Unknown = append(p.Unknown, k)
		}
	}
	slices.Sort(p.Unknown)
	*h = Hyperparameters(p)
	return nil
}

// FineTuneMethod is OpenAI's "method" of a job; only "supervised" is
// served.
type FineTuneMethod struct {
	Type       string `json:"type"`
	Supervised *struct {
		Hyperparameters *Hyperparameters `json:"hyperparameters,omitempty"`
	} `json:"supervised,omitempty"`
}

// FineTuningJobCreate is the body of POST /v1/fine_tuning/jobs.
type FineTuningJobCreate struct {
	Model           string            `json:"model"`
	TrainingFile    string            `json:"training_file"`
	ValidationFile  string            `json:"validation_file,omitempty"`
	Suffix          string            `json:"suffix,omitempty"`
	Seed            *int64            `json:"seed,omitempty"`
	Hyperparameters *Hyperparameters  `json:"hyperparameters,omitempty"`
	Method          *FineTuneMethod   `json:"method,omitempty"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	Integrations    []json.RawMessage `json:"integrations,omitempty"`
}

// JobError is why a job failed.
type JobError struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
}

// FineTuningJob is a fine-tuning job (OpenAI's fine_tuning.job object).
type FineTuningJob struct {
	ID              string            `json:"id"`
	Object          string            `json:"object"` // "fine_tuning.job"
	Model           string            `json:"model"`
	CreatedAt       int64             `json:"created_at"`
	FinishedAt      *int64            `json:"finished_at"`
	FineTunedModel  *string           `json:"fine_tuned_model"`
	OrganizationID  string            `json:"organization_id"`
	ResultFiles     []string          `json:"result_files"`
	Status          string            `json:"status"`
	TrainingFile    string            `json:"training_file"`
	ValidationFile  *string           `json:"validation_file"`
	Hyperparameters Hyperparameters   `json:"hyperparameters"`
	TrainedTokens   *int64            `json:"trained_tokens"`
	Error           *JobError         `json:"error"`
	Seed            int64             `json:"seed"`
	EstimatedFinish *int64            `json:"estimated_finish"`
	Integrations    []json.RawMessage `json:"integrations"`
	Metadata        map[string]string `json:"metadata"`
	Method          *FineTuneMethod   `json:"method,omitempty"`
	// Suffix is the name part the job was given (ruvllm keeps it to name
	// the adapter).
	Suffix string `json:"user_provided_suffix,omitempty"`
	// Steps and TotalSteps report progress (ruvllm extension).
	Steps      int `json:"steps"`
	TotalSteps int `json:"total_steps"`
}

// FineTuningJobList answers GET /v1/fine_tuning/jobs.
type FineTuningJobList struct {
	Object  string          `json:"object"`
	Data    []FineTuningJob `json:"data"`
	HasMore bool            `json:"has_more"`
}

// FineTuningEvent is one event of a job (newest first in lists). Type
// "metrics" events carry Data {"step", "total_steps", "train_loss"}.
type FineTuningEvent struct {
	ID        string         `json:"id"`
	Object    string         `json:"object"` // "fine_tuning.job.event"
	CreatedAt int64          `json:"created_at"`
	Level     string         `json:"level"`
	Message   string         `json:"message"`
	Type      string         `json:"type"` // "message" or "metrics"
	Data      map[string]any `json:"data,omitempty"`
}

// FineTuningEventList answers GET /v1/fine_tuning/jobs/{id}/events.
type FineTuningEventList struct {
	Object  string            `json:"object"`
	Data    []FineTuningEvent `json:"data"`
	HasMore bool              `json:"has_more"`
}

// UploadFile uploads a training file (purpose "fine-tune"), streamed; it
// must be a regular file (see openUpload).
func (c *Client) UploadFile(ctx context.Context, path, purpose string) (FileObject, error) {
	var out FileObject
	f, err := openUpload(path, "upload file")
	if err != nil {
		return out, err
	}
	defer f.Close()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		err := mw.WriteField("purpose", purpose)
		if err == nil {
			var part io.Writer
			if part, err = mw.CreateFormFile("file", filepath.Base(path)); err == nil {
				if _, err = io.Copy(part, f); err == nil {
					err = mw.Close()
				}
			}
		}
		pw.CloseWithError(err)
	}()
	err = c.DoRaw(ctx, http.MethodPost, "/v1/files", mw.FormDataContentType(), pr, &out)
	// A request that ended before reading the whole body ends the writer.
	pr.Close()
	<-copied
	return out, err
}

// Files lists the uploaded files.
func (c *Client) Files(ctx context.Context) ([]FileObject, error) {
	var out FileList
	err := c.Do(ctx, http.MethodGet, "/v1/files", nil, &out)
	return out.Data, err
}

// DeleteFile deletes an uploaded file.
func (c *Client) DeleteFile(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/files/"+url.PathEscape(id), nil, nil)
}

// CreateFineTuningJob starts a fine-tuning job.
func (c *Client) CreateFineTuningJob(ctx context.Context, req FineTuningJobCreate) (FineTuningJob, error) {
	var out FineTuningJob
	err := c.Do(ctx, http.MethodPost, "/v1/fine_tuning/jobs", req, &out)
	return out, err
}

// FineTuningJob returns a job.
func (c *Client) FineTuningJob(ctx context.Context, id string) (FineTuningJob, error) {
	var out FineTuningJob
	err := c.Do(ctx, http.MethodGet, "/v1/fine_tuning/jobs/"+url.PathEscape(id), nil, &out)
	return out, err
}

// FineTuningJobs lists the jobs, newest first.
func (c *Client) FineTuningJobs(ctx context.Context) ([]FineTuningJob, error) {
	var out FineTuningJobList
	err := c.Do(ctx, http.MethodGet, "/v1/fine_tuning/jobs", nil, &out)
	return out.Data, err
}

// FineTuningEvents returns a job's events, newest first.
func (c *Client) FineTuningEvents(ctx context.Context, id string, limit int) ([]FineTuningEvent, error) {
	var out FineTuningEventList
	err := c.Do(ctx, http.MethodGet, "/v1/fine_tuning/jobs/"+url.PathEscape(id)+"/events?limit="+strconv.Itoa(limit), nil, &out)
	return out.Data, err
}

// CancelFineTuningJob cancels a queued or running job.
func (c *Client) CancelFineTuningJob(ctx context.Context, id string) (FineTuningJob, error) {
	var out FineTuningJob
	err := c.Do(ctx, http.MethodPost, "/v1/fine_tuning/jobs/"+url.PathEscape(id)+"/cancel", nil, &out)
	return out, err
}
