package train

import (
	"fmt"
	"math"
	"slices"

	"github.com/ruvllm/ruvllm/engine/gemm"
)

// Example is one training sequence: a prompt followed by an answer, as
// token ids. Only the answer is scored: each of Tokens[Start:] is
// predicted from the tokens before it.
type Example struct {
	Tokens []int32
	// Start is the index of the first answer token (at least 1).
	Start int
	// Weight scales the answer's terms: above 0 the step raises their
	// likelihood (cross-entropy, −w·log p), below 0 it lowers it
	// (unlikelihood, −|w|·log(1−p), Welleck et al. 2019); 0 means 1.
	Weight float32
	// Avoid are single tokens to make unlikely where they were wrongly
	// predicted (the token at which a rejected answer left the corrected
	// one): unlikelihood terms on top of the answer's.
	Avoid []Avoid
	// Teacher, when set, makes the example a distillation example: every
	// answer position is scored by w·KL(teacher ‖ model), the divergence
	// of the trained model's next-token distribution from the teacher's
	// (Trainer.Teach), instead of the answer tokens' likelihood. Its
	// Weight must not be negative. Distillation on general text towards
	// the base model keeps an adapter from changing what it need not.
	Teacher *Teacher
}

// Avoid is an unlikelihood term: Token should not follow Tokens[:Pos].
type Avoid struct {
	Pos    int
	Token  int32
	Weight float32 // 0 means 1
}

// scored is the number of answer positions of e.
func (e *Example) scored() int { return len(e.Tokens) - e.Start }

// validate checks e against the base's vocabulary and context.
func (e *Example) validate(b *Base) error {
	if len(e.Tokens) < 2 {
		return fmt.Errorf("example of %d tokens: need a prompt and an answer", len(e.Tokens))
	}
	if len(e.Tokens) > b.cfg.ContextLength {
		return fmt.Errorf("example of %d tokens exceeds the context of %d", len(e.Tokens), b.cfg.ContextLength)
	}
	if e.Start < 1 || e.Start >= len(e.Tokens) {
		return fmt.Errorf("answer start %d out of range [1,%d)", e.Start, len(e.Tokens))
	}
	for _, t := range e.Tokens {
		if t < 0 || int(t) >= b.cfg.Vocab {
			return fmt.Errorf("token id %d out of range [0,%d)", t, b.cfg.Vocab)
		}
	}
	if bad(e.Weight) {
		return fmt.Errorf("example weight %v", e.Weight)
	}
	if e.Teacher != nil {
		if e.Weight < 0 {
			return fmt.Errorf("distillation example with negative weight %v", e.Weight)
		}
		if err := e.Teacher.check(e, b); err != nil {
			return err
		}
	}
	for _, a := range e.Avoid {
		if a.Pos < 1 || a.Pos >= len(e.Tokens) || a.Token < 0 || int(a.Token) >= b.cfg.Vocab || bad(a.Weight) || a.Weight < 0 {
			return fmt.Errorf("avoid term %+v out of range", a)
		}
	}
	return nil
}

func bad(w float32) bool { return math.IsNaN(float64(w)) || math.IsInf(float64(w), 0) }

// packBatches packs examples (by index) into batches of at most
// maxTokens tokens, longest first into the first batch with room, so
// that a step multiplies few, full matrices. An example longer than
// maxTokens gets a batch of its own.
func packBatches(examples []Example, maxTokens int) [][]int {
	order := make([]int, len(examples))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(examples[b].Tokens) - len(examples[a].Tokens) })
	var packs [][]int
	var used []int
	for _, i := range order {
		n := len(examples[i].Tokens)
		placed := false
		for p := range packs {
			if used[p]+n <= maxTokens {
				packs[p] = append(packs[p], i)
				used[p] += n
				placed = true
				break
			}
		}
		if !placed {
			packs = append(packs, []int{i})
			used = append(used, n)
		}
	}
	for _, p := range packs {
		slices.Sort(p) // examples in their given order inside a batch
	}
	return packs
}

// makeBatch lays the examples of one pack out as a batch; each term's
// weight is divided by norm (the step's scored positions).
func makeBatch(examples []Example, idx []int, norm float64) *batch {
	bt := &batch{examples: len(idx)}
	for k, i := range idx {
		e := &examples[i]
		row := len(bt.tokens)
		bt.tokens = append(bt.tokens, e.Tokens...)
		bt.spans = append(bt.spans, span{row: row, n: len(e.Tokens)})
		w := float64(e.Weight)
		if w == 0 {
			w = 1
		}
		for pos := e.Start; pos < len(e.Tokens); pos++ {
			t := term{row: row + pos - 1, token: e.Tokens[pos], w: math.Abs(w) / norm, ul: w < 0, ex: k}
			if th := e.Teacher; th != nil {
				i := pos - e.Start
				t.teacher, t.ul = th.hidden[i*th.dim:(i+1)*th.dim], false
			}
			bt.terms = append(bt.terms, t)
		}
		for _, a := range e.Avoid {
			aw := float64(a.Weight)
			if aw == 0 {
				aw = 1
			}
			bt.terms = append(bt.terms, term{row: row + a.Pos - 1, token: a.Token, w: aw / norm, ul: true, ex: k})
		}
	}
	slices.SortStableFunc(bt.terms, func(a, b term) int { return a.row - b.row })
	return bt
}

// exStat is what a pass measured of one example of its batch.
type exStat struct {
	nll    float64 // −log p of the answer tokens (cross-entropy terms)
	tokens int
}

// headRows is how many rows' logits are held at once.
const headRows = 32

// vocabBlock is how many output rows are dequantized at once when the
// output matrix has no dense copy.
const vocabBlock = 4096

// head scores the batch's terms on the final hidden states: the
// weighted objective, per-example figures and, with grad, the gradient
// of the objective with respect to p.hN.
func (n *net[F]) head(p *pass[F], grad bool) (float64, []exStat, []F) {
	c := n.b.dims()
	V := n.b.cfg.Vocab
	out := n.b.output
	stats := make([]exStat, p.bt.examples)
	var dhN []F
	if grad {
		dhN = make([]F, p.T*c.D)
	}
	var loss float64
	terms := p.bt.terms
	var rows []int
	for i := 0; i < len(terms); {
		// The next headRows distinct rows and their terms.
		rows = rows[:0]
		j := i
		for j < len(terms) && (len(rows) < headRows || terms[j].row == rows[len(rows)-1]) {
			if len(rows) == 0 || terms[j].row != rows[len(rows)-1] {
				rows = append(rows, terms[j].row)
			}
			j++
		}
		chunk := terms[i:j]
		i = j
		rc := len(rows)
		H := make([]F, rc*c.D)
		for r, row := range rows {
			copy(H[r*c.D:(r+1)*c.D], p.hN[row*c.D:(row+1)*c.D])
		}
		L := make([]F, rc*V)
		n.vocabBlocks(p, out, func(v0, v1 int, W []F) {
			n.par(v1-v0, 32, func(lo, hi int) {
				gemm.NT(rc, hi-lo, c.D, H, c.D, W[lo*c.D:], c.D, L[v0+lo:], V)
			})
		})
		// Each row becomes e^(l−max) in place; the terms' logits are
		// read first (for a distillation term, Σ q·l over the vocabulary).
		q, negEnt := n.teacherProbs(p, chunk)
		lse := make([]float64, rc)
		sums := make([]float64, rc)
		termLogit := make([]float64, len(chunk))
		r := 0
		for k, t := range chunk {
			for rows[r] != t.row {
				r++
			}
			if qk := q[k]; qk != nil {
				var dot float64
				for v, l := range L[r*V : (r+1)*V] {
					dot += float64(qk[v]) * float64(l)
				}
				termLogit[k] = dot
				continue
			}
			termLogit[k] = float64(L[r*V+int(t.token)])
		}
		for r := range rc {
			row := L[r*V : (r+1)*V]
			m := F(math.Inf(-1))
			for _, v := range row {
				m = max(m, v)
			}
			for k, v := range row {
				row[k] = v - m
			}
			exps(row)
			var sum float64
			for _, v := range row {
				sum += float64(v)
			}
			sums[r] = sum
			lse[r] = float64(m) + math.Log(sum)
		}
		coef := make([]float64, rc)
		type point struct {
			r   int
			tok int32
			d   float64
		}
		var points []point
		r = 0
		for k, t := range chunk {
			for rows[r] != t.row {
				r++
			}
			logp := termLogit[k] - lse[r]
			if q[k] != nil {
				// KL(q ‖ p) = Σ q log q − Σ q log p; Σ q log p = Σ q·l − lse.
				loss += t.w * (negEnt[k] - logp)
				coef[r] += t.w
				continue
			}
			if !t.ul {
				loss += -t.w * logp
				stats[t.ex].nll -= logp
				stats[t.ex].tokens++
				coef[r] += t.w
				points = append(points, point{r, t.token, -t.w})
				continue
			}
			pa := math.Exp(logp)
			q := math.Max(1-pa, 1e-6)
			loss += -t.w * math.Log(q)
			g := t.w * pa / q
			coef[r] -= g
			points = append(points, point{r, t.token, g})
		}
		if !grad {
			continue
		}
		// dL/dlogits = coef·softmax + the points, in place of L.
		for r := range rc {
			row := L[r*V : (r+1)*V]
			f := F(coef[r] / sums[r])
			for k := range row {
				row[k] *= f
			}
		}
		for _, pt := range points {
			L[pt.r*V+int(pt.tok)] += F(pt.d)
		}
		// A distillation term's gradient is w·(p − q): coef holds w·p.
		r = 0
		for k, t := range chunk {
			for rows[r] != t.row {
				r++
			}
			if qk := q[k]; qk != nil {
				row, w := L[r*V:(r+1)*V], F(t.w)
				for v, x := range qk {
					row[v] -= w * x
				}
			}
		}
		dH := make([]F, rc*c.D)
		n.vocabBlocks(p, out, func(v0, v1 int, W []F) {
			n.par(c.D, 32, func(lo, hi int) {
				gemm.NN(rc, hi-lo, v1-v0, L[v0:], V, W[lo:], c.D, dH[lo:], c.D)
			})
		})
		for r, row := range rows {
			d := dhN[row*c.D : (row+1)*c.D]
			for k, v := range dH[r*c.D : (r+1)*c.D] {
				d[k] += v
			}
		}
	}
	return loss, stats, dhN
}

// teacherProbs returns, for each distillation term of a chunk, the
// teacher's next-token distribution (nil for other terms) and Σ q·log q.
func (n *net[F]) teacherProbs(p *pass[F], chunk []term) ([][]F, []float64) {
	c := n.b.dims()
	V := n.b.cfg.Vocab
	q := make([][]F, len(chunk))
	negEnt := make([]float64, len(chunk))
	var soft []int
	for k, t := range chunk {
		if t.teacher != nil {
			soft = append(soft, k)
		}
	}
	if len(soft) == 0 {
		return q, negEnt
	}
	ns := len(soft)
	H := make([]F, ns*c.D)
	for s, k := range soft {
		h := H[s*c.D : (s+1)*c.D]
		for d, v := range chunk[k].teacher {
			h[d] = F(v)
		}
	}
	Q := make([]F, ns*V)
	n.vocabBlocks(p, n.b.output, func(v0, v1 int, W []F) {
		n.par(v1-v0, 32, func(lo, hi int) {
			gemm.NT(ns, hi-lo, c.D, H, c.D, W[lo*c.D:], c.D, Q[v0+lo:], V)
		})
	})
	x := make([]F, V)
	for s, k := range soft {
		row := Q[s*V : (s+1)*V]
		m := F(math.Inf(-1))
		for _, v := range row {
			m = max(m, v)
		}
		for v, l := range row {
			x[v] = l - m
			row[v] = l - m
		}
		exps(row)
		var sum, dot float64
		for v, e := range row {
			sum += float64(e)
			dot += float64(e) * float64(x[v])
		}
		// Σ q log q = Σ e·x / S − log S, with q = e/S.
		negEnt[k] = dot/sum - math.Log(sum)
		inv := F(1 / sum)
		for v := range row {
			row[v] *= inv
		}
		q[k] = row
	}
	return q, negEnt
}

// vocabBlocks calls fn with the output matrix's rows as dense []F,
// vocabBlock rows at a time (views of a dense copy, or dequantized), and
// gives way to serving before each block: the head's products are the
// largest of a pass (a 32k vocabulary makes each a gigaflop), and a
// request arriving meanwhile waits for one block, not the whole matrix.
// A yield error stops the blocks; the caller reads p.err.
func (n *net[F]) vocabBlocks(p *pass[F], m *matrix, fn func(v0, v1 int, W []F)) {
	for v0 := 0; v0 < m.rows; v0 += vocabBlock {
		if p.between(); p.err != nil {
			return
		}
		v1 := min(v0+vocabBlock, m.rows)
		fn(v0, v1, n.weight(m, v0, v1, &p.scr))
	}
}

// Check reports whether e is a valid example for b: token ids in the
// vocabulary, an answer, within the context.
func (b *Base) Check(e Example) error { return e.validate(b) }
