package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/adapters"
	"github.com/ruvllm/ruvllm/daemon/learning"
	"github.com/ruvllm/ruvllm/daemon/models"
	"github.com/ruvllm/ruvllm/ipc"
)

// SetLearning enables learning from feedback: requests apply their
// scope's learned adapters, POST /v1/feedback feeds the instant loop, and
// GET /v1/learning, POST /v1/learning/{pause,resume,reset,undo} and
// GET /v1/learning/export control and show it.
func (a *API) SetLearning(svc *learning.Service) {
	a.mu.Lock()
	a.learning = svc
	a.mu.Unlock()
	a.srv.Handle("GET /v1/learning", http.HandlerFunc(a.learningStatus))
	a.srv.Handle("GET /v1/learning/export", http.HandlerFunc(a.learningExport))
	a.srv.Handle("POST /v1/learning/{action}", http.HandlerFunc(a.learningAction))
}

func (a *API) learner() *learning.Service {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.learning
}

// applyAdapters resolves what a request applies: the adapters it names
// (after a created model's), or with "adapters": "auto" the installed
// adapter its scope's trajectories rate best for requests like it, and,
// before them, its scope's learned adapters — unless it asks for the base
// model ("adapters": "none") or sends X-Ruvllm-Learning: off.
func (a *API) applyAdapters(ctx context.Context, r *http.Request, h *models.Handle, s *runSpec) error {
	refs := s.adapters
	mode := ""
	if n := len(refs); n > 0 {
		if m := ipc.AdapterRefs(refs[n-1:]).Mode(); m != "" {
			mode, refs = m, refs[:n-1]
		}
	}
	if mode == ipc.AdaptersNone {
		refs = nil
	}
	applied, err := a.resolveAdapters(ctx, h.Model, refs)
	if err != nil {
		return err
	}
	svc := a.learner()
	app := r.Header.Get("X-Ruvllm-Client")
	if mode == ipc.AdaptersAuto {
		routed := "none"
		if svc != nil && a.adapterPool() != nil {
			var installed []string
			for _, info := range a.adapterPool().List() {
				if !slices.ContainsFunc(refs, func(r ipc.AdapterRef) bool { return r.Name == info.Name }) {
					installed = append(installed, info.Name)
				}
			}
			if name, ok := svc.Route(ctx, h.Name, app, routeText(s), installed); ok {
				more, err := a.resolveAdapters(ctx, h.Model, []ipc.AdapterRef{{Name: name}})
				if err != nil {
					return err
				}
				applied = append(applied, more...)
				refs = append(slices.Clone(refs), ipc.AdapterRef{Name: name})
				routed = name
			}
		}
		if s.hdr != nil {
			s.hdr.Set(AdapterHeader, routed)
		}
	}
	// The exchange records what answered: the routed adapter included,
	// the string forms not.
	s.adapters = refs
	label := "none"
	if svc == nil || !svc.Enabled() {
		label = "off"
	} else if mode == ipc.AdaptersNone || strings.EqualFold(r.Header.Get(LearningHeader), "off") {
		label = "off"
	} else if learned, l := svc.ForRequest(ctx, h.Name, app); len(learned) > 0 {
		applied = append(slices.Clone(learned), applied...)
		label = l
	}
	if s.hdr != nil {
		s.hdr.Set(LearningHeader, label)
	}
	s.req.Adapters = applied
	return nil
}

// adapterPool is the adapter pool SetAdapters set (nil without one).
func (a *API) adapterPool() *adapters.Pool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.adapters
}

// routeText is what a request is routed by: its last user message, or
// its prompt.
func routeText(s *runSpec) string {
	for i := len(s.req.Messages) - 1; i >= 0; i-- {
		if s.req.Messages[i].Role == "user" {
			return s.req.Messages[i].Content
		}
	}
	return s.req.Prompt
}

// scopeParam reads the optional scope (query or body), defaulting to the
// caller's own.
func (a *API) scopeParam(r *http.Request, scope string) (string, error) {
	if scope == "" {
		scope = r.URL.Query().Get("scope")
	}
	svc := a.learner()
	if scope == "" {
		return svc.ScopeOf(r.Header.Get("X-Ruvllm-Client")), nil
	}
	if err := checkScope(svc, scope); err != nil {
		return "", err
	}
	return scope, nil
}

// checkScope refuses a scope name that is not one, and (404) an app's
// scope when learning is not per app: no request uses one then (pausing
// one created it, and reading one answered an empty 200).
func checkScope(svc *learning.Service, scope string) error {
	if err := learning.CheckScope(scope); err != nil {
		return badParam("scope", "%v", err)
	}
	if scope != learning.UserScope && svc != nil && !svc.PerApp() {
		return &requestError{status: http.StatusNotFound, param: "scope",
			msg: fmt.Sprintf("scope %q: app scopes exist only with ruvllmd --learning-per-app (learning here is one scope, %q)", scope, learning.UserScope)}
	}
	return nil
}

func (a *API) learningStatus(w http.ResponseWriter, r *http.Request) {
	svc := a.learner()
	scope := r.URL.Query().Get("scope")
	if scope != "" {
		if err := checkScope(svc, scope); err != nil {
			openAIError(w, err)
			return
		}
	}
	model := r.URL.Query().Get("model")
	if err := firstError(checkName("model", model), a.learningModel(model)); err != nil {
		openAIError(w, err)
		return
	}
	daemon.WriteJSON(w, http.StatusOK, svc.Status(scope, model))
}

func (a *API) learningAction(w http.ResponseWriter, r *http.Request) {
	action := r.PathValue("action")
	if !slices.Contains(learning.Actions, action) {
		openAIError(w, &requestError{status: http.StatusNotFound, msg: fmt.Sprintf("POST /v1/learning/%s: no such action (use %s)", action, strings.Join(learning.Actions, ", "))})
		return
	}
	var body ipc.LearningControl
	if r.ContentLength != 0 {
		if err := decode(r, &body); err != nil {
			openAIError(w, err)
			return
		}
	}
	if body.Model == "" {
		body.Model = r.URL.Query().Get("model")
	}
	if err := firstError(checkName("model", body.Model), a.learningModel(body.Model)); err != nil {
		openAIError(w, err)
		return
	}
	scope, err := a.scopeParam(r, body.Scope)
	if err != nil {
		openAIError(w, err)
		return
	}
	scopes, err := a.learner().Control(r.Context(), action, body.Model, scope)
	if err != nil {
		openAIError(w, learningError(err))
		return
	}
	a.srv.Events().Publish("learning."+action, map[string]any{"scope": scope, "model": body.Model})
	daemon.WriteJSON(w, http.StatusOK, ipc.LearningControlResult{Action: action, Scopes: scopes})
}

func (a *API) learningExport(w http.ResponseWriter, r *http.Request) {
	model := r.URL.Query().Get("model")
	if err := firstError(checkName("model", model), a.learningModel(model)); err != nil {
		openAIError(w, err)
		return
	}
	scope, err := a.scopeParam(r, "")
	if err != nil {
		openAIError(w, err)
		return
	}
	name, write, err := a.learner().Export(r.Context(), model, scope)
	if err != nil {
		openAIError(w, learningError(err))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name))
	w.WriteHeader(http.StatusOK)
	if err := write(w); err != nil {
		a.log.Warn("learning export cut off", "err", err)
	}
}

// learningModel refuses, as a 404 naming the field, a model the daemon
// has no model of that name for at all (a typo), which the learning
// service could only report as not loaded, or, for GET /v1/learning, as
// an empty list that the CLI showed as "No model is loaded". A model the
// daemon can serve but has not loaded stays the service's 409.
func (a *API) learningModel(model string) error {
	if model == "" {
		return nil
	}
	rm, err := a.resolveModel(model)
	if err != nil {
		return err
	}
	if _, err := a.models.Resolve(rm.base); err != nil {
		return &requestError{status: http.StatusNotFound, param: "model", msg: err.Error()}
	}
	return nil
}

// learningError maps the learning service's errors to statuses.
func learningError(err error) error {
	switch {
	case errors.Is(err, learning.ErrNotLoaded), errors.Is(err, learning.ErrDisabled),
		errors.Is(err, learning.ErrNothingToUndo), errors.Is(err, learning.ErrNothingLearned):
		return &requestError{status: http.StatusConflict, msg: err.Error()}
	case errors.Is(err, learning.ErrModelRequired):
		return badParam("model", "%v", err)
	}
	return err
}
