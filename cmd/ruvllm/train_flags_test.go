package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestTrainRefusesNegativeHyperparameters: a negative (or NaN) --epochs,
// --batch-size, --lr-multiplier or --rank is refused, naming the flag,
// before anything is uploaded; it was taken for 0 ("auto") and the job
// trained with the defaults.
func TestTrainRefusesNegativeHyperparameters(t *testing.T) {
	dir := t.TempDir()
	var calls atomic.Int32 // requests other than the health check
	serveDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/health" {
			w.Write([]byte("{}"))
			return
		}
		calls.Add(1)
		http.Error(w, `{"error":{"message":"not in this test"}}`, http.StatusTeapot)
	})
	data := filepath.Join(dir, "t.jsonl")
	if err := os.WriteFile(data, []byte(`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ flag, value string }{
		{"--epochs", "-1"},
		{"--batch-size", "-2"},
		{"--lr-multiplier", "-1"},
		{"--lr-multiplier", "NaN"},
		{"--rank", "-8"},
	} {
		t.Run(tc.flag+"="+tc.value, func(t *testing.T) {
			_, _, err := runCLI(t, newTrainCmd(), data, "-m", "m", "--detach", tc.flag, tc.value)
			if err == nil || !strings.Contains(err.Error(), tc.flag) {
				t.Fatalf("err %v, want one naming %s", err, tc.flag)
			}
			if n := calls.Swap(0); n != 0 {
				t.Fatalf("%d requests reached the daemon", n)
			}
		})
	}
}
