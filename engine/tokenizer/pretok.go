package tokenizer

import (
	"unicode"
)

// splitter cuts raw text into the words BPE merges within, reusing sc's
// buffers (the words are valid until the next call with sc).
type splitter func(text string, sc *splitScratch) []string

// splitScratch holds a splitter's buffers: the text's runes, the byte
// offset of each (int32: a text to tokenize is far below 2 GiB; a request
// body holds 32 MiB), and the fragments as rune ranges.
type splitScratch struct {
	runes      []rune
	offs       []int32
	frags, out []span
	words      []string
}

// span is a fragment of the text, as a range of rune indices.
type span struct{ lo, hi int }

// matcher returns the length in runes of the pattern's match at r[i:] (the
// regex alternation tried in order, as a leftmost-first engine would), or
// 0 when nothing matches there. A negative -k says that no match starts
// anywhere in r[i:i+k], so that the caller skips a run the matcher has
// already scanned (which keeps patterns such as \s+$ linear).
type matcher func(r []rune, i int) int

// stages applies matchers in sequence: each splits every fragment left by
// the previous one; text a matcher does not match stays a fragment of its
// own, as llama.cpp's unicode_regex_split does. The text is decoded once;
// fragments are rune ranges of it.
func stages(ms ...matcher) splitter {
	return func(text string, sc *splitScratch) []string {
		if cap(sc.runes) < len(text) {
			sc.runes, sc.offs = make([]rune, 0, len(text)), make([]int32, 0, len(text)+1)
		}
		r, offs := sc.runes[:0], sc.offs[:0]
		for i := 0; i < len(text); {
			c, n := decodeRune(text[i:])
			r = append(r, c)
			offs = append(offs, int32(i))
			i += n
		}
		offs = append(offs, int32(len(text)))
		sc.runes, sc.offs = r, offs
		frags := append(sc.frags[:0], span{0, len(r)})
		out := sc.out[:0]
		for _, m := range ms {
			out = out[:0]
			for _, f := range frags {
				out = splitSpan(r[f.lo:f.hi], f.lo, m, out)
			}
			frags, out = out, frags
		}
		sc.frags, sc.out = frags, out
		words := sc.words[:0]
		for _, f := range frags {
			words = append(words, text[offs[f.lo]:offs[f.hi]])
		}
		sc.words = words
		return words
	}
}

// splitSpan appends to out the pieces m cuts r into (r starts at rune
// index base of the text): each match, and the text between matches.
func splitSpan(r []rune, base int, m matcher, out []span) []span {
	gap := 0
	for i := 0; i < len(r); {
		n := m(r, i)
		if n <= 0 {
			i += max(1, -n)
			continue
		}
		if gap < i {
			out = append(out, span{base + gap, base + i})
		}
		out = append(out, span{base + i, base + i + n})
		i += n
		gap = i
	}
	if gap < len(r) {
		out = append(out, span{base + gap, base + len(r)})
	}
	return out
}

func isL(c rune) bool     { return classOf(c)&cLetter != 0 }
func isN(c rune) bool     { return classOf(c)&cNumber != 0 }
func isP(c rune) bool     { return classOf(c)&cPunct != 0 }
func isSpace(c rune) bool { return classOf(c)&cSpace != 0 }
func isOther(c rune) bool { return classOf(c)&(cSpace|cLetter|cNumber) == 0 }
func isCRLF(c rune) bool  { return c == '\r' || c == '\n' }

// contraction matches 's 't 're 've 'm 'll 'd at r[i:].
func contraction(r []rune, i int, fold bool) int {
	if r[i] != '\'' || i+1 >= len(r) {
		return 0
	}
	low := func(c rune) rune {
		if fold {
			return unicode.ToLower(c)
		}
		return c
	}
	switch low(r[i+1]) {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if i+2 < len(r) && low(r[i+2]) == 'e' {
			return 3
		}
	case 'l':
		if i+2 < len(r) && low(r[i+2]) == 'l' {
			return 3
		}
	}
	return 0
}

// run counts the runes from i on that satisfy f.
func run(r []rune, i int, f func(rune) bool) int {
	j := i
	for j < len(r) && f(r[j]) {
		j++
	}
	return j - i
}

// whitespace matches \s+(?!\S)|\s+ at r[i:]: a whitespace run gives its
// last character to the next word unless the run ends the text.
func whitespace(r []rune, i int) int {
	k := run(r, i, isSpace)
	if k > 1 && i+k < len(r) {
		return k - 1
	}
	return k
}

// matchGPT2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func matchGPT2(r []rune, i int) int {
	if n := contraction(r, i, false); n > 0 {
		return n
	}
	for _, class := range []func(rune) bool{isL, isN, isOther} {
		j := i
		if r[j] == ' ' && j+1 < len(r) && class(r[j+1]) {
			j++
		}
		if n := run(r, j, class); n > 0 {
			return j - i + n
		}
	}
	return whitespace(r, i)
}

// runMax counts the runes from i on that satisfy f, stopping at limit.
func runMax(r []rune, i, limit int, f func(rune) bool) int {
	j := i
	for j < len(r) && j-i < limit && f(r[j]) {
		j++
	}
	return j - i
}

// matchLlama3 implements the llama3 pattern (digits = 3) and qwen2's
// (digits = 1):
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,D}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// With marks, it is Qwen3.5's variant, whose words also take combining
// marks: [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+ and ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*.
func matchLlama3(digits int, marks bool) matcher {
	letters := cLetter
	if marks {
		letters |= cMark
	}
	isWord := func(c rune) bool { return classOf(c)&letters != 0 }
	isRest := func(c rune) bool { return classOf(c)&(cSpace|cNumber|letters) == 0 }
	return func(r []rune, i int) int {
		if n := contraction(r, i, true); n > 0 {
			return n
		}
		j := i
		if c := r[j]; !isL(c) && !isN(c) && !isCRLF(c) && j+1 < len(r) && isWord(r[j+1]) {
			j++
		}
		if n := run(r, j, isWord); n > 0 {
			return j - i + n
		}
		if n := runMax(r, i, digits, isN); n > 0 {
			return n
		}
		j = i
		if r[j] == ' ' && j+1 < len(r) && isRest(r[j+1]) {
			j++
		}
		if n := run(r, j, isRest); n > 0 {
			j += n
			return j - i + run(r, j, isCRLF)
		}
		if k := run(r, i, isSpace); k > 0 {
			for e := i + k - 1; e >= i; e-- { // \s*[\r\n]+: up to the last newline
				if isCRLF(r[e]) {
					return e - i + 1
				}
			}
			return whitespace(r, i)
		}
		return 0
	}
}

// matchPunctRun: [\p{P}\$\+<=>\^~\|]+, and with backtick falcon's
// [\p{P}\$\+<=>\^~\|`]+. In llama.cpp these go through its category-
// collapsing std::regex path, where \p{P} is the punctuation category
// alone (ASCII $+<=>^`|~ are symbols, hence listed).
func matchPunctRun(backtick bool) matcher {
	in := func(c rune) bool {
		switch c {
		case '$', '+', '<', '=', '>', '^', '~', '|':
			return true
		case '`':
			return backtick
		}
		return isP(c)
	}
	return func(r []rune, i int) int { return run(r, i, in) }
}

// matchDigitRun: \p{N}+
func matchDigitRun(r []rune, i int) int { return run(r, i, isN) }

// matchDigit: \p{N} (one number character per word).
func matchDigit(r []rune, i int) int {
	if isN(r[i]) {
		return 1
	}
	return 0
}

// matchASCIIDigits3: [0-9][0-9][0-9].
func matchASCIIDigits3(r []rune, i int) int {
	if i+3 <= len(r) && isASCIIDigit(r[i]) && isASCIIDigit(r[i+1]) && isASCIIDigit(r[i+2]) {
		return 3
	}
	return 0
}

func isASCIIDigit(c rune) bool { return c >= '0' && c <= '9' }

// matchCRLF: [\r\n] (each line break a word of its own).
func matchCRLF(r []rune, i int) int {
	if isCRLF(r[i]) {
		return 1
	}
	return 0
}

// matchSpaceThen returns the matcher of \s?X+ for the class X.
func matchSpaceThen(in func(rune) bool) matcher {
	return func(r []rune, i int) int {
		j := i
		if isSpace(r[j]) && j+1 < len(r) && in(r[j+1]) {
			j++
		}
		if n := run(r, j, in); n > 0 {
			return j - i + n
		}
		return 0
	}
}

// matchTrailingSpace: \s+$, whitespace that ends the fragment.
func matchTrailingSpace(r []rune, i int) int {
	n := run(r, i, isSpace)
	switch {
	case n == 0:
		return 0
	case i+n == len(r):
		return n
	}
	return -n // no match starts inside a run that stops before the end
}

// matchNewlineRuns: [^\n]+|[\n]+, runs of line feeds and runs of
// everything else (Gemma 4's only split: its BPE merges whole lines).
func matchNewlineRuns(r []rune, i int) int {
	nl := r[i] == '\n'
	return run(r, i, func(c rune) bool { return (c == '\n') == nl })
}

// Patterns without a \p{..} category go through std::wregex in llama.cpp,
// on the code points with every non-ASCII whitespace replaced by \v so
// that \s matches it; a character class therefore never matches such a
// space even when its range covers it (U+3000 in the DeepSeek classes
// below). wide maps a code point the same way.
func wide(c rune) rune {
	if c > 0x7f && isSpace(c) {
		return '\v'
	}
	return c
}

// runeRange is an inclusive code point range of a character class.
type runeRange struct{ lo, hi rune }

// inRanges reports whether c lies in one of the sorted, disjoint rs.
func inRanges(c rune, rs []runeRange) bool {
	lo, hi := 0, len(rs)
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case c < rs[m].lo:
			hi = m
		case c > rs[m].hi:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}

// deepseekLetters is the letter class of DeepSeek LLM's pre-tokenizer
// (tokenizer.json's second split, [A-Za-zµÀ-ÖØ-öø-ƺ...]): cased letters of
// the Latin, Greek, Cyrillic, Armenian, Georgian, Cherokee, Glagolitic,
// Coptic, Deseret, Osage, Old Hungarian, Warang Citi and Adlam scripts
// and letter-like symbols, sorted.
var deepseekLetters = []runeRange{
	{0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA}, {0x1BC, 0x1BF},
	{0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x377}, {0x37B, 0x37D}, {0x37F, 0x37F},
	{0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C}, {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481},
	{0x48A, 0x52F}, {0x531, 0x556}, {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C90, 0x1CBA},
	{0x1CBD, 0x1CBF}, {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E00, 0x1F15}, {0x1F18, 0x1F1D},
	{0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B}, {0x1F5D, 0x1F5D},
	{0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC},
	{0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102},
	{0x2107, 0x2107}, {0x210A, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126},
	{0x2128, 0x2128}, {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F}, {0x2145, 0x2149},
	{0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF3},
	{0xA640, 0xA66D}, {0xA680, 0xA69B}, {0xA722, 0xA76F}, {0xA771, 0xA787}, {0xA78B, 0xA78E}, {0xAB70, 0xABBF},
	{0xFB00, 0xFB06}, {0xFB13, 0xFB17}, {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3},
	{0x104D8, 0x104FB}, {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
}

// deepseekPunct is DeepSeek LLM's punctuation class [!-/:-~！-／：-～‘-‟　-。]:
// ASCII punctuation and symbols, their fullwidth forms, curly quotes and
// the ideographic space, comma and full stop.
var deepseekPunct = []runeRange{
	{0x21, 0x2F}, {0x3A, 0x7E}, {0x2018, 0x201F}, {0x3000, 0x3002}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E},
}

// deepseekCJK is the DeepSeek pre-tokenizers' [一-龥ࠀ-一가-퟿]: U+0800..U+9FA5
// (CJK ideographs and every script from Samaritan up) and Hangul.
var deepseekCJK = []runeRange{{0x800, 0x9FA5}, {0xAC00, 0xD7FF}}

// classIn returns the class test of a std::wregex character class.
func classIn(rs []runeRange) func(rune) bool {
	return func(c rune) bool { return inRanges(wide(c), rs) }
}

// run1 returns the matcher of X+ for the class X.
func run1(in func(rune) bool) matcher {
	return func(r []rune, i int) int { return run(r, i, in) }
}
