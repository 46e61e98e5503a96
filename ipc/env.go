package ipc

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrNoTCP is returned by ClientEnv for a daemon without a TCP listener:
// SDKs reach the daemon over HTTP on TCP only.
var ErrNoTCP = errors.New("ruvllmd has no TCP listener")

// EnvVar is one environment variable of ClientEnv.
type EnvVar struct {
	Name, Value string
}

// ClientEnv returns the environment that points unmodified OpenAI,
// Ollama and Anthropic SDK apps at the daemon h describes:
// OPENAI_BASE_URL (its TCP listener's /v1), OPENAI_API_KEY (token, the
// listener's bearer token), OLLAMA_HOST, ANTHROPIC_BASE_URL (the listener:
// Anthropic's SDKs add /v1 themselves) and ANTHROPIC_API_KEY (the token,
// which the daemon takes as x-api-key). It fails with ErrNoTCP when the
// daemon has no TCP listener.
func ClientEnv(h Health, token string) ([]EnvVar, error) {
	if h.TCPAddress == "" {
		return nil, ErrNoTCP
	}
	if token == "" {
		return nil, errors.New("client env: no token")
	}
	base := "http://" + h.TCPAddress
	return []EnvVar{
		{"OPENAI_BASE_URL", base + "/v1"},
		{"OPENAI_API_KEY", token},
		{"OLLAMA_HOST", base},
		{"ANTHROPIC_BASE_URL", base},
		{"ANTHROPIC_API_KEY", token},
	}, nil
}

// ReadToken returns the bearer token kept in the file at path (as named
// by Health.TokenFile).
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("read token: %s is empty", path)
	}
	return tok, nil
}
