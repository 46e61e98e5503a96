package rx

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBound is wrapped by errors for numeric bounds that are not numbers or
// too large to write out digit by digit.
var ErrBound = errors.New("bad numeric bound")

// maxBoundDigits bounds the digits of a bound written out in full (1e308
// has 309).
const maxBoundDigits = 400

// Bound is one end of a numeric range: a JSON number literal, inclusive
// unless Exclusive.
type Bound struct {
	Value     string
	Exclusive bool
}

// decimal is a non-negative number as digits: Int without leading zeros
// ("0" for zero), Frac without trailing zeros.
type decimal struct {
	neg       bool
	Int, Frac string
}

func (d decimal) zero() bool { return d.Int == "0" && d.Frac == "" }

// parseDecimal reads a JSON number literal exactly, exponent included.
func parseDecimal(s string) (decimal, error) {
	var d decimal
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "-") {
		d.neg, t = true, t[1:]
	} else if strings.HasPrefix(t, "+") {
		t = t[1:]
	}
	mant, exp := t, 0
	if i := strings.IndexAny(t, "eE"); i >= 0 {
		mant = t[:i]
		e := t[i+1:]
		sign := 1
		if strings.HasPrefix(e, "-") {
			sign, e = -1, e[1:]
		} else if strings.HasPrefix(e, "+") {
			e = e[1:]
		}
		if e == "" || len(e) > 5 {
			return d, fmt.Errorf("%w: %q", ErrBound, s)
		}
		for _, c := range e {
			if c < '0' || c > '9' {
				return d, fmt.Errorf("%w: %q", ErrBound, s)
			}
			exp = exp*10 + int(c-'0')
		}
		exp *= sign
	}
	ip, fp, _ := strings.Cut(mant, ".")
	if ip == "" && fp == "" {
		return d, fmt.Errorf("%w: %q", ErrBound, s)
	}
	for _, c := range ip + fp {
		if c < '0' || c > '9' {
			return d, fmt.Errorf("%w: %q", ErrBound, s)
		}
	}
	digits := ip + fp
	point := len(ip) + exp // digits before the decimal point
	if point > maxBoundDigits || -point > maxBoundDigits {
		return d, fmt.Errorf("%w: %q has too many digits", ErrBound, s)
	}
	switch {
	case point <= 0:
		d.Int, d.Frac = "", strings.Repeat("0", -point)+digits
	case point >= len(digits):
		d.Int, d.Frac = digits+strings.Repeat("0", point-len(digits)), ""
	default:
		d.Int, d.Frac = digits[:point], digits[point:]
	}
	d.Int = strings.TrimLeft(d.Int, "0")
	if d.Int == "" {
		d.Int = "0"
	}
	d.Frac = strings.TrimRight(d.Frac, "0")
	if d.zero() {
		d.neg = false
	}
	return d, nil
}

var (
	digit    = Chars(RuneRange{'0', '9'})
	nonZero  = Chars(RuneRange{'1', '9'})
	anyInt   = Alt(Char('0'), Cat(nonZero, Rep(digit, 0, -1)))
	fracPart = Cat(Char('.'), Rep(digit, 1, -1))
	expPart  = Cat(Chars(RuneRange{'e', 'e'}, RuneRange{'E', 'E'}), Rep(Chars(RuneRange{'+', '+'}, RuneRange{'-', '-'}), 0, 1), Rep(digit, 1, -1))
)

func digitRange(lo, hi byte) *Node {
	if lo > hi {
		return &Node{Op: OpNothing}
	}
	return Chars(RuneRange{rune(lo), rune(hi)})
}

// Number is the JSON number syntax restricted to lo..hi (nil: unbounded),
// and to integers written without fraction or exponent when integer. A
// bounded number is written without exponent: every string it matches is
// in range, and every in-range number has such a spelling.
func Number(lo, hi *Bound, integer bool) (*Node, error) {
	if lo == nil && hi == nil {
		if integer {
			return Cat(Rep(Char('-'), 0, 1), anyInt), nil
		}
		return Cat(Rep(Char('-'), 0, 1), anyInt, Rep(fracPart, 0, 1), Rep(expPart, 0, 1)), nil
	}
	b := numBuilder{integer: integer}
	var parts []*Node
	if lo != nil {
		d, err := parseDecimal(lo.Value)
		if err != nil {
			return nil, err
		}
		parts = append(parts, b.lower(d, lo.Exclusive))
	}
	if hi != nil {
		d, err := parseDecimal(hi.Value)
		if err != nil {
			return nil, err
		}
		parts = append(parts, b.upper(d, hi.Exclusive))
	}
	return AndNode(parts...), nil
}

type numBuilder struct{ integer bool }

// unsigned is every non-negative spelling.
func (b numBuilder) unsigned() *Node {
	if b.integer {
		return anyInt
	}
	return Cat(anyInt, Rep(fracPart, 0, 1))
}

func (b numBuilder) fracAny() *Node {
	if b.integer {
		return &Node{Op: OpEmpty}
	}
	return Rep(fracPart, 0, 1)
}

func neg(n *Node) *Node { return Cat(Char('-'), n) }

// lower is x >= d (x > d when strict).
func (b numBuilder) lower(d decimal, strict bool) *Node {
	if !d.neg {
		if strict {
			return b.gtAbs(d)
		}
		return b.geAbs(d)
	}
	if strict {
		return Alt(b.unsigned(), neg(b.ltAbs(d)))
	}
	return Alt(b.unsigned(), neg(b.leAbs(d)))
}

// upper is x <= d (x < d when strict).
func (b numBuilder) upper(d decimal, strict bool) *Node {
	if d.neg {
		if strict {
			return neg(b.gtAbs(d))
		}
		return neg(b.geAbs(d))
	}
	if strict {
		if d.zero() {
			return neg(b.gtAbs(d))
		}
		return Alt(b.ltAbs(d), neg(b.unsigned()))
	}
	return Alt(b.leAbs(d), neg(b.unsigned()))
}

// geAbs: unsigned spellings with value >= d.
func (b numBuilder) geAbs(d decimal) *Node {
	var frac *Node
	if d.Frac == "" {
		frac = b.fracAny()
	} else if b.integer {
		frac = &Node{Op: OpNothing}
	} else {
		frac = Cat(Char('.'), fracGE(d.Frac, false))
	}
	return Alt(Cat(intGT(d.Int), b.fracAny()), Cat(Lit(d.Int), frac))
}

// gtAbs: unsigned spellings with value > d.
func (b numBuilder) gtAbs(d decimal) *Node {
	var frac *Node
	if b.integer {
		frac = &Node{Op: OpNothing}
	} else {
		frac = Cat(Char('.'), fracGE(d.Frac, true))
	}
	return Alt(Cat(intGT(d.Int), b.fracAny()), Cat(Lit(d.Int), frac))
}

// leAbs: unsigned spellings with value <= d.
func (b numBuilder) leAbs(d decimal) *Node {
	var frac *Node
	switch {
	case b.integer:
		frac = &Node{Op: OpEmpty}
	case d.Frac == "":
		frac = Rep(Cat(Char('.'), Rep(Char('0'), 1, -1)), 0, 1)
	default:
		frac = Alt(&Node{Op: OpEmpty}, Cat(Char('.'), fracLE(d.Frac, false)))
	}
	return Alt(Cat(intLT(d.Int), b.fracAny()), Cat(Lit(d.Int), frac))
}

// ltAbs: unsigned spellings with value < d.
func (b numBuilder) ltAbs(d decimal) *Node {
	var frac *Node
	switch {
	case d.Frac == "":
		frac = &Node{Op: OpNothing}
	case b.integer:
		frac = &Node{Op: OpEmpty}
	default:
		frac = Alt(&Node{Op: OpEmpty}, Cat(Char('.'), fracLE(d.Frac, true)))
	}
	return Alt(Cat(intLT(d.Int), b.fracAny()), Cat(Lit(d.Int), frac))
}

// fracGE: fraction digits F (at least one) with 0.F >= 0.ds (> when
// strict). ds has no trailing zeros; empty ds is zero.
func fracGE(ds string, strict bool) *Node {
	if ds == "" {
		if strict {
			return Cat(Rep(digit, 0, -1), nonZero, Rep(digit, 0, -1))
		}
		return Rep(digit, 1, -1)
	}
	var rest *Node
	if len(ds) == 1 {
		if strict {
			rest = Cat(Rep(digit, 0, -1), nonZero, Rep(digit, 0, -1))
		} else {
			rest = Rep(digit, 0, -1)
		}
	} else {
		rest = fracGE(ds[1:], strict)
	}
	return Alt(Cat(digitRange(ds[0]+1, '9'), Rep(digit, 0, -1)), Cat(Char(rune(ds[0])), rest))
}

// fracLE: fraction digits F (at least one) with 0.F <= 0.ds (< when
// strict). ds is not empty and has no trailing zeros.
func fracLE(ds string, strict bool) *Node {
	var rest *Node
	if len(ds) == 1 {
		if strict {
			rest = &Node{Op: OpNothing}
		} else {
			rest = Rep(Char('0'), 0, -1)
		}
	} else {
		rest = Alt(&Node{Op: OpEmpty}, fracLE(ds[1:], strict))
	}
	lower := &Node{Op: OpNothing}
	if ds[0] > '0' {
		lower = Cat(digitRange('0', ds[0]-1), Rep(digit, 0, -1))
	}
	alts := []*Node{lower, Cat(Char(rune(ds[0])), rest)}
	if len(ds) == 1 && strict {
		// F = ds[0] exactly equals when nothing follows: only a smaller
		// first digit works, or ds[0] itself is fine only if more bound
		// digits remain (none here).
		alts = alts[:1]
	}
	return Alt(alts...)
}

// intGT: integer spellings (no leading zeros) with value > m.
func intGT(m string) *Node {
	n := len(m)
	alts := []*Node{Cat(nonZero, Rep(digit, n, -1))} // longer
	for i := 0; i < n; i++ {
		lo := m[i] + 1
		if lo > '9' {
			continue
		}
		first := digitRange(lo, '9')
		alts = append(alts, Cat(Lit(m[:i]), first, Rep(digit, n-i-1, n-i-1)))
	}
	if m == "0" {
		alts = []*Node{Cat(nonZero, Rep(digit, 0, -1))}
	}
	return Alt(alts...)
}

// intLT: integer spellings (no leading zeros) with value < m.
func intLT(m string) *Node {
	n := len(m)
	if m == "0" {
		return &Node{Op: OpNothing}
	}
	var alts []*Node
	if n > 1 {
		alts = append(alts, Char('0'), Cat(nonZero, Rep(digit, 0, n-2))) // shorter
	}
	for i := 0; i < n; i++ {
		lo := byte('0')
		if i == 0 && n > 1 {
			lo = '1'
		}
		if m[i] == '0' || m[i]-1 < lo {
			continue
		}
		alts = append(alts, Cat(Lit(m[:i]), digitRange(lo, m[i]-1), Rep(digit, n-i-1, n-i-1)))
	}
	return Alt(alts...)
}
