package llm

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/sample"
	"github.com/ruvllm/ruvllm/engine/spec"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// specPrompt is a retrieval-style prompt: a document, then an answer that
// starts quoting it, so prompt lookup finds matches.
const specPrompt = `Documentation/process/submitting-patches.rst: Describe your changes. Describe your problem.
Whether your patch is a one-line bug fix or 5000 lines of a new feature, there must be an underlying problem
that motivated you to do this work. Convince the reviewer that there is a problem worth fixing and that it
makes sense for them to read past the first paragraph.

Question: what must a patch describe? Answer: Whether your patch is a one-line bug fix or`

// TestSpeculationGreedyIdentical generates greedily from the shared
// models with each speculation kind at a fixed draft length (so drafts are
// verified whatever the odds), three requests at a time (one opted out,
// so verification shares passes with plain decoding), and compares the
// tokens with the same requests on the model without speculation: they
// must be identical.
func TestSpeculationGreedyIdentical(t *testing.T) {
	models := testpath.Shared(t, "models")
	for _, tc := range []struct {
		target, draft string
		kinds         []spec.Kinds
	}{
		{"ruvllm-test-llama-19m-f16.gguf", "ruvllm-test-llama-19m-q4_0.gguf",
			[]spec.Kinds{spec.KindLookup, spec.KindLookup | spec.KindTree, spec.KindDraft, spec.KindsAll}},
		{"ruvllm-test-llama-19m-q8_0.gguf", "ruvllm-test-llama-19m-q4_0.gguf", []spec.Kinds{spec.KindDraft | spec.KindTree}},
		{"ruvllm-test-qwen2-13m-q8_0.gguf", "ruvllm-test-qwen2-13m-q4_0.gguf", []spec.Kinds{spec.KindsAll}},
	} {
		t.Run(tc.target, func(t *testing.T) {
			target := filepath.Join(models, tc.target)
			reqs := []Request{
				{Prompt: specPrompt, MaxTokens: 40, IgnoreEOS: true},
				{Prompt: "The kernel's memory management", MaxTokens: 33, IgnoreEOS: true},
				{Prompt: specPrompt, MaxTokens: 25, IgnoreEOS: true, NoSpeculation: true},
			}
			plain, err := Load(context.Background(), target, Options{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			want := make([][]int32, len(reqs))
			for i, r := range reqs {
				want[i], _, _ = generate(t, plain, r)
			}
			plain.Close()
			for _, kinds := range tc.kinds {
				t.Run(kinds.String(), func(t *testing.T) {
					m, err := Load(context.Background(), target, Options{Threads: 2, Speculate: kinds,
						Draft: filepath.Join(models, tc.draft), SpecControl: spec.Options{Fixed: 4}})
					if err != nil {
						t.Fatal(err)
					}
					defer m.Close()
					got := make([][]int32, len(reqs))
					res := make([]Result, len(reqs))
					var wg sync.WaitGroup
					for i, r := range reqs {
						wg.Add(1)
						go func() {
							defer wg.Done()
							got[i], _, res[i] = generate(t, m, r)
						}()
					}
					wg.Wait()
					for i := range reqs {
						if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
							t.Fatalf("request %d: with speculation %v\nwithout %v", i, got[i], want[i])
						}
					}
					if s := res[0].Speculation; s.Verifications == 0 || s.Accepted == 0 {
						t.Fatalf("request 0 did not speculate: %+v", s)
					}
					if s := res[2].Speculation; s != (SpecResult{}) {
						t.Fatalf("the opted-out request speculated: %+v", s)
					}
					t.Logf("acceptance %.2f, %.2f tokens per verification", res[0].Speculation.AcceptanceRate(), res[0].Speculation.TokensPerVerification())
				})
			}
		})
	}
}

// TestSpeculationSampledSameSeed samples with a fixed seed with and
// without speculation on a shared model: acceptance keeps only the token
// the sampler drew, so the tokens must be the same.
func TestSpeculationSampledSameSeed(t *testing.T) {
	models := testpath.Shared(t, "models")
	target := filepath.Join(models, "ruvllm-test-llama-19m-q8_0.gguf")
	req := Request{Prompt: specPrompt, MaxTokens: 40, IgnoreEOS: true,
		Sampling: sample.Params{Temperature: 0.8, TopK: 40, TopP: 0.95, RepeatPenalty: 1.1, Seed: 11}}
	plain, err := Load(context.Background(), target, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := generate(t, plain, req)
	plain.Close()
	m, err := Load(context.Background(), target, Options{Threads: 2, Speculate: spec.KindsAll,
		Draft: filepath.Join(models, "ruvllm-test-llama-19m-q4_0.gguf"), SpecControl: spec.Options{Fixed: 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got, _, res := generate(t, m, req)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("seed 11 with speculation %v\nwithout %v", got, want)
	}
	if res.Speculation.Verifications == 0 {
		t.Fatalf("no speculation happened: %+v", res.Speculation)
	}
}

func TestDraftVocabularyMismatch(t *testing.T) {
	models := testpath.Shared(t, "models")
	_, err := Load(context.Background(), filepath.Join(models, "ruvllm-test-llama-19m-q8_0.gguf"), Options{Threads: 1,
		Speculate: spec.KindDraft, Draft: filepath.Join(models, "ruvllm-test-qwen2-13m-q4_0.gguf")})
	if !errors.Is(err, ErrDraftVocab) || !errors.Is(err, ErrDraft) {
		t.Fatalf("a qwen2 draft for a llama model: err = %v, want ErrDraftVocab and ErrDraft", err)
	}
	_, err = Load(context.Background(), filepath.Join(models, "ruvllm-test-llama-19m-q8_0.gguf"), Options{Threads: 1,
		Speculate: spec.KindDraft, Draft: filepath.Join(t.TempDir(), "missing.gguf")})
	if !errors.Is(err, ErrDraft) {
		t.Fatalf("a missing draft file: err = %v, want ErrDraft", err)
	}
}

// TestCostClockByThreads: speculation's cost model weighs passes in
// process CPU time on one thread and in wall time on several (whose
// polling helpers would count their waiting as work).
func TestCostClockByThreads(t *testing.T) {
	path := synthetic(t, "llama", quant.F32)
	for _, tc := range []struct {
		threads int
		cpu     bool
	}{{1, true}, {2, false}} {
		m, err := Load(context.Background(), path, Options{Threads: tc.threads})
		if err != nil {
			t.Fatal(err)
		}
		_, hasCPU := processCPU()
		if got := m.costClock() != nil; got != (tc.cpu && hasCPU) {
			t.Errorf("%d threads: CPU clock %v, want %v", tc.threads, got, tc.cpu && hasCPU)
		}
		m.Close()
	}
}

// TestSelfDraft drafts with a quantization of the model itself (Draft
// "self:Q4_0") for the shared Q8_0 file, which is requantized: the draft
// is made once into DraftDir and reused by the next load, greedy tokens
// equal those without speculation, and the draft model is named by what
// was asked. A type that is not a file type, no DraftDir, and the model's
// own type are refused with the reason.
func TestSelfDraft(t *testing.T) {
	models := testpath.Shared(t, "models")
	target := filepath.Join(models, "ruvllm-test-llama-19m-q8_0.gguf")
	dir := t.TempDir()
	req := Request{Prompt: specPrompt, MaxTokens: 30, IgnoreEOS: true}
	plain, err := Load(context.Background(), target, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := generate(t, plain, req)
	plain.Close()
	var made time.Time
	for i := range 2 {
		m, err := Load(context.Background(), target, Options{Threads: 2, Speculate: spec.KindDraft,
			Draft: SelfDraftPrefix + "Q4_0", DraftDir: dir, SpecControl: spec.Options{Fixed: 4}})
		if err != nil {
			t.Fatal(err)
		}
		got, _, res := generate(t, m, req)
		name := m.DraftName()
		m.Close()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("load %d: with the self draft %v\nwithout %v", i, got, want)
		}
		if res.Speculation.Verifications == 0 {
			t.Fatalf("load %d: no verification: %+v", i, res.Speculation)
		}
		if name != "self:Q4_0" {
			t.Errorf("draft name %q, want self:Q4_0", name)
		}
		files, err := filepath.Glob(filepath.Join(dir, "*.gguf"))
		if err != nil || len(files) != 1 {
			t.Fatalf("load %d: drafts kept %v (%v), want one", i, files, err)
		}
		st, err := os.Stat(files[0])
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			made = st.ModTime()
		} else if !st.ModTime().Equal(made) {
			t.Errorf("the second load made the draft again")
		}
	}
	// A new version of the model file gets a new draft, which replaces the
	// old one.
	newer := filepath.Join(t.TempDir(), filepath.Base(target))
	b, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(newer, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second version: the same name, another path
		m, err := Load(context.Background(), newer, Options{Threads: 1, Speculate: spec.KindDraft, Draft: "self:Q4_0", DraftDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		m.Close()
		if err := os.Chtimes(newer, made.Add(time.Hour), made.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.gguf")); len(files) != 1 {
		t.Errorf("drafts kept after the model changed: %v, want one", files)
	}
	for _, tc := range []struct{ draft, dir, want string }{
		{"self:Q9_9", dir, "Q9_9"},
		{"self:Q4_0", "", "DraftDir"},
		{"self:Q8_0", dir, "Q8_0 already"},
	} {
		_, err := Load(context.Background(), target, Options{Threads: 2, Speculate: spec.KindDraft, Draft: tc.draft, DraftDir: tc.dir})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrDraft) {
			t.Errorf("draft %q, dir %q: error %v, want an ErrDraft naming %q", tc.draft, tc.dir, err, tc.want)
		}
	}
}

// TestBenchSpecFigures runs the speculation benchmark briefly on the
// shared 19M llama and checks its figures: every workload reported for
// every kind, without speculation a speed-up of exactly 1, with lookup
// the same tokens and rates that are shares.
func TestBenchSpecFigures(t *testing.T) {
	path := filepath.Join(testpath.Shared(t, "models"), "ruvllm-test-llama-19m-f16.gguf")
	m, err := Load(context.Background(), path, Options{Threads: 2, ContextLength: 1024, Speculate: spec.KindsAll, NoPrefixCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const reps = 2
	pred, err := ParseSpecSetting("prediction")
	if err != nil || pred != (SpecSetting{Kinds: spec.KindLookup, Prediction: true}) {
		t.Fatalf("prediction: %+v, %v", pred, err)
	}
	figs, err := m.BenchSpec(context.Background(), []SpecSetting{{Kinds: spec.KindLookup}, pred}, 24, reps)
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 3 || figs[0].Kinds != "none" || figs[1].Kinds != "lookup" || figs[2].Kinds != "lookup+prediction" {
		t.Fatalf("figures for %+v, want none, lookup and lookup+prediction", figs)
	}
	work := SpecWorkloads()
	for _, f := range figs {
		if !f.Identical {
			t.Errorf("%s: tokens differ from those without speculation", f.Kinds)
		}
		if len(f.Workloads) != len(work) {
			t.Fatalf("%s: %d workload figures, want %d", f.Kinds, len(f.Workloads), len(work))
		}
		for i, wf := range f.Workloads {
			if wf.Name != work[i].Name || len(wf.Samples) != reps || wf.TokensPerSecond <= 0 {
				t.Errorf("%s/%d: %+v, want %s with %d samples", f.Kinds, i, wf, work[i].Name, reps)
			}
			for _, x := range []float64{wf.AcceptanceRate, wf.VerifiedShare} {
				if x < 0 || x > 1 {
					t.Errorf("%s/%s: a rate of %v", f.Kinds, wf.Name, x)
				}
			}
			if f.Kinds == "none" && (wf.Speedup != 1 || wf.AcceptanceRate != 0) {
				t.Errorf("none/%s: speed-up %v, acceptance %v; want 1 and 0", wf.Name, wf.Speedup, wf.AcceptanceRate)
			}
			if f.Kinds == "lookup" && wf.Speedup <= 0 {
				t.Errorf("lookup/%s: speed-up %v", wf.Name, wf.Speedup)
			}
		}
	}
	// Named after the others, none is still what they are measured by.
	figs, err = m.BenchSpec(context.Background(), []SpecSetting{{Kinds: spec.KindLookup}, {}}, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 2 || figs[1].Kinds != "none" || figs[1].Speedup != 1 || figs[1].Workloads[0].Speedup != 1 {
		t.Errorf("none named last: %+v", figs)
	}
}

// updateSpecHistories rewrites engine/spec's recorded greedy outputs of the
// speculation workloads (TestWriteSpecHistories).
var updateSpecHistories = flag.Bool("update-spec-histories", false, "rewrite ../spec/testdata/lookup-19m-f16.json from the shared 19M F16 model")

// TestWriteSpecHistories records, with -update-spec-histories, each
// speculation workload's prompt tokens and greedy output (96 tokens) on
// the shared 19M F16 model, which engine/spec replays through its
// controller (TestControllerReplay). The output is the default mode's,
// which may differ in its last bits between instruction sets, so the file
// is written, not compared.
func TestWriteSpecHistories(t *testing.T) {
	if !*updateSpecHistories {
		t.Skip("writes engine/spec/testdata with -update-spec-histories")
	}
	path := filepath.Join(testpath.Shared(t, "models"), "ruvllm-test-llama-19m-f16.gguf")
	ctx := context.Background()
	m, err := Load(ctx, path, Options{Threads: 2, ContextLength: 1024, NoPrefixCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	type history struct {
		Name   string  `json:"name"`
		Prompt int     `json:"prompt"` // the first Prompt tokens are the prompt
		Tokens []int32 `json:"tokens"`
	}
	var out []history
	for _, w := range SpecWorkloads() {
		req := Request{Prompt: w.Prompt, MaxTokens: 96, IgnoreEOS: true, NoSpeculation: true}
		prompt, err := m.PromptTokens(req)
		if err != nil {
			t.Fatal(err)
		}
		h := history{Name: w.Name, Prompt: len(prompt), Tokens: prompt}
		if _, err := m.Generate(ctx, req, func(tk Token) error {
			if tk.ID >= 0 {
				h.Tokens = append(h.Tokens, tk.ID)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		out = append(out, h)
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "spec", "testdata", "lookup-19m-f16.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPrediction: a request's predicted output (OpenAI's predicted
// outputs) drafts the reply: greedy tokens are those without it, whether
// the prediction is the reply itself, an edited version of it or nonsense;
// a right prediction is taken a verification at a time, and a request
// that opts out of speculation drafts nothing from it.
func TestPrediction(t *testing.T) {
	path := testpath.Shared(t, "models/ruvllm-test-llama-19m-f16.gguf")
	// A fixed draft length: what is drafted and accepted must not depend
	// on the step timings the controller weighs (a loaded machine).
	m, err := Load(context.Background(), path, Options{Threads: 2, Speculate: spec.KindLookup, SpecControl: spec.Options{Fixed: 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	base := Request{Prompt: "The kernel's memory management", MaxTokens: 64, IgnoreEOS: true}
	want, text, plain := generate(t, m, base)
	if plain.Speculation.PredictionDrafted != 0 {
		t.Fatalf("no prediction, yet %d tokens drafted from one", plain.Speculation.PredictionDrafted)
	}
	words := strings.Fields(text)
	edited := strings.Replace(text, words[len(words)/2], "zebra", 1)
	for _, c := range []struct {
		name, prediction string
		minAccepted      int
	}{
		{"the reply", text, 40},
		{"an edited reply", edited, 20},
		{"nonsense", "Lorem ipsum dolor sit amet, consectetur adipiscing elit.", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := base
			req.Prediction = c.prediction
			got, _, res := generate(t, m, req)
			if !slices.Equal(got, want) {
				t.Fatalf("tokens with a prediction %v, without %v", got, want)
			}
			sp := res.Speculation
			if sp.PredictionAccepted < c.minAccepted || sp.PredictionAccepted > sp.PredictionDrafted || sp.PredictionDrafted > sp.Drafted {
				t.Fatalf("prediction: %d drafted, %d accepted (all drafts %d, %d accepted, %d verifications), want at least %d accepted",
					sp.PredictionDrafted, sp.PredictionAccepted, sp.Drafted, sp.Accepted, sp.Verifications, c.minAccepted)
			}
			t.Logf("%d tokens: %d drafted from the prediction, %d accepted, %d verifications", len(got), sp.PredictionDrafted, sp.PredictionAccepted, sp.Verifications)
		})
	}
	req := base
	req.Prediction, req.NoSpeculation = text, true
	if _, _, res := generate(t, m, req); res.Speculation.PredictionDrafted != 0 {
		t.Fatalf("opted out of speculation, yet %d tokens drafted from the prediction", res.Speculation.PredictionDrafted)
	}
}

// TestBenchSpecTooFewTokens: fewer than 2 tokens per workload leave no
// decode step to time (the first token comes from the prompt pass); that
// is an error, where every figure was 0/0 and every speed-up NaN, which
// bench printed as "NaNx" and could not encode as JSON.
func TestBenchSpecTooFewTokens(t *testing.T) {
	m, err := Load(context.Background(), synthetic(t, "llama", quant.Q8_0), Options{Threads: 1, ContextLength: 1024, Speculate: spec.KindsAll, NoPrefixCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, n := range []int{1, 0, -1} {
		figs, err := m.BenchSpec(context.Background(), []SpecSetting{{Kinds: spec.KindLookup}}, n, 1)
		if err == nil || !strings.Contains(err.Error(), "at least 2") {
			t.Errorf("%d tokens per workload: %v (figures %+v), want an error", n, err, figs)
		}
	}
}
