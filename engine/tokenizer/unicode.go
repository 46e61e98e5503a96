package tokenizer

import (
	"sync"
	"unicode"
)

// cpClass is the classification of one code point that pre-tokenizers
// test: its general category (one bit) plus whether it is whitespace.
// The categories are llama.cpp's coarse ones (\p{L}, \p{N}, \p{P}, \p{S},
// \p{M}, \p{Z}, \p{C}, or undefined for unassigned code points).
type cpClass uint16

const (
	cUndef cpClass = 1 << iota
	cNumber
	cLetter
	cSeparator
	cMark
	cPunct
	cSymbol
	cControl
	cSpace // \s: unicode.IsSpace, the same 25 code points as llama.cpp's whitespace set
)

// unicode151 are the code points that Unicode 15.1 assigned, which Go's
// tables (Unicode 15.0) lack while llama.cpp's (generated from 15.1) have
// them: CJK Extension I (letters) and the ideographic description
// characters U+2FFC..U+2FFF, U+31EF (symbols).
func unicode151(c rune) cpClass {
	switch {
	case c >= 0x2EBF0 && c <= 0x2EE5D:
		return cLetter
	case c >= 0x2FFC && c <= 0x2FFF, c == 0x31EF:
		return cSymbol
	}
	return 0
}

// computeClass classifies c from the unicode package's tables.
func computeClass(c rune) cpClass {
	var f cpClass
	switch {
	case unicode.IsLetter(c):
		f = cLetter
	case unicode.IsNumber(c):
		f = cNumber
	case unicode.IsMark(c):
		f = cMark
	case unicode.IsPunct(c):
		f = cPunct
	case unicode.IsSymbol(c):
		f = cSymbol
	case unicode.Is(unicode.Z, c):
		f = cSeparator
	case unicode.In(c, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs):
		f = cControl
	default:
		if f = unicode151(c); f == 0 {
			f = cUndef
		}
	}
	if unicode.IsSpace(c) {
		f |= cSpace
	}
	return f
}

// bmpClasses is computeClass for every code point below U+10000, built
// on first use (a derived table: 128 KiB, about a millisecond), so that
// the matchers' class tests are one load for all common text.
var bmpClasses = sync.OnceValue(func() *[0x10000]cpClass {
	var t [0x10000]cpClass
	for c := range t {
		t[c] = computeClass(rune(c))
	}
	return &t
})

// classOf classifies c as llama.cpp's unicode_cpt_flags_from_cpt does.
func classOf(c rune) cpClass {
	if uint32(c) < 0x10000 {
		return bmpClasses()[c]
	}
	return computeClass(c)
}
