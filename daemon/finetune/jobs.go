package finetune

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ruvllm/ruvllm/daemon/adapters"
	"github.com/ruvllm/ruvllm/daemon/models"
	"github.com/ruvllm/ruvllm/daemon/store"
	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
	"github.com/ruvllm/ruvllm/engine/train"
	"github.com/ruvllm/ruvllm/ipc"
)

// MaxAttempts is how many times a job starts (the first run and the runs
// after restarts that interrupted it) before it is failed.
const MaxAttempts = 3

// Bounds on hyperparameters.
const (
	maxEpochs = 50
	maxBatch  = 64
	// maxExampleTokens bounds one training example (the end of a long
	// prompt is kept).
	maxExampleTokens = 1024
	// baseLR is the AdamW learning rate at multiplier 1.
	baseLR = 1e-3
)

// Publisher receives job events ("fine_tuning.job" with the job,
// "fine_tuning.job.event" with {job_id, event}).
type Publisher interface{ Publish(typ string, data any) }

// Options configures a Service.
type Options struct {
	// Dir holds the uploaded files.
	Dir      string
	Store    *store.DB
	Events   Publisher
	Logger   *slog.Logger
	Models   *models.Manager
	Adapters *adapters.Pool
	// Expand resolves a created or fine-tuned model name (nil for a model
	// the manager serves as it is): a job on such a model trains its base
	// with the model's adapters frozen beneath the new one, and the
	// fine-tuned model keeps the model's settings.
	Expand func(model string) (*ipc.ModelManifest, error)
	// Threads of the trainer (default: the model's).
	Threads int
	// MaxFileBytes bounds an upload (default DefaultMaxFileBytes).
	MaxFileBytes int64
	// DenseBytes bounds the trainer's float32 weight copies (default
	// 256 MiB).
	DenseBytes int64
}

// Service serves the files and fine-tuning API.
type Service struct {
	o   Options
	log *slog.Logger

	mu      sync.Mutex
	cancels map[string]context.CancelFunc // running job → cancel
	wake    chan struct{}
	ctx     context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

// New returns a service; Start runs its jobs.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.DenseBytes <= 0 {
		o.DenseBytes = 256 << 20
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Service{o: o, log: o.Logger, cancels: map[string]context.CancelFunc{}, wake: make(chan struct{}, 1), ctx: ctx, stop: cancel}
}

// jobRecord is a stored job.
type jobRecord struct {
	ipc.FineTuningJob
	Attempts int `json:"ruvllm_attempts"`
	// From is the job's model resolved when it is a created or
	// fine-tuned one (Options.Expand), as it was when the job was made.
	From *ipc.ModelManifest `json:"ruvllm_from,omitempty"`
}

// baseModel is the model file a job trains: its model, or the base of a
// created or fine-tuned one.
func (j *jobRecord) baseModel() string {
	if j.From != nil {
		return j.From.From
	}
	return j.Model
}

// Start puts the jobs a stopped daemon left running back in the queue
// (failing those that already started MaxAttempts times) and runs the
// queue in the background until Close.
func (s *Service) Start() error {
	jobs, err := s.records()
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if j.Status != ipc.JobRunning && j.Status != ipc.JobValidating {
			continue
		}
		if j.Attempts >= MaxAttempts {
			s.finish(j, ipc.JobFailed, &ipc.JobError{Code: "interrupted", Message: fmt.Sprintf("the daemon stopped during this job %d times", j.Attempts)})
			continue
		}
		j.Status = ipc.JobQueued
		s.put(j)
		s.event(j.ID, "warn", "The daemon stopped while the job ran; it starts again from the beginning", nil)
	}
	s.wg.Go(s.runner)
	return nil
}

// Close stops the runner; a job in progress goes back to the queue (it
// trains again when the daemon restarts).
func (s *Service) Close(ctx context.Context) error {
	s.stop()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Service) records() ([]jobRecord, error) {
	var out []jobRecord
	err := s.o.Store.List(JobsBucket, func(_ string, v []byte) error {
		var j jobRecord
		if json.Unmarshal(v, &j) == nil {
			out = append(out, j)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b jobRecord) int {
		if a.CreatedAt != b.CreatedAt {
			return int(a.CreatedAt - b.CreatedAt)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, err
}

func (s *Service) put(j jobRecord) error {
	if err := s.o.Store.Put(JobsBucket, j.ID, j); err != nil {
		return err
	}
	if s.o.Events != nil {
		s.o.Events.Publish("fine_tuning.job", j.FineTuningJob)
	}
	return nil
}

func (s *Service) job(id string) (jobRecord, error) {
	var j jobRecord
	if err := s.o.Store.Get(JobsBucket, id, &j); err != nil {
		return j, fmt.Errorf("fine-tuning job %q: %w", id, ErrNotFound)
	}
	return j, nil
}

// event records a job event.
func (s *Service) event(jobID, level, msg string, data map[string]any) {
	typ := "message"
	if data != nil {
		typ = "metrics"
	}
	now := time.Now()
	ev := ipc.FineTuningEvent{ID: newID("ftevent-"), Object: "fine_tuning.job.event", CreatedAt: now.Unix(), Level: level, Message: msg, Type: typ, Data: data}
	key := fmt.Sprintf("%s/%016x", jobID, now.UnixNano())
	if err := s.o.Store.Put(EventsBucket, key, ev); err != nil {
		s.log.Warn("fine-tuning event not stored", "job", jobID, "err", err)
	}
	if s.o.Events != nil {
		s.o.Events.Publish("fine_tuning.job.event", map[string]any{"job_id": jobID, "event": ev})
	}
}

var suffixRE = regexp.MustCompile(`^[a-z0-9._-]{0,64}$`)

// Create validates a job request and queues the job.
func (s *Service) Create(req ipc.FineTuningJobCreate) (ipc.FineTuningJob, error) {
	if req.Model == "" {
		return ipc.FineTuningJob{}, paramErr("model", "is required")
	}
	model := strings.ToLower(req.Model)
	var from *ipc.ModelManifest
	if s.o.Expand != nil {
		var err error
		if from, err = s.o.Expand(model); err != nil {
			return ipc.FineTuningJob{}, paramErr("model", "%q: %v", req.Model, err)
		}
	}
	j0 := jobRecord{From: from}
	j0.Model = model
	if _, err := s.o.Models.Resolve(j0.baseModel()); err != nil {
		return ipc.FineTuningJob{}, paramErr("model", "%q: %v", req.Model, err)
	}
	if req.TrainingFile == "" {
		return ipc.FineTuningJob{}, paramErr("training_file", "is required")
	}
	if _, err := s.file(req.TrainingFile); err != nil {
		return ipc.FineTuningJob{}, paramErr("training_file", "%q is not an uploaded file (POST /v1/files)", req.TrainingFile)
	}
	if req.ValidationFile != "" {
		if _, err := s.file(req.ValidationFile); err != nil {
			return ipc.FineTuningJob{}, paramErr("validation_file", "%q is not an uploaded file", req.ValidationFile)
		}
	}
	if !suffixRE.MatchString(req.Suffix) {
		return ipc.FineTuningJob{}, paramErr("suffix", "must be up to 64 of a-z, 0-9, '.', '_' and '-', not %q", req.Suffix)
	}
	// The job's adapter is named after the model: a model given by path
	// (or too long a name) makes no valid name, which the job would only
	// find out after training, when installing its adapter.
	if filepath.IsAbs(model) || strings.HasSuffix(model, ".gguf") || !adapters.IsFineTuned(AdapterName(j0.nameBase(), req.Suffix, "ftjob-000000000000")) {
		return ipc.FineTuningJob{}, paramErr("model", "%q cannot name a fine-tuned model (ft:<model>:<suffix>:<id>): name the model as GET /v1/models lists it, not by path", req.Model)
	}
	if err := checkMetadata(req.Metadata); err != nil {
		return ipc.FineTuningJob{}, err
	}
	if len(req.Integrations) > 0 {
		// OpenAI's Weights & Biases integration: nothing here reports to it.
		return ipc.FineTuningJob{}, paramErr("integrations", "are not supported (a job's metrics are in its events)")
	}
	hp := req.Hyperparameters
	param := "hyperparameters"
	if req.Method != nil {
		if req.Method.Type != "supervised" {
			return ipc.FineTuningJob{}, paramErr("method.type", "must be \"supervised\" (the only method served), not %q", req.Method.Type)
		}
		if req.Method.Supervised != nil && req.Method.Supervised.Hyperparameters != nil {
			hp, param = req.Method.Supervised.Hyperparameters, "method.supervised.hyperparameters"
		}
	}
	var h ipc.Hyperparameters
	if hp != nil {
		h = *hp
	}
	if len(h.Unknown) > 0 {
		return ipc.FineTuningJob{}, paramErr(param+"."+h.Unknown[0], "is not a hyperparameter (use %s)", strings.Join(ipc.HyperparameterNames, ", "))
	}
	checks := []struct {
		v        *ipc.AutoNumber
		name     string
		lo, hi   float64
		integral bool
	}{
		{h.NEpochs, "n_epochs", 1, maxEpochs, true},
		{h.BatchSize, "batch_size", 1, maxBatch, true},
		{h.LearningRateMultiplier, "learning_rate_multiplier", 1e-6, 100, false},
		{h.LoRARank, "lora_rank", 1, train.MaxRank, true},
	}
	for _, c := range checks {
		if c.v == nil || c.v.Auto {
			continue
		}
		v := c.v.Value
		if math.IsNaN(v) || v < c.lo || v > c.hi || c.integral && v != math.Trunc(v) {
			kind := "a number"
			if c.integral {
				kind = "an integer"
			}
			return ipc.FineTuningJob{}, paramErr(param+"."+c.name, "must be \"auto\" or %s between %g and %g, not %g", kind, c.lo, c.hi, v)
		}
	}
	seed := rand.Int64N(1 << 31)
	if req.Seed != nil {
		seed = *req.Seed
	}
	auto := func(v *ipc.AutoNumber) *ipc.AutoNumber {
		if v == nil {
			return &ipc.AutoNumber{Auto: true}
		}
		return v
	}
	h.NEpochs, h.BatchSize, h.LearningRateMultiplier, h.LoRARank = auto(h.NEpochs), auto(h.BatchSize), auto(h.LearningRateMultiplier), auto(h.LoRARank)
	j := jobRecord{FineTuningJob: ipc.FineTuningJob{ID: newID("ftjob-"), Object: "fine_tuning.job", Model: model, CreatedAt: time.Now().Unix(),
		OrganizationID: "user", ResultFiles: []string{}, Status: ipc.JobQueued, TrainingFile: req.TrainingFile, Hyperparameters: h,
		Seed: seed, Integrations: []json.RawMessage{}, Metadata: req.Metadata, Suffix: req.Suffix,
		Method: &ipc.FineTuneMethod{Type: "supervised"}}, From: from}
	if req.ValidationFile != "" {
		j.ValidationFile = &req.ValidationFile
	}
	if err := s.put(j); err != nil {
		return ipc.FineTuningJob{}, err
	}
	s.event(j.ID, "info", "Created fine-tuning job: "+j.ID, nil)
	s.event(j.ID, "info", "Validating training file: "+req.TrainingFile, nil)
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return j.FineTuningJob, nil
}

// OpenAI's bounds on a job's metadata, which is stored with the job and
// sent back in every listing: without them one request could store 32 MiB.
const (
	maxMetadataPairs      = 16
	maxMetadataKeyRunes   = 64
	maxMetadataValueRunes = 512
)

// checkMetadata refuses metadata beyond OpenAI's bounds, naming the key.
func checkMetadata(m map[string]string) error {
	if len(m) > maxMetadataPairs {
		return paramErr("metadata", "has %d keys; at most %d are allowed", len(m), maxMetadataPairs)
	}
	for k, v := range m {
		if n := utf8.RuneCountInString(k); n > maxMetadataKeyRunes {
			return paramErr("metadata", "key %.20q… is %d characters long; at most %d are allowed", k, n, maxMetadataKeyRunes)
		}
		if n := utf8.RuneCountInString(v); n > maxMetadataValueRunes {
			return paramErr("metadata."+k, "is %d characters long; at most %d are allowed", n, maxMetadataValueRunes)
		}
	}
	return nil
}

// Job returns a job.
func (s *Service) Job(id string) (ipc.FineTuningJob, error) {
	j, err := s.job(id)
	return j.FineTuningJob, err
}

// Jobs lists the jobs, newest first, up to limit after the job id after
// (OpenAI's pagination); more reports whether others follow.
func (s *Service) Jobs(after string, limit int) ([]ipc.FineTuningJob, bool, error) {
	recs, err := s.records()
	if err != nil {
		return nil, false, err
	}
	out := make([]ipc.FineTuningJob, 0, len(recs))
	for i := len(recs) - 1; i >= 0; i-- {
		out = append(out, recs[i].FineTuningJob)
	}
	return page(out, after, limit, func(j ipc.FineTuningJob) string { return j.ID })
}

// Events returns a job's events, newest first (paginated like Jobs).
func (s *Service) Events(id, after string, limit int) ([]ipc.FineTuningEvent, bool, error) {
	if _, err := s.job(id); err != nil {
		return nil, false, err
	}
	var evs []ipc.FineTuningEvent
	err := s.o.Store.ListPrefix(EventsBucket, id+"/", func(_ string, v []byte) error {
		var ev ipc.FineTuningEvent
		if json.Unmarshal(v, &ev) == nil {
			evs = append(evs, ev)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	slices.Reverse(evs)
	return page(evs, after, limit, func(e ipc.FineTuningEvent) string { return e.ID })
}

// page returns up to limit items after the one whose id is after.
func page[T any](items []T, after string, limit int, id func(T) string) ([]T, bool, error) {
	if after != "" {
		i := slices.IndexFunc(items, func(t T) bool { return id(t) == after })
		if i < 0 {
			return nil, false, paramErr("after", "%q is not in the list", after)
		}
		items = items[i+1:]
	}
	if limit > 0 && len(items) > limit {
		return items[:limit], true, nil
	}
	return items, false, nil
}

// Cancel cancels a queued or running job.
func (s *Service) Cancel(id string) (ipc.FineTuningJob, error) {
	j, err := s.job(id)
	if err != nil {
		return ipc.FineTuningJob{}, err
	}
	switch j.Status {
	case ipc.JobSucceeded, ipc.JobFailed, ipc.JobCancelled:
		return j.FineTuningJob, &ParamError{Param: "job", Msg: fmt.Sprintf("%s has already %s", id, j.Status)}
	}
	s.mu.Lock()
	cancel := s.cancels[id]
	s.mu.Unlock()
	if cancel != nil {
		cancel() // the runner records the cancellation when the step ends
		for range 200 {
			if j, err = s.job(id); err == nil && j.Status == ipc.JobCancelled {
				return j.FineTuningJob, nil
			}
			time.Sleep(10 * time.Millisecond)
		}
		return j.FineTuningJob, nil
	}
	s.finish(j, ipc.JobCancelled, nil)
	j, err = s.job(id)
	return j.FineTuningJob, err
}

// finish ends a job with status.
func (s *Service) finish(j jobRecord, status string, jerr *ipc.JobError) {
	switch status {
	case ipc.JobCancelled:
		s.event(j.ID, "info", "Fine-tuning job cancelled", nil)
	case ipc.JobFailed:
		s.event(j.ID, "error", "Fine-tuning job failed: "+jerr.Message, nil)
	}
	now := time.Now().Unix()
	j.Status, j.FinishedAt, j.Error = status, &now, jerr
	if err := s.put(j); err != nil {
		s.log.Error("storing fine-tuning job", "job", j.ID, "err", err)
	}
}

// runner runs queued jobs one at a time, oldest first.
func (s *Service) runner() {
	for {
		recs, err := s.records()
		if err != nil {
			s.log.Error("reading fine-tuning jobs", "err", err)
		}
		ran := false
		for _, j := range recs {
			if s.ctx.Err() != nil {
				return
			}
			if j.Status == ipc.JobQueued {
				s.run(j)
				ran = true
				break
			}
		}
		if ran {
			continue
		}
		select {
		case <-s.ctx.Done():
			return
		case <-s.wake:
		}
	}
}

// trainable is what a job needs of a loaded model: *llm.Model.
type trainable interface {
	Tokenizer() *tokenizer.Tokenizer
	PromptTokens(req llm.Request) ([]int32, error)
	Yield(ctx context.Context) error
	Threads() int
}

// run trains one job.
func (s *Service) run(j jobRecord) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	s.mu.Lock()
	s.cancels[j.ID] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.cancels, j.ID)
		s.mu.Unlock()
	}()
	j.Attempts++
	j.Status = ipc.JobRunning
	s.put(j)
	s.event(j.ID, "info", "Fine-tuning job started", nil)
	err := s.train(ctx, &j)
	switch {
	case err == nil:
	case s.ctx.Err() != nil:
		// The daemon is stopping: back to the queue for the next start.
		j.Status = ipc.JobQueued
		s.put(j)
		s.event(j.ID, "warn", "The daemon stopped while the job ran; it starts again when the daemon restarts", nil)
	case ctx.Err() != nil:
		s.finish(j, ipc.JobCancelled, nil)
	default:
		code := "training_failed"
		var pe *ParamError
		if errors.As(err, &pe) {
			code = "invalid_" + pe.Param
		}
		s.log.Warn("fine-tuning job failed", "job", j.ID, "err", err)
		s.finish(j, ipc.JobFailed, &ipc.JobError{Code: code, Message: err.Error()})
	}
}

// train runs a job's training and installs its adapter.
func (s *Service) train(ctx context.Context, j *jobRecord) error {
	h, err := s.o.Models.Acquire(ctx, j.baseModel(), nil)
	if err != nil {
		return err
	}
	defer h.Release()
	m, ok := h.Model.(trainable)
	if !ok {
		return fmt.Errorf("model %s cannot be trained here", j.Model)
	}
	path, err := s.o.Models.Resolve(j.baseModel())
	if err != nil {
		return err
	}
	f, err := gguf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	base, err := train.NewBase(f, train.BaseOptions{DenseBytes: s.o.DenseBytes})
	if err != nil {
		return err
	}
	frozen, err := s.frozen(ctx, j, h.Model, base)
	if err != nil {
		return err
	}
	examples, tokens, err := s.examples(j.TrainingFile, m, base)
	if err != nil {
		return err
	}
	var valid []train.Example
	if j.ValidationFile != nil {
		if valid, _, err = s.examples(*j.ValidationFile, m, base); err != nil {
			return err
		}
	}
	s.event(j.ID, "info", fmt.Sprintf("Files validated: %d training examples (%d tokens), %d validation examples", len(examples), tokens, len(valid)), nil)
	hp := &j.Hyperparameters
	resolve := func(v *ipc.AutoNumber, def float64) float64 {
		if v == nil || v.Auto {
			return def
		}
		return v.Value
	}
	epochs := int(resolve(hp.NEpochs, 3))
	batch := int(resolve(hp.BatchSize, float64(min(8, max(1, len(examples)/8)))))
	mult := resolve(hp.LearningRateMultiplier, 1)
	rank := int(resolve(hp.LoRARank, 8))
	hp.NEpochs, hp.BatchSize = &ipc.AutoNumber{Value: float64(epochs)}, &ipc.AutoNumber{Value: float64(batch)}
	hp.LearningRateMultiplier, hp.LoRARank = &ipc.AutoNumber{Value: mult}, &ipc.AutoNumber{Value: float64(rank)}
	per := (len(examples) + batch - 1) / batch
	j.TotalSteps = epochs * per
	s.put(*j)

	threads := s.o.Threads
	if t := m.Threads(); threads <= 0 || (t > 0 && t < threads) {
		threads = t
	}
	tr := train.NewTrainer(base, train.Options{Threads: threads, Yield: m.Yield})
	a, err := train.NewAdapter(base, train.AdapterConfig{Rank: rank, Seed: uint64(j.Seed)})
	if err != nil {
		return err
	}
	opt := train.NewAdamW(a, baseLR*mult, 0)
	rng := rand.New(rand.NewPCG(uint64(j.Seed), 0xf17e))
	order := make([]int, len(examples))
	var trained int64
	every := max(1, j.TotalSteps/100)
	step := 0
	for epoch := range epochs {
		for i := range order {
			order[i] = i
		}
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		for b := 0; b < len(order); b += batch {
			var bt []train.Example
			for _, i := range order[b:min(b+batch, len(order))] {
				bt = append(bt, examples[i])
				trained += int64(len(examples[i].Tokens))
			}
			res, err := tr.Step(ctx, a, opt, bt, train.StepConfig{Frozen: frozen})
			if err != nil {
				return err
			}
			step++
			j.Steps = step
			if step%every == 0 || step == j.TotalSteps {
				data := map[string]any{"step": step, "total_steps": j.TotalSteps, "train_loss": res.NLL, "epoch": epoch + 1}
				if len(valid) > 0 && (step == j.TotalSteps || (b+batch >= len(order))) {
					if l, err := tr.Evaluate(ctx, append(slices.Clip(frozen), train.Applied{Adapter: a, Scale: 1}), valid); err == nil {
						data["valid_loss"] = l.NLL
					}
				}
				s.event(j.ID, "info", fmt.Sprintf("Step %d/%d: training loss=%.4f", step, j.TotalSteps, res.NLL), data)
				s.put(*j)
			}
		}
	}
	name := AdapterName(j.nameBase(), j.Suffix, j.ID)
	la, err := a.LoRA(name, base)
	if err != nil {
		return err
	}
	w, err := la.GGUF()
	if err != nil {
		return err
	}
	tmp, err := s.o.Adapters.CreateTemp()
	if err != nil {
		return err
	}
	_, err = w.WriteTo(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write the adapter: %w", err)
	}
	if _, err := s.o.Adapters.InstallFineTuned(ctx, tmp.Name(), name, path, j.baseModel(), j.From); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("install the adapter: %w", err)
	}
	// The events first: a client that sees the job succeeded finds them.
	s.event(j.ID, "info", "New fine-tuned model created: "+name, nil)
	s.event(j.ID, "info", "The job has successfully completed", nil)
	now := time.Now().Unix()
	j.Status, j.FinishedAt, j.FineTunedModel, j.TrainedTokens = ipc.JobSucceeded, &now, &name, &trained
	return s.put(*j)
}

// frozen loads the adapters of a job's created or fine-tuned model as the
// trainer's frozen ones, beneath the adapter it trains.
func (s *Service) frozen(ctx context.Context, j *jobRecord, m models.Model, base *train.Base) ([]train.Applied, error) {
	if j.From == nil || len(j.From.Adapters) == 0 {
		return nil, nil
	}
	am, ok := m.(adapters.Model)
	if !ok {
		return nil, fmt.Errorf("model %s cannot carry adapters here", j.baseModel())
	}
	applied, err := s.o.Adapters.Resolve(ctx, am, j.From.Adapters)
	if err != nil {
		return nil, fmt.Errorf("the adapters of %s: %w", j.Model, err)
	}
	out := make([]train.Applied, len(applied))
	for i, ap := range applied {
		ta, err := train.FromLoRA(ap.Adapter, base)
		if err != nil {
			return nil, fmt.Errorf("the adapters of %s: %w", j.Model, err)
		}
		out[i] = train.Applied{Adapter: ta, Scale: ap.Scale}
	}
	return out, nil
}

// nameBase is the model a job's fine-tuned model is named after: its
// base model's name (a fine-tuned model of a fine-tuned model is named
// after the first's base, as OpenAI names them).
func (j *jobRecord) nameBase() string {
	b := j.baseModel()
	if filepath.IsAbs(b) {
		return llm.NameFromPath(b)
	}
	return b
}

// AdapterName is the name of a job's adapter: "ft:<model>:<suffix>:<id>"
// (the model's name with characters outside [a-z0-9._/:-] as '-', the
// first 12 hex digits of the job id).
func AdapterName(model, suffix, jobID string) string {
	m := []byte(strings.ToLower(model))
	for i, c := range m {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '/' || c == ':') {
			m[i] = '-'
		}
	}
	id := strings.TrimPrefix(jobID, "ftjob-")
	if len(id) > 12 {
		id = id[:12]
	}
	return "ft:" + string(m) + ":" + suffix + ":" + id
}

// examples tokenizes a training file with the model's chat template: one
// example per assistant message to learn, whose prompt is the
// conversation before it (with the assistant's generation prompt) and
// whose answer is its text and the end-of-turn token.
func (s *Service) examples(fileID string, m trainable, base *train.Base) ([]train.Example, int64, error) {
	rec, err := s.file(fileID)
	if err != nil {
		return nil, 0, paramErr("training_file", "%v", err)
	}
	f, err := os.Open(rec.Path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	tok := m.Tokenizer()
	end := tok.EOT()
	if end < 0 {
		end = tok.EOS()
	}
	limit := min(maxExampleTokens, base.Config().ContextLength)
	var out []train.Example
	var tokens int64
	_, err = readExamples(f, func(ex Example) error {
		for i, msg := range ex.Messages {
			if !msg.trained() {
				continue
			}
			msgs := make([]chat.Message, 0, i)
			for _, p := range ex.Messages[:i] {
				msgs = append(msgs, chat.Message{Role: p.Role, Content: p.Content})
			}
			prompt, err := m.PromptTokens(llm.Request{Messages: msgs})
			if err != nil {
				return paramErr("training_file", "the model's chat template refuses an example: %v", err)
			}
			answer := tok.Encode(msg.Content, tokenizer.EncodeOptions{})
			if end >= 0 {
				answer = append(answer, end)
			}
			if len(answer) >= limit/2 {
				answer = answer[:limit/2]
			}
			if len(prompt)+len(answer) > limit {
				keep := limit - len(answer)
				prompt = append(prompt[:1:1], prompt[len(prompt)-keep+1:]...)
			}
			e := train.Example{Tokens: append(prompt, answer...), Start: len(prompt)}
			if err := base.Check(e); err != nil {
				return paramErr("training_file", "an example does not fit the model: %v", err)
			}
			out = append(out, e)
			tokens += int64(len(e.Tokens))
		}
		return nil
	})
	return out, tokens, err
}

func sortNewest[T any](items []T, key func(T) (int64, string)) {
	slices.SortFunc(items, func(a, b T) int {
		ta, ia := key(a)
		tb, ib := key(b)
		if ta != tb {
			if ta > tb {
				return -1
			}
			return 1
		}
		return strings.Compare(ib, ia)
	})
}
