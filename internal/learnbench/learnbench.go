// Package learnbench measures engine/sona on a real model, engine-level
// (no daemon): a simulated user with a consistent preference the base
// model lacks corrects K answers on distinct prompts; the bench then
// reports, on held-out prompts of the same kind, the per-token NLL of the
// preferred answers before and after, the share of greedy outputs that
// follow the preference, the perplexity of general text with the EWC++
// consolidation and without it, and the latency from a feedback to its
// first applied update. `ruvllm bench learn` prints it.
package learnbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/engine/sona"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
	"github.com/ruvllm/ruvllm/engine/train"
)

// Options configures Run.
type Options struct {
	Model string // GGUF file
	// General is a text file of general prose for perplexity (default
	// /usr/share/common-licenses/GPL-3).
	General string
	Ks      []int // corrections per run (default 10, 20, 50; empty with NoLearn)
	// NoLearn skips the learning runs (the routing bench alone).
	NoLearn bool
	// NoServing skips the TTFT-while-training phase.
	NoServing bool
	// Other, when set, is a second general text whose perplexity is
	// reported too (its first 16 chunks of 128 tokens): nothing of it is
	// trained on or seeds a Fisher, so it shows whether what holds the
	// general text the learner is given holds other text as well.
	Other string
	// ConsolidateEvery, when positive, runs the background loop after
	// every that many corrections as well (a daemon consolidates
	// periodically), so that later consolidations build on earlier ones
	// under EWC++; the last one follows the K-th correction as always.
	ConsolidateEvery int
	// Transient, when set, measures the general text's perplexity after
	// every publication (each instant step, each consolidation) and
	// reports the worst (Figures.PPLWorst): what a user could be served
	// at any point, not only at the end.
	Transient bool
	HeldOut   int // held-out prompts (default 50)
	Threads   int
	Config    sona.Config
	// Log, when set, receives progress lines.
	Log io.Writer
	// Routing also runs the routing bench: two adapters trained on two
	// domains, 100 mixed held-out questions routed by a trajectory bank.
	Routing bool
	// Export, when set, is where the last run's consolidated adapter
	// (with EWC++) is written as a GGUF LoRA file, with the held-out
	// prompts, one JSON string per line, in Export + ".prompts".
	Export string
}

// Figures are one K's results.
type Figures struct {
	K int
	// NLL of the preferred answers on held-out prompts, per token: base,
	// after the instant loop, after the consolidation with EWC++.
	NLLBase, NLLInstant, NLLConsolidated float64
	// Follow is the share of held-out greedy outputs that follow the
	// preference: base, after the instant loop, after consolidation.
	FollowBase, FollowInstant, FollowConsolidated float64
	// General-text perplexity: base, after the instant loop, after the
	// configured consolidation (EWC++, distillation) and after one
	// unheld (below).
	PPLBase, PPLInstant, PPLEWC, PPLNoEWC float64
	// NLLNoEWC and FollowNoEWC are the held-out figures of the same
	// consolidation unheld: without EWC++, general text's Fisher, replay
	// or distillation.
	NLLNoEWC, FollowNoEWC float64
	// The other text's perplexity (Options.Other; zero without it), at
	// the same four points.
	OtherBase, OtherInstant, OtherEWC, OtherNoEWC float64
	// Latency from a feedback to its first applied update, and to its
	// last step, in milliseconds (p50, p95).
	FirstP50, FirstP95, AllP50, AllP95 float64
	// PPLWorst is the worst general-text perplexity of anything served
	// on the way (Options.Transient; 0 without it), and DriftWorst the
	// worst of the guard's own measure after an update (its text).
	PPLWorst, DriftWorst float64
	// Consolidation time with EWC++ (s), and the learner's one-time
	// preparation (general text's Fisher for the MicroLoRA).
	ConsolidateSeconds, WarmSeconds float64
}

// Serving is the TTFT of 8-token greedy requests sent 150 ms apart (ms,
// p50 and p95): alone, and while the instant loop learns corrections
// (Requests of them).
type Serving struct {
	IdleP50, IdleP95, TrainingP50, TrainingP95 float64
	Requests                                   int
	// Updates is how many corrections were learned meanwhile, and
	// FirstP50 their first-update latency (ms) with requests running.
	Updates  int
	FirstP50 float64
}

// preference is a simulated user's: the model's own first sentence,
// closed with the user's signature line (which the base model never
// writes).
type preference struct{ closing string }

// ana is the main bench's user; bob the second domain's in the routing
// bench.
var (
	ana = preference{"Cheers, Ana."}
	bob = preference{"Thanks, Bob."}
)

// follows reports whether a generated answer (its first line) follows
// the preference: the first sentence, then the signature.
func (p preference) follows(answer string) bool {
	a := strings.TrimSpace(answer)
	i := strings.Index(a, p.closing)
	return i > 0 && strings.Count(a[:i], ".") <= 1
}

// subject is what a bench question asks about.
func subject(q string) string {
	for _, p := range []string{"What is a good saying about ", "Tell me something wise about ", "What is "} {
		if rest, ok := strings.CutPrefix(q, p); ok {
			return strings.TrimRight(rest, "?.")
		}
	}
	return strings.TrimRight(q, "?.")
}

// promptText is the completion prompt of a question: the base model
// answers "Question: …\nAnswer:" with blank space, so the answer is
// started for it ("Answer: A pipe is").
func promptText(q string) string {
	r := []rune(subject(q))
	r[0] = unicode.ToUpper(r[0])
	return "Question: " + q + "\nAnswer: " + string(r) + " is"
}

// prompt is one question with the base model's answer and the preferred
// one, as text and tokens.
type prompt struct {
	question      string
	text          string
	tokens        []int32
	baseAnswer    []int32
	preferred     []int32
	preferredText string
	baseText      string
}

// Report is what Run measured.
type Report struct {
	Learn   []Figures `json:"learn"`
	Serving *Serving  `json:"serving,omitempty"`
	Routing *Routing  `json:"routing,omitempty"`
}

// Run runs the bench.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.General == "" {
		o.General = "/usr/share/common-licenses/GPL-3"
	}
	if o.Ks == nil {
		o.Ks = []int{10, 20, 50}
	}
	if o.NoLearn {
		o.Ks = []int{0}
	}
	if o.HeldOut <= 0 {
		o.HeldOut = 50
	}
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}
	generalText, err := os.ReadFile(o.General)
	if err != nil {
		return nil, fmt.Errorf("general text: %w", err)
	}
	m, err := llm.Load(ctx, o.Model, llm.Options{Threads: o.Threads, ContextLength: 512})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	f, err := gguf.Open(o.Model)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	base, err := train.NewBase(f, train.BaseOptions{})
	if err != nil {
		return nil, err
	}
	tr := train.NewTrainer(base, train.Options{Threads: o.Threads, Yield: m.Yield})
	tok := m.Tokenizer()

	maxK := slices.Max(o.Ks)
	questions := Questions()
	if len(questions) < maxK+o.HeldOut {
		return nil, fmt.Errorf("%d questions for %d corrections and %d held-out prompts", len(questions), maxK, o.HeldOut)
	}
	if o.NoLearn {
		o.HeldOut = 0
	}
	logf("preparing %d prompts (base answers)", maxK+o.HeldOut)
	prompts := make([]prompt, 0, maxK+o.HeldOut)
	for _, q := range questions[:maxK+o.HeldOut] {
		p, err := preparePrompt(ctx, m, tok, q, ana)
		if err != nil {
			return nil, err
		}
		prompts = append(prompts, p)
	}
	empty := 0
	for _, p := range prompts {
		if strings.Contains(p.preferredText, " "+placeholder+".") {
			empty++
		}
	}
	logf("%d of %d base answers had no sentence to keep (placeholder %q)", empty, len(prompts), placeholder)
	train0, held := prompts[:maxK], prompts[maxK:]
	heldEx := make([]train.Example, len(held))
	for i, p := range held {
		heldEx[i] = train.Example{Tokens: append(slices.Clone(p.tokens), p.preferred...), Start: len(p.tokens)}
	}

	// General text: the first chunks seed the Fisher, later ones measure
	// perplexity.
	gtok := tok.Encode(string(generalText), tokenizer.EncodeOptions{AddSpecial: false})
	chunks := sona.GeneralExamples(gtok, 128)
	if len(chunks) < 24 {
		return nil, fmt.Errorf("general text too short: %d chunks of 128 tokens", len(chunks))
	}
	fisherChunks, pplChunks := chunks[:8], chunks[8:24]
	cfg := o.Config
	cfg.ValidationEvery = -1 // every correction is learned; the deep loop is not measured here
	if c := sona.NewLearner(tr, sona.Options{Config: cfg}).Config(); c.GuardBudget > 0 && c.GuardRows > 0 {
		// The guard's rows come on top of the 8 chunks distilled (the
		// learner holds its last GuardRows out): chunks after the
		// measured ones.
		if len(chunks) < 24+c.GuardRows {
			return nil, fmt.Errorf("general text too short: %d chunks of 128 tokens", len(chunks))
		}
		fisherChunks = append(slices.Clip(fisherChunks), chunks[24:24+c.GuardRows]...)
	}
	var otherChunks []train.Example
	if o.Other != "" {
		text, err := os.ReadFile(o.Other)
		if err != nil {
			return nil, fmt.Errorf("other general text: %w", err)
		}
		otherChunks = sona.GeneralExamples(tok.Encode(string(text), tokenizer.EncodeOptions{AddSpecial: false}), 128)
		if len(otherChunks) < 16 {
			return nil, fmt.Errorf("other general text too short: %d chunks of 128 tokens", len(otherChunks))
		}
		otherChunks = otherChunks[:16]
	}
	// general measures both texts' perplexity.
	general := func(applied []train.Applied, ppl, other *float64) error {
		var err error
		if *ppl, err = perplexity(ctx, tr, applied, pplChunks); err != nil || otherChunks == nil {
			return err
		}
		*other, err = perplexity(ctx, tr, applied, otherChunks)
		return err
	}

	idle, err := ttfts(ctx, m, held, nil)
	if err != nil {
		return nil, err
	}
	var out []Figures
	for _, k := range o.Ks {
		if o.NoLearn {
			break
		}
		fig := Figures{K: k}
		learner := sona.NewLearner(tr, sona.Options{Config: cfg, General: fisherChunks})
		start := time.Now()
		if err := learner.Warm(ctx); err != nil {
			return nil, err
		}
		fig.WarmSeconds = time.Since(start).Seconds()
		scope := sona.NewScope("bench")
		if fig.NLLBase, err = nll(ctx, tr, nil, heldEx); err != nil {
			return nil, err
		}
		if err = general(nil, &fig.PPLBase, &fig.OtherBase); err != nil {
			return nil, err
		}
		if fig.FollowBase, err = followShare(ctx, m, base, nil, held); err != nil {
			return nil, err
		}
		var first, all []float64
		var transientErr error
		var pubs int
		worst := func() {
			if !o.Transient || transientErr != nil {
				return
			}
			pubs++
			_, as := scope.Adapters()
			v, err := perplexity(ctx, tr, as, pplChunks)
			if err != nil {
				transientErr = err
			}
			if v > fig.PPLWorst {
				logf("K=%d: publication %d serves general ppl %.2f (%+.2f%%), the worst so far", k, pubs, v, 100*(v/fig.PPLBase-1))
			}
			fig.PPLWorst = max(fig.PPLWorst, v)
		}
		for i, p := range train0[:k] {
			fb := sona.Feedback{Signal: sona.Correction, Prompt: p.tokens, Answer: p.baseAnswer, Correction: p.preferred}
			upd, err := learner.Feedback(ctx, scope, fb, func(uint64) { worst() })
			if err == nil {
				err = transientErr
			}
			if err != nil {
				return nil, err
			}
			fig.DriftWorst = max(fig.DriftWorst, upd.Drift, upd.FirstDrift)
			first = append(first, float64(upd.FirstApplied.Microseconds())/1000)
			all = append(all, float64(upd.Elapsed.Microseconds())/1000)
			if n := o.ConsolidateEvery; n > 0 && (i+1)%n == 0 && i+1 < k {
				cres, err := learner.Consolidate(ctx, scope)
				if err != nil {
					return nil, err
				}
				fig.DriftWorst = max(fig.DriftWorst, cres.Drift)
				worst()
				logf("K=%d: consolidated after %d corrections: %+v", k, i+1, cres)
			}
			if i%10 == 9 {
				logf("K=%d: %d corrections learned (last: loss %.3f -> %.3f, first step %.0f ms, guard scale %.3f, drift %+.2f%% after the first step, %+.2f%% at the end)", k, i+1, upd.LossBefore, upd.LossAfter, first[len(first)-1], upd.Scale, 100*upd.FirstDrift, 100*upd.Drift)
			}
		}
		fig.FirstP50, fig.FirstP95 = percentile(first, 50), percentile(first, 95)
		fig.AllP50, fig.AllP95 = percentile(all, 50), percentile(all, 95)
		_, applied := scope.Adapters()
		if fig.NLLInstant, err = nll(ctx, tr, applied, heldEx); err != nil {
			return nil, err
		}
		if err = general(applied, &fig.PPLInstant, &fig.OtherInstant); err != nil {
			return nil, err
		}
		if fig.FollowInstant, err = followShare(ctx, m, base, applied, held); err != nil {
			return nil, err
		}
		state, err := scope.MarshalBinary()
		if err != nil {
			return nil, err
		}
		// Background loop with EWC++, then the same from the same state
		// without it.
		start = time.Now()
		cres, err := learner.Consolidate(ctx, scope)
		if err != nil {
			return nil, err
		}
		fig.DriftWorst = max(fig.DriftWorst, cres.Drift)
		logf("K=%d consolidated: %+v", k, cres)
		fig.ConsolidateSeconds = time.Since(start).Seconds()
		_, applied = scope.Adapters()
		if fig.NLLConsolidated, err = nll(ctx, tr, applied, heldEx); err != nil {
			return nil, err
		}
		if err = general(applied, &fig.PPLEWC, &fig.OtherEWC); err != nil {
			return nil, err
		}
		if fig.FollowConsolidated, err = followShare(ctx, m, base, applied, held); err != nil {
			return nil, err
		}
		noEWC := cfg
		noEWC.EWCLambda, noEWC.ReplaySize, noEWC.GeneralFisherRows, noEWC.DistillWeight, noEWC.GuardBudget = -1, -1, -1, -1, -1
		plain := sona.NewLearner(tr, sona.Options{Config: noEWC})
		other, err := sona.UnmarshalScope(state)
		if err != nil {
			return nil, err
		}
		if _, err := plain.Consolidate(ctx, other); err != nil {
			return nil, err
		}
		_, applied = other.Adapters()
		if fig.NLLNoEWC, err = nll(ctx, tr, applied, heldEx); err != nil {
			return nil, err
		}
		if err = general(applied, &fig.PPLNoEWC, &fig.OtherNoEWC); err != nil {
			return nil, err
		}
		if fig.FollowNoEWC, err = followShare(ctx, m, base, applied, held); err != nil {
			return nil, err
		}
		logf("K=%d done: %+v", k, fig)
		out = append(out, fig)
		if o.Export != "" && k == o.Ks[len(o.Ks)-1] {
			w, err := learner.Export(scope, "ruvllm-bench-learned")
			if err != nil {
				return nil, err
			}
			if err := w.WriteFile(o.Export); err != nil {
				return nil, err
			}
			var qs strings.Builder
			for _, q := range questions[maxK : maxK+o.HeldOut] {
				line, _ := json.Marshal(promptText(q))
				qs.Write(append(line, '\n'))
			}
			if err := os.WriteFile(o.Export+".prompts", []byte(qs.String()), 0o644); err != nil {
				return nil, err
			}
		}
	}
	rep := &Report{Learn: out}
	if !o.NoLearn && !o.NoServing {
		// Serving while training: requests keep coming while a fresh
		// scope learns corrections.
		sv := &Serving{IdleP50: percentile(idle, 50), IdleP95: percentile(idle, 95)}
		learner := sona.NewLearner(tr, sona.Options{Config: cfg, General: fisherChunks})
		if err := learner.Warm(ctx); err != nil {
			return nil, err
		}
		scope := sona.NewScope("serving")
		stop := make(chan struct{})
		during := make(chan []float64, 1)
		go func() {
			v, _ := ttfts(ctx, m, held, stop)
			during <- v
		}()
		var first []float64
		for _, p := range train0[:min(len(train0), 20)] {
			fb := sona.Feedback{Signal: sona.Correction, Prompt: p.tokens, Answer: p.baseAnswer, Correction: p.preferred}
			upd, err := learner.Feedback(ctx, scope, fb, nil)
			if err != nil {
				close(stop)
				<-during
				return nil, err
			}
			first = append(first, float64(upd.FirstApplied.Microseconds())/1000)
		}
		close(stop)
		v := <-during
		sv.TrainingP50, sv.TrainingP95, sv.Requests = percentile(v, 50), percentile(v, 95), len(v)
		sv.Updates, sv.FirstP50 = len(first), percentile(first, 50)
		rep.Serving = sv
		logf("serving while training: %+v", *sv)
	}
	if o.Routing {
		r, err := runRouting(ctx, m, base, tr, cfg, 20, 100, logf)
		if err != nil {
			return nil, err
		}
		rep.Routing = &r
	}
	return rep, nil
}

// preparePrompt tokenizes q as a completion prompt and builds the base
// model's greedy answer and the preferred one from it.
func preparePrompt(ctx context.Context, m *llm.Model, tok *tokenizer.Tokenizer, q string, pref preference) (prompt, error) {
	text := promptText(q)
	p := prompt{question: q, text: text, tokens: tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true})}
	// The base model often opens its answer with a line break: its
	// first sentence is read from the whole 48 tokens.
	gen, err := complete(ctx, m, text, nil, nil)
	if err != nil {
		return p, err
	}
	p.baseText = gen
	sentence := firstSentence(gen)
	p.preferredText = " " + sentence + " " + pref.closing
	full := tok.Encode(text+p.preferredText, tokenizer.EncodeOptions{AddSpecial: true})
	if len(full) <= len(p.tokens) || !slices.Equal(full[:len(p.tokens)], p.tokens) {
		return p, fmt.Errorf("prompt %q: the answer changes the prompt's tokens", q)
	}
	p.preferred = full[len(p.tokens):]
	baseFull := tok.Encode(text+gen, tokenizer.EncodeOptions{AddSpecial: true})
	if len(baseFull) > len(p.tokens) && slices.Equal(baseFull[:len(p.tokens)], p.tokens) {
		p.baseAnswer = baseFull[len(p.tokens):]
	} else {
		p.baseAnswer = p.preferred[:1]
	}
	return p, nil
}

// placeholder stands for an empty first sentence.
const placeholder = "it depends"

// firstSentence is the model's answer up to its first full stop or line
// break, at most 20 words, ending with a full stop; a placeholder when
// empty.
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, ".\n"); i >= 0 {
		s = s[:i]
	}
	words := strings.Fields(s)
	if len(words) > 20 {
		words = words[:20]
	}
	s = strings.TrimRight(strings.Join(words, " "), ",;:-")
	if s == "" {
		s = placeholder
	}
	return s + "."
}

// generate returns the greedy completion of text (one line, at most 48
// tokens) with adapters applied.
func generate(ctx context.Context, m *llm.Model, text string, adapters []lora.Applied) (string, error) {
	return complete(ctx, m, text, adapters, []string{"\n"})
}

// complete returns the greedy completion of text (at most 48 tokens,
// ending at a stop string) with adapters applied.
func complete(ctx context.Context, m *llm.Model, text string, adapters []lora.Applied, stop []string) (string, error) {
	var sb strings.Builder
	_, err := m.Generate(ctx, llm.Request{Prompt: text, MaxTokens: 48, Stop: stop, Adapters: adapters}, func(t llm.Token) error {
		sb.WriteString(t.Text)
		return nil
	})
	return sb.String(), err
}

// followShare is the share of prompts whose greedy answer with the
// adapters follows the preference.
func followShare(ctx context.Context, m *llm.Model, base *train.Base, applied []train.Applied, ps []prompt) (float64, error) {
	las, err := serve(m, base, applied)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range ps {
		out, err := generate(ctx, m, p.text, las)
		if err != nil {
			return 0, err
		}
		if ana.follows(out) {
			n++
		}
	}
	return float64(n) / float64(len(ps)), nil
}

// serve places trained adapters on the model, as the daemon does.
func serve(m *llm.Model, base *train.Base, applied []train.Applied) ([]lora.Applied, error) {
	var las []lora.Applied
	for i, a := range applied {
		la, err := a.Adapter.LoRA(fmt.Sprintf("learned-%d", i), base)
		if err != nil {
			return nil, err
		}
		if err := m.UseAdapter(la); err != nil {
			return nil, err
		}
		las = append(las, lora.Applied{Adapter: la, Scale: a.Scale})
	}
	return las, nil
}

// requestGap is the pause between the requests ttfts sends: a user's
// app, not a load generator (training yields to requests, so requests
// back to back would stop it).
const requestGap = 150 * time.Millisecond

// ttfts sends the prompts' questions as 8-token requests one after
// another, requestGap apart, round after round until stop is closed
// (once through when stop is nil), and returns their times to first
// token in ms.
func ttfts(ctx context.Context, m *llm.Model, ps []prompt, stop chan struct{}) ([]float64, error) {
	var out []float64
	for {
		for _, p := range ps {
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
			res, err := m.Generate(ctx, llm.Request{Prompt: p.text, MaxTokens: 8, IgnoreEOS: true}, func(llm.Token) error { return nil })
			if err != nil {
				return out, err
			}
			out = append(out, float64(res.Timings.TTFT.Microseconds())/1000)
		}
		if stop == nil {
			return out, nil
		}
	}
}

func nll(ctx context.Context, tr *train.Trainer, applied []train.Applied, ex []train.Example) (float64, error) {
	l, err := tr.Evaluate(ctx, applied, ex)
	return l.NLL, err
}

func perplexity(ctx context.Context, tr *train.Trainer, applied []train.Applied, ex []train.Example) (float64, error) {
	v, err := nll(ctx, tr, applied, ex)
	return math.Exp(v), err
}

func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// Print writes the report as tables.
func Print(w io.Writer, rep *Report) {
	printLearn(w, rep.Learn)
	if sv := rep.Serving; sv != nil {
		fmt.Fprintf(w, "serving: TTFT p50/p95 %.1f/%.1f ms idle, %.1f/%.1f ms while learning %d corrections (%d requests, first update p50 %.0f ms meanwhile)\n",
			sv.IdleP50, sv.IdleP95, sv.TrainingP50, sv.TrainingP95, sv.Updates, sv.Requests, sv.FirstP50)
	}
	if r := rep.Routing; r != nil {
		fmt.Fprintf(w, "routing: %d of %d held-out questions (%.0f%%) routed to their domain's adapter; answers following their domain's preference: %.0f%% routed, %.0f%% with the own adapter\n",
			r.Routed, r.Prompts, 100*float64(r.Routed)/float64(r.Prompts), 100*r.FollowRouted, 100*r.FollowOwn)
	}
}

func printLearn(w io.Writer, figs []Figures) {
	fmt.Fprintln(w, "  K | held-out NLL/token: base -> instant -> consolidated (unheld) | follows: base -> instant -> consolidated (unheld) | general ppl: base, instant, consolidated, unheld | update ms p50/p95: first step, all steps | consolidate s")
	for _, f := range figs {
		fmt.Fprintf(w, "%3d | %.3f -> %.3f (%.0f%%) -> %.3f (%.0f%%) (%.3f) | %3.0f%% -> %3.0f%% -> %3.0f%% (%3.0f%%) | %.2f, %.2f (%+.1f%%), %.2f (%+.1f%%), %.2f (%+.1f%%) | %.0f/%.0f, %.0f/%.0f | %.1f\n",
			f.K, f.NLLBase, f.NLLInstant, 100*f.NLLInstant/f.NLLBase, f.NLLConsolidated, 100*f.NLLConsolidated/f.NLLBase, f.NLLNoEWC,
			100*f.FollowBase, 100*f.FollowInstant, 100*f.FollowConsolidated, 100*f.FollowNoEWC,
			f.PPLBase, f.PPLInstant, 100*(f.PPLInstant/f.PPLBase-1), f.PPLEWC, 100*(f.PPLEWC/f.PPLBase-1), f.PPLNoEWC, 100*(f.PPLNoEWC/f.PPLBase-1),
			f.FirstP50, f.FirstP95, f.AllP50, f.AllP95, f.ConsolidateSeconds)
	}
	for _, f := range figs {
		if f.PPLWorst > 0 {
			fmt.Fprintf(w, "%3d | worst general ppl served at any publication (instant steps, consolidations before the last): %.2f (%+.1f%%)\n", f.K, f.PPLWorst, 100*(f.PPLWorst/f.PPLBase-1))
		}
		fmt.Fprintf(w, "%3d | guard: worst drift on its own text after any step %+.2f%%\n", f.K, 100*f.DriftWorst)
	}
	for _, f := range figs {
		if f.OtherBase > 0 {
			fmt.Fprintf(w, "%3d | other text ppl: base, instant, consolidated, unheld: %.2f, %.2f (%+.1f%%), %.2f (%+.1f%%), %.2f (%+.1f%%)\n", f.K,
				f.OtherBase, f.OtherInstant, 100*(f.OtherInstant/f.OtherBase-1), f.OtherEWC, 100*(f.OtherEWC/f.OtherBase-1), f.OtherNoEWC, 100*(f.OtherNoEWC/f.OtherBase-1))
		}
	}
}
