package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// fragment is a piece of input: raw text, or a special token (id >= 0).
type fragment struct {
	text string
	id   int32
}

// asciiSpace is C's isspace set, which llama.cpp's lstrip/rstrip use.
const asciiSpace = " \t\n\v\f\r"

// partition splits text around the special tokens written in it, longest
// token first, as llama.cpp's tokenizer_st_partition does. Control and
// unknown tokens are matched only with parseSpecial; user-defined tokens
// always are.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	frags := []fragment{{text: text, id: -1}}
	// Only the tokens that occur in text can split it (every fragment is a
	// piece of it); they are taken in the same order as all would be.
	want := func(id int32) bool {
		ty := t.types[id]
		return parseSpecial || (ty != TypeControl && ty != TypeUnknown)
	}
	for _, pos := range t.specialIdx.find(text, t.v.Tokens, t.special, want, nil) {
		sid := t.special[pos]
		s := t.v.Tokens[sid]
		var out []fragment
		changed := false
		for _, f := range frags {
			if f.id >= 0 || !strings.Contains(f.text, s) {
				out = append(out, f)
				continue
			}
			changed = true
			rest := f.text
			for {
				i := strings.Index(rest, s)
				if i < 0 {
					break
				}
				left := rest[:i]
				if t.lstrip[sid] {
					left = strings.TrimRight(left, asciiSpace)
				}
				if left != "" {
					out = append(out, fragment{text: left, id: -1})
				}
				out = append(out, fragment{id: sid})
				rest = rest[i+len(s):]
				if t.rstrip[sid] {
					rest = strings.TrimLeft(rest, asciiSpace)
				}
			}
			if rest != "" {
				out = append(out, fragment{text: rest, id: -1})
			}
		}
		if changed {
			frags = out
		}
	}
	return frags
}

// Encode tokenizes text as llama.cpp's llama_tokenize does.
func (t *Tokenizer) Encode(text string, o EncodeOptions) []int32 {
	out := make([]int32, 0, len(text)/3+2)
	if o.AddSpecial && t.AddBOS() {
		out = append(out, t.v.BOS)
	}
	// SentencePiece prefixes a space to the first raw fragment and to
	// every raw fragment that follows a special token.
	prevSpecial := true
	sc, _ := t.scratch.Get().(*scratch)
	if sc == nil {
		sc = new(scratch)
	}
	defer t.putScratch(sc)
	for _, f := range t.partition(text, o.ParseSpecial) {
		if f.id >= 0 {
			out = append(out, f.id)
			prevSpecial = true
			continue
		}
		if o.Unescape {
			f.text = unescape(f.text)
		}
		if f.text == "" {
			continue // llama.cpp never tokenizes an empty fragment
		}
		if t.spm {
			s := f.text
			if t.v.AddSpacePrefix && prevSpecial {
				s = " " + s
			}
			out = t.encodeSPM(strings.ReplaceAll(s, " ", "\u2581"), out, sc)
		} else {
			out = t.encodeBPE(f.text, out, sc)
		}
		prevSpecial = false
	}
	if o.AddSpecial && t.AddEOS() {
		out = append(out, t.v.EOS)
	}
	return out
}

// putScratch returns sc to the pool unless a long input grew it past
// what typical prompts need (then the memory goes back to the GC).
func (t *Tokenizer) putScratch(sc *scratch) {
	if cap(sc.split.runes) > 1<<16 || cap(sc.syms) > 1<<16 || cap(sc.heap) > 1<<16 {
		return
	}
	t.scratch.Put(sc)
}

// validUTF8 rewrites s the way llama.cpp's unicode_cpts_from_utf8 and
// unicode_cpt_to_utf8 do before BPE pre-tokenization. llama.cpp decodes a
// lead byte and its continuation bytes without checking the value, so an
// overlong form becomes the shortest one (C0 80 → NUL) and a surrogate
// (ED A0 80) stays as it is; every other byte that starts no sequence
// becomes U+FFFD. (A sequence above U+10FFFF makes llama.cpp abort; here
// its lead byte becomes U+FFFD.)
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || n > 1 {
			b = append(b, s[i:i+n]...)
			i += n
			continue
		}
		c, n := lenientRune(s[i:])
		switch {
		case n == 0 || c > unicode.MaxRune:
			b = append(b, "\uFFFD"...)
			i++
			continue
		case c >= 0xD800 && c < 0xE000:
			b = append(b, 0xE0|byte(c>>12), 0x80|byte(c>>6)&0x3F, 0x80|byte(c)&0x3F)
		default:
			b = utf8.AppendRune(b, c)
		}
		i += n
	}
	return string(b)
}

// lenientRune decodes the sequence at the start of s as llama.cpp's
// unicode_cpt_from_utf8 does: the lead byte gives the length, the next
// bytes must be continuation bytes, the value is not checked. n is 0 when
// no sequence starts there.
func lenientRune(s string) (c rune, n int) {
	b := s[0]
	switch {
	case b < 0x80:
		return rune(b), 1
	case b < 0xC0:
		return 0, 0
	case b < 0xE0:
		n, c = 2, rune(b&0x1F)
	case b < 0xF0:
		n, c = 3, rune(b&0x0F)
	case b < 0xF8:
		n, c = 4, rune(b&0x07)
	default:
		return 0, 0
	}
	if len(s) < n {
		return 0, 0
	}
	for k := 1; k < n; k++ {
		if s[k]&0xC0 != 0x80 {
			return 0, 0
		}
		c = c<<6 | rune(s[k]&0x3F)
	}
	return c, n
}

// decodeRune is utf8.DecodeRuneInString that also takes the encoded
// surrogates validUTF8 keeps as one code point each.
func decodeRune(s string) (rune, int) {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && n == 1 && len(s) >= 3 && s[0] == 0xED && s[1]&0xE0 == 0xA0 && s[2]&0xC0 == 0x80 {
		return 0xD000 | rune(s[1]&0x3F)<<6 | rune(s[2]&0x3F), 3
	}
	return r, n
}
