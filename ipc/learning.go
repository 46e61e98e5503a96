package ipc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Feedback signals (FeedbackRequest.Signal).
const (
	// SignalRating is a thumbs-up or thumbs-down (Rating ±1), with an
	// optional correction: the default.
	SignalRating = "rating"
	// SignalRegenerate says the user asked for another answer instead of
	// this one: a mild negative. The app's regenerate sends it implicitly
	// (PATCH of a conversation that drops its last reply).
	SignalRegenerate = "regenerate"
)

// Learning statuses of one feedback (FeedbackLearning.Status).
const (
	// LearnApplied: the instant loop learned it; the scope's next requests
	// apply the updated adapter.
	LearnApplied = "applied"
	// LearnQueued: stored, not learned yet; a "learning.applied" event
	// follows when it is.
	LearnQueued = "queued"
	// LearnPaused: the scope is paused; the feedback waits for resume.
	LearnPaused = "paused"
	// LearnReserved: kept to validate the deep loop's candidates, not
	// learned by the instant loop (every fifth correction or thumbs-up).
	LearnReserved = "reserved"
	// LearnOff: the daemon does not learn (switched off, or the model's
	// architecture has no trainer); the feedback is stored.
	LearnOff = "off"
	// LearnFailed: it could not be learned (Error says why).
	LearnFailed = "failed"
)

// FeedbackLearning tells what the learning loop did with one feedback:
// the answer of POST /v1/feedback and the data of "learning.applied"
// events.
type FeedbackLearning struct {
	Status     string `json:"status"`
	FeedbackID string `json:"feedback_id,omitempty"`
	RequestID  string `json:"request_id,omitempty"`
	Model      string `json:"model,omitempty"`
	Scope      string `json:"scope,omitempty"`
	Signal     string `json:"signal,omitempty"` // correction, thumbs-up, thumbs-down, regenerate
	// Version is the scope's adapter version that applies the feedback.
	Version uint64 `json:"version,omitempty"`
	// AppliedAt is when the first step ended: from then on the scope's
	// requests use the updated adapter. LatencyMillis is the time from
	// the feedback's arrival to then.
	AppliedAt     *time.Time `json:"applied_at,omitempty"`
	LatencyMillis float64    `json:"latency_ms,omitempty"`
	Steps         int        `json:"steps,omitempty"`
	// LossBefore is the feedback's objective before the first step (the
	// model had not learned it: a held-out figure), LossAfter after the
	// last.
	LossBefore float64 `json:"loss_before,omitempty"`
	LossAfter  float64 `json:"loss_after,omitempty"`
	Error      string  `json:"error,omitempty"`
}

// LearningStatus answers GET /v1/learning.
type LearningStatus struct {
	// Enabled is false when the daemon runs with learning switched off.
	Enabled bool `json:"enabled"`
	// PerApp is true when every app (X-Ruvllm-Client) learns in a scope
	// of its own; otherwise all requests share the user's scope.
	PerApp bool `json:"per_app"`
	// Models are the loaded models and the scopes that learn on them.
	Models []LearningModel `json:"models"`
}

// LearningModel is the learning state of one loaded model.
type LearningModel struct {
	Model string `json:"model"`
	// Status is "preparing" (the trainer is being set up), "ready",
	// "unsupported" (no trainer for its architecture) or "error".
	Status string          `json:"status"`
	Error  string          `json:"error,omitempty"`
	Scopes []LearningScope `json:"scopes"`
}

// LearningScope is one scope's learning: counters, validation figures
// and the trend of its held-out losses.
type LearningScope struct {
	Scope  string `json:"scope"` // "user" or "app:<client name>"
	Model  string `json:"model"`
	Paused bool   `json:"paused"`
	// Version changes whenever the adapters the scope's requests apply
	// change.
	Version uint64 `json:"version"`
	// Received signals (every one the learner saw, a reply rated again
	// counting each time), Applied by the instant loop (instant steps:
	// replays and restored records can apply again), Pending while
	// paused, Queued (learned by the MicroLoRA, not yet consolidated),
	// Unlearned (stored but not yet seen by the learner: it was busy or
	// the daemon restarted).
	Received  int `json:"received"`
	Applied   int `json:"applied"`
	Pending   int `json:"pending"`
	Queued    int `json:"queued"`
	Unlearned int `json:"unlearned"`
	// Unlearnable counts the signals that could not become an example
	// (an empty answer, say). Received + Unlearnable + Unlearned counts
	// every signal the scope was sent: a reply rated again is stored
	// once, its later rating replacing the earlier.
	Unlearnable int `json:"unlearnable"`
	Steps       int `json:"steps"`
	// Consolidations and DeepRuns count background and deep runs;
	// DeepAccepted how many deep candidates replaced the adapter.
	Consolidations int        `json:"consolidations"`
	DeepRuns       int        `json:"deep_runs"`
	DeepAccepted   int        `json:"deep_accepted"`
	LastUpdate     *time.Time `json:"last_update,omitempty"`
	LastLoss       float64    `json:"last_loss,omitempty"`
	// Exchanges are the stored exchanges the deep loop trains on,
	// Validation those held back to validate its candidates.
	Exchanges    int `json:"exchanges"`
	Validation   int `json:"validation"`
	Trajectories int `json:"trajectories"`
	// Adapters are what the scope's requests apply now ("consolidated",
	// "micro"), with their ranks.
	Adapters []LearnedAdapter `json:"adapters"`
	// Candidates are the deep loop's results with their validation
	// figures, oldest first.
	Candidates []LearningCandidate `json:"candidates"`
	// History is the trend of learning, oldest first (bounded).
	History []LearningPoint `json:"history"`
	// CanUndo is true when the last update can be undone.
	CanUndo bool `json:"can_undo"`
}

// LearnedAdapter is one adapter a scope applies.
type LearnedAdapter struct {
	Kind   string `json:"kind"` // "consolidated" or "micro"
	Rank   int    `json:"rank"`
	Params int    `json:"params"`
}

// LearningCandidate is a deep-loop result: a LoRA trained over every
// stored exchange, accepted only if better on the held-back exchanges
// and at most 2 % worse on general text.
type LearningCandidate struct {
	At                time.Time `json:"at"`
	Accepted          bool      `json:"accepted"`
	Reason            string    `json:"reason,omitempty"`
	Train             int       `json:"train"`
	Holdout           int       `json:"holdout"`
	HoldoutNLL        float64   `json:"holdout_nll"`
	CurrentHoldoutNLL float64   `json:"current_holdout_nll"`
	GeneralPPL        float64   `json:"general_ppl,omitempty"`
	CurrentGeneralPPL float64   `json:"current_general_ppl,omitempty"`
	DurationMillis    float64   `json:"duration_ms"`
}

// LearningPoint is one event of a scope's learning history: an instant
// update ("feedback": Loss is the signal's objective before it was
// learned, a held-out figure whose fall shows the model learning the
// user's ways), a consolidation ("consolidate": Loss its final
// objective), a deep run ("deep": Loss the candidate's held-back NLL), a
// reset or an undo.
type LearningPoint struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	Signal  string    `json:"signal,omitempty"`
	Loss    float64   `json:"loss,omitempty"`
	After   float64   `json:"after,omitempty"`
	Version uint64    `json:"version,omitempty"`
}

// LearningControl is the optional body of POST /v1/learning/{action}
// (the scope may also be given as ?scope=).
type LearningControl struct {
	Scope string `json:"scope,omitempty"`
	Model string `json:"model,omitempty"`
}

// LearningControlResult answers POST /v1/learning/{action}.
type LearningControlResult struct {
	Action string          `json:"action"`
	Scopes []LearningScope `json:"scopes"`
}

// Learning returns the learning state; scope ("" for all) and model (""
// for all) narrow it.
func (c *Client) Learning(ctx context.Context, scope, model string) (LearningStatus, error) {
	var out LearningStatus
	err := c.Do(ctx, http.MethodGet, "/v1/learning"+learningQuery(scope, model), nil, &out)
	return out, err
}

// LearningAction runs "pause", "resume", "reset" or "undo" on a scope
// ("" for the caller's own) of every loaded model, or of model.
func (c *Client) LearningAction(ctx context.Context, action, scope, model string) (LearningControlResult, error) {
	var out LearningControlResult
	err := c.Do(ctx, http.MethodPost, "/v1/learning/"+url.PathEscape(action), LearningControl{Scope: scope, Model: model}, &out)
	return out, err
}

// ExportLearning writes a scope's consolidated adapter, as a llama.cpp
// GGUF LoRA file, to w.
func (c *Client) ExportLearning(ctx context.Context, scope, model string, w io.Writer) (int64, error) {
	resp, err := c.request(ctx, http.MethodGet, "/v1/learning/export"+learningQuery(scope, model), nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("export: %w", err)
	}
	return n, nil
}

func learningQuery(scope, model string) string {
	q := url.Values{}
	if scope != "" {
		q.Set("scope", scope)
	}
	if model != "" {
		q.Set("model", model)
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}
