package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestTrainRemovesUploadsOfRefusedJob: when the daemon refuses the job
// (here, as it does a hyperparameter out of range), train deletes the
// files it uploaded for it; they stayed in the daemon, one more copy a
// retry.
func TestTrainRemovesUploadsOfRefusedJob(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var uploaded, deleted []string
	serveDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.URL.Path == "/v1/health":
			w.Write([]byte("{}"))
		case r.Method == http.MethodPost && r.URL.Path == "/v1/files":
			id := fmt.Sprintf("file-%d", len(uploaded)+1)
			uploaded = append(uploaded, id)
			fmt.Fprintf(w, `{"id":%q,"object":"file","examples":1}`, id)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/fine_tuning/jobs":
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":{"message":"hyperparameters.lora_rank must be \"auto\" or an integer between 1 and 64, not 65","type":"invalid_request_error","param":"hyperparameters.lora_rank"}}`))
		case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/v1/files/"):
			deleted = append(deleted, strings.TrimPrefix(r.URL.Path, "/v1/files/"))
			fmt.Fprintf(w, `{"id":%q,"object":"file","deleted":true}`, strings.TrimPrefix(r.URL.Path, "/v1/files/"))
		default:
			http.NotFound(w, r)
		}
	})
	data := filepath.Join(dir, "t.jsonl")
	if err := os.WriteFile(data, []byte(`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"training file", nil},
		{"with a validation file", []string{"--validation", data}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			uploaded, deleted = nil, nil
			mu.Unlock()
			args := append([]string{data, "-m", "m", "--detach", "--rank", "65"}, tc.args...)
			if _, _, err := runCLI(t, newTrainCmd(), args...); err == nil || !strings.Contains(err.Error(), "lora_rank") {
				t.Fatalf("train: %v, want the daemon's refusal", err)
			}
			mu.Lock()
			defer mu.Unlock()
			slices.Sort(deleted)
			if len(uploaded) == 0 || !slices.Equal(uploaded, deleted) {
				t.Fatalf("uploaded %v, deleted %v", uploaded, deleted)
			}
		})
	}
}
