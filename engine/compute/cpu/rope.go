package cpu

import (
	"math"
	"slices"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// ropeCorrDims returns the YaRN ramp bounds, as ggml_rope_yarn_corr_dims.
func ropeCorrDims(nDims, nCtxOrig int, base, betaFast, betaSlow float32) (lo, hi float32) {
	corr := func(nRot float32) float64 {
		return float64(nDims) * math.Log(float64(nCtxOrig)/(float64(nRot)*2*math.Pi)) / (2 * math.Log(float64(base)))
	}
	start := math.Floor(corr(betaFast))
	end := math.Ceil(corr(betaSlow))
	return float32(math.Max(0, start)), float32(math.Min(float64(nDims-1), end))
}

// RoPE implements compute.Backend. The per-pair angle is built by repeated
// float32 multiplication, like ggml's rope cache, so positions far into the
// context round the same way llama.cpp's do.
func (b *Backend) RoPE(x compute.Tensor, spans []compute.Span, heads, headDim int, p compute.RoPE) {
	xs := ct(x)
	if xs.cols != heads*headDim {
		panic("RoPE: row is not heads×headDim")
	}
	dims := p.Dims
	if dims == 0 || dims > headDim {
		dims = headDim
	}
	freqScale := p.FreqScale
	if freqScale == 0 {
		freqScale = 1
	}
	attnFactor := p.AttnFactor
	if attnFactor == 0 {
		attnFactor = 1
	}
	var factors []float32
	if p.Factors != nil {
		factors = ct(p.Factors).f32
	}
	var corrLo, corrHi float32
	if p.ExtFactor != 0 {
		corrLo, corrHi = ropeCorrDims(dims, p.OrigCtx, p.FreqBase, p.BetaFast, p.BetaSlow)
	}
	// powf(base, -2.0f/dims) with the exponent rounded to float32 first.
	thetaScale := float32(math.Pow(float64(p.FreqBase), float64(float32(-2)/float32(dims))))
	j := &b.rope
	j.rows = j.rows[:0]
	for _, s := range spans {
		if s.Tree != nil { // a token tree: each token at its depth (tree.go)
			if !compute.ValidTree(s.Tree, s.N) {
				panic("RoPE: invalid tree")
			}
			for i := 0; i < s.N; i++ {
				j.rows = append(j.rows, ropeRow{s.Row + i, s.Pos + treeDepth(s.Tree, i)})
			}
			continue
		}
		for i := 0; i < s.N; i++ {
			j.rows = append(j.rows, ropeRow{s.Row + i, s.Pos + i})
		}
	}
	j.x, j.p, j.factors = xs, p, factors
	j.heads, j.headDim, j.half = heads, headDim, dims/2
	j.freqScale, j.attnFactor, j.thetaScale = freqScale, attnFactor, thetaScale
	j.corrLo, j.corrHi = corrLo, corrHi
	key := ropeKey{p: p, dims: dims}
	key.p.Factors = nil
	j.tab, j.fill = j.tables.lookup(key, factors, j.rows, j.half)
	// A row's cost is its rotations plus, when its angles are not in the
	// table yet, a sincosf per pair of dimensions (about eight rotations'
	// worth).
	cols := heads * headDim
	if j.fill {
		cols += 8 * j.half
	}
	b.w.run(len(j.rows), rowGrain(cols), j)
	j.x, j.factors, j.p.Factors, j.tab = nil, nil, nil, nil
}

// ropeRow is a row of the batch and its position.
type ropeRow struct{ r, pos int }

// ropeJob holds the parameters of one RoPE call and the tables of cos and
// sin it reads.
type ropeJob struct {
	rows                              []ropeRow
	x                                 *tensor
	p                                 compute.RoPE
	factors                           []float32
	heads, headDim, half              int
	freqScale, attnFactor, thetaScale float32
	corrLo, corrHi                    float32
	// tab holds each row's cos and sin (half values each, row k at
	// 2·half·k); fill says the call computes them first.
	tab    []float32
	fill   bool
	tables ropeTables
}

// ropeKey is what a row's angles depend on besides its position and the
// frequency factors' values: the parameters and the rotated dimensions.
type ropeKey struct {
	p    compute.RoPE // Factors nil
	dims int
}

// ropeTables keeps the cos and sin tables of the last two sets of
// parameters, each for the positions of the batch that made it: a forward
// pass rotates the queries and keys of every layer at the same positions,
// so the first call computes the table and the others read it (a model
// whose layers alternate two sets of parameters keeps both). The values
// are the ones each call would compute, bit for bit. A table holds one
// row per row of a batch, so its size is bounded by the batch's.
type ropeTables struct {
	t    [2]ropeTable
	last int
}

type ropeTable struct {
	key        ropeKey
	factors    []float32 // a copy, where hasFactors
	hasFactors bool
	pos        []int
	vals       []float32
	valid      bool
}

// lookup returns the table for key, factors and the positions of rows,
// and whether the caller must fill it (its values are stale).
func (ts *ropeTables) lookup(key ropeKey, factors []float32, rows []ropeRow, half int) ([]float32, bool) {
	for i := range ts.t {
		t := &ts.t[i]
		if t.valid && t.key == key && t.hasFactors == (factors != nil) && slices.EqualFunc(t.factors, factors, sameBits) && slices.EqualFunc(t.pos, rows, atPosition) {
			ts.last = i
			return t.vals, false
		}
	}
	i := 1 - ts.last // the older one
	t := &ts.t[i]
	t.key, t.valid = key, true
	t.factors, t.hasFactors = append(t.factors[:0], factors...), factors != nil
	t.pos = t.pos[:0]
	for _, rw := range rows {
		t.pos = append(t.pos, rw.pos)
	}
	t.vals = grow(t.vals, 2*half*len(rows))
	ts.last = i
	return t.vals, true
}

// sameBits reports whether x and y have the same bits.
func sameBits(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }

// atPosition reports whether row rw is at position pos.
func atPosition(pos int, rw ropeRow) bool { return pos == rw.pos }

func (j *ropeJob) do(wk, lo, hi int) {
	half, headDim := j.half, j.headDim
	neox := j.p.Mode == compute.RoPENeox
	xs := j.x
	for k := lo; k < hi; k++ {
		rw := j.rows[k]
		tab := j.tab[2*half*k:][:2*half]
		if j.fill {
			j.angles(rw.pos, tab, neox)
		}
		data := xs.f32[rw.r*xs.cols : (rw.r+1)*xs.cols]
		for h := 0; h < j.heads; h++ {
			v := data[h*headDim : h*headDim+headDim]
			if neox {
				quant.RoPEHalves(v[:half], v[half:2*half], tab[:half], tab[half:])
			} else {
				quant.RoPEPairs(v[:2*half], tab)
			}
		}
	}
}

// angles writes the cos and sin of each pair of dimensions at position
// pos, scaled by the attention factor, into tab: all the cos values then
// all the sin values for the neox layout (quant.RoPEHalves), interleaved
// for adjacent pairs (quant.RoPEPairs).
func (j *ropeJob) angles(pos int, tab []float32, neox bool) {
	p := &j.p
	theta := float32(pos)
	for i := range j.half {
		ff := float32(1)
		if j.factors != nil {
			ff = j.factors[i]
		}
		extrap := theta / ff
		interp := j.freqScale * extrap
		t, mscale := interp, j.attnFactor
		if p.ExtFactor != 0 {
			y := (float32(i) - j.corrLo) / max(0.001, j.corrHi-j.corrLo)
			ramp := (1 - min(1, max(0, y))) * p.ExtFactor
			t = interp*(1-ramp) + extrap*ramp
			mscale *= 1 + 0.1*float32(math.Log(float64(1/j.freqScale)))
		}
		// sincosf's rounding, as llama.cpp's rope cache.
		sn, cs := quant.Sincosf(t)
		if neox {
			tab[i], tab[j.half+i] = cs*mscale, sn*mscale
		} else {
			tab[2*i], tab[2*i+1] = cs*mscale, sn*mscale
		}
		theta *= j.thetaScale
	}
}
