package tokenizer

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// pieceBytes appends the bytes token id stands for, as llama.cpp's
// token_to_piece: control and unknown tokens only with special (then as
// their text), user-defined tokens as their text, byte tokens as the byte,
// normal tokens with ▁ → space (SentencePiece and SentencePiece-style BPE)
// or the GPT-2 alphabet mapped back to bytes (byte-level BPE); unused and
// undefined tokens as nothing.
func (t *Tokenizer) pieceBytes(dst []byte, id int32, special bool) []byte {
	if id < 0 || int(id) >= len(t.v.Tokens) {
		return dst
	}
	s := t.v.Tokens[id]
	switch t.types[id] {
	case TypeControl, TypeUnknown:
		if special {
			dst = append(dst, s...)
		}
		return dst
	case TypeUserDefined:
		return append(dst, s...)
	case TypeByte:
		if len(s) == 6 && strings.HasPrefix(s, "<0x") && s[5] == '>' {
			if b, err := strconv.ParseUint(s[3:5], 16, 8); err == nil {
				return append(dst, byte(b))
			}
		}
		return dst
	case TypeNormal:
		if t.spm || t.pre.escapeSpaces {
			return append(dst, strings.ReplaceAll(s, "\u2581", " ")...)
		}
		for _, r := range s {
			if b, ok := runeToByte[r]; ok {
				dst = append(dst, b)
			} else {
				// Not in the GPT-2 alphabet: llama.cpp writes a marker
				// here; the character itself is the more useful text.
				dst = utf8.AppendRune(dst, r)
			}
		}
	}
	return dst
}

// Decode turns ids into text as llama.cpp's llama_detokenize does with
// remove_special off: one leading space of the first piece is removed when
// the vocabulary adds a space prefix (SentencePiece), control tokens are
// dropped unless o.Special, and for most BPE vocabularies spaces before
// punctuation and contractions are cleaned up (clean_spaces).
func (t *Tokenizer) Decode(ids []int32, o DecodeOptions) string {
	var b []byte
	for i, id := range ids {
		start := len(b)
		b = t.pieceBytes(b, id, o.Special)
		if i == 0 && t.v.AddSpacePrefix && len(b) > start && b[start] == ' ' {
			b = b[:start+copy(b[start:], b[start+1:])]
		}
	}
	if t.pre.cleanSpaces {
		b = cleanSpaces(b)
	}
	return string(b)
}

// cleanSpaces is llama.cpp's clean_spaces pass over detokenized text, in
// its three steps: drop the space before ? ! . ,; turn " ' " into "'";
// drop the space before the contractions 's 'm 're 've.
func cleanSpaces(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	out = append(out, b[0])
	for i := 1; i < len(b); i++ {
		x := b[i]
		if b[i-1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',') {
			out = out[:len(out)-1]
		}
		out = append(out, x)
	}
	b, out = out, make([]byte, 0, len(out))
	out = append(out, b[0])
	for i := 1; i < len(b); i++ {
		x := b[i]
		if x == '\'' && i+1 < len(b) && b[i-1] == ' ' && b[i+1] == ' ' {
			out = out[:len(out)-1]
			i++ // the space after goes too
		}
		out = append(out, x)
	}
	b, out = out, make([]byte, 0, len(out))
	out = append(out, b[0])
	for i := 1; i < len(b); i++ {
		x := b[i]
		if b[i-1] == ' ' && x == '\'' && i+1 < len(b) {
			x1 := b[i+1]
			switch {
			case x1 == 's' || x1 == 'm':
				out = out[:len(out)-1]
			case i+2 < len(b) && b[i+2] == 'e' && (x1 == 'r' || x1 == 'v'):
				out = out[:len(out)-1]
			}
		}
		out = append(out, x)
	}
	return out
}

// StreamDecoder turns a stream of generated ids into text pieces that never
// split a UTF-8 character: bytes of an incomplete character are held back
// until the token that completes it arrives. Where Decode would clean
// spaces, text near a space is held back until the following bytes decide
// it, so the concatenated output equals Decode of all ids, except that a
// stream continues a prompt: the first piece keeps its leading space.
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte // decoded bytes not yet returned
	raw     bool   // no clean-up of spaces
	shown   []int32
}

// Show makes the decoder write these control tokens' text, which it
// otherwise leaves out (a thinking model's <think> and </think> where the
// vocabulary makes them control tokens: the reply's reader must see where
// the reasoning ends).
func (d *StreamDecoder) Show(ids ...int32) { d.shown = append(d.shown, ids...) }

// NewStreamDecoder returns a decoder for t's tokens. Control tokens decode
// to nothing, as in Decode without Special.
func NewStreamDecoder(t *Tokenizer) *StreamDecoder { return &StreamDecoder{t: t} }

// NewRawStreamDecoder returns a decoder that gives the tokens' bytes
// exactly (TokenBytes), never cleaning spaces: the text of a generation
// held to a grammar is then the text the grammar accepted.
func NewRawStreamDecoder(t *Tokenizer) *StreamDecoder { return &StreamDecoder{t: t, raw: true} }

// Add appends a token and returns the text that is now final.
func (d *StreamDecoder) Add(id int32) string {
	d.pending = d.t.pieceBytes(d.pending, id, slices.Contains(d.shown, id))
	n := completePrefix(d.pending)
	if d.t.pre.cleanSpaces && !d.raw {
		n = safeCut(d.pending, n)
	}
	return d.emit(n)
}

// Flush returns whatever is held back, complete or not, and resets the
// decoder for a new stream.
func (d *StreamDecoder) Flush() string {
	return d.emit(len(d.pending))
}

func (d *StreamDecoder) emit(n int) string {
	if n == 0 {
		return ""
	}
	chunk := d.pending[:n]
	if d.t.pre.cleanSpaces && !d.raw {
		chunk = cleanSpaces(chunk)
	}
	out := string(chunk)
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return out
}

// completePrefix returns the length of b without a trailing incomplete
// (but so far valid) UTF-8 sequence. Invalid bytes are passed through.
func completePrefix(b []byte) int {
	for back := 1; back <= 3 && back <= len(b); back++ {
		c := b[len(b)-back]
		if c < 0x80 {
			return len(b)
		}
		if c >= 0xC0 { // a lead byte: is its sequence complete?
			need := leadLen(c)
			if back < need && !utf8.FullRune(b[len(b)-back:]) {
				return len(b) - back
			}
			return len(b)
		}
	}
	return len(b)
}

// safeCut returns the largest cut n <= limit at a character boundary of b
// such that cleaning b[:n] and the rest separately gives what cleaning b
// whole would: none of the three bytes before the cut may be a space,
// since every clean-up decision looks at most three bytes past a space
// and two before it. (Text returned earlier always ends in three
// non-space bytes, so a short first chunk is safe too.)
func safeCut(b []byte, limit int) int {
	for n := limit; n > 0; n-- {
		if n < len(b) && !utf8.RuneStart(b[n]) {
			continue
		}
		if !bytes.Contains(b[max(0, n-3):n], []byte{' '}) {
			return n
		}
	}
	return 0
}

// TokenBytes appends to dst the bytes token id stands for in generated text,
// as StreamDecoder emits them before any clean-up: nothing for control,
// unknown, unused and undefined tokens. Grammar constraints match generated
// text against these bytes.
func (t *Tokenizer) TokenBytes(dst []byte, id int32) []byte { return t.pieceBytes(dst, id, false) }

// TokenPiece appends to dst the text of token id as llama.cpp's
// token_to_piece with special tokens rendered: TokenBytes, and control and
// unknown tokens as their text. A SentencePiece token keeps its leading
// space, which Decode drops at the start of a text.
func (t *Tokenizer) TokenPiece(dst []byte, id int32) []byte { return t.pieceBytes(dst, id, true) }
