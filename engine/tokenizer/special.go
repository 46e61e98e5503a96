package tokenizer

import (
	"slices"
	"strings"
)

// specialIndex finds the special tokens a text contains in one pass over
// the text, so that partition searches only for those instead of for
// every special token (vocabularies carry up to thousands, mostly padding
// tokens such as [PAD123]). Tokens are found by their first two bytes (a
// bitset, then the token lengths seen with those bytes); one-byte tokens
// are searched for directly.
type specialIndex struct {
	pairs   [1 << 16 / 64]uint64 // bit set: some token starts with these two bytes
	lengths map[uint16][]int     // first two bytes → lengths of the tokens starting so
	byText  map[string][]int     // token text → positions in Tokenizer.special
	short   []int                // positions of one-byte tokens
}

func pairOf(a, b byte) uint16 { return uint16(a)<<8 | uint16(b) }

// newSpecialIndex indexes the special tokens (ids, in partition order).
func newSpecialIndex(tokens []string, special []int32) *specialIndex {
	x := &specialIndex{lengths: map[uint16][]int{}, byText: map[string][]int{}}
	for pos, id := range special {
		s := tokens[id]
		if len(s) < 2 {
			x.short = append(x.short, pos)
			continue
		}
		k := pairOf(s[0], s[1])
		x.pairs[k/64] |= 1 << (k % 64)
		if !slices.Contains(x.lengths[k], len(s)) {
			x.lengths[k] = append(x.lengths[k], len(s))
		}
		x.byText[s] = append(x.byText[s], pos)
	}
	return x
}

// find appends to dst the positions (in partition order, ascending) of
// the special tokens that occur in text and that want allows.
func (x *specialIndex) find(text string, tokens []string, special []int32, want func(id int32) bool, dst []int) []int {
	for _, pos := range x.short {
		if want(special[pos]) && strings.Contains(text, tokens[special[pos]]) {
			dst = append(dst, pos)
		}
	}
	for i := 0; i+1 < len(text); i++ {
		k := pairOf(text[i], text[i+1])
		if x.pairs[k/64]&(1<<(k%64)) == 0 {
			continue
		}
		for _, n := range x.lengths[k] {
			if i+n > len(text) {
				continue
			}
			for _, pos := range x.byText[text[i:i+n]] {
				if want(special[pos]) {
					dst = append(dst, pos)
				}
			}
		}
	}
	slices.Sort(dst)
	return slices.Compact(dst)
}
