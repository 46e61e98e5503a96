package tokenizer

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// pieceBytes appends the bytes token id stands for.
func (t *Tokenizer) pieceBytes(dst []byte, id int32, special bool) []byte {
	if id < 0 || int(id) >= len(t.v.Tokens) {
		return dst
	}
	s := t.v.Tokens[id]
	switch t.v.Types[id] {
	case TypeControl:
		if special {
			dst = append(dst, s...)
		}
		return dst
	case TypeUnknown:
		if special || t.v.Model == "llama" {
			return append(dst, "\u2047"...) // ⁇, as llama.cpp renders <unk>
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
	}
	if t.v.Model == "llama" {
		return append(dst, strings.ReplaceAll(s, "\u2581", " ")...)
	}
	for _, r := range s {
		if b, ok := runeToByte[r]; ok {
			dst = append(dst, b)
		} else {
			dst = utf8.AppendRune(dst, r)
		}
	}
	return dst
}

// Decode turns ids into text as llama.cpp's detokenizer does: the space
// that SentencePiece vocabularies prefix to the first word is removed, and
// control tokens are dropped unless o.Special.
func (t *Tokenizer) Decode(ids []int32, o DecodeOptions) string {
	var b []byte
	strip := t.v.Model == "llama" && t.v.AddSpacePrefix
	for i, id := range ids {
		if i == 0 && t.v.AddBOS && id == t.v.BOS && !o.Special {
			continue
		}
		start := len(b)
		b = t.pieceBytes(b, id, o.Special)
		if strip && len(b) > start {
			if b[start] == ' ' {
				b = append(b[:start], b[start+1:]...)
			}
			strip = false
		}
	}
	if t.cleanSpaces {
		b = cleanSpaces(b)
	}
	return string(b)
}

// cleanSpaces drops the space before ? ! . , and before the contractions
// 's 'm 're 've, as llama.cpp's detokenizer does for BPE vocabularies.
func cleanSpaces(b []byte) []byte {
	out := b[:0:0]
	for i := 0; i < len(b); i++ {
		if b[i] == ' ' && i+1 < len(b) {
			switch x := b[i+1]; {
			case x == '?' || x == '!' || x == '.' || x == ',':
				continue
			case x == '\'' && i+2 < len(b):
				x1 := b[i+2]
				if x1 == 's' || x1 == 'm' {
					continue
				}
				if i+3 < len(b) && b[i+3] == 'e' && (x1 == 'r' || x1 == 'v') {
					continue
				}
			}
		}
		out = append(out, b[i])
	}
	return out
}

// StreamDecoder turns a stream of generated ids into text pieces that never
// split a UTF-8 character: bytes of an incomplete character are held back
// until the token that completes it arrives. Generated text continues a
// prompt, so no leading space is stripped.
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte
	special bool
}

// NewStreamDecoder returns a decoder for t's tokens.
func NewStreamDecoder(t *Tokenizer) *StreamDecoder { return &StreamDecoder{t: t} }

// Add appends a token and returns the text that is now complete.
func (d *StreamDecoder) Add(id int32) string {
	d.pending = d.t.pieceBytes(d.pending, id, d.special)
	n := completePrefix(d.pending)
	out := string(d.pending[:n])
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return out
}

// Flush returns whatever is held back, complete or not.
func (d *StreamDecoder) Flush() string {
	out := string(d.pending)
	d.pending = d.pending[:0]
	return out
}

// completePrefix returns the length of b without a trailing incomplete
// (but so far valid) UTF-8 sequence. Invalid bytes are passed through.
func completePrefix(b []byte) int {
	for back := 1; back <= 3 && back <= len(b); back++ {
		c := b[len(b)-back]
		if c < 0x80 {
			return len(b) // ASCII: nothing incomplete after it
		}
		if c >= 0xC0 { // a lead byte: is its sequence complete?
			need := 2
			if c >= 0xF0 {
				need = 4
			} else if c >= 0xE0 {
				need = 3
			}
			if back < need && utf8.FullRune(b[len(b)-back:]) == false {
				return len(b) - back
			}
			return len(b)
		}
	}
	return len(b)
}
