package rx

import (
	"slices"
	"unicode/utf8"
)

// RuneRange is the characters Lo..Hi inclusive.
type RuneRange struct{ Lo, Hi rune }

// The Unicode scalar values: every code point except the surrogates.
const (
	maxRune      = utf8.MaxRune
	surrogateMin = 0xD800
	surrogateMax = 0xDFFF
)

// Normalize sorts rs, merges overlapping and adjacent ranges, clips them to
// 0..U+10FFFF and removes the surrogates, which UTF-8 cannot encode.
func Normalize(rs []RuneRange) []RuneRange {
	var out []RuneRange
	for _, r := range rs {
		if r.Lo < 0 {
			r.Lo = 0
		}
		if r.Hi > maxRune {
			r.Hi = maxRune
		}
		if r.Lo > r.Hi {
			continue
		}
		// Cut out the surrogates.
		if r.Lo <= surrogateMax && r.Hi >= surrogateMin {
			if r.Lo < surrogateMin {
				out = append(out, RuneRange{r.Lo, surrogateMin - 1})
			}
			if r.Hi > surrogateMax {
				out = append(out, RuneRange{surrogateMax + 1, r.Hi})
			}
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b RuneRange) int { return int(a.Lo) - int(b.Lo) })
	merged := out[:0]
	for _, r := range out {
		if n := len(merged); n > 0 && r.Lo <= merged[n-1].Hi+1 {
			merged[n-1].Hi = max(merged[n-1].Hi, r.Hi)
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

// Negate returns the characters not in rs (rs normalized).
func Negate(rs []RuneRange) []RuneRange {
	rs = Normalize(rs)
	var out []RuneRange
	next := rune(0)
	for _, r := range rs {
		if r.Lo > next {
			out = append(out, RuneRange{next, r.Lo - 1})
		}
		next = r.Hi + 1
	}
	if next <= maxRune {
		out = append(out, RuneRange{next, maxRune})
	}
	return Normalize(out)
}

// Intersect returns the characters in both a and b.
func Intersect(a, b []RuneRange) []RuneRange {
	return Negate(append(Negate(a), Negate(b)...))
}

// Subtract returns the characters of a not in b.
func Subtract(a, b []RuneRange) []RuneRange {
	return Intersect(a, Negate(b))
}

// Contains reports whether r is in the normalized ranges rs.
func Contains(rs []RuneRange, r rune) bool {
	_, found := slices.BinarySearchFunc(rs, r, func(x RuneRange, r rune) int {
		switch {
		case x.Hi < r:
			return -1
		case x.Lo > r:
			return 1
		}
		return 0
	})
	return found
}

// AnyRune is every Unicode scalar value.
var AnyRune = []RuneRange{{0, surrogateMin - 1}, {surrogateMax + 1, maxRune}}

// UTF8 is the UTF-8 encoding of one character from rs: a union of byte
// sequences, never an overlong or surrogate encoding.
func (p *Pool) UTF8(rs []RuneRange) ID {
	rs = Normalize(rs)
	var alts []ID
	for _, r := range rs {
		p.utf8Range(r.Lo, r.Hi, &alts)
	}
	return p.Or(alts...)
}

// utf8Range adds to alts the byte sequences encoding lo..hi, splitting the
// range until each piece is a product of byte ranges.
func (p *Pool) utf8Range(lo, hi rune, alts *[]ID) {
	// Split at encoding-length boundaries.
	for _, edge := range []rune{0x7F, 0x7FF, 0xFFFF} {
		if lo <= edge && hi > edge {
			p.utf8Range(lo, edge, alts)
			p.utf8Range(edge+1, hi, alts)
			return
		}
	}
	if hi < 0x80 {
		*alts = append(*alts, p.ByteRange(byte(lo), byte(hi)))
		return
	}
	n := utf8.RuneLen(lo)
	// Split until the leading bytes are a range and the trailing ones full.
	for i := 1; i < n; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				p.utf8Range(lo, lo|m, alts)
				p.utf8Range((lo|m)+1, hi, alts)
				return
			}
			if hi&m != m {
				p.utf8Range(lo, (hi&^m)-1, alts)
				p.utf8Range(hi&^m, hi, alts)
				return
			}
		}
	}
	var a, b [4]byte
	utf8.EncodeRune(a[:], lo)
	utf8.EncodeRune(b[:], hi)
	seq := make([]ID, n)
	for i := 0; i < n; i++ {
		seq[i] = p.ByteRange(a[i], b[i])
	}
	*alts = append(*alts, p.Seq(seq...))
}
