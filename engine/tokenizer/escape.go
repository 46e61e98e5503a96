package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// escapeMark is what EscapeSpecial writes after the first character of a
// control token's text, and before a mark of the text itself: a private
// use character no vocabulary's special token contains.
const escapeMark = "\ue001"

// EscapeSpecial returns text with every control or unknown token's text
// in it (what Encode reads as that one token only with ParseSpecial)
// broken by a mark, and every mark the text itself has doubled. Put in a
// larger text (a chat template renders the escaped messages), it is
// tokenized by Encode with ParseSpecial and Unescape as Encode without
// ParseSpecial tokenizes it, while the text around it keeps its control
// tokens: a client's message cannot write a template's control tokens
// ("<|im_end|>", "</s>") and so a turn of its own. User-defined tokens are
// left as they are, as Encode matches them either way, and so are
// tokens of one character, which a mark cannot break.
func (t *Tokenizer) EscapeSpecial(text string) string {
	if !t.hasControl(text) && !strings.Contains(text, escapeMark) {
		return text
	}
	var b strings.Builder
	b.Grow(len(text) + len(text)/8)
	for i := 0; i < len(text); {
		if strings.HasPrefix(text[i:], escapeMark) {
			b.WriteString(escapeMark + escapeMark)
			i += len(escapeMark)
			continue
		}
		_, n := utf8.DecodeRuneInString(text[i:])
		b.WriteString(text[i : i+n])
		if t.controlAt(text, i) {
			b.WriteString(escapeMark)
		}
		i += n
	}
	return b.String()
}

// hasControl reports whether text contains a control or unknown token's
// text of two bytes or more (one-byte tokens cannot be broken).
func (t *Tokenizer) hasControl(text string) bool {
	for i := 0; i+1 < len(text); i++ {
		if t.controlAt(text, i) {
			return true
		}
	}
	return false
}

// controlAt reports whether a control or unknown token's text of two
// bytes or more starts at text[i]: a lookup in the special-token index
// by the first two bytes, so the cost does not grow with the number of
// special tokens.
func (t *Tokenizer) controlAt(text string, i int) bool {
	x := t.specialIdx
	if i+1 >= len(text) {
		return false
	}
	k := pairOf(text[i], text[i+1])
	if x.pairs[k/64]&(1<<(k%64)) == 0 {
		return false
	}
	for _, n := range x.lengths[k] {
		if i+n > len(text) {
			continue
		}
		for _, pos := range x.byText[text[i:i+n]] {
			if ty := t.types[t.special[pos]]; ty == TypeControl || ty == TypeUnknown {
				return true
			}
		}
	}
	return false
}

// unescape undoes EscapeSpecial in a fragment of text: a lone mark is
// dropped, a doubled one is the text's own.
func unescape(text string) string {
	if !strings.Contains(text, escapeMark) {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	for {
		i := strings.Index(text, escapeMark)
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		b.WriteString(text[:i])
		text = text[i+len(escapeMark):]
		if strings.HasPrefix(text, escapeMark) {
			b.WriteString(escapeMark)
			text = text[len(escapeMark):]
		}
	}
}
