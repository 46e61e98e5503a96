package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ruvllm/ruvllm/ipc"
)

// Learning returns what the daemon learned in the app's scope (the
// user's, or the app's own when the daemon learns per app) on every
// loaded model.
func (a *App) Learning() (ipc.LearningStatus, error) {
	c, _, err := a.conn()
	if err != nil {
		return ipc.LearningStatus{}, err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	st, err := c.Learning(ctx, "", "")
	if err != nil {
		return st, err
	}
	own := "user"
	if st.PerApp {
		own = "app:" + AppName
	}
	for i := range st.Models {
		st.Models[i].Scopes = slices.DeleteFunc(st.Models[i].Scopes, func(s ipc.LearningScope) bool { return s.Scope != own })
	}
	return st, nil
}

// learningActions are the actions LearningAction takes.
var learningActions = []string{"pause", "resume", "reset", "undo"}

// LearningAction pauses, resumes, resets or undoes learning in the app's
// scope on every loaded model.
func (a *App) LearningAction(action string) (ipc.LearningControlResult, error) {
	if !slices.Contains(learningActions, action) {
		return ipc.LearningControlResult{}, fmt.Errorf("unknown learning action %q", action)
	}
	c, _, err := a.conn()
	if err != nil {
		return ipc.LearningControlResult{}, err
	}
	// Resume learns the feedback queued meanwhile: it may take a while.
	ctx, cancel := context.WithTimeout(a.baseCtx(), 5*time.Minute)
	defer cancel()
	return c.LearningAction(ctx, action, "", "")
}

// ExportLearning writes the app's scope's consolidated adapter as a
// llama.cpp GGUF LoRA file to path ("" for a dated file in ~/Downloads,
// or the home directory when there is none) and returns the path.
func (a *App) ExportLearning(path string) (string, error) {
	c, _, err := a.conn()
	if err != nil {
		return "", err
	}
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		dir := filepath.Join(home, "Downloads")
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			dir = home
		}
		path = filepath.Join(dir, "ruvllm-learned-"+time.Now().Format("2006-01-02-150405")+".gguf")
	}
	ctx, cancel := context.WithTimeout(a.baseCtx(), 5*time.Minute)
	defer cancel()
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ruvllm-export-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	_, err = c.ExportLearning(ctx, "", "", tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		var apiErr *ipc.APIError
		if errors.As(err, &apiErr) && apiErr.Status == 409 {
			return "", errors.New("nothing learned to export yet")
		}
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}

// baseCtx is the app's context (background before Start).
func (a *App) baseCtx() context.Context {
	if a.ctx == nil {
		return context.Background()
	}
	return a.ctx
}
