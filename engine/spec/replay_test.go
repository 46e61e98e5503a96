package spec

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

// specHistory is one speculation workload's prompt and greedy output on
// the shared 19M F16 model (testdata/lookup-19m-f16.json, written by
// engine/llm's TestWriteSpecHistories).
type specHistory struct {
	Name   string  `json:"name"`
	Prompt int     `json:"prompt"`
	Tokens []int32 `json:"tokens"`
}

// Pass costs, in decode steps, of verifying 0 to 7 draft tokens: the 19M
// F16 model's on two Zen 5 cores (BenchmarkVerifyPass) and the Q8_0
// model's without AMX, whose extra rows cost far more.
var (
	replayCostF16 = []float64{1, 1.09, 1.21, 1.35, 1.46, 1.64, 1.84, 2.07}
	replayCostQ8  = []float64{1, 1.33, 1.90, 2.21, 2.77, 3.0, 3.65, 4.01}
)

// replayLookup decodes the recorded histories with prompt lookup and a
// fresh controller (one sequence at a time, as the speculation benchmark
// does), every pass costing cost[drafts] steps, and returns the tokens
// made per step of cost. With always, the guard is bypassed (speculation
// always allowed): the controller's drafts alone.
func replayLookup(hs []specHistory, cost []float64, always bool) float64 {
	const unit = 400 * time.Microsecond
	c := NewController(Options{})
	var tokens, spent float64
	for _, h := range hs {
		var seq Seq
		var l Lookup
		for i := h.Prompt + 1; i < len(h.Tokens); {
			allowed := always || c.Allowed(1, KindLookup)
			var d Draft
			if allowed {
				l.Propose(&d, h.Tokens[:i], len(cost)-1, len(cost)-1)
				c.Trim([]*Seq{&seq}, []*Draft{&d}, 1)
			}
			step := time.Duration(cost[d.Len()] * float64(unit))
			c.StepTime(1+d.Len(), step)
			var path []int32
			for j := 0; j < d.Len() && i+j < len(h.Tokens) && d.Tokens[j] == h.Tokens[i+j]; j++ {
				path = append(path, int32(j))
			}
			c.Observe(&seq, &d, path, len(path) < d.Len())
			got := 1 + len(path)
			c.StepDone(1, KindLookup, got, d.Len(), step, allowed)
			tokens += float64(got)
			spent += cost[d.Len()]
			i += got
		}
	}
	return tokens / spent
}

// TestControllerReplay replays the speculation workloads' recorded greedy
// output through prompt lookup, the controller and its guard, at fixed
// pass costs, so that the policy's outcome is measured without timing
// noise: lookup must never cost more than 5 % (the floor), and
// the guard must keep 95 % of what the controller's drafts gain when
// always allowed. (The guard that compared windows with lookup against
// windows without it kept 0.87 of it on the summary: it switched lookup
// off in the summary's new first tokens and kept it off where it repeated
// itself; the paired one switching off at 0.98 kept 0.95-0.96 on the
// summary and the code edit.)
func TestControllerReplay(t *testing.T) {
	raw, err := os.ReadFile("testdata/lookup-19m-f16.json")
	if err != nil {
		t.Fatal(err)
	}
	var hs []specHistory
	if err := json.Unmarshal(raw, &hs); err != nil {
		t.Fatal(err)
	}
	if len(hs) != 3 {
		t.Fatalf("%d histories, want rag, summary and code edit", len(hs))
	}
	for _, tc := range []struct {
		name string
		cost []float64
	}{{"F16", replayCostF16}, {"Q8_0", replayCostQ8}} {
		for i, h := range hs {
			guarded, always := replayLookup(hs[i:i+1], tc.cost, false), replayLookup(hs[i:i+1], tc.cost, true)
			t.Logf("%s %s: %.3fx with the guard, %.3fx always allowed", tc.name, h.Name, guarded, always)
			if guarded < 0.95 {
				t.Errorf("%s %s: lookup decodes %.3fx of no speculation", tc.name, h.Name, guarded)
			}
			if guarded < 0.95*always {
				t.Errorf("%s %s: the guard keeps %.3fx of %.3fx", tc.name, h.Name, guarded, always)
			}
		}
		all := replayLookup(hs, tc.cost, false)
		t.Logf("%s all three: %.3fx", tc.name, all)
		if tc.name == "F16" && all < 1.45 {
			t.Errorf("F16, all three workloads: %.3fx, want 1.45x or more (1.52x on 2026-11-27)", all)
		}
	}
}
