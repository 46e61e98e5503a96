package ipc

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"
)

// PullRequest is the body of POST /api/pull (Ollama's shape, with the
// model given as a registry reference "OWNER/REPO/FILE.gguf").
type PullRequest struct {
	Model  string `json:"model"`
	Name   string `json:"name,omitempty"` // older Ollama clients send name
	Stream *bool  `json:"stream,omitempty"`
	// Registry overrides the daemon's registry base URL (ruvllm
	// extension; default $RUVLLM_REGISTRY, else https://huggingface.co).
	Registry string `json:"registry,omitempty"`
}

// PullProgress is one NDJSON line of POST /api/pull. A line with Error set
// ends a failed pull.
type PullProgress struct {
	Status    string `json:"status,omitempty"`
	Digest    string `json:"digest,omitempty"`
	Total     int64  `json:"total,omitempty"`
	Completed int64  `json:"completed,omitempty"`
	// Model is the installed model's name (on "success").
	Model string `json:"model,omitempty"`
	Error string `json:"error,omitempty"`
}

// DeleteRequest is the body of DELETE /api/delete.
type DeleteRequest struct {
	Model string `json:"model"`
	Name  string `json:"name,omitempty"`
}

// ModelSource is the registry entry the daemon keeps for a pulled model.
type ModelSource struct {
	Name     string    `json:"name"`
	Ref      string    `json:"ref"`
	URL      string    `json:"url"`
	Path     string    `json:"path"`
	Size     int64     `json:"size"`
	SHA256   string    `json:"sha256"`
	Verified bool      `json:"verified"`
	Pulled   time.Time `json:"pulled"`
}

// Pull asks the daemon to download a model, calling fn with each progress
// report. A failure reported mid-stream is returned as an *APIError.
func (c *Client) Pull(ctx context.Context, req PullRequest, fn func(PullProgress) error) error {
	stream := true
	req.Stream = &stream
	return c.Stream(ctx, http.MethodPost, "/api/pull", req, func(b []byte) error {
		var p PullProgress
		if err := json.Unmarshal(b, &p); err != nil {
			return fmt.Errorf("decode pull progress: %w", err)
		}
		if p.Error != "" {
			return &APIError{Status: http.StatusBadGateway, Message: p.Error}
		}
		return fn(p)
	})
}

// Delete removes a model's file and registry entry from the daemon's
// models directory.
func (c *Client) Delete(ctx context.Context, model string) error {
	return c.Do(ctx, http.MethodDelete, "/api/delete", DeleteRequest{Model: model}, nil)
}

// Tags lists the installed models in Ollama's shape (with sizes).
func (c *Client) Tags(ctx context.Context) (OllamaTags, error) {
	var out OllamaTags
	err := c.Do(ctx, http.MethodGet, "/api/tags", nil, &out)
	return out, err
}

// ModelNameFromPath is the name under which the daemon lists a model file
// given by path (for example with ruvllmd --model): the file's base name
// without its extension, lower-cased.
func ModelNameFromPath(path string) string {
	base := filepath.Base(path)
	return strings.ToLower(strings.TrimSuffix(base, filepath.Ext(base)))
}

// Show describes a model as Ollama's POST /api/show does: its Modelfile,
// parameters, template, system prompt, details and capabilities.
func (c *Client) Show(ctx context.Context, model string) (OllamaShowResponse, error) {
	var out OllamaShowResponse
	err := c.Do(ctx, http.MethodPost, "/api/show", OllamaShowRequest{Model: model}, &out)
	return out, err
}

// Copy makes destination a copy of the model source (POST /api/copy).
func (c *Client) Copy(ctx context.Context, source, destination string) error {
	return c.Do(ctx, http.MethodPost, "/api/copy", CopyRequest{Source: source, Destination: destination}, nil)
}

// Create makes a model (POST /api/create) and waits until it is made.
func (c *Client) Create(ctx context.Context, req CreateRequest) error {
	stream := false
	req.Stream = &stream
	var out ProgressStatus
	if err := c.Do(ctx, http.MethodPost, "/api/create", req, &out); err != nil {
		return err
	}
	if out.Error != "" {
		return &APIError{Status: http.StatusBadRequest, Message: out.Error}
	}
	return nil
}
