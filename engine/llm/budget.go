package llm

import (
	"github.com/ruvllm/ruvllm/engine/grammar"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
)

// reasoningBudget ends a thinking model's reasoning after a number of
// tokens (Request.ReasoningBudget): it follows the reply's reasoning block
// through the generated tokens' text (grammar.ReasoningBlock, as a lazy
// grammar's gate does) and, once the block has taken its tokens without
// closing, has the closing tag written for the model.
type reasoningBudget struct {
	block *grammar.ReasoningBlock
	left  int
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
		block: grammar.NewReasoningBlock(*g), left: req.ReasoningBudget,
		closing: tok.Encode("\n"+g.Close, tokenizer.EncodeOptions{ParseSpecial: true}),
	}
}

// add follows the reply through generated token id and reports whether
// the budget is spent with the block still open: the closing tokens are
// due next. A token that only opens the block, or closes it, is not
// counted.
func (b *reasoningBudget) add(tok *tokenizer.Tokenizer, id int32) bool {
	b.piece = tok.TokenPiece(b.piece[:0], id)
	wasInside := b.block.Inside()
	reasoning, body, _, closed := b.block.Feed(b.piece)
	if !reasoning || closed || !wasInside && len(body) == 0 {
		return false
	}
	b.left--
	// Not while the model may be writing the tag itself.
	return b.left <= 0 && !b.block.Closing()
}

// ended marks the block closed by the budget's tokens.
func (b *reasoningBudget) ended() { b.block.End() }
