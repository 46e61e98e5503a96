package tokenizer

import (
	"container/heap"
	"unicode/utf8"
)

// symbol is one piece of a word during merging, kept in a linked list.
type symbol struct {
	start, n   int // byte range in the word
	prev, next int // -1 at the ends
}

// bigram is a candidate merge of two adjacent symbols. Lower priority
// values merge first; ties go to the leftmost pair.
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

// mergeWord splits word into UTF-8 characters and merges adjacent symbols
// by priority until no candidate is left; rank returns a pair's priority
// (ok false when the pair may not merge). It returns the final symbols in
// order. This is the shared loop of llama.cpp's SPM and BPE tokenizers.
func mergeWord(word string, rank func(left, right string) (float64, bool)) []string {
	var syms []symbol
	for i := 0; i < len(word); {
		_, n := utf8.DecodeRuneInString(word[i:])
		syms = append(syms, symbol{start: i, n: n, prev: len(syms) - 1, next: len(syms) + 1})
		i += n
	}
	if len(syms) == 0 {
		return nil
	}
	syms[len(syms)-1].next = -1
	text := func(s symbol) string { return word[s.start : s.start+s.n] }
	h := &bigramHeap{}
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
	var out []string
	for i := 0; i >= 0; i = syms[i].next {
		out = append(out, text(syms[i]))
	}
	return out
}

// encodeSPM tokenizes one escaped fragment (spaces already ▁) the way
// SentencePiece's BPE does: merge the pair whose result has the highest
// score, then map pieces that are not tokens to byte tokens.
func (t *Tokenizer) encodeSPM(text string, out []int32) []int32 {
	pieces := mergeWord(text, func(l, r string) (float64, bool) {
		id, ok := t.ids[l+r]
		if !ok {
			return 0, false
		}
		return -float64(t.v.Scores[id]), true
	})
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

// encodeBPE tokenizes a raw fragment with byte-level BPE: pre-tokenize
// into words, map each word's bytes to the GPT-2 unicode alphabet, merge
// by rank, look up the pieces.
func (t *Tokenizer) encodeBPE(text string, out []int32) []int32 {
	buf := make([]byte, 0, 64)
	for _, w := range t.split(text) {
		buf = buf[:0]
		for i := 0; i < len(w); i++ {
			buf = utf8.AppendRune(buf, byteToRune[w[i]])
		}
		word := string(buf)
		if t.ignoreMerges {
			if id, ok := t.ids[word]; ok {
				out = append(out, id)
				continue
			}
		}
		pieces := mergeWord(word, func(l, r string) (float64, bool) {
			rank, ok := t.ranks[l+" "+r]
			return float64(rank), ok
		})
		for _, p := range pieces {
			if id, ok := t.ids[p]; ok {
				out = append(out, id)
				continue
			}
			for _, r := range p {
				if b, ok := runeToByte[r]; ok && t.byteTok[b] >= 0 {
					out = append(out, t.byteTok[b])
				} else if t.v.UNK >= 0 {
					out = append(out, t.v.UNK)
				}
			}
		}
	}
	return out
}
