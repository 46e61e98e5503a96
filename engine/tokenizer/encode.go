package tokenizer

import (
	"strings"
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
	for _, sid := range t.special {
		if ty := t.types[sid]; !parseSpecial && (ty == TypeControl || ty == TypeUnknown) {
			continue
		}
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
	var sc scratch
	for _, f := range t.partition(text, o.ParseSpecial) {
		if f.id >= 0 {
			out = append(out, f.id)
			prevSpecial = true
			continue
		}
		if f.text == "" {
			continue // llama.cpp never tokenizes an empty fragment
		}
		if t.spm {
			s := f.text
			if t.v.AddSpacePrefix && prevSpecial {
				s = " " + s
			}
			out = t.encodeSPM(strings.ReplaceAll(s, " ", "\u2581"), out, &sc)
		} else {
			out = t.encodeBPE(f.text, out, &sc)
		}
		prevSpecial = false
	}
	if o.AddSpecial && t.AddEOS() {
		out = append(out, t.v.EOS)
	}
	return out
}

// validUTF8 replaces each byte that is not part of a valid UTF-8 sequence
// with U+FFFD, as llama.cpp's unicode_cpts_from_utf8 does before BPE
// pre-tokenization.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
