package llm

import (
	"bytes"

	"github.com/ruvllm/ruvllm/engine/tokenizer"
)

// reasoningBudget ends a thinking model's reasoning after a number of
// tokens (Request.ReasoningBudget): it follows the reply's reasoning block
// through the generated tokens' text and, once the block has taken its
// tokens without closing, has the closing tag written for the model.
type reasoningBudget struct {
	open, close []byte
	left        int
	inside      bool
	undecided   bool   // the reply so far may still open the block
	head        []byte // the reply while undecided
	tail        []byte // the end of the reasoning, shorter than close
	// closing are the tokens written when the budget is spent: a newline
	// and the closing tag.
	closing []int32
	piece   []byte
}

// newReasoningBudget returns the budget of req, or nil when it sets none.
func newReasoningBudget(req Request, tok *tokenizer.Tokenizer) *reasoningBudget {
	g := req.Reasoning
	if req.ReasoningBudget <= 0 || g == nil || g.Open == "" || g.Close == "" {
		return nil
	}
	return &reasoningBudget{
		open: []byte(g.Open), close: []byte(g.Close), left: req.ReasoningBudget,
		inside: g.StartsOpen, undecided: !g.StartsOpen,
		closing: tok.Encode("\n"+g.Close, tokenizer.EncodeOptions{ParseSpecial: true}),
	}
}

// add follows the reply through generated token id and reports whether
// the budget is spent with the block still open: the closing tokens are
// due next.
func (b *reasoningBudget) add(tok *tokenizer.Tokenizer, id int32) bool {
	b.piece = tok.TokenPiece(b.piece[:0], id)
	d := b.piece
	if b.undecided {
		b.head = append(b.head, d...)
		h := bytes.TrimLeft(b.head, " \t\r\n")
		switch {
		case bytes.HasPrefix(h, b.open):
			b.undecided, b.inside, b.head = false, true, nil
			d = h[len(b.open):]
			if len(d) == 0 {
				return false // the opening tag is not reasoning
			}
		case bytes.HasPrefix(b.open, h):
			return false
		default:
			b.undecided, b.head = false, nil // no reasoning in this reply
			return false
		}
	}
	if !b.inside {
		return false
	}
	text := append(b.tail, d...)
	if bytes.Contains(text, b.close) {
		b.inside, b.tail = false, nil
		return false
	}
	keep := min(len(text), len(b.close)-1)
	b.tail = append(b.tail[:0:0], text[len(text)-keep:]...)
	b.left--
	// Not while the model may be writing the tag itself.
	return b.left <= 0 && !closing(b.tail, b.close)
}

// closing reports whether text ends with the start of tag.
func closing(text, tag []byte) bool {
	for k := min(len(tag)-1, len(text)); k > 0; k-- {
		if bytes.HasSuffix(text, tag[:k]) {
			return true
		}
	}
	return false
}

// ended marks the block closed by the budget's tokens.
func (b *reasoningBudget) ended() { b.inside, b.tail = false, nil }
