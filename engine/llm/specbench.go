package llm

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ruvllm/ruvllm/engine/spec"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
)

// specDocs are the documents of the speculation benchmark's workloads,
// written for it in the style of the technical text the shared test
// models learned from (kernel and Python documentation).
var specDocs = []string{
	`Memory zones
============

Each node's memory is split into zones. The DMA zone holds the pages that old devices can address,
the normal zone holds the pages the kernel maps all the time, and the movable zone holds pages that
can be migrated so that memory can be taken offline. When an allocation cannot be satisfied from the
preferred zone, the allocator falls back to the next zone in the node's zonelist. The watermarks of a
zone decide when kswapd is woken: below the low watermark kswapd starts to reclaim pages, and below the
min watermark an allocation must reclaim pages itself before it can succeed. The watermarks can be
tuned with the min_free_kbytes and watermark_scale_factor sysctls.`,
	`def read_config(path, defaults=None):
    """Read a configuration file and return a dictionary of its settings.

    Lines starting with '#' are comments. Each other line holds a key and a
    value separated by '='. Keys that are missing take their value from
    defaults, if it is given.
    """
    settings = dict(defaults or {})
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if "=" not in line:
                raise ValueError(f"{path}:{number}: expected key=value")
            key, value = line.split("=", 1)
            settings[key.strip()] = value.strip()
    return settings`,
	`Submitting a driver
===================

Before a new driver is submitted, run the checkpatch.pl script over the patch and fix what it reports.
The driver must build without warnings with W=1, and it must not add new sparse warnings. Describe in
the changelog which hardware the driver supports and how it was tested. Add the driver's files to the
MAINTAINERS file, with the mailing list that reviews them. Device tree bindings go in a separate patch,
before the driver that uses them, and they are reviewed by the device tree maintainers.`,
}

// SpecWorkload is one prompt of the speculation benchmark.
type SpecWorkload struct {
	Name   string
	Prompt string
}

// EditedPrediction is the prediction the speculation benchmarks send with a
// workload whose reply without speculation was reply: that reply with the
// words a third and two thirds of the way in changed, as a client
// regenerating a reply with changes predicts it.
func EditedPrediction(reply string) string {
	words := strings.Split(reply, " ")
	if len(words) >= 3 {
		words[len(words)/3], words[2*len(words)/3] = "zebra", "giraffe"
	}
	return strings.Join(words, " ")
}

// SpecSetting is one configuration the speculation benchmark measures: the
// kinds requests may use and, with Prediction, a predicted output sent
// along (Request.Prediction, drafted by prompt lookup): EditedPrediction of
// the workload's reply.
type SpecSetting struct {
	Kinds      spec.Kinds
	Prediction bool
}

// String names the setting: its kinds, "+prediction" with a prediction.
func (s SpecSetting) String() string {
	if s.Prediction {
		return s.Kinds.String() + "+prediction"
	}
	return s.Kinds.String()
}

// ParseSpecSetting reads a setting: kinds as spec.ParseKinds takes them,
// with "+prediction" (which needs lookup, and brings it) or "prediction"
// alone for lookup with predictions.
func ParseSpecSetting(s string) (SpecSetting, error) {
	var out SpecSetting
	rest, pred := strings.CutSuffix(s, "+prediction")
	if s == "prediction" {
		rest, pred = "lookup", true
	}
	k, err := spec.ParseKinds(rest)
	if err != nil {
		return out, err
	}
	if pred {
		k |= spec.KindLookup
	}
	return SpecSetting{Kinds: k, Prediction: pred}, nil
}

// SpecWorkloads are the speculation benchmark's prompts: questions over a
// document (RAG), a summary, and a code edit, the kinds of generation
// whose output repeats its input.
func SpecWorkloads() []SpecWorkload {
	return []SpecWorkload{
		{Name: "rag", Prompt: specDocs[0] + "\n\nQuestion: when is kswapd woken, and what do the watermarks decide?\nAnswer: kswapd is woken"},
		{Name: "summary", Prompt: specDocs[2] + "\n\nSummary of the section above:\n\nBefore a new driver is submitted,"},
		{Name: "code-edit", Prompt: specDocs[1] + "\n\n\n# The same function, with a check that the file exists:\n\ndef read_config(path, defaults=None):\n"},
	}
}

// SpecFigure is decode speed with one set of speculation kinds over the
// speculation workloads.
type SpecFigure struct {
	Kinds string `json:"kinds"` // "none", "lookup", "draft+tree", ...
	// TokensPerSecond is generated tokens (after the first) over decode
	// time, summed over the workloads, per repetition.
	TokensPerSecond float64   `json:"tokens_per_second"`
	Samples         []float64 `json:"samples"`
	// Speedup is TokensPerSecond over the figure without speculation,
	// the median of the repetitions' ratios (each repetition runs every
	// kind back to back).
	Speedup float64 `json:"speedup"`
	// CPUTokensPerSecond is generated tokens (after the first) over the
	// process's CPU time while they were generated, and CPUSpeedup its
	// ratio to none's, as Speedup: on a machine whose cores other
	// processes keep busy, wall time varies several-fold between runs
	// while the work done per token does not (measure with one thread, so
	// that no helper spins). 0 where CPU time is unknown.
	CPUTokensPerSecond float64 `json:"cpu_tokens_per_second,omitempty"`
	CPUSpeedup         float64 `json:"cpu_speedup,omitempty"`
	// TTFTMillis is the mean time to the first token: a draft model reads
	// the prompt while the target computes it, which shows here.
	TTFTMillis float64 `json:"ttft_ms"`
	// AcceptanceRate and TokensPerVerification are over all repetitions.
	AcceptanceRate        float64 `json:"acceptance_rate"`
	TokensPerVerification float64 `json:"tokens_per_verification"`
	// VerifiedShare is the share of decode steps that verified a draft:
	// how often the drafters proposed something the controller judged
	// worth verifying.
	VerifiedShare float64 `json:"verified_share"`
	// Identical reports whether every generation's tokens equal those
	// without speculation (greedy).
	Identical bool `json:"identical"`
	// Workloads are the same figures for each workload alone: how much
	// speculation gains depends on how much of the output repeats its
	// input, which differs between a question over a document, a summary
	// and a code edit.
	Workloads []SpecWorkloadFigure `json:"workloads,omitempty"`
}

// SpecWorkloadFigure is one workload's decode speed with one set of
// speculation kinds.
type SpecWorkloadFigure struct {
	Name            string    `json:"name"`
	TokensPerSecond float64   `json:"tokens_per_second"`
	Samples         []float64 `json:"samples"`
	// Speedup is the median over the repetitions of the ratio to the
	// same workload's figure without speculation.
	Speedup               float64 `json:"speedup"`
	AcceptanceRate        float64 `json:"acceptance_rate"`
	TokensPerVerification float64 `json:"tokens_per_verification"`
	VerifiedShare         float64 `json:"verified_share"`
}

// BenchSpec measures greedy decode speed on the speculation workloads with
// each setting (kinds 0: speculation off) in turn, genTokens tokens per
// workload, reps times, alternating the settings within each repetition
// (and rotating their order) so that the machine's noise falls on all
// alike. It checks that every setting's tokens equal those without
// speculation.
func (m *Model) BenchSpec(ctx context.Context, kinds []SpecSetting, genTokens, reps int) ([]SpecFigure, error) {
	// The first token comes from the prompt pass: with fewer than 2 there
	// is no decode to time, and every speed-up was 0/0, NaN (which JSON
	// cannot encode).
	if genTokens < 2 {
		return nil, fmt.Errorf("bench speculation: %d tokens per workload: decode needs at least 2 (the first comes from the prompt)", genTokens)
	}
	if reps <= 0 {
		reps = 5
	}
	if !slices.Contains(kinds, SpecSetting{}) {
		kinds = append([]SpecSetting{{}}, kinds...)
	}
	base := slices.Index(kinds, SpecSetting{}) // the settings' figures are over this one's
	work := SpecWorkloads()
	figs := make([]SpecFigure, len(kinds))
	stats := make([]SpecResult, len(kinds))
	want := make([][]int32, len(work))
	predictions := make([]string, len(work))
	for wi, w := range work { // the replies without speculation, which the predictions edit
		var ids []int32
		if _, err := m.Generate(ctx, Request{Prompt: w.Prompt, MaxTokens: genTokens, IgnoreEOS: true, NoSpeculation: true}, func(t Token) error {
			if t.ID >= 0 {
				ids = append(ids, t.ID)
			}
			return nil
		}); err != nil {
			return nil, fmt.Errorf("speculation bench %s: %w", w.Name, err)
		}
		want[wi], predictions[wi] = ids, EditedPrediction(m.tok.Decode(ids, tokenizer.DecodeOptions{}))
	}
	// Per kind and workload: the repetitions' tokens/s and their ratios
	// to none's, and the speculation counts.
	wtps, wratios := make([][][]float64, len(kinds)), make([][][]float64, len(kinds))
	wstats, wdecoded := make([][]SpecResult, len(kinds)), make([][]int, len(kinds))
	for i, k := range kinds {
		figs[i] = SpecFigure{Kinds: k.String(), Identical: true}
		wtps[i], wratios[i] = make([][]float64, len(work)), make([][]float64, len(work))
		wstats[i], wdecoded[i] = make([]SpecResult, len(work)), make([]int, len(work))
	}
	repWTPS := make([][]float64, len(kinds)) // this repetition's, by kind and workload
	ratios, cpuRatios := make([][]float64, len(kinds)), make([][]float64, len(kinds))
	cpuToks, cpuSecs := make([]int, len(kinds)), make([]float64, len(kinds))
	decoded := make([]int, len(kinds)) // tokens after the first, over the timed repetitions
	ttft, ttftN := make([]float64, len(kinds)), make([]int, len(kinds))
	for rep := -1; rep < reps; rep++ { // rep -1 warms up every kind
		tps, ctps := make([]float64, len(kinds)), make([]float64, len(kinds))
		for ki := range kinds {
			repWTPS[ki] = make([]float64, len(work))
		}
		for off := range kinds {
			ki := (off + max(rep, 0)) % len(kinds)
			k := kinds[ki]
			var toks int
			var secs, cpu float64
			for wi, w := range work {
				req := Request{Prompt: w.Prompt, MaxTokens: genTokens, IgnoreEOS: true, NoSpeculation: k.Kinds == 0, Speculate: k.Kinds}
				if k.Prediction {
					req.Prediction = predictions[wi]
				}
				var ids []int32
				var cpuFirst float64
				res, err := m.Generate(ctx, req, func(t Token) error {
					if t.ID >= 0 {
						if len(ids) == 0 {
							cpuFirst, _ = processCPU()
						}
						ids = append(ids, t.ID)
					}
					return nil
				})
				if end, ok := processCPU(); ok && cpuFirst > 0 {
					cpu += end - cpuFirst
				}
				if err != nil {
					return nil, fmt.Errorf("speculation bench %s/%s: %w", k, w.Name, err)
				}
				if !slices.Equal(ids, want[wi]) {
					figs[ki].Identical = false
				}
				if rep >= 0 {
					toks += res.CompletionTokens - 1
					decoded[ki] += res.CompletionTokens - 1
					secs += res.Timings.Eval.Seconds()
					ttft[ki] += float64(res.Timings.TTFT.Microseconds()) / 1000
					ttftN[ki]++
					for _, s := range []*SpecResult{&stats[ki], &wstats[ki][wi]} {
						s.Drafted += res.Speculation.Drafted
						s.Accepted += res.Speculation.Accepted
						s.Verifications += res.Speculation.Verifications
					}
					wdecoded[ki][wi] += res.CompletionTokens - 1
					if e := res.Timings.Eval.Seconds(); e > 0 {
						repWTPS[ki][wi] = float64(res.CompletionTokens-1) / e
						wtps[ki][wi] = append(wtps[ki][wi], repWTPS[ki][wi])
					}
				}
			}
			if rep >= 0 && secs > 0 {
				tps[ki] = float64(toks) / secs
				figs[ki].Samples = append(figs[ki].Samples, tps[ki])
			}
			if rep >= 0 && cpu > 0 {
				ctps[ki] = float64(toks) / cpu
				cpuToks[ki] += toks
				cpuSecs[ki] += cpu
			}
		}
		if rep >= 0 {
			for ki := range kinds {
				for wi := range work {
					if repWTPS[base][wi] > 0 && repWTPS[ki][wi] > 0 {
						wratios[ki][wi] = append(wratios[ki][wi], repWTPS[ki][wi]/repWTPS[base][wi])
					}
				}
				ratios[ki] = append(ratios[ki], tps[ki]/tps[base])
				if ctps[base] > 0 && ctps[ki] > 0 {
					cpuRatios[ki] = append(cpuRatios[ki], ctps[ki]/ctps[base])
				}
			}
		}
	}
	for ki := range figs {
		figs[ki].TokensPerSecond, _ = meanStddev(figs[ki].Samples)
		figs[ki].Speedup = median(ratios[ki])
		if cpuSecs[ki] > 0 {
			figs[ki].CPUTokensPerSecond = float64(cpuToks[ki]) / cpuSecs[ki]
			figs[ki].CPUSpeedup = median(cpuRatios[ki])
		}
		if ttftN[ki] > 0 {
			figs[ki].TTFTMillis = ttft[ki] / float64(ttftN[ki])
		}
		figs[ki].AcceptanceRate = stats[ki].AcceptanceRate()
		figs[ki].TokensPerVerification = stats[ki].TokensPerVerification()
		figs[ki].VerifiedShare = verifiedShare(stats[ki], decoded[ki])
		for wi, w := range work {
			wf := SpecWorkloadFigure{Name: w.Name, Samples: wtps[ki][wi], Speedup: median(wratios[ki][wi]),
				AcceptanceRate: wstats[ki][wi].AcceptanceRate(), TokensPerVerification: wstats[ki][wi].TokensPerVerification(),
				VerifiedShare: verifiedShare(wstats[ki][wi], wdecoded[ki][wi])}
			wf.TokensPerSecond, _ = meanStddev(wf.Samples)
			figs[ki].Workloads = append(figs[ki].Workloads, wf)
		}
	}
	return figs, nil
}

// verifiedShare is the share of decode steps that verified a draft, of
// the steps that made decoded tokens (after the first) with s's counts.
func verifiedShare(s SpecResult, decoded int) float64 {
	if steps := decoded - s.Accepted; steps > 0 {
		return float64(s.Verifications) / float64(steps)
	}
	return 0
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
