package llm

import (
	"errors"
	"fmt"
	"math"

	"github.com/ruvllm/ruvllm/engine/grammar"
	"github.com/ruvllm/ruvllm/engine/sample"
)

// ErrGrammarVocab is returned for a request whose grammar was made for
// another model's vocabulary.
var ErrGrammarVocab = errors.New("grammar was compiled for another vocabulary")

// GrammarVocab returns the model's vocabulary prepared for constraints,
// building it on first use (a token trie of the whole vocabulary: about
// 100 ms for 128k tokens).
func (m *Model) GrammarVocab() (*grammar.Vocab, error) {
	m.gvOnce.Do(func() {
		m.gvocab, m.gvErr = grammar.VocabFromTokenizer(m.tok)
	})
	return m.gvocab, m.gvErr
}

// Grammar compiles a constraint for this model: a JSON Schema, any JSON
// value or object, a GBNF grammar or a regular expression. Compiled
// constraints are cached by spec, so a schema sent again is not compiled
// again. Errors name what in the spec cannot be enforced
// (*grammar.UnsupportedError for JSON Schema keywords).
func (m *Model) Grammar(s grammar.Spec) (*grammar.Constraint, error) {
	v, err := m.GrammarVocab()
	if err != nil {
		return nil, err
	}
	c, err := v.Constraint(s)
	if err != nil {
		return nil, fmt.Errorf("grammar %s: %w", s.Kind, err)
	}
	return c, nil
}

// ComposedGrammar compiles a grammar made of parts (tool calls in a
// model's format), cached by what the parts match.
func (m *Model) ComposedGrammar(p grammar.Part) (*grammar.Constraint, error) {
	v, err := m.GrammarVocab()
	if err != nil {
		return nil, err
	}
	return v.Cached("compose\x00"+p.Key(), func() (*grammar.Grammar, error) { return grammar.Compose(p) })
}

// constrained is the per-request state of a generation under a grammar:
// the matcher and the mask of the tokens allowed next.
type constrained struct {
	m    *grammar.Matcher
	mask []uint64
}

func newConstrained(c *grammar.Constraint, triggers []string, gate *grammar.Gate) *constrained {
	x := &constrained{m: c.NewLazyMatcher(triggers), mask: make([]uint64, c.Vocab().MaskWords())}
	if gate != nil {
		x.m.GateReasoning(*gate)
	}
	x.m.FillMask(x.mask)
	return x
}

// forced returns the only token the mask allows, if it allows one.
func (x *constrained) forced() (int32, bool) {
	id := int32(-1)
	for w, bits := range x.mask {
		if bits == 0 {
			continue
		}
		if id >= 0 || bits&(bits-1) != 0 {
			return -1, false
		}
		for b := 0; b < 64; b++ {
			if bits&(1<<b) != 0 {
				id = int32(w*64 + b)
				break
			}
		}
	}
	return id, id >= 0
}

// canForce reports whether a forced token may skip sampling without
// changing what would be generated: its bias must not ban it (then
// sampling would have found no token and stopped).
func canForce(p sample.Params, id int32) bool {
	b, ok := p.LogitBias[id]
	return !ok || !math.IsInf(float64(b), -1) && !math.IsNaN(float64(b))
}
