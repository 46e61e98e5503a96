// Package tokenizer turns text into token ids and back exactly as
// llama.cpp does, built from GGUF metadata alone: SentencePiece-style
// vocabularies (tokenizer.ggml.model = llama) and byte-level BPE (gpt2) with
// the pre-tokenizer named by tokenizer.ggml.pre.
//
// Where llama.cpp's behaviour is surprising it is reproduced on purpose and
// said so in a comment: the point of this package is that a prompt becomes
// the same ids here as in llama.cpp, so that reference outputs, prefix
// caches and adapters trained there line up.
package tokenizer

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// ErrUnsupported is returned for a tokenizer model or pre-tokenizer this
// package does not implement; the message names the value.
var ErrUnsupported = errors.New("unsupported tokenizer")

// ErrInvalidVocab is returned when a vocabulary is inconsistent (no
// tokens, array lengths that disagree, special ids out of range).
var ErrInvalidVocab = errors.New("invalid tokenizer vocabulary")

// TokenType is GGUF's tokenizer.ggml.token_type, the same numbering as
// llama.cpp's llama_token_type.
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
// New uses the flags as given; FromGGUF fills them with llama.cpp's
// defaults where the file says nothing.
type Vocab struct {
	Model  string // "llama" (SentencePiece), "gpt2" (byte-level BPE) or "gemma4" (BPE over ▁-escaped UTF-8)
	Pre    string // BPE pre-tokenizer: "gpt-2", "llama-bpe", "qwen2", "default", ... ("" = "default")
	Tokens []string
	Scores []float32   // SentencePiece merge scores (required for "llama")
	Types  []TokenType // nil: every token is TypeNormal
	Merges []string    // BPE merges "left right", rank = index

	BOS, EOS, EOT, EOM, PAD, UNK int32

	AddBOS, AddEOS, AddSpacePrefix bool

	// Name is general.name. llama.cpp keys a few per-token attributes on
	// it: for Phi-3 models special tokens swallow the whitespace after
	// them when matched in text.
	Name string
}

// preTokenizer describes one tokenizer.ggml.pre value as llama.cpp
// configures it.
type preTokenizer struct {
	split        splitter
	ignoreMerges bool // a pre-tokenized word that is a token is not merged (llama3)
	cleanSpaces  bool // Decode removes spaces before punctuation/contractions
	addBOS       bool // llama.cpp's add_bos default when the GGUF has no key
	forceBOS     bool // add_bos even when the GGUF says false (llama.cpp's Gemma 4 workaround)
	// SentencePiece-style BPE (Gemma 4): spaces become ▁ before splitting,
	// words are merged as raw UTF-8 rather than in GPT-2's byte alphabet,
	// and a byte that is no token falls back to its <0xXX> token.
	escapeSpaces bool
	// A word of line feeds that is a token as a whole is that token,
	// unmerged (Gemma 4).
	newlineTokens bool
}

// preTokenizerFor returns the pre-tokenizer named by tokenizer.ggml.pre.
// The names and their grouping follow llama.cpp's llama_vocab::load. An
// empty name is llama.cpp's fallback, "default"; an unknown name is an
// error rather than a silent fallback, so that a model whose words would
// be split differently is noticed.
func preTokenizerFor(pre string) (preTokenizer, error) {
	gpt2 := stages(matchGPT2)
	starcoder := stages(matchDigit, matchGPT2)
	llama3 := stages(matchLlama3(3, false))
	qwen2 := stages(matchLlama3(1, false))
	switch pre {
	case "", "default":
		return preTokenizer{split: stages(matchPunctRun(false), matchGPT2, matchDigitRun, matchASCIIDigits3), cleanSpaces: true}, nil
	case "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert",
		"jina-v1-en", "jina-v2-code", "roberta-bpe", "mpt", "olmo", "exaone4", "jais":
		return preTokenizer{split: gpt2, cleanSpaces: true}, nil
	case "trillion", "granite-docling":
		return preTokenizer{split: gpt2}, nil
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano":
		return preTokenizer{split: llama3, ignoreMerges: true, cleanSpaces: true, addBOS: true}, nil
	case "dbrx", "smaug-bpe":
		return preTokenizer{split: llama3, cleanSpaces: true}, nil
	case "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "grok-2", "solar-open":
		return preTokenizer{split: qwen2}, nil
	case "megrez", "stablelm2":
		return preTokenizer{split: qwen2, cleanSpaces: true}, nil
	case "qwen35":
		return preTokenizer{split: stages(matchLlama3(1, true))}, nil
	case "starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2":
		return preTokenizer{split: starcoder, cleanSpaces: true}, nil
	case "command-r", "smollm":
		return preTokenizer{split: starcoder}, nil
	case "falcon":
		return preTokenizer{split: stages(matchPunctRun(true), matchGPT2, matchASCIIDigits3), cleanSpaces: true}, nil
	case "deepseek-llm":
		return preTokenizer{split: stages(matchCRLF, matchSpaceThen(classIn(deepseekLetters)), matchSpaceThen(classIn(deepseekPunct)),
			matchTrailingSpace, run1(classIn(deepseekCJK)), matchDigitRun)}, nil
	case "deepseek-coder":
		return preTokenizer{split: stages(matchCRLF, matchSpaceThen(isL), matchSpaceThen(isP), run1(classIn(deepseekCJK)), matchDigit)}, nil
	case "gemma4", "granite-embed-multi-311m":
		return preTokenizer{split: stages(matchNewlineRuns), cleanSpaces: true, addBOS: true, forceBOS: true, escapeSpaces: true, newlineTokens: true}, nil
	case "sarvam-moe":
		return preTokenizer{split: stages(matchNewlineRuns), escapeSpaces: true}, nil
	}
	return preTokenizer{}, fmt.Errorf("%w: tokenizer.ggml.pre %q (known: default, gpt-2, llama-bpe, qwen2, qwen35, starcoder, "+
		"command-r, falcon, deepseek-llm, deepseek-coder, gemma4 and their aliases)", ErrUnsupported, pre)
}

// bpePre is the pre-tokenizer a BPE vocabulary uses: tokenizer.ggml.pre,
// except that llama.cpp gives every tokenizer.ggml.model = gemma4 file
// Gemma 4's, whatever the file says.
func bpePre(v Vocab) string {
	if v.Model == "gemma4" {
		return "gemma4"
	}
	return v.Pre
}

// A BPE merge is looked up by the token ids of its two sides (one integer
// hashed per lookup instead of two strings). Merges of which a side is no
// token, which real vocabularies do not have, are kept by text.
type (
	bpeMerge struct {
		rank int32 // position in tokenizer.ggml.merges: lower merges first
		id   int32 // the merged text's token, -1 if none
	}
	mergePair struct{ left, right string }
)

func pairKey(l, r int32) uint64 { return uint64(uint32(l))<<32 | uint64(uint32(r)) }

// Tokenizer encodes and decodes text. It is immutable and safe for
// concurrent use.
type Tokenizer struct {
	v          Vocab
	types      []TokenType // effective types (llama.cpp forces end-of-turn tokens to control)
	ids        map[string]int32
	merges     map[uint64]bpeMerge // BPE merges of two tokens, by pairKey
	oddMerges  map[mergePair]int   // BPE merges with a side that is no token → rank
	special    []int32             // control/user-defined/unknown tokens, longest text first
	chars      [0x800]int32        // token of each character below U+0800 (-1: none)
	scratch    sync.Pool           // *scratch buffers for Encode
	specialIdx *specialIndex       // finds which special tokens a text contains
	eog        map[int32]bool
	pre        preTokenizer
	lstrip     map[int32]bool // special tokens that eat the whitespace before them when matched
	rstrip     map[int32]bool // ... and after them
	byteTok    [256]int32     // byte-fallback tokens of SentencePiece and raw UTF-8 BPE (-1: none)
	spm        bool
	// spmSplit: no token of this SentencePiece vocabulary has a ▁ after
	// another character, so no merge crosses a ▁ that follows one, and a
	// text is merged a piece between two such ▁ at a time (the same
	// tokens; linear memory where one long merge of the whole text took
	// hundreds of bytes a character).
	spmSplit bool
	// bpeChunk is the text BPE pre-tokenizes at a time: a longer text is
	// cut at the first safe place (bpeCut) after every bpeChunk bytes.
	bpeChunk int
}

// EncodeOptions control Encode.
type EncodeOptions struct {
	// AddSpecial adds BOS/EOS as the vocabulary's add_bos/add_eos say.
	AddSpecial bool
	// ParseSpecial matches control tokens (e.g. "<|im_start|>") written in
	// the text; otherwise they are tokenized as plain text. User-defined
	// tokens are always matched, as in llama.cpp.
	ParseSpecial bool
	// Unescape reads the control-token texts that EscapeSpecial broke as
	// plain text and drops its marks (with ParseSpecial: the rest of the
	// text, a rendered chat template, keeps its control tokens).
	Unescape bool
}

// DecodeOptions control Decode.
type DecodeOptions struct {
	// Special renders control and unknown tokens as their text instead of
	// nothing.
	Special bool
}

// eotTexts are the texts llama.cpp takes for the end-of-turn token when
// the file names none; eomTexts likewise for end-of-message; fimTexts are
// fill-in-the-middle tokens. All of them are forced to control type.
var (
	eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
		"<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}
	eomTexts = []string{"<|eom_id|>"}
	// fimEOG are the FIM pad/repo/file-separator tokens, which also end
	// generation; fimOther only become control tokens.
	fimEOG = []string{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]",
		"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", "<|file_sep|>"}
	fimOther = []string{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>",
		"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>",
		"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"}
	// eogTexts end generation whenever present.
	eogTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
		"<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
		"<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~["}
	// alwaysRendered are gpt-oss's message-structure tokens, which
	// llama.cpp makes user-defined: matched in any text, decoded as text.
	alwaysRendered = []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}
)

// New builds a tokenizer from a vocabulary. It copies what it keeps.
func New(v Vocab) (*Tokenizer, error) {
	n := len(v.Tokens)
	if n == 0 {
		return nil, fmt.Errorf("%w: no tokens", ErrInvalidVocab)
	}
	if n > 1<<31-1 {
		return nil, fmt.Errorf("%w: %d tokens", ErrInvalidVocab, n)
	}
	if v.Types != nil && len(v.Types) != n {
		return nil, fmt.Errorf("%w: %d tokens but %d token types", ErrInvalidVocab, n, len(v.Types))
	}
	if v.Scores != nil && len(v.Scores) != n {
		return nil, fmt.Errorf("%w: %d tokens but %d scores", ErrInvalidVocab, n, len(v.Scores))
	}
	for _, id := range []int32{v.BOS, v.EOS, v.EOT, v.EOM, v.PAD, v.UNK} {
		if id < -1 || id >= int32(n) {
			return nil, fmt.Errorf("%w: special token id %d out of range [0,%d)", ErrInvalidVocab, id, n)
		}
	}
	t := &Tokenizer{ids: make(map[string]int32, n), eog: map[int32]bool{}}
	// Empty pieces get a placeholder text, and a text that occurs twice
	// maps to its last id: both as llama.cpp's loader does.
	v.Tokens = append([]string(nil), v.Tokens...)
	for i, s := range v.Tokens {
		if s == "" {
			s = "[EMPTY_" + strconv.Itoa(i) + "]"
			v.Tokens[i] = s
		}
		t.ids[s] = int32(i)
	}
	for c := range t.chars {
		t.chars[c] = -1
		if id, ok := t.ids[string(rune(c))]; ok {
			t.chars[c] = id
		}
	}
	t.types = make([]TokenType, n)
	for i := range t.types {
		t.types[i] = TypeNormal
		if v.Types != nil {
			t.types[i] = v.Types[i]
		}
	}
	v.Types = nil // t.types is the truth from here on
	for i := range t.byteTok {
		t.byteTok[i] = -1
	}
	t.bpeChunk = bpeChunkBytes
	switch v.Model {
	case "llama":
		if v.Scores == nil {
			return nil, fmt.Errorf("%w: SentencePiece vocabulary without scores", ErrInvalidVocab)
		}
		t.spm = true
		t.spmSplit = true
		for _, tok := range v.Tokens {
			if strings.Contains(strings.TrimLeft(tok, "\u2581"), "\u2581") {
				t.spmSplit = false
				break
			}
		}
		for b := 0; b < 256; b++ {
			// llama.cpp's byte_to_token: the <0xXX> piece, else the byte
			// itself as a one-character piece.
			if id, ok := t.ids[fmt.Sprintf("<0x%02X>", b)]; ok {
				t.byteTok[b] = id
			} else if id, ok := t.ids[string([]byte{byte(b)})]; ok {
				t.byteTok[b] = id
			}
		}
	case "gpt2", "gemma4":
		pre, err := preTokenizerFor(bpePre(v))
		if err != nil {
			return nil, err
		}
		t.pre = pre
		if pre.escapeSpaces {
			// Raw UTF-8 BPE falls back to <0xXX> byte tokens.
			for b := 0; b < 256; b++ {
				if id, ok := t.ids[fmt.Sprintf("<0x%02X>", b)]; ok {
					t.byteTok[b] = id
				}
			}
		}
		t.merges = make(map[uint64]bpeMerge, len(v.Merges))
		for i := len(v.Merges) - 1; i >= 0; i-- {
			// Split at the first space after the first byte, as llama.cpp
			// does; the first of duplicate merges keeps its rank (written
			// last here, which saves a lookup per merge).
			m := v.Merges[i]
			var left, right string
			if k := strings.IndexByte(m[min(1, len(m)):], ' '); k >= 0 {
				k += min(1, len(m))
				left, right = m[:k], m[k+1:]
			}
			l, okl := t.ids[left]
			r, okr := t.ids[right]
			if !okl || !okr {
				if t.oddMerges == nil {
					t.oddMerges = map[mergePair]int{}
				}
				t.oddMerges[mergePair{left, right}] = i
				continue
			}
			id, ok := t.ids[left+right]
			if !ok {
				id = -1
			}
			t.merges[pairKey(l, r)] = bpeMerge{rank: int32(i), id: id}
		}
	default:
		return nil, fmt.Errorf("%w: tokenizer.ggml.model %q (known: llama, gpt2, gemma4)", ErrUnsupported, v.Model)
	}
	t.v = v

	// Special tokens found by their text, as llama.cpp's loader finds them.
	forceControl := func(id int32) { t.types[id] = TypeControl }
	lookup := func(texts []string) []int32 {
		var out []int32
		for _, s := range texts {
			if id, ok := t.ids[s]; ok {
				out = append(out, id)
			}
		}
		return out
	}
	if t.v.EOT < 0 {
		if found := lookup(eotTexts); len(found) > 0 {
			t.v.EOT = found[0]
			forceControl(found[0])
		}
	}
	if t.v.EOM < 0 {
		if found := lookup(eomTexts); len(found) > 0 {
			t.v.EOM = found[0]
			forceControl(found[0])
		}
	}
	for _, id := range lookup(fimOther) {
		forceControl(id)
	}
	for _, id := range append(lookup(fimEOG), lookup(eogTexts)...) {
		forceControl(id)
		t.eog[id] = true
	}
	for _, id := range lookup(alwaysRendered) {
		t.types[id] = TypeUserDefined
	}
	for _, id := range []int32{t.v.EOS, t.v.EOT, t.v.EOM} {
		if id >= 0 {
			t.eog[id] = true
		}
	}
	isEOG := func(s string) bool { id, ok := t.ids[s]; return ok && t.eog[id] }
	// gpt-oss (<|return|>, <|call|>) and Solar Open (<|calls|>, <|flush|>)
	// end a message with <|end|> without ending generation: llama.cpp
	// drops it from the end-of-generation set and renders it as text.
	if end, ok := t.ids["<|end|>"]; ok && t.eog[end] && (isEOG("<|call|>") || isEOG("<|calls|>")) && (isEOG("<|return|>") || isEOG("<|flush|>")) {
		delete(t.eog, end)
		t.types[end] = TypeUserDefined
	}
	// Gemma 4 (it has <|tool_response>): </s> is an ordinary token.
	if s, ok := t.ids["</s>"]; ok && t.eog[s] && isEOG("<|tool_response>") {
		delete(t.eog, s)
		t.types[s] = TypeNormal
	}

	for i, ty := range t.types {
		if ty == TypeControl || ty == TypeUserDefined || ty == TypeUnknown {
			t.special = append(t.special, int32(i))
		}
	}
	t.setStripAttrs()
	sort.SliceStable(t.special, func(a, b int) bool {
		return len(t.v.Tokens[t.special[a]]) > len(t.v.Tokens[t.special[b]])
	})
	t.specialIdx = newSpecialIndex(t.v.Tokens, t.special)
	return t, nil
}

// setStripAttrs sets llama.cpp's per-model lstrip/rstrip attributes: for
// models named phi-3/phi3 every special token except <unk>, <s> and
// <|endoftext|> (and also </s>) strips the whitespace after it; for the
// jina-v2 BPE pre-tokenizers <mask> strips the whitespace before it.
func (t *Tokenizer) setStripAttrs() {
	t.lstrip, t.rstrip = map[int32]bool{}, map[int32]bool{}
	name := strings.ToLower(t.v.Name)
	if strings.Contains(name, "phi-3") || strings.Contains(name, "phi3") {
		for _, id := range t.special {
			t.rstrip[id] = true
		}
		if id, ok := t.ids["</s>"]; ok {
			t.rstrip[id] = true
		}
		for _, s := range []string{"<unk>", "<s>", "<|endoftext|>"} {
			if id, ok := t.ids[s]; ok {
				delete(t.rstrip, id)
			}
		}
	}
	if strings.Contains(t.v.Pre, "jina-v2-de") || strings.Contains(t.v.Pre, "jina-v2-es") || strings.Contains(t.v.Pre, "jina-v2-code") {
		if id, ok := t.ids["<mask>"]; ok {
			t.lstrip[id] = true
		}
	}
}

// VocabSize is the number of tokens.
func (t *Tokenizer) VocabSize() int { return len(t.v.Tokens) }

// Model is tokenizer.ggml.model: "llama" or "gpt2".
func (t *Tokenizer) Model() string { return t.v.Model }

// BOS is the beginning-of-sequence id (-1 if absent).
func (t *Tokenizer) BOS() int32 { return t.v.BOS }

// EOS is the end-of-sequence id (-1 if absent).
func (t *Tokenizer) EOS() int32 { return t.v.EOS }

// EOT is the end-of-turn id (-1 if absent), from the file or, like
// llama.cpp, found by its text (<|eot_id|>, <|im_end|>, ...).
func (t *Tokenizer) EOT() int32 { return t.v.EOT }

// PAD is the padding id (-1 if absent).
func (t *Tokenizer) PAD() int32 { return t.v.PAD }

// UNK is the unknown-token id (-1 if absent).
func (t *Tokenizer) UNK() int32 { return t.v.UNK }

// AddBOS reports whether Encode with AddSpecial prepends BOS.
func (t *Tokenizer) AddBOS() bool { return t.v.AddBOS && t.v.BOS >= 0 }

// StartsWithBOS reports whether ids begin with the BOS token this
// vocabulary adds to a text (never when it adds none).
func (t *Tokenizer) StartsWithBOS(ids []int32) bool {
	return t.AddBOS() && len(ids) > 0 && ids[0] == t.v.BOS
}

// AddEOS reports whether Encode with AddSpecial appends EOS.
func (t *Tokenizer) AddEOS() bool { return t.v.AddEOS && t.v.EOS >= 0 }

// IsEOG reports whether id ends generation: EOS, EOT, EOM and the tokens
// llama.cpp recognises by text (<|im_end|>, <|eot_id|>, <|endoftext|>,
// <end_of_turn>, ...).
func (t *Tokenizer) IsEOG(id int32) bool { return t.eog[id] }

// IsControl reports whether id is a control token (after llama.cpp's
// promotion of end-of-turn tokens to control).
func (t *Tokenizer) IsControl(id int32) bool { return t.Type(id) == TypeControl }

// Type returns id's effective token type (TypeUndefined when out of range).
func (t *Tokenizer) Type(id int32) TokenType {
	if id < 0 || int(id) >= len(t.types) {
		return TypeUndefined
	}
	return t.types[id]
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
