package tokenizer

import (
	"container/heap"
	"strings"
	"unicode/utf8"
)

// symbol is one piece of a word during merging, kept in a linked list.
type symbol struct {
	start, n   int // byte range in the word
	prev, next int // -1 at the ends
}

// bigram is a candidate merge of two adjacent symbols. Lower priority
// values merge first; ties go to the leftmost pair (both as in llama.cpp's
// SPM and BPE work queues).
type bigram struct {
	left, right int
	priority    float64
	size        int // bytes of the merged text, to detect stale entries
}

type bigramHeap []bigram

func (h bigramHeap) Len() int { return len(h) }
func (h bigramHeap) Less(i, j int) bool {
	if h[i].priority != h[j].priority {
		return h[i].priority < h[j].priority
	}
	return h[i].left < h[j].left
}
func (h bigramHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *bigramHeap) Push(x any)   { *h = append(*h, x.(bigram)) }
func (h *bigramHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// scratch holds the buffers one Encode call reuses across words.
type scratch struct {
	syms   []symbol
	heap   bigramHeap
	pieces []string
	buf    []byte
}

// leadLen is the length llama.cpp's unicode_len_utf8 gives a sequence from
// its first byte alone (continuation and invalid lead bytes count 1, 0xF8+
// counts 4); symbols are cut this way, without validating the rest.
func leadLen(b byte) int {
	switch {
	case b < 0xC0:
		return 1
	case b < 0xE0:
		return 2
	case b < 0xF0:
		return 3
	}
	return 4
}

// mergeWord cuts word into characters and merges adjacent symbols by
// priority until no candidate is left; rank returns a pair's priority (ok
// false when the pair may not merge). It returns the final symbols in
// order, reusing sc's buffers. This is the shared loop of llama.cpp's SPM
// and BPE tokenizers: a heap of candidate pairs, a linked list of symbols,
// stale candidates skipped when popped, so a word of n characters costs
// O(n log n) rather than O(n²).
func mergeWord(word string, rank func(left, right string) (float64, bool), sc *scratch) []string {
	syms := sc.syms[:0]
	for i := 0; i < len(word); {
		n := min(leadLen(word[i]), len(word)-i)
		syms = append(syms, symbol{start: i, n: n, prev: len(syms) - 1, next: len(syms) + 1})
		i += n
	}
	sc.syms = syms
	if len(syms) == 0 {
		return nil
	}
	syms[len(syms)-1].next = -1
	text := func(s symbol) string { return word[s.start : s.start+s.n] }
	h := &sc.heap
	*h = (*h)[:0]
	try := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		if p, ok := rank(text(syms[l]), text(syms[r])); ok {
			heap.Push(h, bigram{left: l, right: r, priority: p, size: syms[l].n + syms[r].n})
		}
	}
	for i := 1; i < len(syms); i++ {
		try(i-1, i)
	}
	for h.Len() > 0 {
		b := heap.Pop(h).(bigram)
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size || l.next != b.right {
			continue // stale: one side changed since this pair was proposed
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		try(l.prev, b.left)
		try(b.left, l.next)
	}
	out := sc.pieces[:0]
	for i := 0; i >= 0; i = syms[i].next {
		out = append(out, text(syms[i]))
	}
	sc.pieces = out
	return out
}

// encodeSPM tokenizes one escaped fragment (spaces already ▁) the way
// llama.cpp's llm_tokenizer_spm does: merge the pair whose result is the
// token with the highest score, then emit each final symbol's token. Only
// a symbol that never merged can be a non-token (a merge always makes a
// token), so llama.cpp's resegment reduces to byte fallback here.
func (t *Tokenizer) encodeSPM(text string, out []int32, sc *scratch) []int32 {
	pieces := mergeWord(text, func(l, r string) (float64, bool) {
		id, ok := t.ids[l+r]
		if !ok {
			return 0, false
		}
		return -float64(t.v.Scores[id]), true
	}, sc)
	for _, p := range pieces {
		if id, ok := t.ids[p]; ok {
			out = append(out, id)
			continue
		}
		for i := 0; i < len(p); i++ {
			if id := t.byteTok[p[i]]; id >= 0 {
				out = append(out, id)
			} else if t.v.UNK >= 0 {
				out = append(out, t.v.UNK)
			}
		}
	}
	return out
}

// encodeBPE tokenizes a raw fragment with BPE: pre-tokenize into words,
// map each word's bytes to the GPT-2 alphabet (or, for SentencePiece-style
// BPE, spaces to ▁), merge by rank, look up the pieces.
func (t *Tokenizer) encodeBPE(text string, out []int32, sc *scratch) []int32 {
	rank := func(l, r string) (float64, bool) {
		rank, ok := t.ranks[mergePair{l, r}]
		return float64(rank), ok
	}
	if t.pre.escapeSpaces {
		text = strings.ReplaceAll(text, " ", "\u2581")
	}
	for _, w := range t.pre.split(validUTF8(text)) {
		word := w
		if !t.pre.escapeSpaces {
			buf := sc.buf[:0]
			for i := 0; i < len(w); i++ {
				buf = utf8.AppendRune(buf, byteToRune[w[i]])
			}
			sc.buf = buf
			word = string(buf)
		}
		if t.pre.ignoreMerges || (t.pre.newlineTokens && strings.Trim(word, "\n") == "") {
			if id, ok := t.ids[word]; ok {
				out = append(out, id)
				continue
			}
		}
		for _, p := range mergeWord(word, rank, sc) {
			if id, ok := t.ids[p]; ok {
				out = append(out, id)
				continue
			}
			// llama.cpp looks each byte of an unknown symbol up (as a
			// one-byte piece, or as <0xXX> for raw UTF-8 BPE) and drops
			// the ones that are not tokens.
			for i := 0; i < len(p); i++ {
				if t.pre.escapeSpaces {
					if id := t.byteTok[p[i]]; id >= 0 {
						out = append(out, id)
					}
				} else if id, ok := t.ids[p[i:i+1]]; ok {
					out = append(out, id)
				}
			}
		}
	}
	return out
}
