package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestFollowJobBarEndsWhereTheJobStopped: the training bar of a job that
// failed or was cancelled stays at its last step; it was filled to 100 %
// whatever the job's end.
func TestFollowJobBarEndsWhereTheJobStopped(t *testing.T) {
	for _, tc := range []struct {
		status string
		full   bool
	}{{ipc.JobSucceeded, true}, {ipc.JobFailed, false}, {ipc.JobCancelled, false}} {
		t.Run(tc.status, func(t *testing.T) {
			steps := 3
			if tc.full {
				steps = 10
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/v1/health":
					json.NewEncoder(w).Encode(ipc.Health{Status: "ok"})
				case strings.HasSuffix(r.URL.Path, "/events"):
					json.NewEncoder(w).Encode(ipc.FineTuningEventList{Object: "list", Data: []ipc.FineTuningEvent{}})
				default:
					json.NewEncoder(w).Encode(ipc.FineTuningJob{ID: "ftjob-1", Status: tc.status, Steps: steps, TotalSteps: 10})
				}
			}))
			defer srv.Close()
			c, err := ipc.Dial(context.Background(), ipc.WithTCP(strings.TrimPrefix(srv.URL, "http://"), ""))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			j, err := followJob(context.Background(), c, "ftjob-1", &out)
			if err != nil || j.Status != tc.status {
				t.Fatalf("followJob: %+v %v", j, err)
			}
			if full := strings.Contains(out.String(), "100%"); full != tc.full {
				t.Fatalf("a %s job's bar at 100%%: %v, want %v:\n%q", tc.status, full, tc.full, out.String())
			}
		})
	}
}
