package grammar

import (
	"math/rand/v2"
	"os"
	"sync"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

var (
	llama3Once sync.Once
	llama3Tok  *tokenizer.Tokenizer
	llama3     *Vocab
	llama3Err  error
)

// llama3Vocab loads the Llama 3 vocabulary (128,256 tokens) once.
func llama3Vocab(t testing.TB) (*Vocab, *tokenizer.Tokenizer) {
	t.Helper()
	path := testpath.Shared(t, "vocab/ggml-vocab-llama-bpe.gguf")
	llama3Once.Do(func() {
		f, err := gguf.Open(path)
		if err != nil {
			llama3Err = err
			return
		}
		defer f.Close()
		if llama3Tok, err = tokenizer.FromGGUF(f); err != nil {
			llama3Err = err
			return
		}
		llama3, llama3Err = VocabFromTokenizer(llama3Tok)
	})
	if llama3Err != nil {
		t.Fatal(llama3Err)
	}
	return llama3, llama3Tok
}

// checkRealMasks walks a text token by token (as the tokenizer splits it)
// and at each step compares the mask with a check of every token.
func checkRealMasks(t *testing.T, c *Constraint, tok *tokenizer.Tokenizer, text string, stride int) {
	t.Helper()
	ids := tok.Encode(text, tokenizer.EncodeOptions{})
	m := c.NewMatcher()
	mask := make([]uint64, c.v.MaskWords())
	r := rand.New(rand.NewPCG(1, 1))
	for i, id := range ids {
		if i%stride == 0 {
			m.FillMask(mask)
			for k := 0; k < 4000; k++ {
				tk := int32(r.IntN(c.v.n))
				if k < 300 { // tokens near the right one matter most
					tk = int32((int(id) + k*37) % c.v.n)
				}
				want := m.Allowed(tk)
				if got := mask[tk>>6]&(1<<(tk&63)) != 0; got != want {
					t.Fatalf("after %q: token %d (%q) mask %v, check %v", tok.Decode(ids[:i], tokenizer.DecodeOptions{}), tk, c.v.bytes[tk], got, want)
				}
			}
		}
		if mask[id>>6]&(1<<(id&63)) == 0 && i%stride == 0 {
			t.Fatalf("token %d (%q) of the text not in the mask after %q", id, c.v.bytes[id], tok.Decode(ids[:i], tokenizer.DecodeOptions{}))
		}
		if err := m.Accept(id); err != nil {
			t.Fatalf("after %q: %v", tok.Decode(ids[:i], tokenizer.DecodeOptions{}), err)
		}
	}
	if !m.CanEnd() {
		t.Fatalf("%q: not complete", text)
	}
}

func TestGBNFJSONOnLlama3(t *testing.T) {
	v, tok := llama3Vocab(t)
	src, err := os.ReadFile("/work/cache/node_modules/node-llama-cpp/llama/grammars/json.gbnf")
	if err != nil {
		t.Skip("node-llama-cpp json.gbnf not found")
	}
	g, err := CompileGBNF(string(src))
	if err != nil {
		t.Fatal(err)
	}
	c := NewConstraint(g, v)
	checkRealMasks(t, c, tok, `{"name": "Ada Lovelace", "born": 1815, "tags": ["math", "poetry"], "nested": {"ok": true, "x": null, "n": -2.5e-3}}`, 1)
}
