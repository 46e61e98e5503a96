package llm

import (
	"context"
	"errors"
	"sync"
)

// MaxChoices bounds n in GenerateN.
const MaxChoices = 16

// GenerateN runs n choices of one request (OpenAI's n): the prompt is
// computed once, by the first choice, and the others start from it in the
// prefix cache once it is (copy-on-write blocks: only the prompt's last
// partial block is computed again per choice), so n choices cost one
// prefill. Each choice samples with its own seed (Seed+i when a seed is
// given, random otherwise). onToken is called with the choice's index,
// never concurrently. Results are in choice order.
func (m *Model) GenerateN(ctx context.Context, req Request, n int, onToken func(choice int, t Token) error) ([]Result, error) {
	if n <= 1 {
		res, err := m.Generate(ctx, req, func(t Token) error { return onToken(0, t) })
		return []Result{res}, err
	}
	n = min(n, MaxChoices)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu      sync.Mutex
		results = make([]Result, n)
		errs    = make([]error, n)
		wg      sync.WaitGroup
	)
	deliver := func(i int) func(Token) error {
		return func(t Token) error {
			mu.Lock()
			defer mu.Unlock()
			return onToken(i, t)
		}
	}
	choice := func(i int) Request {
		r := req
		r.WarmFollowUp = false // which reply the next turn continues is the client's choice
		if r.Sampling.Seed != 0 || r.Sampling.Seeded {
			r.Sampling.Seed += uint64(i)
		}
		return r
	}
	run := func(i int, r Request) {
		defer wg.Done()
		results[i], errs[i] = m.Generate(ctx, r, deliver(i))
		if errs[i] != nil {
			cancel()
		}
	}
	prefilled := make(chan struct{})
	var once sync.Once
	first := choice(0)
	first.onPrefilled = func() { once.Do(func() { close(prefilled) }) }
	wg.Add(1)
	leaderDone := make(chan struct{})
	go func() {
		defer close(leaderDone)
		run(0, first)
	}()
	select {
	case <-prefilled:
	case <-leaderDone:
	case <-ctx.Done():
	}
	for i := 1; i < n; i++ {
		wg.Add(1)
		go run(i, choice(i))
	}
	wg.Wait()
	// The error that stopped the others, not their cancellation.
	var cause error
	for _, err := range errs {
		if err != nil && (cause == nil || errors.Is(cause, context.Canceled)) {
			cause = err
		}
	}
	return results, cause
}
