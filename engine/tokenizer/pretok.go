package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// splitter cuts raw text into the words BPE merges within.
type splitter func(text string) []string

// matcher returns the length in runes of the pattern's match at r[i:] (the
// regex alternation tried in order, as a leftmost-first engine would), or
// 0 when nothing matches there.
type matcher func(r []rune, i int) int

// stages applies matchers in sequence: each splits every fragment left by
// the previous one; text a matcher does not match stays a fragment of its
// own, as llama.cpp's unicode_regex_split does.
func stages(ms ...matcher) splitter {
	return func(text string) []string {
		frags := []string{text}
		for _, m := range ms {
			var out []string
			for _, f := range frags {
				out = splitOne(f, m, out)
			}
			frags = out
		}
		return frags
	}
}

func splitOne(text string, m matcher, out []string) []string {
	r := []rune(text)
	// Byte offsets of each rune, to slice the original text (keeping any
	// invalid UTF-8 bytes as they were).
	offs := make([]int, 0, len(r)+1)
	for i := 0; i < len(text); {
		offs = append(offs, i)
		_, n := utf8.DecodeRuneInString(text[i:])
		i += n
	}
	offs = append(offs, len(text))
	gap := 0
	for i := 0; i < len(r); {
		n := m(r, i)
		if n <= 0 {
			i++
			continue
		}
		if gap < i {
			out = append(out, text[offs[gap]:offs[i]])
		}
		out = append(out, text[offs[i]:offs[i+n]])
		i += n
		gap = i
	}
	if gap < len(r) {
		out = append(out, text[offs[gap]:])
	}
	return out
}

func isL(c rune) bool     { return unicode.IsLetter(c) }
func isN(c rune) bool     { return unicode.IsNumber(c) }
func isSpace(c rune) bool { return unicode.IsSpace(c) }
func isOther(c rune) bool { return !isSpace(c) && !isL(c) && !isN(c) }
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

// matchLlama3 implements the llama3 pattern (digits = 3) and qwen2's
// (digits = 1):
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,D}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func matchLlama3(digits int) matcher {
	return func(r []rune, i int) int {
		if n := contraction(r, i, true); n > 0 {
			return n
		}
		j := i
		if c := r[j]; !isL(c) && !isN(c) && !isCRLF(c) && j+1 < len(r) && isL(r[j+1]) {
			j++
		}
		if n := run(r, j, isL); n > 0 {
			return j - i + n
		}
		if n := run(r, i, isN); n > 0 {
			return min(n, digits)
		}
		j = i
		if r[j] == ' ' && j+1 < len(r) && isOther(r[j+1]) {
			j++
		}
		if n := run(r, j, isOther); n > 0 {
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

// matchPunctRun: [\p{P}\$\+<=>\^~\|]+
func matchPunctRun(r []rune, i int) int {
	return run(r, i, func(c rune) bool {
		return unicode.IsPunct(c) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' || c == '~' || c == '|'
	})
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
