// Package prefix is the shared prefix cache: a tree over token ids whose
// nodes own KV blocks. A request takes the longest cached prefix of its
// prompt and computes only the rest; a finished sequence gives its blocks to
// the tree. A node is one block: an edge of BlockSize tokens whose children
// are the blocks that followed it in some sequence, or, as a leaf, the
// partly filled last block of a finished sequence. Matching is at token
// granularity: a prompt that leaves the tree inside a block adopts that
// block's first tokens (the sequence copies it before writing, kv's
// copy-on-write), so a warm prompt computes only its new tokens.
// Unreferenced leaves are evicted least recently used first.
//
// The cache is partitioned by a namespace string that must include
// everything that changes the keys and values besides the tokens: the model
// identity and the adapter set with scales.
package prefix

import (
	"sort"
	"sync"
	"unsafe"

	"github.com/ruvllm/ruvllm/engine/kv"
)

// Cache is a prefix cache over one kv.Pool. It is safe for concurrent use.
type Cache struct {
	pool *kv.Pool
	bs   int

	mu    sync.Mutex
	roots map[string]*node
	tick  uint64
	nodes int
	stats Stats
}

type node struct {
	parent   *node
	children map[string]*node
	key      string // the block's tokens as bytes (map key in parent)
	block    int32
	lastUsed uint64
	hits     uint64
	depth    int // blocks from the root, this one included
	ns       string
}

// tokens returns the node's block's tokens (its key, viewed as ids).
func (n *node) tokens() []int32 {
	return unsafe.Slice((*int32)(unsafe.Pointer(unsafe.StringData(n.key))), len(n.key)/4)
}

// partial reports whether the node's block is a sequence's partly filled
// last block (always a leaf).
func (n *node) partial(bs int) bool { return len(n.key) < 4*bs }

// commonPrefix returns how many leading tokens a and b share.
func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// within finds the child of n whose block shares the most leading tokens
// with rest (at most len(rest)): the block a prompt that leaves the tree at
// n adopts in part. It returns nil when no child shares a token.
func within(n *node, rest []int32) (*node, int) {
	var best *node
	bestK := 0
	if len(rest) == 0 {
		return nil, 0
	}
	for _, ch := range n.children {
		toks := ch.tokens()
		if len(toks) == 0 || toks[0] != rest[0] {
			continue
		}
		if k := commonPrefix(toks, rest); k > bestK || (k == bestK && best != nil && ch.lastUsed > best.lastUsed) {
			best, bestK = ch, k
		}
	}
	return best, bestK
}

// Stats counts the cache's work since it was created.
type Stats struct {
	Lookups    uint64 `json:"lookups"`
	Hits       uint64 `json:"hits"`        // lookups that reused at least one block
	HitTokens  uint64 `json:"hit_tokens"`  // prompt tokens served from the cache
	MissTokens uint64 `json:"miss_tokens"` // prompt tokens that had to be computed
	Inserted   uint64 `json:"inserted"`    // blocks added
	Evictions  uint64 `json:"evictions"`   // blocks evicted
	Blocks     int    `json:"blocks"`      // blocks held now
	ColdBlocks int    `json:"cold_blocks"` // of which in the cold (quantized) tier
	// PartialBlocks of the blocks are partly filled leaves (a prompt that
	// ended mid-block): always hot, never in snapshots.
	PartialBlocks int `json:"partial_blocks"`
	BlockTokens   int `json:"block_tokens"` // positions per block
}

// New returns an empty cache over pool.
func New(pool *kv.Pool) *Cache {
	return &Cache{pool: pool, bs: pool.BlockSize(), roots: map[string]*node{}}
}

func chunkKey(tokens []int32) string {
	return string(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(tokens))), 4*len(tokens)))
}

// Match is the result of a lookup: blocks holding the first Tokens
// positions of the prompt. Tokens need not be a multiple of the block
// size: the last block may be adopted in part (the sequence copies it
// before writing into it). The caller must pass it to a sequence with
// kv.Sequence.Adopt (which takes its own references) before the next call
// that may evict; Lookup holds the cache lock only during the call.
type Match struct {
	Blocks []int32
	Tokens int
}

// walk follows tokens down namespace ns's tree: the nodes of the whole
// blocks it matches, then the block it leaves the tree in with the number
// of that block's tokens it shares (nil, 0 when none). At most max tokens
// are matched.
func (c *Cache) walk(ns string, tokens []int32, max int) (path []*node, last *node, k int) {
	n := c.roots[ns]
	if n == nil || max <= 0 {
		return nil, nil, 0
	}
	i := 0
	for ; (i+1)*c.bs <= max; i++ {
		child := n.children[chunkKey(tokens[i*c.bs:(i+1)*c.bs])]
		if child == nil {
			break
		}
		path = append(path, child)
		n = child
	}
	last, k = within(n, tokens[i*c.bs:max])
	return path, last, k
}

// Lookup finds the longest cached prefix of tokens in namespace ns, to the
// token. It leaves at least one token uncached, because the caller needs
// the logits of the last prompt token.
func (c *Cache) Lookup(ns string, tokens []int32) Match {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	c.stats.Lookups++
	var m Match
	path, last, k := c.walk(ns, tokens, len(tokens)-1)
	if last != nil {
		path = append(path, last)
	}
	for _, n := range path {
		n.lastUsed = c.tick
		n.hits++
		m.Blocks = append(m.Blocks, n.block)
	}
	m.Tokens = len(m.Blocks) * c.bs
	if last != nil {
		m.Tokens += k - c.bs
	}
	if m.Tokens > 0 {
		c.stats.Hits++
	}
	c.stats.HitTokens += uint64(m.Tokens)
	c.stats.MissTokens += uint64(len(tokens) - m.Tokens)
	// Hold the matched blocks until the caller adopts them.
	c.pool.Retain(m.Blocks)
	return m
}

// Cached returns how many leading tokens of tokens the cache holds in
// namespace ns, to the token (the last one included), without counting a
// lookup or holding the blocks.
func (c *Cache) Cached(ns string, tokens []int32) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	path, _, k := c.walk(ns, tokens, len(tokens))
	return len(path)*c.bs + k
}

// Done releases the hold that Lookup took on a match; call it after the
// sequence adopted the blocks (or when the match is not used).
func (c *Cache) Done(m Match) { c.pool.Release(m.Blocks) }

// Insert records that blocks hold the keys and values of tokens in
// namespace ns; the tree takes its own reference to each block it keeps.
// Where the tree already has a block for the same tokens, it keeps its own
// and ignores the caller's. A partly filled last block is kept as a
// partial leaf, unless the tree already holds its tokens; a block that
// covers a partial leaf's tokens replaces the leaf.
func (c *Cache) Insert(ns string, tokens []int32, blocks []int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	root := c.roots[ns]
	if root == nil {
		root = &node{children: map[string]*node{}, block: -1, ns: ns}
		c.roots[ns] = root
	}
	n := root
	nblocks := min((len(tokens)+c.bs-1)/c.bs, len(blocks))
	for i := 0; i < nblocks; i++ {
		chunk := tokens[i*c.bs : min((i+1)*c.bs, len(tokens))]
		key := chunkKey(chunk)
		child := n.children[key]
		if child == nil {
			if len(chunk) < c.bs {
				if have, k := within(n, chunk); have != nil && k == len(chunk) {
					have.lastUsed = c.tick // a block already holds these tokens
					return
				}
			}
			// Partial leaves this block's tokens cover are redundant now.
			for _, sib := range n.children {
				if sib.partial(c.bs) && len(sib.children) == 0 && len(sib.key) < len(key) && key[:len(sib.key)] == sib.key {
					c.drop(sib)
				}
			}
			child = &node{parent: n, children: map[string]*node{}, key: key, block: blocks[i], depth: i + 1, ns: ns}
			n.children[key] = child
			c.pool.Retain([]int32{blocks[i]})
			c.nodes++
			c.stats.Inserted++
		}
		child.lastUsed = c.tick
		n = child
	}
}

// drop removes leaf n from the tree without counting an eviction.
func (c *Cache) drop(n *node) {
	delete(n.parent.children, n.key)
	c.pool.Release([]int32{n.block})
	c.nodes--
}

// Evict frees cached blocks that no sequence uses, least recently used
// leaves first, until the pool has at least want free blocks or nothing
// more can be evicted. It returns the number of blocks freed. In a pool
// with a cold tier it frees hot blocks, the ones new positions need:
// evicting cold prefixes would not give them room (EvictCold frees cold
// ones).
func (c *Cache) Evict(want int) int {
	if c.pool.Budgeted() { // tiers share the bytes: any block makes room
		return c.evict(want, c.pool.Free, nil)
	}
	return c.evict(want, c.pool.Free, func(b int32) bool { return !c.pool.Cold(b) })
}

// EvictCold frees cached cold blocks, least recently used leaves first,
// until the pool has at least want free cold blocks (room to move old
// blocks of running sequences to the cold tier).
func (c *Cache) EvictCold(want int) int {
	if c.pool.Budgeted() {
		return c.evict(want, c.pool.FreeCold, nil)
	}
	return c.evict(want, c.pool.FreeCold, c.pool.Cold)
}

// evict removes evictable leaves whose block tier matches, LRU first,
// while free() < want.
func (c *Cache) evict(want int, free func() int, tier func(int32) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	freed := 0
	// One leaf at a time: removing a leaf can make its parent the next
	// least recently used leaf, which must go before younger branches.
	var leaves []*node
	for free() < want {
		leaves = leaves[:0]
		for _, r := range c.roots {
			collectEvictable(r, c.pool, &leaves)
		}
		var oldest *node
		for _, l := range leaves {
			if tier != nil && !tier(l.block) {
				continue
			}
			if oldest == nil || l.lastUsed < oldest.lastUsed || (l.lastUsed == oldest.lastUsed && l.depth > oldest.depth) {
				oldest = l
			}
		}
		if oldest == nil {
			break
		}
		c.remove(oldest)
		freed++
	}
	return freed
}

// collectEvictable appends leaves whose block only the cache references.
func collectEvictable(n *node, pool *kv.Pool, out *[]*node) {
	for _, ch := range n.children {
		if len(ch.children) == 0 {
			if pool.Refs(ch.block) == 1 {
				*out = append(*out, ch)
			}
			continue
		}
		collectEvictable(ch, pool, out)
	}
}

func (c *Cache) remove(n *node) {
	delete(n.parent.children, n.key)
	c.pool.Release([]int32{n.block})
	c.nodes--
	c.stats.Evictions++
	if n.parent.parent == nil && len(n.parent.children) == 0 {
		delete(c.roots, n.ns)
	}
}

// Clear drops every cached block that no sequence uses, in both tiers.
func (c *Cache) Clear() {
	c.evict(1, func() int { return 0 }, nil)
}

// Stats returns the counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Blocks = c.nodes
	s.BlockTokens = c.bs
	tiered := c.pool.ColdBlocks() > 0
	var walk func(*node)
	walk = func(n *node) {
		for _, ch := range n.children {
			if tiered && c.pool.Cold(ch.block) {
				s.ColdBlocks++
			}
			if ch.partial(c.bs) {
				s.PartialBlocks++
			}
			walk(ch)
		}
	}
	for _, r := range c.roots {
		walk(r)
	}
	return s
}

// Prefix describes one cached path for reports: its namespace, length and
// how often its last block was reused.
type Prefix struct {
	Namespace string  `json:"namespace"`
	Tokens    int     `json:"tokens"`
	Hits      uint64  `json:"hits"`
	Head      []int32 `json:"head"` // the first tokens, to recognise it
}

// Top returns up to n cached prefixes with the most hits: for every node
// that was hit, the path from the root to it.
func (c *Cache) Top(n int) []Prefix {
	c.mu.Lock()
	defer c.mu.Unlock()
	var all []*node
	var walk func(*node)
	walk = func(x *node) {
		for _, ch := range x.children {
			if ch.hits > 0 {
				all = append(all, ch)
			}
			walk(ch)
		}
	}
	for _, r := range c.roots {
		walk(r)
	}
	// Prefer the deepest node among those with equal hits: it describes the
	// longest shared prefix.
	sort.Slice(all, func(i, j int) bool {
		if all[i].hits != all[j].hits {
			return all[i].hits > all[j].hits
		}
		return all[i].depth > all[j].depth
	})
	var out []Prefix
	seen := map[*node]bool{}
	for _, x := range all {
		if len(out) == n {
			break
		}
		if x.parent != nil && seen[x.parent] {
			continue
		}
		seen[x] = true
		out = append(out, Prefix{Namespace: x.ns, Tokens: (x.depth-1)*c.bs + len(x.key)/4, Hits: x.hits, Head: headTokens(x, 16)})
	}
	return out
}

// headTokens returns the first n tokens of the path to x.
func headTokens(x *node, n int) []int32 {
	var path []*node
	for y := x; y.parent != nil; y = y.parent {
		path = append(path, y)
	}
	var out []int32
	for i := len(path) - 1; i >= 0 && len(out) < n; i-- {
		toks := path[i].tokens()
		out = append(out, toks[:min(len(toks), n-len(out))]...)
	}
	return out
}

// Namespaces returns the namespaces that hold cached blocks, the most
// recently used first (a snapshot's budget goes to the prefixes in use,
// not to the largest set: an adapter since replaced, a learned adapter's
// old version, kept its blocks and crowded the current ones out).
func (c *Cache) Namespaces() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	last := map[string]uint64{}
	var walk func(ns string, n *node)
	walk = func(ns string, n *node) {
		for _, ch := range n.children {
			last[ns] = max(last[ns], ch.lastUsed)
			walk(ns, ch)
		}
	}
	var out []string
	for ns, r := range c.roots {
		if len(r.children) == 0 {
			continue
		}
		walk(ns, r)
		out = append(out, ns)
	}
	sort.Slice(out, func(i, j int) bool {
		if last[out[i]] != last[out[j]] {
			return last[out[i]] > last[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}
