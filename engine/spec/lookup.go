package spec

// Lookup drafts by prompt lookup: it finds earlier places where the
// sequence's last tokens occurred (an n-gram match in the prompt or the
// output so far) and proposes what followed them. It costs a scan of the
// sequence and no model pass, and is right often where the output quotes
// its input: retrieval-augmented answers, summaries, code edits, a reply
// regenerated with changes. Distinct continuations become branches of the
// draft tree.
type Lookup struct {
	// MinNgram and MaxNgram bound the length of the matched suffix
	// (defaults 1 and 16): a longer match is preferred (and its drafts
	// are trusted more, SrcLookupMid and SrcLookupLong). A match of the
	// last token alone is a weak signal, but one found in many more
	// steps; its drafts are a class of their own (SrcLookupOne), whose
	// acceptance the controller learns apart and verifies only where it
	// pays. On the speculation benchmark's 19M F16 model it raised the
	// steps that verify from 37 % to 53-64 %, and decode from 1.42-1.45x
	// to 1.47-1.54x (six alternated runs).
	MinNgram, MaxNgram int
	// Branches is the most continuations proposed (default 1: a chain).
	Branches int
	// MaxScan bounds how many positions back are searched (default 8192).
	MaxScan int
}

// ProposePrediction drafts from a request's predicted output as Propose
// does from the sequence: what follows the prediction's best matches of
// the sequence's last tokens, up to the prediction's end, every token of
// source SrcPrediction (its acceptance is learned apart). Of matches as
// long, it takes the one that continues nearest expect, the place in the
// prediction the output has reached if it follows it (a repeated line
// matches in many places). It searches buf, which it fills with the
// prediction and the sequence's tail and returns for reuse; a prediction
// longer than MaxScan is searched from its start.
func (l *Lookup) ProposePrediction(d *Draft, buf, prediction, tokens []int32, expect, maxDepth, maxNodes int) (int, []int32) {
	_, maxN, _, scan := l.defaults()
	tail := tokens[max(0, len(tokens)-maxN):]
	prediction = prediction[:min(len(prediction), max(0, scan-len(tail)-1))]
	buf = append(append(buf[:0], prediction...), tail...)
	return l.propose(d, buf, len(prediction), max(expect, 0), SrcPrediction, maxDepth, maxNodes), buf
}

// lookupMatch is one earlier occurrence of the sequence's suffix: the
// position right after it and the length matched.
type lookupMatch struct{ next, n int }

// maxLookupNgram bounds MaxNgram and maxLookupDepth a chain's length:
// the suffix being matched and the chain are held in fixed arrays.
const (
	maxLookupNgram = 64
	maxLookupDepth = 64
)

func (l *Lookup) defaults() (minN, maxN, branches, scan int) {
	minN, maxN, branches, scan = l.MinNgram, l.MaxNgram, l.Branches, l.MaxScan
	minN = min(max(minN, 1), maxLookupNgram)
	if maxN < minN {
		maxN = max(16, minN)
	}
	maxN = min(maxN, maxLookupNgram)
	if branches <= 0 {
		branches = 1
	}
	if branches > 8 {
		branches = 8
	}
	if scan <= 0 {
		scan = 8192
	}
	return
}

// Propose adds to d (below its root) up to maxDepth tokens per
// continuation and maxNodes tokens in all, taken from the best matches of
// tokens' suffix: the longest, then the most recent. The first choice is
// the longest match of the suffix at every depth, with the tokens drafted
// so far appended: it follows its occurrence, and where that runs into
// the end of the sequence it goes on through the drafted tokens (a
// repeating span keeps repeating), and each of its tokens counts as a
// draft of its own match's length class (a token deep in a long match is
// trusted as one). Replaying the speculation benchmark's greedy output of
// the shared 19M llama (2026-11-27), this bought 2-5 % more tokens per
// unit of verification cost than the first match's own continuation, all
// of its tokens in that match's class; in real runs the gain was within
// the host's noise over all three workloads and showed on the RAG and
// summary ones alone (four alternations each: 1.68 -> 1.73x, 1.43 ->
// 1.50x). The other branches follow their matches. It returns the length
// of the best match (0 when none).
func (l *Lookup) Propose(d *Draft, tokens []int32, maxDepth, maxNodes int) int {
	return l.propose(d, tokens, len(tokens), -1, 0, maxDepth, maxNodes)
}

// propose is Propose over matches whose continuation starts before end,
// drafting no token at or past end when end < len(tokens) (tokens from end
// on are only searched), of equal length the one nearest prefer (when
// prefer >= 0); a non-zero src is every draft's source.
func (l *Lookup) propose(d *Draft, tokens []int32, end, prefer int, src Source, maxDepth, maxNodes int) int {
	minN, maxN, branches, scan := l.defaults()
	if len(tokens) < minN+1 || maxDepth <= 0 || maxNodes <= d.Len() || end <= 0 {
		return 0
	}
	source := func(n int) Source {
		if src != 0 {
			return src
		}
		return lookupSource(n)
	}
	bounded := end < len(tokens)
	var best [8]lookupMatch
	found := findMatches(best[:branches], tokens, nil, search{minN, maxN, scan, end, prefer})
	if found == 0 {
		return 0
	}
	// The first choice, token by token: chain holds its tokens so far
	// (they lie in d too, but d may hold other chains before them).
	var chain [maxLookupDepth]int32
	parent, mt := int32(-1), best[0]
	for k := 0; k < min(maxDepth, len(chain)); k++ {
		if bounded && mt.next >= end {
			break
		}
		var tok int32
		if mt.next < len(tokens) {
			tok = tokens[mt.next]
		} else {
			tok = chain[mt.next-len(tokens)]
		}
		c := d.Child(parent, tok)
		if c < 0 {
			if d.Len() >= maxNodes {
				break
			}
			c = d.Add(parent, tok, source(mt.n))
		}
		parent, chain[k] = c, tok
		if mt.n < maxN {
			// With tok appended, the occurrence goes on one token longer,
			// and none other matches as long unless it is older: one
			// that did would have been a longer (or as long and more
			// recent) match before.
			mt = lookupMatch{next: mt.next + 1, n: mt.n + 1}
			continue
		}
		// At the cap every match is as long: the most recent wins.
		var next [1]lookupMatch
		at := prefer
		if prefer >= 0 { // the place expected after the drafted tokens
			at = prefer + k + 1
		}
		if findMatches(next[:], tokens, chain[:k+1], search{minN, maxN, scan, end, at}) == 0 {
			break
		}
		mt = next[0]
	}
	for _, mt := range best[1:found] {
		stop := min(end, mt.next+maxDepth)
		d.AddChain(-1, tokens[mt.next:stop], source(mt.n), maxNodes)
	}
	return best[0].n
}

// search is what findMatches looks for: matches of minN to maxN tokens,
// ending at most scan positions back; when end < len(tokens), only those
// followed by a token before end; when prefer >= 0, of equal length the
// one followed by the token nearest prefer ranks first, else the most
// recent.
type search struct{ minN, maxN, scan, end, prefer int }

// findMatches fills best with the longest earlier occurrences of the
// suffix of tokens followed by tail (ranked as s says) and returns how
// many it found. An occurrence may end inside tail, as long as a token
// follows it.
func findMatches(best []lookupMatch, tokens, tail []int32, s search) int {
	minN, maxN, scan, end := s.minN, s.maxN, s.scan, s.end
	n, total := len(tokens), len(tokens)+len(tail)
	dist := func(next int) int {
		if next > s.prefer {
			return next - s.prefer
		}
		return s.prefer - next
	}
	at := func(i int) int32 {
		if i < n {
			return tokens[i]
		}
		return tail[i-n]
	}
	// suf[j] is the token j places before the end.
	var suf [maxLookupNgram]int32
	for j := range min(maxN, total) {
		suf[j] = at(total - 1 - j)
	}
	found := 0
	keep := func(next, m int) {
		// Longer first, then more recent (the scan goes backwards, so an
		// equal length found later is older and ranks after).
		k := found
		for k > 0 && (best[k-1].n < m || (s.prefer >= 0 && best[k-1].n == m && dist(best[k-1].next) > dist(next))) {
			k--
		}
		if k >= len(best) {
			return
		}
		if found < len(best) {
			found++
		}
		copy(best[k+1:found], best[k:found-1])
		best[k] = lookupMatch{next: next, n: m}
	}
	last := suf[0]
	lo := max(0, total-1-scan)
	// p is the last position of a candidate occurrence: it holds the last
	// token and p+1 < total, so a continuation exists. Those inside tail
	// first (few), then those in tokens, whose matched span lies in
	// tokens alone.
	p := total - 2
	if end < n {
		p = min(p, end-2)
	}
	for ; p >= n && p >= lo; p-- {
		if at(p) != last {
			continue
		}
		m := 1
		for m < maxN && p-m >= 0 && at(p-m) == suf[m] {
			m++
		}
		if m >= minN {
			keep(p+1, m)
		}
	}
	for ; p >= lo; p-- {
		if tokens[p] != last {
			continue
		}
		m := 1
		for m < maxN && p-m >= 0 && tokens[p-m] == suf[m] {
			m++
		}
		if m >= minN {
			keep(p+1, m)
		}
	}
	return found
}
