// Package tokenizer turns text into token ids and back exactly as
// llama.cpp does, built from GGUF metadata alone: SentencePiece-style
// vocabularies (tokenizer.ggml.model = llama) and byte-level BPE (gpt2) with
// the pre-tokenizer named by tokenizer.ggml.pre.
package tokenizer

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ruvllm/ruvllm/engine/gguf"
)

// ErrUnsupported is returned for a tokenizer model or pre-tokenizer this
// package does not implement.
var ErrUnsupported = errors.New("unsupported tokenizer")

// TokenType is GGUF's tokenizer.ggml.token_type.
type TokenType int32

// The token types.
const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// Vocab is everything a tokenizer is built from. Absent special ids are -1.
type Vocab struct {
	Model  string // "llama" (SentencePiece) or "gpt2" (byte-level BPE)
	Pre    string // BPE pre-tokenizer: "gpt-2", "llama-bpe", "qwen2", "default", ...
	Tokens []string
	Scores []float32
	Types  []TokenType
	Merges []string // BPE merges "a b", rank = index

	BOS, EOS, EOT, EOM, PAD, UNK int32

	AddBOS, AddEOS, AddSpacePrefix bool
}

// Tokenizer encodes and decodes text. It is immutable and safe for
// concurrent use.
type Tokenizer struct {
	v       Vocab
	ids     map[string]int32
	ranks   map[string]int // BPE merge "left right" → rank
	special []int32        // control/user-defined/unknown tokens, longest text first
	eog     map[int32]bool
	split   splitter // BPE pre-tokenizer
	byteTok [256]int32
	// cleanSpaces removes spaces before punctuation and some contractions
	// when decoding (llama.cpp's clean_spaces, on for most BPE vocabularies).
	cleanSpaces bool
	// ignoreMerges: a pre-tokenized word that is itself a token is not
	// split (llama3).
	ignoreMerges bool
}

// EncodeOptions control Encode.
type EncodeOptions struct {
	// AddSpecial adds BOS/EOS as the vocabulary's add_bos/add_eos say.
	AddSpecial bool
	// ParseSpecial matches control tokens (e.g. "<|im_start|>") written in
	// the text; otherwise they are tokenized as plain text. User-defined
	// tokens are always matched, as in llama.cpp.
	ParseSpecial bool
}

// DecodeOptions control Decode.
type DecodeOptions struct {
	// Special renders control tokens as their text instead of nothing.
	Special bool
}

// New builds a tokenizer from a vocabulary.
func New(v Vocab) (*Tokenizer, error) {
	n := len(v.Tokens)
	if n == 0 {
		return nil, errors.New("tokenizer: empty vocabulary")
	}
	if v.Types == nil {
		v.Types = make([]TokenType, n)
		for i := range v.Types {
			v.Types[i] = TypeNormal
		}
	}
	if len(v.Types) != n || (v.Scores != nil && len(v.Scores) != n) {
		return nil, fmt.Errorf("tokenizer: %d tokens but %d types and %d scores", n, len(v.Types), len(v.Scores))
	}
	for _, id := range []*int32{&v.BOS, &v.EOS, &v.EOT, &v.EOM, &v.PAD, &v.UNK} {
		if *id >= int32(n) {
			return nil, fmt.Errorf("tokenizer: special token id %d out of range [0,%d)", *id, n)
		}
	}
	t := &Tokenizer{v: v, ids: make(map[string]int32, n), eog: map[int32]bool{}}
	for i, s := range v.Tokens {
		if _, dup := t.ids[s]; !dup {
			t.ids[s] = int32(i)
		}
	}
	for i := range t.byteTok {
		t.byteTok[i] = -1
	}
	switch v.Model {
	case "llama":
		if v.Scores == nil {
			return nil, errors.New("tokenizer: SentencePiece vocabulary without scores")
		}
		for b := 0; b < 256; b++ {
			if id, ok := t.ids[fmt.Sprintf("<0x%02X>", b)]; ok {
				t.byteTok[b] = id
			}
		}
	case "gpt2":
		sp, ignore, err := splitterFor(v.Pre)
		if err != nil {
			return nil, err
		}
		t.split, t.ignoreMerges = sp, ignore
		t.cleanSpaces = v.Pre != "qwen2"
		t.ranks = make(map[string]int, len(v.Merges))
		for i, m := range v.Merges {
			if _, dup := t.ranks[m]; !dup {
				t.ranks[m] = i
			}
		}
		for b := 0; b < 256; b++ {
			if id, ok := t.ids[string(byteToRune[b])]; ok {
				t.byteTok[b] = id
			}
		}
	default:
		return nil, fmt.Errorf("%w: tokenizer.ggml.model %q", ErrUnsupported, v.Model)
	}
	for i, ty := range v.Types {
		if (ty == TypeControl || ty == TypeUserDefined || ty == TypeUnknown) && v.Tokens[i] != "" {
			t.special = append(t.special, int32(i))
		}
	}
	sort.SliceStable(t.special, func(a, b int) bool { return len(v.Tokens[t.special[a]]) > len(v.Tokens[t.special[b]]) })
	for _, id := range []int32{v.EOS, v.EOT, v.EOM} {
		if id >= 0 {
			t.eog[id] = true
		}
	}
	for _, s := range []string{"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>", "<|end_of_text|>"} {
		if id, ok := t.ids[s]; ok && (v.Types[id] == TypeControl || v.Types[id] == TypeUserDefined) {
			t.eog[id] = true
		}
	}
	return t, nil
}

// FromGGUF builds the tokenizer described by a GGUF file's metadata.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	var v Vocab
	var ok bool
	if v.Model, ok = f.String("tokenizer.ggml.model"); !ok {
		return nil, errors.New("tokenizer: missing tokenizer.ggml.model")
	}
	v.Pre, _ = f.String("tokenizer.ggml.pre")
	if v.Tokens, ok = f.Strings("tokenizer.ggml.tokens"); !ok {
		return nil, errors.New("tokenizer: missing tokenizer.ggml.tokens")
	}
	v.Scores, _ = f.Float32s("tokenizer.ggml.scores")
	if types, ok := f.Int32s("tokenizer.ggml.token_type"); ok {
		v.Types = make([]TokenType, len(types))
		for i, ty := range types {
			v.Types[i] = TokenType(ty)
		}
	}
	v.Merges, _ = f.Strings("tokenizer.ggml.merges")
	id := func(key string, def int32) int32 {
		if x, ok := f.Uint("tokenizer.ggml." + key); ok && x < 1<<31 {
			return int32(x)
		}
		return def
	}
	flag := func(key string, def bool) bool {
		if b, ok := f.Bool("tokenizer.ggml." + key); ok {
			return b
		}
		return def
	}
	spm := v.Model == "llama"
	v.BOS, v.EOS = id("bos_token_id", -1), id("eos_token_id", -1)
	v.EOT, v.EOM = id("eot_token_id", -1), id("eom_token_id", -1)
	v.PAD, v.UNK = id("padding_token_id", -1), id("unknown_token_id", -1)
	v.AddBOS = flag("add_bos_token", spm)
	v.AddEOS = flag("add_eos_token", false)
	v.AddSpacePrefix = flag("add_space_prefix", spm)
	t, err := New(v)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// VocabSize is the number of tokens.
func (t *Tokenizer) VocabSize() int { return len(t.v.Tokens) }

// BOS and EOS are the beginning- and end-of-sequence ids (-1 if absent).
func (t *Tokenizer) BOS() int32 { return t.v.BOS }

// EOS is the end-of-sequence id (-1 if absent).
func (t *Tokenizer) EOS() int32 { return t.v.EOS }

// AddBOS reports whether Encode with AddSpecial prepends BOS.
func (t *Tokenizer) AddBOS() bool { return t.v.AddBOS && t.v.BOS >= 0 }

// IsEOG reports whether id ends generation (EOS, EOT, <|im_end|>, ...).
func (t *Tokenizer) IsEOG(id int32) bool { return t.eog[id] }

// IsControl reports whether id is a control token.
func (t *Tokenizer) IsControl(id int32) bool {
	return id >= 0 && int(id) < len(t.v.Types) && t.v.Types[id] == TypeControl
}

// Piece returns the vocabulary text of id ("" when out of range).
func (t *Tokenizer) Piece(id int32) string {
	if id < 0 || int(id) >= len(t.v.Tokens) {
		return ""
	}
	return t.v.Tokens[id]
}

// TokenID looks up a token by its exact vocabulary text.
func (t *Tokenizer) TokenID(text string) (int32, bool) {
	id, ok := t.ids[text]
	return id, ok
}

// fragment is a piece of input: raw text, or a special token (id >= 0).
type fragment struct {
	text string
	id   int32
}

// partition splits text around special tokens written in it.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	frags := []fragment{{text: text, id: -1}}
	for _, sid := range t.special {
		ty := t.v.Types[sid]
		if !parseSpecial && (ty == TypeControl || ty == TypeUnknown) {
			continue
		}
		s := t.v.Tokens[sid]
		var out []fragment
		for _, f := range frags {
			if f.id >= 0 || !strings.Contains(f.text, s) {
				out = append(out, f)
				continue
			}
			rest := f.text
			for {
				i := strings.Index(rest, s)
				if i < 0 {
					break
				}
				if i > 0 {
					out = append(out, fragment{text: rest[:i], id: -1})
				}
				out = append(out, fragment{id: sid})
				rest = rest[i+len(s):]
			}
			if rest != "" {
				out = append(out, fragment{text: rest, id: -1})
			}
		}
		frags = out
	}
	return frags
}

// Encode tokenizes text.
func (t *Tokenizer) Encode(text string, o EncodeOptions) []int32 {
	var out []int32
	if o.AddSpecial && t.v.AddBOS && t.v.BOS >= 0 {
		out = append(out, t.v.BOS)
	}
	prevSpecial := true
	for _, f := range t.partition(text, o.ParseSpecial) {
		if f.id >= 0 {
			out = append(out, f.id)
			prevSpecial = true
			continue
		}
		if f.text == "" {
			continue
		}
		if t.v.Model == "llama" {
			s := f.text
			if t.v.AddSpacePrefix && prevSpecial {
				s = " " + s
			}
			out = t.encodeSPM(strings.ReplaceAll(s, " ", "\u2581"), out)
		} else {
			out = t.encodeBPE(f.text, out)
		}
		prevSpecial = false
	}
	if o.AddSpecial && t.v.AddEOS && t.v.EOS >= 0 {
		out = append(out, t.v.EOS)
	}
	return out
}
