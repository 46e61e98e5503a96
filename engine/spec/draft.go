// Package spec is the drafting side of speculative decoding: cheap guesses
// at a sequence's next tokens, gathered into a tree that the target model
// verifies in one batched forward pass (engine/sched does the verifying).
// Drafts come from the sequence itself (prompt lookup: Lookup) or from a
// smaller model with the same vocabulary (ModelDrafter); Controller learns
// from each verification how often drafts are accepted and what extra
// verified tokens cost, and sizes the drafts, down to none, so that
// speculation pays for itself.
package spec

import (
	"fmt"
	"strings"
)

// Source says where a draft token came from; acceptance is learned per
// source, since a prompt-lookup match and a draft model's guess are
// right at very different rates.
type Source uint8

// The draft sources. Prompt lookup's matches are told apart by length: a
// continuation after a long repeated run (a quote, a loop) is far more
// often right than one after a two-token coincidence, and a sequence's
// output moves between the two; one after the last token alone is
// right less often still, but is there in many more steps.
const (
	SrcLookup     Source = iota // a match of 2 or 3 tokens
	SrcLookupMid                // 4 to 7 tokens
	SrcLookupLong               // 8 or more
	SrcModel                    // a draft model's guess
	SrcLookupOne                // a match of the last token alone
	SrcPrediction               // the request's predicted output (Lookup.Prediction)
	numSources
)

// NumSources is the number of draft sources.
const NumSources = int(numSources)

// String names the source's kind: "lookup" (any match length), "draft"
// or "prediction".
func (s Source) String() string {
	switch s {
	case SrcLookupOne, SrcLookup, SrcLookupMid, SrcLookupLong:
		return "lookup"
	case SrcModel:
		return "draft"
	case SrcPrediction:
		return "prediction"
	}
	return "unknown"
}

// lookupSource is the source class of a match of n tokens.
func lookupSource(n int) Source {
	switch {
	case n >= 8:
		return SrcLookupLong
	case n >= 4:
		return SrcLookupMid
	case n >= 2:
		return SrcLookup
	}
	return SrcLookupOne
}

// Kinds is a set of speculation kinds a sequence may use.
type Kinds uint8

// The speculation kinds.
const (
	KindLookup Kinds = 1 << iota // prompt lookup (Lookup)
	KindDraft                    // a draft model (ModelDrafter)
	KindTree                     // drafts may branch (several candidates verified in one pass)
	// KindsAll is every kind.
	KindsAll = KindLookup | KindDraft | KindTree
)

// String lists the kinds, "+"-separated ("none" for the empty set).
func (k Kinds) String() string {
	if k == 0 {
		return "none"
	}
	out := ""
	for _, n := range []struct {
		k    Kinds
		name string
	}{{KindLookup, "lookup"}, {KindDraft, "draft"}, {KindTree, "tree"}} {
		if k&n.k != 0 {
			if out != "" {
				out += "+"
			}
			out += n.name
		}
	}
	return out
}

// ParseKinds reads a "+"- or ","-separated list of kinds ("lookup",
// "draft", "tree"), or "none"/"off", or "all".
func ParseKinds(s string) (Kinds, error) {
	var k Kinds
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == '+' || r == ',' }) {
		switch strings.TrimSpace(strings.ToLower(f)) {
		case "lookup":
			k |= KindLookup
		case "draft":
			k |= KindDraft
		case "tree":
			k |= KindTree
		case "all", "on":
			k |= KindsAll
		case "none", "off":
		default:
			return 0, fmt.Errorf("speculation kind %q: want lookup, draft, tree, all or none", f)
		}
	}
	return k, nil
}

// Draft is a tree of proposed tokens following a sequence's last token.
// Tokens are stored parents first: Parents[i] < i, and -1 means that
// token i directly follows the sequence. A chain has Parents[i] == i-1.
type Draft struct {
	Tokens  []int32
	Parents []int32
	// Src is where each token came from; Rank is its place among its
	// siblings (0: the drafter's first choice, 1.. alternatives).
	Src  []Source
	Rank []uint8
}

// Len is the number of draft tokens.
func (d *Draft) Len() int { return len(d.Tokens) }

// Reset empties d, keeping its storage.
func (d *Draft) Reset() {
	d.Tokens, d.Parents, d.Src, d.Rank = d.Tokens[:0], d.Parents[:0], d.Src[:0], d.Rank[:0]
}

// Child returns the index of parent's child holding tok (parent -1: the
// tokens that follow the sequence), or -1.
func (d *Draft) Child(parent, tok int32) int32 {
	for i := parent + 1; int(i) < len(d.Tokens); i++ {
		if d.Parents[i] == parent && d.Tokens[i] == tok {
			return i
		}
	}
	return -1
}

// Add appends tok as a child of parent and returns its index; when parent
// already has that child, it returns the existing one (so chains from
// several sources merge into a trie).
func (d *Draft) Add(parent, tok int32, src Source) int32 {
	if c := d.Child(parent, tok); c >= 0 {
		return c
	}
	rank := uint8(0)
	for i := parent + 1; int(i) < len(d.Tokens); i++ {
		if d.Parents[i] == parent && rank < 255 {
			rank++
		}
	}
	d.Tokens = append(d.Tokens, tok)
	d.Parents = append(d.Parents, parent)
	d.Src = append(d.Src, src)
	d.Rank = append(d.Rank, rank)
	return int32(len(d.Tokens) - 1)
}

// AddChain adds toks as a chain below parent, merging with what is there,
// while d holds fewer than max tokens, and returns how many it walked.
func (d *Draft) AddChain(parent int32, toks []int32, src Source, max int) int {
	for i, t := range toks {
		c := d.Child(parent, t)
		if c < 0 {
			if d.Len() >= max {
				return i
			}
			c = d.Add(parent, t, src)
		}
		parent = c
	}
	return len(toks)
}

// Chain reports whether d is a single chain (no token has a sibling).
func (d *Draft) Chain() bool {
	for i, p := range d.Parents {
		if int(p) != i-1 {
			return false
		}
	}
	return true
}

// Keep reduces d to the tokens whose keep entry is true; a kept token's
// parent must be kept too. Indices change; the order is kept.
func (d *Draft) Keep(keep []bool) {
	remap := make([]int32, len(d.Tokens))
	n := 0
	for i := range d.Tokens {
		if !keep[i] {
			remap[i] = -1
			continue
		}
		p := d.Parents[i]
		if p >= 0 {
			p = remap[p]
			if p < 0 {
				panic("spec: Keep of a token without its parent")
			}
		}
		remap[i] = int32(n)
		d.Tokens[n], d.Parents[n], d.Src[n], d.Rank[n] = d.Tokens[i], p, d.Src[i], d.Rank[i]
		n++
	}
	d.Tokens, d.Parents, d.Src, d.Rank = d.Tokens[:n], d.Parents[:n], d.Src[:n], d.Rank[:n]
	// Ranks among the kept siblings.
	for i := range d.Rank {
		r := uint8(0)
		for k := 0; k < i; k++ {
			if d.Parents[k] == d.Parents[i] {
				r++
			}
		}
		d.Rank[i] = r
	}
}

// Depth returns token i's depth (1 for a token that follows the sequence).
func (d *Draft) Depth(i int) int {
	n := 0
	for p := int32(i); p >= 0; p = d.Parents[p] {
		n++
	}
	return n
}
