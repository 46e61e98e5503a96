package spec

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/kv"
	"github.com/ruvllm/ruvllm/engine/model"
	"github.com/ruvllm/ruvllm/engine/prefix"
)

// Runner is a draft model's forward pass; engine/sched's Runner has the
// same methods, so one adapter serves both.
type Runner interface {
	// Step runs batch and copies the logits of the given rows into out.
	Step(batch *model.Batch, rows []int32, out [][]float32) error
	Vocab() int
	KV() compute.KVStore
}

// Request asks a drafter for tokens to follow one sequence.
type Request struct {
	// ID names the sequence across calls (its drafter state).
	ID uint64
	// Tokens is the sequence: prompt and generated tokens, the last of
	// which the target is about to compute.
	Tokens []int32
	// Draft receives the proposals, below its root; MaxNodes bounds its
	// size.
	Draft    *Draft
	MaxNodes int
	// Alternatives lets the drafter add second choices (tree
	// speculation); without it the draft stays a chain.
	Alternatives bool
}

// ModelDrafter drafts with a second model of the same vocabulary, often
// a low-bit quantization of the target itself: for every sequence it
// keeps the draft model's own KV (in its own pool, sharing prefixes
// through its own cache), brings it up to the sequence's tokens, and then
// decodes greedily, all sequences batched in each draft pass. It is owned
// by one goroutine (the scheduler's).
type ModelDrafter struct {
	run   Runner
	pool  *kv.Pool
	cache *prefix.Cache
	ns    string
	seqs  map[uint64]*draftSeq
	// AltBelow, when positive, adds the draft model's second choice as a
	// leaf beside its first wherever the first has a probability below
	// it (tree speculation): a cheap second guess where the draft model
	// hesitates.
	AltBelow float32
	// MaxCatchUp bounds the tokens a sequence feeds the draft model in one
	// call (default 256); a sequence further behind drafts nothing until
	// it has caught up, so a long prompt never makes one step slow.
	MaxCatchUp int
	// Window, when positive, starts a new sequence's draft context at its
	// last Window tokens instead of its first (and the draft model sees
	// them from position 0): a draft model guesses the next few tokens
	// from the recent ones mostly, and reading a long prompt in full can
	// cost more than the speculation on a short reply saves.
	Window int
	// MaxGap, when positive, bounds what drafting after a pause costs: a
	// sequence whose draft context lacks more than MaxGap of its tokens
	// when it is asked for a draft (its prompt went unread, or the
	// controller kept the draft model off while it decoded) starts its
	// draft context afresh at its last MaxGap tokens, instead of feeding
	// the draft model everything it missed in the step that drafts
	// (default 32: on the shared 19M llama a 200-token catch-up pass costs
	// as much as 23 decode steps of its F16 target, a 32-token one 3).
	MaxGap int
	// Timing, when set, receives the duration of each draft pass that
	// fed one token per sequence, measured with Clock (nil: wall time).
	Timing func(seqs int, d time.Duration)
	Clock  func() time.Duration

	batch  model.Batch
	rows   []int32
	logits [][]float32
	act    []*draftSeq
}

// draftSeq is one sequence's state in the draft model: its KV and the
// tokens stored there, of which the first confirmed are the target's
// (the rest are the draft model's own guesses).
type draftSeq struct {
	seq       *kv.Sequence
	fed       []int32
	confirmed int
	req       *Request
	start     int     // the sequence's first token the draft context holds
	feed      []int32 // what the current pass feeds
	one       [1]int32
	parent    int32 // the draft token the next pass continues (-1: the root)
	done      bool  // drafts nothing more in this call
}

// NewModelDrafter returns a drafter over the draft model r, whose KV
// blocks come from pool; cache (nil: none) shares prefixes between
// sequences under namespace ns.
func NewModelDrafter(r Runner, pool *kv.Pool, cache *prefix.Cache, ns string) *ModelDrafter {
	return &ModelDrafter{run: r, pool: pool, cache: cache, ns: ns, seqs: map[uint64]*draftSeq{}, MaxCatchUp: 256, MaxGap: 32}
}

// Draft proposes up to steps tokens for each request, as a chain (plus
// second choices where AltBelow says). A request whose sequence does not
// fit the draft model's pool gets no draft; Draft returns an error only
// when a forward pass fails.
func (m *ModelDrafter) Draft(reqs []Request, steps int) error {
	if steps <= 0 {
		return nil
	}
	m.act = m.act[:0]
	for i := range reqs {
		r := &reqs[i]
		if len(r.Tokens) == 0 || r.MaxNodes <= r.Draft.Len() {
			continue
		}
		st := m.sync(r, m.MaxGap)
		m.act = append(m.act, st)
	}
	for range steps {
		if len(m.act) == 0 {
			break
		}
		if err := m.pass(); err != nil {
			return err
		}
	}
	for _, st := range m.act {
		st.req = nil
	}
	return nil
}

// CatchUp feeds the draft model the tokens of each request's sequence it
// lacks, up to MaxCatchUp each, without drafting: the scheduler calls it
// while the sequences' prompts are being computed, so that the draft
// model reads a prompt during its prefill rather than during the reply.
func (m *ModelDrafter) CatchUp(reqs []Request) error {
	m.act = m.act[:0]
	for i := range reqs {
		r := &reqs[i]
		if len(r.Tokens) < 2 {
			continue
		}
		st := m.sync(r, 0)
		if len(st.feed) > 0 {
			st.done = true
			m.act = append(m.act, st)
		}
	}
	err := m.pass()
	for _, st := range m.act {
		st.req = nil
	}
	return err
}

// sync brings the draft state of r's sequence to the longest prefix it
// shares with r.Tokens and sets what the first pass feeds; with maxGap
// positive, a state that lacks more than maxGap tokens restarts at the
// last maxGap.
func (m *ModelDrafter) sync(r *Request, maxGap int) *draftSeq {
	st := m.seqs[r.ID]
	if st == nil {
		st = &draftSeq{seq: kv.NewSequence(m.pool)}
		if m.Window > 0 {
			st.start = max(0, len(r.Tokens)-m.Window)
		}
		if m.cache != nil && st.start == 0 {
			match := m.cache.Lookup(m.ns, r.Tokens)
			st.seq.Adopt(match.Blocks, match.Tokens)
			m.cache.Done(match)
			st.fed = append(st.fed, r.Tokens[:match.Tokens]...)
		}
		m.seqs[r.ID] = st
	}
	toks := r.Tokens[min(st.start, len(r.Tokens)-1):]
	n := 0
	for n < len(st.fed) && n < len(toks) && st.fed[n] == toks[n] {
		n++
	}
	n = min(n, len(toks)-1) // the last token is fed again for its logits
	if maxGap > 0 && len(toks)-n > maxGap {
		st.start = len(r.Tokens) - maxGap
		toks, n = r.Tokens[st.start:], 0
	}
	st.seq.Truncate(n)
	st.fed = st.fed[:n]
	st.confirmed = n
	st.req = r
	st.done = false
	st.parent = -1
	st.feed = toks[n:]
	if len(st.feed) > m.MaxCatchUp {
		st.feed = st.feed[:m.MaxCatchUp]
		st.done = true // catching up: no draft this time
	}
	return st
}

// pass runs one draft forward pass over the active sequences and adds a
// token to each one's draft.
func (m *ModelDrafter) pass() error {
	b := &m.batch
	b.Tokens, b.Spans = b.Tokens[:0], b.Spans[:0]
	m.rows = m.rows[:0]
	single := true
	live := m.act[:0]
	for _, st := range m.act {
		if err := m.reserve(st, len(st.feed)); err != nil {
			m.drop(st)
			continue
		}
		row := len(b.Tokens)
		b.Tokens = append(b.Tokens, st.feed...)
		b.Spans = append(b.Spans, compute.Span{Row: row, N: len(st.feed), Pos: st.seq.Len(), Blocks: st.seq.Blocks()})
		m.rows = append(m.rows, int32(row+len(st.feed)-1))
		single = single && len(st.feed) == 1
		live = append(live, st)
	}
	m.act = live
	if len(m.act) == 0 {
		return nil
	}
	vocab := m.run.Vocab()
	for len(m.logits) < len(m.rows) {
		m.logits = append(m.logits, make([]float32, vocab))
	}
	clock := m.Clock
	if clock == nil {
		base := time.Now()
		clock = func() time.Duration { return time.Since(base) }
	}
	start := clock()
	if err := m.run.Step(b, m.rows, m.logits[:len(m.rows)]); err != nil {
		return fmt.Errorf("draft pass: %w", err)
	}
	if single && m.Timing != nil {
		m.Timing(len(m.act), clock()-start)
	}
	live = m.act[:0]
	for i, st := range m.act {
		st.seq.Advance(len(st.feed))
		st.fed = append(st.fed, st.feed...)
		if st.done {
			continue
		}
		d := st.req.Draft
		first, second := top2(m.logits[i])
		c := d.Child(st.parent, first)
		if c < 0 {
			if d.Len() >= st.req.MaxNodes {
				continue
			}
			c = d.Add(st.parent, first, SrcModel)
		}
		if st.req.Alternatives && m.AltBelow > 0 && second >= 0 && d.Len() < st.req.MaxNodes && hesitant(m.logits[i], first, m.AltBelow) {
			d.Add(st.parent, second, SrcModel)
		}
		st.parent = c
		st.one[0] = first
		st.feed = st.one[:]
		live = append(live, st)
	}
	m.act = live
	return nil
}

// reserve finds blocks for n more positions of st, evicting the draft
// cache's prefixes when the pool is short.
func (m *ModelDrafter) reserve(st *draftSeq, n int) error {
	for {
		err := st.seq.Reserve(n, m.run.KV())
		if err == nil || !errors.Is(err, kv.ErrPoolExhausted) {
			return err
		}
		if m.cache == nil || m.cache.Evict(max(1, n/m.pool.BlockSize()+1)) == 0 {
			return err
		}
	}
}

// drop forgets a sequence that could not continue.
func (m *ModelDrafter) drop(st *draftSeq) {
	if st.req != nil {
		m.Forget(st.req.ID)
	}
}

// Forget releases what the drafter holds for sequence id, first offering
// the target's tokens in it to the draft cache.
func (m *ModelDrafter) Forget(id uint64) {
	st := m.seqs[id]
	if st == nil {
		return
	}
	delete(m.seqs, id)
	if m.cache != nil && st.confirmed > 0 && st.start == 0 {
		m.cache.Insert(m.ns, st.fed[:st.confirmed], st.seq.Blocks())
	}
	st.seq.Release()
}

// Close forgets every sequence.
func (m *ModelDrafter) Close() {
	for id := range m.seqs {
		m.Forget(id)
	}
}

// top2 returns the two largest logits' ids (lowest id on ties, -1 for a
// missing second).
func top2(logits []float32) (first, second int32) {
	first, second = -1, -1
	for i, v := range logits {
		switch {
		case first < 0 || v > logits[first]:
			second, first = first, int32(i)
		case second < 0 || v > logits[second]:
			second = int32(i)
		}
	}
	return first, second
}

// negligibleLogit is how far below the largest logit a logit stops
// mattering to the softmax's largest probability: e^-24 is 4e-11, and
// even a whole vocabulary of such terms moves it by less than 1e-5.
const negligibleLogit = 24

// hesitant reports whether the softmax probability of logits[first] (the
// largest) is below p. It sums e^(v-max) over the logits that matter and
// stops as soon as the sum shows the answer, so a confident draft token
// costs one pass over the logits and no exponential per entry: the draft
// model runs this for every token it proposes, and a float64 softmax over
// the whole vocabulary cost a sixth of a small draft model's pass.
func hesitant(logits []float32, first int32, p float32) bool {
	if p <= 0 {
		return false
	}
	if p >= 1 { // every choice among several is below certainty
		return true
	}
	mx := logits[first]
	floor := mx - negligibleLogit
	limit := 1 / float64(p) // p1 < p  ⇔  Σ e^(v-max) > 1/p
	var sum float64
	for _, v := range logits {
		if v <= floor {
			continue
		}
		sum += math.Exp(float64(v - mx))
		if sum > limit {
			return true
		}
	}
	return false
}
