package learnbench

import (
	"context"
	"fmt"

	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/engine/sona"
	"github.com/ruvllm/ruvllm/engine/train"
)

// Routing are the routing bench's figures.
type Routing struct {
	// Prompts held out, and how many were routed to the adapter of their
	// own domain (no route counts as wrong).
	Prompts, Routed int
	// FollowRouted is the share of held-out answers, generated with the
	// routed adapter, that follow their domain's preference; FollowEach
	// the same with each domain's own adapter (the best routing can do).
	FollowRouted, FollowOwn float64
}

// domains are the routing bench's two kinds of request: technical
// questions ("What is a pipe?", the Linux and Python terms), answered
// Ana's way, and requests for wisdom ("Tell me something wise about
// patience."), answered Bob's way.
func domains() (tech, wisdom []string) {
	for i, t := range terms {
		if i < 99 {
			tech = append(tech, "What is "+t+"?")
		}
	}
	for _, w := range wisdomSubjects {
		wisdom = append(wisdom, "Tell me something wise about "+w+".", "What is a good saying about "+w+"?")
	}
	return tech, wisdom
}

var wisdomSubjects = []string{
	"patience", "friendship", "money", "time", "love", "work", "sleep", "food", "travel", "age", "youth",
	"luck", "courage", "fear", "anger", "happiness", "sadness", "family", "children", "marriage", "death",
	"truth", "lies", "honesty", "hope", "failure", "success", "learning", "teachers", "books", "music",
	"silence", "rain", "the sea", "mountains", "winter",
}

// runRouting trains one adapter per domain with the instant loop (k
// corrections each), rates each adapter's greedy answer on every
// training question into a trajectory bank (the simulated users' thumbs
// up or down, by whether it follows the question's domain), then routes
// held questions of both domains by their embeddings.
func runRouting(ctx context.Context, m *llm.Model, base *train.Base, tr *train.Trainer, cfg sona.Config, k, held int, logf func(string, ...any)) (Routing, error) {
	var res Routing
	tech, wisdom := domains()
	if len(tech) < k+held/2 || len(wisdom) < k+held/2 {
		return res, fmt.Errorf("routing bench: %d and %d questions for %d corrections and %d held out", len(tech), len(wisdom), k, held)
	}
	// Training questions are the first of each list ("What is"/"Why
	// would I use" of the same terms stay together), held-out ones come
	// from the other end.
	prefs := [2]preference{ana, bob}
	qs := [2][]string{tech, wisdom}
	names := [2]string{"tech-ana", "wisdom-bob"}
	adapters := [2][]lora.Applied{}
	learner := sona.NewLearner(tr, sona.Options{Config: cfg})
	var trainPrompts [2][]prompt
	for d := range 2 {
		scope := sona.NewScope(names[d])
		for _, q := range qs[d][:k] {
			p, err := preparePrompt(ctx, m, m.Tokenizer(), q, prefs[d])
			if err != nil {
				return res, err
			}
			trainPrompts[d] = append(trainPrompts[d], p)
			fb := sona.Feedback{Signal: sona.Correction, Prompt: p.tokens, Answer: p.baseAnswer, Correction: p.preferred}
			if _, err := learner.Feedback(ctx, scope, fb, nil); err != nil {
				return res, err
			}
		}
		_, applied := scope.Adapters()
		las, err := serve(m, base, applied)
		if err != nil {
			return res, err
		}
		adapters[d] = las
		logf("routing: adapter %s trained on %d corrections", names[d], k)
	}
	bank := sona.NewBank(sona.BankOptions{Seed: 1})
	for d := range 2 {
		for _, p := range trainPrompts[d] {
			emb, _, err := embed(ctx, m, p.question)
			if err != nil {
				return res, err
			}
			for a := range 2 {
				out, err := generate(ctx, m, p.text, adapters[a])
				if err != nil {
					return res, err
				}
				rating := -1.0
				if prefs[d].follows(out) {
					rating = 1
				}
				if err := bank.Add(sona.Trajectory{Embedding: emb[0], Adapter: names[a], Rating: rating}); err != nil {
					return res, err
				}
			}
		}
	}
	followRouted, followOwn := 0, 0
	for i := range held {
		d := i % 2
		list := qs[d]
		q := list[len(list)-1-i/2]
		text := promptText(q)
		emb, _, err := embed(ctx, m, q)
		if err != nil {
			return res, err
		}
		res.Prompts++
		r, ok := bank.Route(emb[0], names[:])
		if ok && r.Adapter == names[d] {
			res.Routed++
		}
		var routed []lora.Applied
		for a := range 2 {
			if ok && r.Adapter == names[a] {
				routed = adapters[a]
			}
		}
		out, err := generate(ctx, m, text, routed)
		if err != nil {
			return res, err
		}
		if prefs[d].follows(out) {
			followRouted++
		}
		own, err := generate(ctx, m, text, adapters[d])
		if err != nil {
			return res, err
		}
		if prefs[d].follows(own) {
			followOwn++
		}
	}
	res.FollowRouted = float64(followRouted) / float64(res.Prompts)
	res.FollowOwn = float64(followOwn) / float64(res.Prompts)
	return res, nil
}

// embed returns text's embedding. Embed computes outside the scheduler
// and does not evict cached prefixes, so the cache the bench's requests
// filled is cleared first.
func embed(ctx context.Context, m *llm.Model, text string) ([][]float32, int, error) {
	m.ClearCache()
	return m.Embed(ctx, []string{text}, llm.EmbedOptions{})
}
