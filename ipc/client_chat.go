package ipc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// Complete runs a non-streaming text completion (POST /v1/completions).
func (c *Client) Complete(ctx context.Context, req CompletionRequest) (CompletionResponse, error) {
	req.Stream = false
	var out CompletionResponse
	err := c.Do(ctx, http.MethodPost, "/v1/completions", req, &out)
	return out, err
}

// CompleteStream runs a streaming text completion, calling fn per chunk;
// the last chunk carries usage. A failure reported mid-stream is returned
// as an *APIError.
func (c *Client) CompleteStream(ctx context.Context, req CompletionRequest, fn func(CompletionResponse) error) error {
	req.Stream = true
	req.StreamOptions = &StreamOptions{IncludeUsage: true}
	return c.Stream(ctx, http.MethodPost, "/v1/completions", req, func(b []byte) error {
		if err := streamError(b); err != nil {
			return err
		}
		var ch CompletionResponse
		if err := json.Unmarshal(b, &ch); err != nil {
			return fmt.Errorf("decode chunk: %w", err)
		}
		return fn(ch)
	})
}

// streamError recognises an error object sent in place of a chunk.
func streamError(b []byte) error {
	if !bytes.HasPrefix(bytes.TrimSpace(b), []byte(`{"error"`)) {
		return nil
	}
	var e OpenAIError
	if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
		return &APIError{Status: http.StatusInternalServerError, Message: e.Error.Message, Type: e.Error.Type}
	}
	return nil
}
