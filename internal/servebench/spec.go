package servebench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/ipc"
)

// defaultSpec are the speculation settings the spec workload compares.
var defaultSpec = []string{"off", "lookup", "lookup+tree", "draft", "all"}

// runSpec: greedy completions of the speculation workloads (llm.SpecWorkloads:
// questions over a document, a summary, a code edit), each with every
// speculation setting in turn; the settings alternate within each of
// o.Requests repetitions, in a rotating order, so that the machine's
// noise falls on all of them alike. Decode speed and draft figures come
// from the daemon's request log. It returns each setting's figures over
// all workloads (Workload "spec"), then each workload's alone ("spec/"
// and its name).
func runSpec(ctx context.Context, a, _ *ipc.Client, o Options) ([]Figures, error) {
	settings := o.Spec
	if len(settings) == 0 {
		settings = defaultSpec
	}
	if !slices.Contains(settings, "off") {
		settings = append([]string{"off"}, settings...)
	}
	base := slices.Index(settings, "off")
	work := llm.SpecWorkloads()
	// accs[si][0] is setting si over all workloads, accs[si][1+wi] over
	// workload wi alone.
	accs := make([][]specAcc, len(settings))
	for si := range accs {
		accs[si] = make([]specAcc, 1+len(work))
		for k := range accs[si] {
			accs[si][k].identical = true
		}
	}
	want := make([]string, len(work))
	for rep := -1; rep < o.Requests; rep++ { // rep -1 warms every setting up
		// This repetition's tokens and seconds by setting and group.
		toks := make([][]int, len(settings))
		secs := make([][]float64, len(settings))
		for off := range settings {
			si := (off + max(rep, 0)) % len(settings)
			toks[si], secs[si] = make([]int, 1+len(work)), make([]float64, 1+len(work))
			for wi, w := range work {
				text, rec, err := specOne(ctx, a, o, w, want[wi], settings[si])
				if err != nil {
					return nil, err
				}
				if settings[si] == "off" && want[wi] == "" {
					want[wi] = text
				}
				for _, g := range []int{0, 1 + wi} {
					ac := &accs[si][g]
					if want[wi] != "" && text != want[wi] {
						ac.identical = false
					}
					if rep < 0 || rec.TokensPerSecond <= 0 {
						continue
					}
					n := rec.CompletionTokens - 1
					toks[si][g] += n
					secs[si][g] += float64(n) / rec.TokensPerSecond
					ac.drafted += rec.DraftTokens
					ac.accepted += rec.DraftAccepted
					ac.verified += rec.Verifications
					ac.requests++
				}
			}
		}
		if rep < 0 {
			continue
		}
		for si := range settings {
			for g := range accs[si] {
				ac := &accs[si][g]
				if secs[si][g] <= 0 {
					continue
				}
				ac.tokens += toks[si][g]
				ac.secs += secs[si][g]
				if secs[base][g] > 0 && toks[base][g] > 0 {
					ac.ratios = append(ac.ratios, float64(toks[si][g])/secs[si][g]/(float64(toks[base][g])/secs[base][g]))
				}
			}
		}
	}
	var out []Figures
	for g := range 1 + len(work) {
		name := "spec"
		if g > 0 {
			name += "/" + work[g-1].Name
		}
		for si, s := range settings {
			out = append(out, accs[si][g].figures(name, s))
		}
	}
	return out, nil
}

// specAcc sums one speculation setting's requests of the spec workload.
type specAcc struct {
	tokens                      int
	secs                        float64
	drafted, accepted, verified int
	ratios                      []float64
	identical                   bool
	requests                    int
}

// figures are the setting's figures for the workload named workload.
func (ac specAcc) figures(workload, setting string) Figures {
	f := Figures{Workload: workload, Speculation: setting, Requests: ac.requests, Identical: ac.identical}
	if ac.secs > 0 {
		f.TokensPerSec = float64(ac.tokens) / ac.secs
	}
	if len(ac.ratios) > 0 {
		r := slices.Clone(ac.ratios)
		slices.Sort(r)
		f.Speedup = r[len(r)/2]
	}
	if ac.drafted > 0 {
		f.AcceptanceRate = float64(ac.accepted) / float64(ac.drafted)
	}
	if ac.verified > 0 {
		f.TokensPerVerification = float64(ac.accepted+ac.verified) / float64(ac.verified)
	}
	return f
}

// specOne sends one greedy completion with a speculation setting and
// returns its text and the daemon's record of it.
func specOne(ctx context.Context, c *ipc.Client, o Options, w llm.SpecWorkload, reply, setting string) (string, ipc.RequestRecord, error) {
	req := ipc.CompletionRequest{Model: o.Model, Prompt: ipc.CompletionPrompt{Text: w.Prompt}}
	temp := float32(0)
	kinds, predicted := strings.CutSuffix(setting, "+prediction")
	if setting == "prediction" {
		kinds, predicted = "lookup", true
	}
	req.Temperature, req.MaxTokens, req.Speculation = &temp, o.SpecTokens, kinds
	if predicted && reply != "" { // the reply without speculation, edited (the first "off" run precedes)
		req.Prediction = &ipc.Prediction{Type: "content", Content: llm.EditedPrediction(reply)}
	}
	var resp ipc.CompletionResponse
	if err := c.Do(ctx, http.MethodPost, "/v1/completions", req, &resp); err != nil {
		return "", ipc.RequestRecord{}, fmt.Errorf("speculation %s: %w", setting, err)
	}
	recs, err := c.Requests(ctx, 1)
	if err != nil {
		return "", ipc.RequestRecord{}, err
	}
	if len(recs) == 0 || recs[0].ID != resp.ID {
		return "", ipc.RequestRecord{}, fmt.Errorf("speculation %s: the request log's newest record is not request %s", setting, resp.ID)
	}
	text := ""
	if len(resp.Choices) > 0 {
		text = resp.Choices[0].Text
	}
	return text, recs[0], nil
}

// printSpec writes the spec workload's figures as a table.
func printSpec(w io.Writer, figs []Figures) {
	first := true
	for _, f := range figs {
		if f.Speculation == "" {
			continue
		}
		if first {
			fmt.Fprintf(w, "\n| %-14s | %-18s | %4s | %12s | %8s | %10s | %12s | %9s |\n", "workload", "speculation", "reqs", "decode t/s", "speed-up", "acceptance", "tokens/verif", "identical")
			fmt.Fprintf(w, "| %-14s | %-18s | %4s | %12s | %8s | %10s | %12s | %9s |\n", "---", "---", "---:", "---:", "---:", "---:", "---:", "---")
			first = false
		}
		fmt.Fprintf(w, "| %-14s | %-18s | %4d | %12.1f | %7.2fx | %10.2f | %12.2f | %9v |\n", f.Workload, f.Speculation, f.Requests, f.TokensPerSec, f.Speedup, f.AcceptanceRate, f.TokensPerVerification, f.Identical)
	}
}
