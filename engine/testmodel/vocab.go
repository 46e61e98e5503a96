package testmodel

import (
	"fmt"
	"strings"

	"github.com/ruvllm/ruvllm/engine/gguf"
)

// Token types as llama.cpp stores them in tokenizer.ggml.token_type.
const (
	tokenNormal  int32 = 1
	tokenControl int32 = 3
)

// byteMerges are the merges of the built-in vocabulary, in rank order. Each
// side must already be a token when the merge is reached; byteVocab checks.
var byteMerges = []string{
	"Ġ t", "Ġ a", "h e", "i n", "r e", "o n", "Ġt he", "e r", "Ġ s", "Ġ w",
	"Ġ o", "a t", "e n", "Ġ c", "i s", "o r", "Ġ b", "Ġ f", "Ġ m", "e s",
	"a n", "Ġ p", "Ġ d", "i t", "Ġo f", "a l", "Ġ h", "in g", "Ġa n", "Ġan d",
	"o u", "Ġ i", "Ġ l", "l l", "e d", "Ġt o", "Ġ in", "Ġ is", "Ġ re", "Ġ n",
}

// Special tokens of the built-in vocabulary, appended after the merges.
var byteSpecials = []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}

// chatMLTemplate is the ChatML Jinja template used by Qwen-style models.
const chatMLTemplate = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"

// byteToUnicode is GPT-2's reversible map from bytes to printable runes:
// printable Latin-1 bytes stand for themselves, the rest are shifted to
// U+0100 and up, in byte order.
func byteToUnicode() [256]rune {
	var m [256]rune
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[b] = rune(b)
		} else {
			m[b] = rune(256 + n)
			n++
		}
	}
	return m
}

// byteVocab returns the tokenizer metadata of the built-in byte-level BPE
// vocabulary: 256 byte tokens, a few merges, and ChatML specials.
func byteVocab() ([]entry, error) {
	bu := byteToUnicode()
	tokens := make([]string, 0, 256+len(byteMerges)+len(byteSpecials))
	index := map[string]bool{}
	for b := 0; b < 256; b++ {
		s := string(bu[b])
		tokens = append(tokens, s)
		index[s] = true
	}
	for _, m := range byteMerges {
		a, b, ok := strings.Cut(m, " ")
		if !ok || !index[a] || !index[b] {
			return nil, fmt.Errorf("testmodel: merge %q uses a token not yet in the vocabulary", m)
		}
		if index[a+b] {
			return nil, fmt.Errorf("testmodel: merge %q repeats token %q", m, a+b)
		}
		tokens = append(tokens, a+b)
		index[a+b] = true
	}
	types := make([]int32, len(tokens), len(tokens)+len(byteSpecials))
	for i := range types {
		types[i] = tokenNormal
	}
	eos := uint32(len(tokens))
	for _, s := range byteSpecials {
		tokens = append(tokens, s)
		types = append(types, tokenControl)
	}
	return []entry{
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.pre", "default"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.merges", append([]string(nil), byteMerges...)},
		{"tokenizer.ggml.bos_token_id", eos},
		{"tokenizer.ggml.eos_token_id", eos},
		{"tokenizer.ggml.padding_token_id", eos},
		{"tokenizer.ggml.add_bos_token", false},
		{"tokenizer.chat_template", chatMLTemplate},
	}, nil
}

// vocabFrom copies every tokenizer.* key of the GGUF file at path.
func vocabFrom(path string) ([]entry, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("testmodel: vocabulary source: %w", err)
	}
	defer f.Close()
	var out []entry
	for _, e := range f.KV {
		// Metadata strings are owned by the parse, not the mapping, so they
		// stay valid after Close.
		if strings.HasPrefix(e.Key, "tokenizer.") {
			out = append(out, entry{e.Key, e.Value})
		}
	}
	if _, ok := f.Strings("tokenizer.ggml.tokens"); !ok {
		return nil, fmt.Errorf("testmodel: %s has no tokenizer.ggml.tokens", path)
	}
	return out, nil
}

// entry is one metadata key and a Go value for gguf.Writer.AddKV.
type entry struct {
	key string
	val any
}
