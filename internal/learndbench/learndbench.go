// Package learndbench measures learning from feedback through a real
// ruvllmd (in process, over its Unix socket), as `ruvllm bench
// learn-daemon` reports it: the update latency from a correction's
// arrival to the end of its first instant step (when the scope's requests
// apply it), and the time to first token of requests that arrive while the
// daemon trains, against the same requests while it is idle. Idle and
// training phases alternate, so that a machine loaded by other work
// affects both alike; each round's figures are reported.
package learndbench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/learning"
	"github.com/ruvllm/ruvllm/daemon/serve"
	"github.com/ruvllm/ruvllm/internal/learnbench"
	"github.com/ruvllm/ruvllm/ipc"
)

// Options configures Run.
type Options struct {
	Model string // GGUF file
	// Rounds of an idle phase followed by a training phase (default 3).
	Rounds int
	// Corrections per training phase (default 10).
	Corrections int
	// Requests per idle phase (default 20); a training phase sends
	// requests for as long as it trains.
	Requests int
	Threads  int
	// TrainThreads are the trainer's threads (0: the daemon's default).
	TrainThreads int
	Log          io.Writer
	// DaemonLog, when set, receives the daemon's debug log.
	DaemonLog io.Writer
}

// Round is one idle phase and one training phase.
type Round struct {
	IdleP50, IdleP95, TrainP50, TrainP95 float64 // TTFT, ms
	IdleRequests, TrainRequests          int
	// LatencyP50/P95: from a correction's arrival to the end of its first
	// step (the daemon's latency_ms) while the requests arrive;
	// RoundTripP50 the client's POST /v1/feedback round trip, which
	// returns then. QuietP50/P95: the same with no request to yield to.
	LatencyP50, LatencyP95, RoundTripP50 float64
	QuietP50, QuietP95                   float64
	Updates                              int
}

// Report is the bench's result.
type Report struct {
	Model  string  `json:"model"`
	Rounds []Round `json:"rounds"`
	// Over all rounds.
	LatencyP50, LatencyP95 float64
	QuietP50, QuietP95     float64
	IdleP50, TrainP50      float64
}

// requestGap spaces the TTFT probes: an app's requests, not a load test
// (training yields to requests, so back-to-back requests would stop it).
const requestGap = 150 * time.Millisecond

// Run starts a daemon on the model and measures.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if o.Corrections <= 0 {
		o.Corrections = 10
	}
	if o.Requests <= 0 {
		o.Requests = 20
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	logf := func(format string, args ...any) { fmt.Fprintf(o.Log, format+"\n", args...) }
	dir, err := os.MkdirTemp("", "ruvllm-learnd-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	abs, err := filepath.Abs(o.Model)
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "s.sock")
	logger := slog.New(slog.DiscardHandler)
	if o.DaemonLog != nil {
		logger = slog.New(slog.NewTextHandler(o.DaemonLog, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	cfg := daemon.Config{SocketPath: sock, StateDir: filepath.Join(dir, "state"), ModelsDir: filepath.Join(dir, "models"),
		CacheDir: filepath.Join(dir, "cache"), Threads: o.Threads, Version: "bench", Logger: logger}
	dctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		// No periodic consolidation during the measured phases.
		done <- serve.Run(dctx, serve.Options{Config: cfg, Model: abs, Preload: true, KeepAlive: -1,
			Learning: learning.Options{Interval: 24 * time.Hour, Threads: o.TrainThreads}})
	}()
	defer func() { stop(); <-done }()
	c := &client{http: &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}}
	model := ipc.ModelNameFromPath(abs)
	logf("waiting for the daemon and the learner to be ready")
	if err := c.waitReady(ctx, model); err != nil {
		return nil, err
	}
	// The rated replies, made before any measurement.
	qs := learnbench.Questions()
	need := o.Rounds * o.Corrections
	if need > len(qs)-8 {
		return nil, fmt.Errorf("at most %d corrections in all", len(qs)-8)
	}
	type rated struct{ id, correction string }
	var toRate []rated
	for _, q := range qs[8 : 8+need] {
		id, text, err := c.complete(ctx, q, 24)
		if err != nil {
			return nil, err
		}
		toRate = append(toRate, rated{id, " In short, " + firstSentence(text) + " Cheers, Ana."})
	}
	probes := qs[:8]
	// The event stream ends before the daemon stops (an open stream holds
	// a graceful shutdown for its whole grace period).
	ectx, endEvents := context.WithCancel(ctx)
	defer endEvents()
	events, err := c.events(ectx)
	if err != nil {
		return nil, err
	}
	rep := &Report{Model: model}
	var allLat, allIdle, allTrain, allQuiet []float64
	for r := range o.Rounds {
		var rd Round
		idle, err := c.ttfts(ctx, probes, o.Requests, nil)
		if err != nil {
			return nil, err
		}
		// correct sends corrections one after another, each once the
		// previous one's update has ended (a user's pace: no queueing in
		// the figures).
		correct := func(xs []rated) (lat, rt []float64, err error) {
			for _, x := range xs {
				start := time.Now()
				l, err := c.feedback(ctx, x.id, x.correction)
				if err != nil {
					return lat, rt, err
				}
				rt = append(rt, float64(time.Since(start).Microseconds())/1000)
				if l.Status == ipc.LearnApplied {
					lat = append(lat, l.LatencyMillis)
				}
				if err := events.wait(ctx, l.FeedbackID); err != nil {
					return lat, rt, err
				}
			}
			return lat, rt, nil
		}
		batch := toRate[r*o.Corrections : (r+1)*o.Corrections]
		half := len(batch) / 2
		// First alone: the update latency without requests to yield to.
		quiet, _, err := correct(batch[:half])
		if err != nil {
			return nil, err
		}
		// Then with requests arriving meanwhile.
		stopProbes := make(chan struct{})
		var train []float64
		var perr error
		var wg sync.WaitGroup
		wg.Go(func() { train, perr = c.ttfts(ctx, probes, 0, stopProbes) })
		lat, rt, err := correct(batch[half:])
		close(stopProbes)
		wg.Wait()
		if err != nil {
			return nil, err
		}
		if perr != nil {
			return nil, perr
		}
		rd.QuietP50, rd.QuietP95 = percentile(quiet, 50), percentile(quiet, 95)
		allQuiet = append(allQuiet, quiet...)
		rd.IdleP50, rd.IdleP95, rd.IdleRequests = percentile(idle, 50), percentile(idle, 95), len(idle)
		rd.TrainP50, rd.TrainP95, rd.TrainRequests = percentile(train, 50), percentile(train, 95), len(train)
		rd.LatencyP50, rd.LatencyP95, rd.RoundTripP50, rd.Updates = percentile(lat, 50), percentile(lat, 95), percentile(rt, 50), len(lat)
		logf("round %d: TTFT p50/p95 idle %.1f/%.1f ms (%d), training %.1f/%.1f ms (%d); update latency p50/p95 alone %.0f/%.0f ms, with requests %.0f/%.0f ms (%d updates)",
			r+1, rd.IdleP50, rd.IdleP95, rd.IdleRequests, rd.TrainP50, rd.TrainP95, rd.TrainRequests, rd.QuietP50, rd.QuietP95, rd.LatencyP50, rd.LatencyP95, rd.Updates)
		rep.Rounds = append(rep.Rounds, rd)
		allLat, allIdle, allTrain = append(allLat, lat...), append(allIdle, idle...), append(allTrain, train...)
	}
	rep.LatencyP50, rep.LatencyP95 = percentile(allLat, 50), percentile(allLat, 95)
	rep.QuietP50, rep.QuietP95 = percentile(allQuiet, 50), percentile(allQuiet, 95)
	rep.IdleP50, rep.TrainP50 = percentile(allIdle, 50), percentile(allTrain, 50)
	return rep, nil
}

// Print writes the report.
func Print(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "%s through ruvllmd: idle and training phases alternate\n", rep.Model)
	fmt.Fprintln(w, "round | TTFT p50/p95 idle (n) | TTFT p50/p95 training (n) | change p50 | update latency p50/p95: alone, with requests (n) | feedback round trip p50")
	for i, r := range rep.Rounds {
		fmt.Fprintf(w, "%5d | %.1f/%.1f ms (%d) | %.1f/%.1f ms (%d) | %+.1f %% | %.0f/%.0f ms, %.0f/%.0f ms (%d) | %.0f ms\n", i+1,
			r.IdleP50, r.IdleP95, r.IdleRequests, r.TrainP50, r.TrainP95, r.TrainRequests, 100*(r.TrainP50/r.IdleP50-1),
			r.QuietP50, r.QuietP95, r.LatencyP50, r.LatencyP95, r.Updates, r.RoundTripP50)
	}
	fmt.Fprintf(w, "all   | TTFT p50 idle %.1f ms, training %.1f ms (%+.1f %%) | update latency p50/p95 alone %.0f/%.0f ms, with requests %.0f/%.0f ms\n",
		rep.IdleP50, rep.TrainP50, 100*(rep.TrainP50/rep.IdleP50-1), rep.QuietP50, rep.QuietP95, rep.LatencyP50, rep.LatencyP95)
}

// client talks to the daemon over its socket.
type client struct{ http *http.Client }

func (c *client) do(ctx context.Context, method, path string, body any, hdr map[string]string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://ruvllm"+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp, nil
}

func (c *client) waitReady(ctx context.Context, model string) error {
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := c.do(ctx, "GET", "/v1/learning", nil, nil); err == nil {
			var st ipc.LearningStatus
			json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			for _, m := range st.Models {
				if m.Model == model {
					switch m.Status {
					case "ready":
						return nil
					case "unsupported", "error":
						return fmt.Errorf("the model cannot learn: %s", m.Error)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return errors.New("the learner was not ready in 10 minutes")
}

// prompt is the completion prompt of a question.
func prompt(q string) string { return "Question: " + q + "\nAnswer:" }

// complete returns a greedy one-line answer's id and text.
func (c *client) complete(ctx context.Context, q string, n int) (string, string, error) {
	body := map[string]any{"prompt": prompt(q), "temperature": 0, "max_tokens": n, "stop": []string{"\n"}}
	resp, err := c.do(ctx, "POST", "/v1/completions", body, nil)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	var out ipc.CompletionResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", "", err
	}
	if len(out.Choices) == 0 {
		return "", "", errors.New("completion without a choice")
	}
	return out.ID, out.Choices[0].Text, nil
}

// ttfts sends 8-token streamed completions of the probes, requestGap
// apart, n of them (until stop closes when n is 0), with the learned
// adapters switched off so that only the daemon's load differs between
// phases, and returns their times to the first token in ms.
func (c *client) ttfts(ctx context.Context, probes []string, n int, stop chan struct{}) ([]float64, error) {
	var out []float64
	for i := 0; n == 0 || i < n; i++ {
		t := time.NewTimer(requestGap)
		select {
		case <-stop:
			t.Stop()
			return out, nil
		case <-ctx.Done():
			t.Stop()
			return out, ctx.Err()
		case <-t.C:
		}
		body := map[string]any{"prompt": prompt(probes[i%len(probes)]), "temperature": 0, "max_tokens": 8, "stream": true}
		start := time.Now()
		resp, err := c.do(ctx, "POST", "/v1/completions", body, map[string]string{"X-Ruvllm-Learning": "off"})
		if err != nil {
			return out, err
		}
		sc := bufio.NewScanner(resp.Body)
		first := time.Duration(0)
		for sc.Scan() {
			line := sc.Text()
			if first == 0 && strings.HasPrefix(line, "data: {") && !strings.Contains(line, `"text":""`) {
				first = time.Since(start)
			}
		}
		resp.Body.Close()
		if first > 0 {
			out = append(out, float64(first.Microseconds())/1000)
		}
	}
	return out, nil
}

// feedback posts a correction and returns what learning did.
func (c *client) feedback(ctx context.Context, id, correction string) (ipc.FeedbackLearning, error) {
	resp, err := c.do(ctx, "POST", "/v1/feedback", ipc.FeedbackRequest{RequestID: id, Rating: -1, Correction: correction}, nil)
	if err != nil {
		return ipc.FeedbackLearning{}, err
	}
	defer resp.Body.Close()
	var fb ipc.Feedback
	if err := json.NewDecoder(resp.Body).Decode(&fb); err != nil {
		return ipc.FeedbackLearning{}, err
	}
	if fb.Learning == nil {
		return ipc.FeedbackLearning{}, errors.New("the daemon does not learn")
	}
	l := *fb.Learning
	l.FeedbackID = fb.ID
	return l, nil
}

// eventWaiter follows /v1/events for learning.applied.
type eventWaiter struct {
	mu   sync.Mutex
	seen map[string]bool
	wake chan struct{}
	err  error
}

func (c *client) events(ctx context.Context) (*eventWaiter, error) {
	resp, err := c.do(ctx, "GET", "/v1/events", nil, nil)
	if err != nil {
		return nil, err
	}
	w := &eventWaiter{seen: map[string]bool{}, wake: make(chan struct{}, 1)}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Type string               `json:"type"`
				Data ipc.FeedbackLearning `json:"data"`
			}
			if json.Unmarshal([]byte(data), &ev) != nil || ev.Type != "learning.applied" {
				continue
			}
			w.mu.Lock()
			w.seen[ev.Data.FeedbackID] = true
			w.mu.Unlock()
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
		w.mu.Lock()
		w.err = errors.New("the event stream ended")
		w.mu.Unlock()
	}()
	return w, nil
}

func (w *eventWaiter) wait(ctx context.Context, id string) error {
	for {
		w.mu.Lock()
		ok, err := w.seen[id], w.err
		w.mu.Unlock()
		if ok {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-w.wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Minute):
			return fmt.Errorf("feedback %s: no learning.applied event in a minute", id)
		}
	}
}

// firstSentence is the answer up to its first full stop, lower-case
// first, at most 20 words.
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, ".\n"); i >= 0 {
		s = s[:i]
	}
	words := strings.Fields(s)
	if len(words) > 20 {
		words = words[:20]
	}
	s = strings.Join(words, " ")
	if s == "" {
		s = "it depends"
	}
	return strings.ToLower(s[:1]) + s[1:] + "."
}

func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}
