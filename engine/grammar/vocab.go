package grammar

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/ruvllm/ruvllm/engine/grammar/rx"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
)

// SpecialMarker begins the byte string that stands for a special (control)
// token in the token trie. It is never part of valid UTF-8, and lexemes
// only ever match valid UTF-8, so a special token is allowed only where a
// grammar names it (Special, or a GBNF token reference).
const SpecialMarker = 0xFF

// Token describes one vocabulary entry for NewVocab.
type Token struct {
	// Bytes is the text the token adds to the output.
	Bytes []byte
	// Special marks a control token: Bytes is its name (e.g.
	// "<|python_tag|>"), matched only where a grammar asks for it.
	Special bool
	// EOG marks an end-of-generation token: allowed exactly where the
	// grammar's text may end. Its Bytes, if any, are only its name.
	EOG bool
}

// Vocab is a tokenizer's vocabulary prepared for constraints: every token's
// bytes in a trie. Build one per model and share it; it is immutable and
// safe for concurrent use.
type Vocab struct {
	n       int
	maxLen  int // the longest token, in bytes
	noShare bool
	bytes   [][]byte // per token, as matched (special tokens with the marker)
	eog     []int32
	names   map[string]bool // the names of special and EOG tokens
	trie    trie
	// plainBelow[i]: every token below trie node i continues with whole
	// plain characters only (printable ASCII but '"' and '\\', and valid
	// non-ASCII UTF-8), from a character boundary. A lexeme state that
	// loops on every plain character (a JSON string body) takes such a
	// subtree whole, without walking it.
	plainBelow []bool
	// plainChars[i]: the most characters a token continues with below
	// node i (at most 255), where plainBelow[i].
	plainChars []uint8
	// below[i]: the bytes of the tokens below trie node i.
	below []rx.ByteSet

	mu    sync.Mutex
	cache map[string]*Constraint // compiled constraints by spec key
	order []string               // cache keys, oldest first
	// cachedSymbols is the size of the cached grammars (symbols over
	// their right-hand sides); cacheBudget bounds it (cacheSymbols).
	cachedSymbols, cacheBudget int

	// Lexeme entries shared by every grammar over this vocabulary, by the
	// structure of the lexeme state (see rx.Pool.Canon) and its follow set.
	shareMu sync.Mutex
	shared  map[string]*compEntry
}

// maxShared bounds the shared lexeme entries; past it the set starts over.
const maxShared = 1024

func (v *Vocab) sharedEntry(key string) *compEntry {
	if v.noShare {
		return nil
	}
	v.shareMu.Lock()
	defer v.shareMu.Unlock()
	return v.shared[key]
}

func (v *Vocab) shareEntry(key string, e *compEntry) {
	if v.noShare {
		return
	}
	v.shareMu.Lock()
	defer v.shareMu.Unlock()
	if v.shared == nil || len(v.shared) >= maxShared {
		v.shared = map[string]*compEntry{}
	}
	v.shared[key] = e
}

// SetSharing turns the lexeme entries shared between grammars on (the
// default) or off (to measure every grammar from a cold start).
func (v *Vocab) SetSharing(on bool) { v.noShare = !on }

// trie holds byte strings in pre-order: node i (i >= 1) is reached by byte
// b[i] from its parent; its subtree is nodes i..next[i]-1; the strings
// ending at node i are toks[tok0[i]:tok0[i+1]]. Node 0 is the root.
type trie struct {
	b    []byte
	next []int32
	tok0 []int32
	toks []int32
}

// entry is one string of a trie being built.
type entry struct {
	s   []byte
	tok int32
}

// buildTrie builds a trie over es (sorted in place).
func buildTrie(es []entry) trie {
	slices.SortFunc(es, func(a, b entry) int {
		if c := bytes.Compare(a.s, b.s); c != 0 {
			return c
		}
		return int(a.tok - b.tok)
	})
	var t trie
	t.b = append(t.b, 0)
	t.next = append(t.next, 0)
	t.tok0 = append(t.tok0, 0)
	open := []int32{0} // path of open nodes, by depth
	var prev []byte
	for _, e := range es {
		l := 0
		for l < len(prev) && l < len(e.s) && prev[l] == e.s[l] {
			l++
		}
		for len(open) > l+1 {
			n := open[len(open)-1]
			t.next[n] = int32(len(t.b))
			open = open[:len(open)-1]
		}
		for d := l; d < len(e.s); d++ {
			t.b = append(t.b, e.s[d])
			t.next = append(t.next, 0)
			t.tok0 = append(t.tok0, int32(len(t.toks)))
			open = append(open, int32(len(t.b)-1))
		}
		t.toks = append(t.toks, e.tok)
		prev = e.s
	}
	for _, n := range open {
		t.next[n] = int32(len(t.b))
	}
	t.tok0 = append(t.tok0, int32(len(t.toks)))
	// tok0[i] was set when node i was made; tokens of a node are appended
	// before the next node is made, so the ranges are consecutive.
	return t
}

// bytesBelow computes Vocab.below: each node's set is its children's bytes
// and their sets.
func bytesBelow(t *trie) []rx.ByteSet {
	n := t.nodes()
	out := make([]rx.ByteSet, n)
	parent := make([]int32, n)
	stack := []int32{0}
	for i := int32(1); i < int32(n); i++ {
		for i >= t.next[stack[len(stack)-1]] && stack[len(stack)-1] != 0 {
			stack = stack[:len(stack)-1]
		}
		parent[i] = stack[len(stack)-1]
		stack = append(stack, i)
	}
	for i := int32(n) - 1; i >= 1; i-- {
		p := parent[i]
		out[p] = out[p].Union(out[i])
		out[p].Add(t.b[i])
	}
	return out
}

// plainBelow computes Vocab.plainBelow and plainChars for t.
func plainBelow(t *trie, toks [][]byte) ([]bool, []uint8) {
	n := t.nodes()
	out := make([]bool, n)
	chars := make([]uint8, n)
	cnt := make([]int, 0, 64)
	for i := range out {
		out[i] = true
	}
	var path []int32 // node at each depth
	var ends []int32
	ok := make([]bool, 0, 64)
	for i := int32(0); i < int32(n); i++ {
		for len(ends) > 0 && i >= ends[len(ends)-1] {
			ends, path = ends[:len(ends)-1], path[:len(path)-1]
		}
		path, ends = append(path, i), append(ends, t.next[i])
		if i == 0 {
			ends[0] = int32(n)
		}
		for _, tok := range t.tokens(i) {
			b := toks[tok]
			// ok[d]: b[d:] is whole plain characters.
			ok = ok[:0]
			for range len(b) + 1 {
				ok = append(ok, false)
			}
			ok[len(b)] = true
			cnt = cnt[:0]
			for range len(b) + 1 {
				cnt = append(cnt, 0)
			}
			for d := len(b) - 1; d >= 0; d-- {
				switch c := b[d]; {
				case c >= 0x20 && c < 0x7F && c != '"' && c != '\\':
					ok[d], cnt[d] = ok[d+1], cnt[d+1]+1
				case c >= 0xC0:
					r, size := utf8.DecodeRune(b[d:])
					if r != utf8.RuneError && size > 1 && ok[d+size] {
						ok[d], cnt[d] = true, cnt[d+size]+1
					}
				}
			}
			for d, node := range path {
				out[node] = out[node] && ok[d]
				chars[node] = uint8(max(int(chars[node]), min(cnt[d], 255)))
			}
		}
	}
	return out, chars
}

// nodes is the number of trie nodes (root included).
func (t *trie) nodes() int { return len(t.b) }

// tokens returns the tokens ending at node i.
func (t *trie) tokens(i int32) []int32 { return t.toks[t.tok0[i]:t.tok0[i+1]] }

// NewVocab prepares a vocabulary. Tokens with no bytes (and not EOG) are
// never allowed under a constraint.
func NewVocab(tokens []Token) (*Vocab, error) {
	if len(tokens) == 0 || len(tokens) > 1<<24 {
		return nil, fmt.Errorf("grammar: vocabulary of %d tokens", len(tokens))
	}
	v := &Vocab{n: len(tokens), bytes: make([][]byte, len(tokens)), names: map[string]bool{}, cache: map[string]*Constraint{}, cacheBudget: cacheSymbols}
	var es []entry
	for i, tk := range tokens {
		if tk.Special || tk.EOG {
			v.names[string(tk.Bytes)] = true
		}
		if tk.EOG {
			v.eog = append(v.eog, int32(i))
			continue
		}
		if len(tk.Bytes) == 0 {
			continue
		}
		b := tk.Bytes
		if tk.Special {
			b = append([]byte{SpecialMarker}, b...)
		} else {
			// No valid UTF-8 holds SpecialMarker, so no lexeme could take
			// such a token anyway, and it must not spell a special token.
			if bytes.IndexByte(b, SpecialMarker) >= 0 {
				continue
			}
			b = bytes.Clone(b)
		}
		if len(b) > 1024 {
			continue // no real token is this long; never allowed
		}
		v.bytes[i] = b
		v.maxLen = max(v.maxLen, len(b))
		es = append(es, entry{b, int32(i)})
	}
	v.trie = buildTrie(es)
	v.plainBelow, v.plainChars = plainBelow(&v.trie, v.bytes)
	v.below = bytesBelow(&v.trie)
	return v, nil
}

// Size is the number of tokens.
func (v *Vocab) Size() int { return v.n }

// MaskWords is the length of a mask over this vocabulary, in 64-bit words.
func (v *Vocab) MaskWords() int { return (v.n + 63) / 64 }

// EOG returns the end-of-generation tokens.
func (v *Vocab) EOG() []int32 { return v.eog }

// TokenBytes returns the bytes token id matches (special tokens with
// SpecialMarker first; nil for tokens never allowed and EOG tokens).
func (v *Vocab) TokenBytes(id int32) []byte {
	if id < 0 || int(id) >= v.n {
		return nil
	}
	return v.bytes[id]
}

func (v *Vocab) isEOG(id int32) bool {
	_, ok := slices.BinarySearch(v.eog, id)
	return ok
}

// VocabFromTokenizer prepares t's vocabulary: end-of-generation tokens as
// EOG, control tokens as special tokens named by their text, every other
// token as the bytes it adds to the output.
func VocabFromTokenizer(t *tokenizer.Tokenizer) (*Vocab, error) {
	toks := make([]Token, t.VocabSize())
	for i := range toks {
		id := int32(i)
		switch {
		case t.IsEOG(id):
			toks[i] = Token{Bytes: []byte(t.Piece(id)), EOG: true}
		case t.IsControl(id):
			toks[i] = Token{Bytes: []byte(t.Piece(id)), Special: true}
		default:
			toks[i].Bytes = t.TokenBytes(nil, id)
		}
	}
	return NewVocab(toks)
}
