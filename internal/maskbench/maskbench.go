// Package maskbench runs MaskBench (JSONSchemaBench's token-mask benchmark)
// against engine/grammar: every schema is compiled, every valid instance
// must be accepted token by token, every invalid one rejected at some
// token or at its end. The data set is the tarball in ../shared/jsonschema
// (read at run time, never copied into the repository).
package maskbench

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ruvllm/ruvllm/engine/grammar"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
)

// Case is one schema with its test instances.
type Case struct {
	Name   string
	Schema []byte
	Tests  []Test
}

// Test is one instance and whether the schema accepts it.
type Test struct {
	Valid bool
	Data  []byte
}

// maxFileSize bounds one member of the tarball.
const maxFileSize = 64 << 20

// Load reads the cases of a MaskBench tarball (maskbench-data.tar.gz),
// sorted by name; keep, when not nil, selects them by name.
func Load(file string, keep func(name string) bool) ([]Case, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("maskbench %s: %w", file, err)
	}
	tr := tar.NewReader(zr)
	var cases []Case
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("maskbench %s: %w", file, err)
		}
		if h.Typeflag != tar.TypeReg || !strings.HasSuffix(h.Name, ".json") {
			continue
		}
		name := strings.TrimSuffix(path.Base(h.Name), ".json")
		if keep != nil && !keep(name) {
			continue
		}
		if h.Size > maxFileSize {
			return nil, fmt.Errorf("maskbench %s: %s is %d bytes", file, h.Name, h.Size)
		}
		b, err := io.ReadAll(io.LimitReader(tr, maxFileSize))
		if err != nil {
			return nil, fmt.Errorf("maskbench %s: %w", file, err)
		}
		var raw struct {
			Schema json.RawMessage `json:"schema"`
			Tests  []struct {
				Valid bool            `json:"valid"`
				Data  json.RawMessage `json:"data"`
			} `json:"tests"`
		}
		if err := json.Unmarshal(b, &raw); err != nil {
			return nil, fmt.Errorf("maskbench %s: %s: %w", file, h.Name, err)
		}
		c := Case{Name: name, Schema: raw.Schema}
		for _, t := range raw.Tests {
			c.Tests = append(c.Tests, Test{Valid: t.Valid, Data: t.Data})
		}
		cases = append(cases, c)
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].Name < cases[j].Name })
	return cases, nil
}

// Options configures Run.
type Options struct {
	Vocab     *grammar.Vocab
	Tokenizer *tokenizer.Tokenizer
	// Workers run schemas side by side, each on one thread (timings are
	// per-thread CPU time, so they stay single-threaded figures). 0: 1.
	Workers int
	// Progress, when set, is called after each schema.
	Progress func(done, total int)
	// Diagnose, when set, is called after each mask with its time and the
	// constraint's cache sizes before and after (slows the run down).
	Diagnose func(name string, d time.Duration, before, after grammar.Stats)
}

// Outcome classifies one schema, as MaskBench does.
type Outcome string

// The outcomes.
const (
	Passing      Outcome = "passing"
	CompileError Outcome = "compile error"
	Validation   Outcome = "validation error"   // a valid instance was rejected
	Invalidation Outcome = "invalidation error" // an invalid instance was accepted
)

// Failure describes a schema that did not pass.
type Failure struct {
	Case    string
	Outcome Outcome
	Detail  string
}

// Result is the benchmark's outcome.
type Result struct {
	Schemas   int
	Outcomes  map[Outcome]int
	ByKeyword map[string]int // compile errors by the keyword they name
	Failures  []Failure
	// TTFM is per schema: compile plus the first mask. TBM is every other
	// mask. Both are CPU time of the thread that computed them.
	TTFM, TBM []time.Duration
	Tokens    int
	// Slowest are the schemas with the slowest single masks (TTFM and
	// TBM), slowest first, for finding what to speed up.
	Slowest []Slow
}

// Slow is one schema's slowest mask.
type Slow struct {
	Case string
	TTFM time.Duration
	TBM  time.Duration
}

// Run runs the cases.
func Run(ctx context.Context, cases []Case, o Options) (*Result, error) {
	if o.Vocab == nil || o.Tokenizer == nil {
		return nil, errors.New("maskbench: vocabulary and tokenizer are required")
	}
	workers := max(1, o.Workers)
	res := &Result{Outcomes: map[Outcome]int{}, ByKeyword: map[string]int{}}
	var mu sync.Mutex
	next, done := 0, 0
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			mask := make([]uint64, o.Vocab.MaskWords())
			for {
				mu.Lock()
				if next >= len(cases) || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				c := &cases[next]
				next++
				mu.Unlock()
				r := runCase(c, o, mask)
				mu.Lock()
				res.Schemas++
				res.Outcomes[r.outcome]++
				if r.keyword != "" {
					res.ByKeyword[r.keyword]++
				}
				if r.outcome != Passing {
					res.Failures = append(res.Failures, Failure{c.Name, r.outcome, r.detail})
				}
				if r.ttfm > 0 {
					res.TTFM = append(res.TTFM, r.ttfm)
				}
				res.TBM = append(res.TBM, r.tbm...)
				worst := time.Duration(0)
				for _, d := range r.tbm {
					worst = max(worst, d)
				}
				res.Slowest = append(res.Slowest, Slow{c.Name, r.ttfm, worst})
				if len(res.Slowest) > 200 {
					slices.SortFunc(res.Slowest, func(a, b Slow) int { return int(max(b.TBM, b.TTFM) - max(a.TBM, a.TTFM)) })
					res.Slowest = res.Slowest[:40]
				}
				res.Tokens += r.tokens
				done++
				if o.Progress != nil {
					o.Progress(done, len(cases))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.SortFunc(res.Failures, func(a, b Failure) int { return strings.Compare(a.Case, b.Case) })
	slices.SortFunc(res.Slowest, func(a, b Slow) int { return int(max(b.TBM, b.TTFM) - max(a.TBM, a.TTFM)) })
	res.Slowest = res.Slowest[:min(len(res.Slowest), 40)]
	return res, ctx.Err()
}

type caseResult struct {
	outcome Outcome
	keyword string
	detail  string
	ttfm    time.Duration
	tbm     []time.Duration
	tokens  int
}

func runCase(c *Case, o Options, mask []uint64) (r caseResult) {
	r.outcome = Passing
	start := threadCPU()
	g, err := grammar.CompileJSONSchema(c.Schema, grammar.JSONOptions{})
	if err != nil {
		r.outcome = CompileError
		r.detail = err.Error()
		var ue *grammar.UnsupportedError
		switch {
		case errors.As(err, &ue):
			r.keyword = ue.Keyword
		case errors.Is(err, grammar.ErrSchema):
			r.keyword = "(invalid schema)"
		case errors.Is(err, grammar.ErrEmpty):
			r.keyword = "(matches nothing)"
		case errors.Is(err, grammar.ErrTooLarge):
			r.keyword = "(too large)"
		default:
			r.keyword = "(other)"
		}
		return r
	}
	con := grammar.NewConstraint(g, o.Vocab)
	first := true
	timed := func(m *grammar.Matcher) {
		var before grammar.Stats
		if o.Diagnose != nil {
			before = con.Stats()
		}
		t := threadCPU()
		m.FillMask(mask)
		now := threadCPU()
		if o.Diagnose != nil {
			o.Diagnose(c.Name, now-t, before, con.Stats())
		}
		if first {
			r.ttfm = now - start
			first = false
		} else {
			r.tbm = append(r.tbm, now-t)
		}
	}
	if len(c.Tests) == 0 {
		timed(con.NewMatcher())
		return r
	}
	for ti, t := range c.Tests {
		doc, err := grammar.OrderJSON(c.Schema, t.Data)
		if err != nil {
			continue // not JSON: nothing to feed
		}
		ids := o.Tokenizer.Encode(string(doc), tokenizer.EncodeOptions{})
		r.tokens += len(ids)
		m := con.NewMatcher()
		rejectedAt := -1
		for i, id := range ids {
			timed(m)
			if mask[id>>6]&(1<<(id&63)) == 0 {
				rejectedAt = i
				break
			}
			if err := m.Accept(id); err != nil {
				rejectedAt = i
				r.detail = fmt.Sprintf("mask allowed token %d but Accept refused it: %v", id, err)
				break
			}
		}
		if rejectedAt < 0 {
			timed(m)
			if !m.CanEnd() {
				rejectedAt = len(ids)
			}
		}
		switch {
		case t.Valid && rejectedAt >= 0 && r.outcome == Passing:
			r.outcome = Validation
			at := o.Tokenizer.Decode(ids[:rejectedAt], tokenizer.DecodeOptions{})
			r.detail = fmt.Sprintf("test %d rejected after %q (doc %s)", ti, at, clip(doc))
		case !t.Valid && rejectedAt < 0 && r.outcome == Passing:
			r.outcome = Invalidation
			r.detail = fmt.Sprintf("test %d accepted: %s", ti, clip(doc))
		}
	}
	return r
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// Percentile returns the p-th percentile (0-100) of ds (sorted in place).
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(p / 100 * float64(len(ds)-1))
	return ds[i]
}
