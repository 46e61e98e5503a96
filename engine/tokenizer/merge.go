package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// symbol is one piece of a word during merging, kept in a linked list.
type symbol struct {
	start, n   int   // byte range in the word
	prev, next int   // -1 at the ends
	id         int32 // the token whose text this is, -1 if none
}

// bigram is a candidate merge of two adjacent symbols. Lower priority
// values merge first; ties go to the leftmost pair (both as in llama.cpp's
// SPM and BPE work queues).
type bigram struct {
	left, right int
	priority    float64
	size        int   // bytes of the merged text, to detect stale entries
	id          int32 // the merged symbol's token
}

func (a bigram) before(b bigram) bool {
	if a.priority != b.priority {
		return a.priority < b.priority
	}
	return a.left < b.left
}

// bigramHeap is a binary min-heap of candidates (written out rather than
// through container/heap, which would box every entry).
type bigramHeap []bigram

func (h *bigramHeap) push(b bigram) {
	q := append(*h, b)
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q[i].before(q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
	*h = q
}

func (h *bigramHeap) pop() bigram {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	for i := 0; ; {
		m, l, r := i, 2*i+1, 2*i+2
		if l < len(q) && q[l].before(q[m]) {
			m = l
		}
		if r < len(q) && q[r].before(q[m]) {
			m = r
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return top
}

// scratch holds the buffers one Encode call reuses across words.
type scratch struct {
	syms  []symbol
	final []symbol
	heap  bigramHeap
	buf   []byte
	split splitScratch
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

// mergeWord cuts word into characters (id: the character's token, or -1)
// and merges adjacent symbols by priority until no candidate is left;
// rank returns a pair's priority and the merged symbol's token (ok false
// when the pair may not merge). It returns the final symbols in order,
// reusing sc's buffers. This is the shared loop of llama.cpp's SPM and BPE
// tokenizers: a linked list of symbols, and for long words a heap of
// candidate pairs, so a word of n characters costs O(n log n) rather than
// O(n²).
func (t *Tokenizer) mergeWord(word string, rank func(word string, l, r *symbol) (p float64, id int32, ok bool), sc *scratch) []symbol {
	return t.mergeWordWith(word, rank, sc, true)
}

// mergeWordWith is mergeWord; small false forces the heap (for tests).
func (t *Tokenizer) mergeWordWith(word string, rank func(word string, l, r *symbol) (p float64, id int32, ok bool), sc *scratch, small bool) []symbol {
	syms := sc.syms[:0]
	for i := 0; i < len(word); {
		n := min(leadLen(word[i]), len(word)-i)
		syms = append(syms, symbol{start: i, n: n, prev: len(syms) - 1, next: len(syms) + 1, id: t.charID(word[i : i+n])})
		i += n
	}
	sc.syms = syms
	if len(syms) == 0 {
		return nil
	}
	syms[len(syms)-1].next = -1
	if small && len(syms) <= smallWord {
		t.mergeSmall(word, syms, rank)
	} else {
		t.mergeHeap(word, syms, rank, sc)
	}
	out := sc.final[:0]
	for i := 0; i >= 0; i = syms[i].next {
		out = append(out, syms[i])
	}
	sc.final = out
	return out
}

// smallWord is the length up to which mergeWord finds the next merge by
// scanning the pairs rather than with a heap: most words are short, and
// for them the scan is faster.
const smallWord = 64

// mergeSmall merges by scanning: each step takes the live pair with the
// lowest priority, the leftmost of equals, which is the pair the heap
// would pop, since it holds exactly one valid entry per adjacent pair.
func (t *Tokenizer) mergeSmall(word string, syms []symbol, rank func(word string, l, r *symbol) (float64, int32, bool)) {
	type cand struct {
		p  float64
		id int32
		ok bool
	}
	var pairs [smallWord]cand // pairs[i]: symbol i with the next one
	set := func(i int) {
		if i < 0 || syms[i].next < 0 {
			if i >= 0 {
				pairs[i].ok = false
			}
			return
		}
		p, id, ok := rank(word, &syms[i], &syms[syms[i].next])
		pairs[i] = cand{p, id, ok}
	}
	for i := range syms {
		set(i)
	}
	for {
		best := -1
		for i := 0; i >= 0; i = syms[i].next {
			if pairs[i].ok && (best < 0 || pairs[i].p < pairs[best].p) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		l := &syms[best]
		r := &syms[l.next]
		l.n += r.n
		l.id = pairs[best].id
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = best
		}
		set(l.prev)
		set(best)
	}
}

// mergeHeap merges with a heap of candidate pairs, stale ones skipped
// when popped: O(n log n) for a word of n characters.
func (t *Tokenizer) mergeHeap(word string, syms []symbol, rank func(word string, l, r *symbol) (float64, int32, bool), sc *scratch) {
	h := &sc.heap
	*h = (*h)[:0]
	try := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		if p, id, ok := rank(word, &syms[l], &syms[r]); ok {
			h.push(bigram{left: l, right: r, priority: p, size: syms[l].n + syms[r].n, id: id})
		}
	}
	for i := 1; i < len(syms); i++ {
		try(i-1, i)
	}
	for len(*h) > 0 {
		b := h.pop()
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size || l.next != b.right {
			continue // stale: one side changed since this pair was proposed
		}
		l.n += r.n
		l.id = b.id
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		try(l.prev, b.left)
		try(b.left, l.next)
	}
}

// charID is the token of one character (-1 if none): from a table for
// the one- and two-byte characters every byte-level BPE word is made of.
func (t *Tokenizer) charID(c string) int32 {
	switch {
	case len(c) == 1 && c[0] < 0x80:
		return t.chars[c[0]]
	case len(c) == 2 && c[0] >= 0xC2 && c[0] < 0xE0 && c[1]&0xC0 == 0x80:
		return t.chars[rune(c[0]&0x1F)<<6|rune(c[1]&0x3F)]
	}
	if id, ok := t.ids[c]; ok {
		return id
	}
	return -1
}

// text is the symbol's piece of word.
func (s *symbol) text(word string) string { return word[s.start : s.start+s.n] }

// encodeSPM tokenizes one escaped fragment (spaces already ▁) the way
// llama.cpp's llm_tokenizer_spm does: merge the pair whose result is the
// token with the highest score, then emit each final symbol's token. Only
// a symbol that never merged can be a non-token (a merge always makes a
// token), so llama.cpp's resegment reduces to byte fallback here.
func (t *Tokenizer) encodeSPM(text string, out []int32, sc *scratch) []int32 {
	if !t.spmSplit {
		return t.encodeSPMPiece(text, out, sc)
	}
	// Cut before every ▁ symbol that follows another symbol: no token
	// spans such a place (Tokenizer.spmSplit), so the pieces merge alone.
	// Symbols are cut as mergeWord cuts them (by lead byte, unvalidated),
	// so a piece's symbols are the whole text's.
	const space = "\u2581"
	start, prevSpace := 0, false
	for i := 0; i < len(text); {
		n := min(leadLen(text[i]), len(text)-i)
		isSpace := n == len(space) && text[i:i+n] == space
		if isSpace && !prevSpace && i > start {
			out = t.encodeSPMPiece(text[start:i], out, sc)
			start = i
		}
		prevSpace = isSpace
		i += n
	}
	return t.encodeSPMPiece(text[start:], out, sc)
}

// maxMergeBytes bounds the text one merge takes: a longer word (or
// SentencePiece piece) is merged maxMergeBytes at a time, cut at a symbol
// boundary. llama.cpp merges it whole; no real text has a word this long,
// and one request holding a 30 MB word made the merge take 7 GB and 27 s.
const maxMergeBytes = 64 << 10

// mergeCut is where a word longer than maxMergeBytes is cut: the last
// symbol boundary (as mergeWord cuts symbols) at or before maxMergeBytes.
func mergeCut(word string) int {
	cut := 0
	for i := 0; i < len(word); {
		n := min(leadLen(word[i]), len(word)-i)
		if i+n > maxMergeBytes {
			break
		}
		i += n
		cut = i
	}
	return max(cut, 1)
}

// mergeChunks merges word with merge, maxMergeBytes at a time.
func mergeChunks(word string, out []int32, sc *scratch, merge func(string, []int32, *scratch) []int32) []int32 {
	for len(word) > maxMergeBytes {
		cut := mergeCut(word)
		out = merge(word[:cut], out, sc)
		word = word[cut:]
	}
	return merge(word, out, sc)
}

// encodeSPMPiece merges one piece of an escaped fragment.
func (t *Tokenizer) encodeSPMPiece(text string, out []int32, sc *scratch) []int32 {
	return mergeChunks(text, out, sc, t.mergeSPM)
}

// mergeSPM merges one piece (at most maxMergeBytes) and appends its tokens.
func (t *Tokenizer) mergeSPM(text string, out []int32, sc *scratch) []int32 {
	syms := t.mergeWord(text, t.spmRank, sc)
	for i := range syms {
		if syms[i].id >= 0 {
			out = append(out, syms[i].id)
			continue
		}
		p := syms[i].text(text)
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
	for len(text) > t.bpeChunk {
		cut := bpeCut(text, t.bpeChunk, !t.pre.escapeSpaces)
		out = t.encodeBPEPart(text[:cut], out, sc)
		text = text[cut:]
	}
	return t.encodeBPEPart(text, out, sc)
}

// bpeChunkBytes is how much text BPE pre-tokenizes at a time: splitting
// a whole text at once took about 50 bytes a character of it (runes,
// their offsets, fragments, words).
const bpeChunkBytes = 64 << 10

// bpeCut returns the first place at or after from where text can be cut
// without changing its tokens, or len(text). Every pre-tokenizer ends a
// word before an ASCII letter after a newline after an ASCII character
// other than whitespace: no pattern takes a newline and the letter after
// it together, and the newline is a word of its own however its pattern
// looks ahead (at the end of a piece a whitespace run's lookahead finds
// nothing; in the whole text it finds the letter, and the fallback
// whitespace pattern takes the same newline). With spaces (pre-tokenizers
// whose words end at spaces, not only at newlines) it also cuts before a
// space between two ASCII letters: the letters before it are a word, the
// space and the letters after it the next one. The four bytes before the
// place are ASCII, so no multi-byte sequence (cut by its lead byte alone,
// as llama.cpp decodes) reaches across it; no pre-tokenizer looks behind
// where it starts.
func bpeCut(text string, from int, spaces bool) int {
	for p := max(from, 5); p < len(text)-1; p++ {
		if text[p-2] >= 0x80 || text[p-3] >= 0x80 || text[p-4] >= 0x80 || text[p-5] >= 0x80 {
			continue
		}
		switch {
		case text[p-1] == '\n' && isASCIILetter(text[p]) && text[p-2] > ' ':
			return p
		case spaces && text[p] == ' ' && isASCIILetter(text[p-1]) && isASCIILetter(text[p+1]):
			return p
		}
	}
	return len(text)
}

func isASCIILetter(c byte) bool { c |= 0x20; return c >= 'a' && c <= 'z' }

// encodeBPEPart tokenizes one piece of a raw fragment (encodeBPE).
func (t *Tokenizer) encodeBPEPart(text string, out []int32, sc *scratch) []int32 {
	if t.pre.escapeSpaces {
		text = strings.ReplaceAll(text, " ", "\u2581")
	}
	for _, w := range t.pre.split(validUTF8(text), &sc.split) {
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
		out = mergeChunks(word, out, sc, t.mergeBPE)
	}
	return out
}

// mergeBPE merges one word (in the vocabulary's alphabet, at most
// maxMergeBytes) and appends its tokens.
func (t *Tokenizer) mergeBPE(word string, out []int32, sc *scratch) []int32 {
	syms := t.mergeWord(word, t.bpeRank, sc)
	for i := range syms {
		if syms[i].id >= 0 {
			out = append(out, syms[i].id)
			continue
		}
		p := syms[i].text(word)
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
	return out
}

// spmRank is SentencePiece's merge order: the pair whose merged text is
// the token with the highest score first. l and r are adjacent, so their
// merged text is a slice of word.
func (t *Tokenizer) spmRank(word string, l, r *symbol) (float64, int32, bool) {
	id, ok := t.ids[word[l.start:r.start+r.n]]
	if !ok {
		return 0, -1, false
	}
	return -float64(t.v.Scores[id]), id, true
}

// bpeRank is BPE's merge order: the pair listed first in the merges.
func (t *Tokenizer) bpeRank(word string, l, r *symbol) (float64, int32, bool) {
	if l.id >= 0 && r.id >= 0 {
		m, ok := t.merges[pairKey(l.id, r.id)]
		return float64(m.rank), m.id, ok
	}
	if t.oddMerges == nil {
		return 0, -1, false
	}
	rank, ok := t.oddMerges[mergePair{l.text(word), r.text(word)}]
	if !ok {
		return 0, -1, false
	}
	id, found := t.ids[word[l.start:r.start+r.n]]
	if !found {
		id = -1
	}
	return float64(rank), id, true
}
