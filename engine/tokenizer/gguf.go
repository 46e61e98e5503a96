package tokenizer

import (
	"fmt"

	"github.com/ruvllm/ruvllm/engine/gguf"
)

// FromGGUF builds the tokenizer described by a GGUF file's tokenizer.ggml.*
// metadata, with llama.cpp's defaults for what the file leaves out:
// SentencePiece BOS 1, EOS 2, UNK 0, add_bos and add_space_prefix on;
// byte-level BPE BOS = EOS = 11, add_bos only for llama3-style
// pre-tokenizers, no space prefix; Gemma 4 no default ids and add_bos
// always on. A special id outside the vocabulary is
// ignored (the default stays), as llama.cpp does.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	var v Vocab
	var ok bool
	if v.Model, ok = f.String("tokenizer.ggml.model"); !ok {
		return nil, fmt.Errorf("%w: missing tokenizer.ggml.model", ErrInvalidVocab)
	}
	v.Pre, _ = f.String("tokenizer.ggml.pre")
	v.Name, _ = f.String("general.name")
	if v.Tokens, ok = f.Strings("tokenizer.ggml.tokens"); !ok {
		return nil, fmt.Errorf("%w: missing tokenizer.ggml.tokens", ErrInvalidVocab)
	}
	n := int64(len(v.Tokens))
	v.Scores, _ = f.Float32s("tokenizer.ggml.scores")
	if types, ok := f.Int32s("tokenizer.ggml.token_type"); ok {
		v.Types = make([]TokenType, len(types))
		for i, ty := range types {
			v.Types[i] = TokenType(ty)
		}
	}
	v.Merges, _ = f.Strings("tokenizer.ggml.merges")

	var addBOS, spacePrefix bool
	var pre preTokenizer
	v.BOS, v.EOS, v.EOT, v.EOM, v.PAD, v.UNK = -1, -1, -1, -1, -1, -1
	switch v.Model {
	case "llama":
		v.BOS, v.EOS, v.UNK = 1, 2, 0
		addBOS, spacePrefix = true, true
	case "gpt2", "gemma4":
		if v.Merges == nil {
			return nil, fmt.Errorf("%w: BPE vocabulary without tokenizer.ggml.merges", ErrInvalidVocab)
		}
		var err error
		if pre, err = preTokenizerFor(bpePre(v)); err != nil {
			return nil, err
		}
		if v.Model == "gpt2" {
			v.BOS, v.EOS = 11, 11 // gemma4 has no defaults
		}
		addBOS = pre.addBOS
	default:
		return nil, fmt.Errorf("%w: tokenizer.ggml.model %q (known: llama, gpt2, gemma4)", ErrUnsupported, v.Model)
	}
	for _, s := range []struct {
		key string
		id  *int32
	}{
		{"bos_token_id", &v.BOS}, {"eos_token_id", &v.EOS}, {"eot_token_id", &v.EOT}, {"eom_token_id", &v.EOM},
		{"padding_token_id", &v.PAD}, {"unknown_token_id", &v.UNK},
	} {
		if x, ok := f.Int("tokenizer.ggml." + s.key); ok && x >= 0 && x < n {
			*s.id = int32(x)
		}
		if int64(*s.id) >= n {
			*s.id = -1 // a default that this vocabulary is too small for
		}
	}
	flag := func(key string, def bool) bool {
		if b, ok := f.Bool("tokenizer.ggml." + key); ok {
			return b
		}
		return def
	}
	v.AddBOS = flag("add_bos_token", addBOS) || pre.forceBOS
	v.AddEOS = flag("add_eos_token", false)
	v.AddSpacePrefix = flag("add_space_prefix", spacePrefix)
	t, err := New(v)
	if err != nil {
		return nil, fmt.Errorf("tokenizer from GGUF: %w", err)
	}
	return t, nil
}
