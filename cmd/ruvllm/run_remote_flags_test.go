package main

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestRunRemoteFlags: run --remote sends --spec as the request's
// speculation field and refuses the flags it cannot send (the engine's
// own, and sampling fields the OpenAI endpoints do not take); they were
// accepted and silently not applied.
func TestRunRemoteFlags(t *testing.T) {
	got := make(chan ipc.CompletionRequest, 1)
	serveDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/health":
			w.Write([]byte("{}"))
		case "/v1/completions":
			var req ipc.CompletionRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			got <- req
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: {\"choices\":[{\"index\":0,\"text\":\"ok\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"))
		default:
			http.NotFound(w, r)
		}
	})

	for _, tc := range []struct {
		args     []string
		wantSpec string // the request's speculation field
		wantErr  string // or the error, with no request sent
	}{
		{args: nil, wantSpec: ""},
		{args: []string{"--spec", "off"}, wantSpec: "off"},
		{args: []string{"--spec", "lookup+tree"}, wantSpec: "lookup+tree"},
		{args: []string{"--threads", "1"}, wantErr: "--threads"},
		{args: []string{"--ctx", "16"}, wantErr: "--ctx"},
		{args: []string{"--draft", "self:Q4_0"}, wantErr: "--draft"},
		{args: []string{"--spec-fixed", "3"}, wantErr: "--spec-fixed"},
		{args: []string{"--kv-type", "q4_0"}, wantErr: "--kv-type"},
		{args: []string{"--kv-hot-window", "8"}, wantErr: "--kv-hot-window"},
		{args: []string{"--typical-p", "0.5"}, wantErr: "--typical-p"},
		{args: []string{"--repeat-last-n", "8"}, wantErr: "--repeat-last-n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append([]string{"--remote", "-m", "m", "-p", "hi", "-n", "1"}, tc.args...)
			out, _, err := runCLI(t, newRunCmd(), args...)
			if tc.wantErr != "" {
				// The handler queues a request before it answers, so one
				// sent is in got by now.
				sent := false
				select {
				case <-got:
					sent = true
				default:
				}
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || sent {
					t.Fatalf("err %v (request sent: %v), want one naming %s and no request", err, sent, tc.wantErr)
				}
				return
			}
			if err != nil || out != "ok\n" && out != "ok" {
				t.Fatalf("run --remote: %q %v", out, err)
			}
			if req := <-got; req.Speculation != tc.wantSpec {
				t.Fatalf("speculation sent: %q, want %q", req.Speculation, tc.wantSpec)
			}
		})
	}
}

// TestRemoteRunsLeaveModelParameters: run --remote and chat send the
// sampling flags the user set, and leave the others to a created model's
// PARAMETERs (as `ollama run` does); they always sent their own defaults
// (temperature 0.8 or 0.7, 128 or 512 tokens), so a Modelfile's
// temperature and num_predict never applied from the CLI.
func TestRemoteRunsLeaveModelParameters(t *testing.T) {
	got := make(chan ipc.SamplingFields, 1)
	serveDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/health":
			w.Write([]byte("{}"))
		case "/api/show":
			var req ipc.OllamaShowRequest
			json.NewDecoder(r.Body).Decode(&req)
			if req.Model != "created" {
				http.NotFound(w, r)
				return
			}
			w.Write([]byte(`{"parameters":"temperature                    0.1\nnum_predict                    3\nrepeat_penalty                 1.3"}`))
		case "/v1/conversations/conv-created":
			w.Write([]byte(`{"id":"conv-created","model":"created","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`))
		case "/v1/conversations/conv-temp":
			w.Write([]byte(`{"id":"conv-temp","model":"created","sampling":{"temperature":0.3}}`))
		case "/v1/completions", "/v1/chat/completions":
			var req struct{ ipc.SamplingFields }
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			got <- req.SamplingFields
			w.Header().Set("Content-Type", "text/event-stream")
			if r.URL.Path == "/v1/completions" {
				w.Write([]byte("data: {\"choices\":[{\"index\":0,\"text\":\"ok\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"))
			} else {
				w.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"))
			}
		default:
			http.NotFound(w, r)
		}
	})

	for _, tc := range []struct {
		name     string
		cmd      func() *cobra.Command
		args     []string
		stdin    string
		wantTemp *float32 // nil: left to the model
		wantMax  int
		wantRep  float32
	}{
		{"run, a created model", newRunCmd, []string{"--remote", "-m", "created", "-p", "hi"}, "", nil, 0, 0},
		{"run, flags set", newRunCmd, []string{"--remote", "-m", "created", "-p", "hi", "--temp", "0.5", "-n", "7", "--repeat-penalty", "1.1"}, "", ptr(float32(0.5)), 7, 1.1},
		{"run, another model", newRunCmd, []string{"--remote", "-m", "other", "-p", "hi"}, "", ptr(float32(0.8)), 128, 1},
		{"chat, a created model", newChatCmd, []string{"-m", "created", "--no-save"}, "hi\n", nil, 0, 0},
		{"chat, flags set", newChatCmd, []string{"-m", "created", "--no-save", "--temp", "0.2", "-n", "9"}, "hi\n", ptr(float32(0.2)), 9, 0},
		{"chat, another model", newChatCmd, []string{"-m", "other", "--no-save"}, "hi\n", ptr(float32(0.7)), 512, 0},
		// A resumed conversation's model is the created one (soak T: the
		// CLI's defaults were sent, as no -m named it).
		{"chat, resuming a created model's conversation", newChatCmd, []string{"--conversation", "conv-created", "--no-save"}, "hi\n", nil, 0, 0},
		{"chat, resuming with a stored temperature", newChatCmd, []string{"--conversation", "conv-temp", "--no-save"}, "hi\n", ptr(float32(0.3)), 0, 0},
		{"chat, resuming with another model", newChatCmd, []string{"--conversation", "conv-created", "-m", "other", "--no-save"}, "hi\n", ptr(float32(0.7)), 512, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := runCLIIn(t, strings.NewReader(tc.stdin), tc.cmd(), tc.args...); err != nil {
				t.Fatal(err)
			}
			var sf ipc.SamplingFields
			select {
			case sf = <-got:
			default:
				t.Fatal("no request was sent")
			}
			if (sf.Temperature == nil) != (tc.wantTemp == nil) || sf.Temperature != nil && *sf.Temperature != *tc.wantTemp {
				t.Errorf("temperature %v, want %v", deref(sf.Temperature), deref(tc.wantTemp))
			}
			if sf.MaxTokens != tc.wantMax || sf.RepeatPenalty != tc.wantRep {
				t.Errorf("max_tokens %d, repeat_penalty %v; want %d, %v", sf.MaxTokens, sf.RepeatPenalty, tc.wantMax, tc.wantRep)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func deref(p *float32) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestParameterNames: the PARAMETER names of /api/show's parameters text,
// in ruvllmd's shape (PARAMETER lines, as in a Modelfile) and in Ollama's
// (a padded name and its value). ruvllmd's lines were read as setting
// "PARAMETER", so chat and run --remote sent their own defaults to every
// created model (soak T).
func TestParameterNames(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []string
	}{
		{"ruvllmd", "PARAMETER num_predict 2\nPARAMETER stop \"<|im_end|>\"\nPARAMETER temperature 0\n", []string{"num_predict", "stop", "temperature"}},
		{"ollama", "temperature                    0.1\nnum_predict                    3\nrepeat_penalty                 1.3", []string{"num_predict", "repeat_penalty", "temperature"}},
		{"none", "", nil},
	} {
		got := slices.Sorted(maps.Keys(parameterNames(c.text)))
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
