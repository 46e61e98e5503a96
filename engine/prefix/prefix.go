// Package prefix is the shared prefix cache: a tree over token ids whose
// nodes own KV blocks. A request takes the longest cached prefix of its
// prompt and computes only the rest; a finished sequence gives its blocks to
// the tree. Nodes are whole blocks, so a node is one edge of exactly
// BlockSize tokens and its children are the blocks that followed it in some
// sequence. Unreferenced leaves are evicted least recently used first.
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

// Stats counts the cache's work since it was created.
type Stats struct {
	Lookups     uint64 `json:"lookups"`
	Hits        uint64 `json:"hits"`         // lookups that reused at least one block
	HitTokens   uint64 `json:"hit_tokens"`   // prompt tokens served from the cache
	MissTokens  uint64 `json:"miss_tokens"`  // prompt tokens that had to be computed
	Inserted    uint64 `json:"inserted"`     // blocks added
	Evictions   uint64 `json:"evictions"`    // blocks evicted
	Blocks      int    `json:"blocks"`       // blocks held now
	ColdBlocks  int    `json:"cold_blocks"`  // of which in the cold (quantized) tier
	BlockTokens int    `json:"block_tokens"` // positions per block
}

// New returns an empty cache over pool.
func New(pool *kv.Pool) *Cache {
	return &Cache{pool: pool, bs: pool.BlockSize(), roots: map[string]*node{}}
}

func chunkKey(tokens []int32) string {
	return string(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(tokens))), 4*len(tokens)))
}

// Match is the result of a lookup: blocks holding the first Tokens
// positions of the prompt. The caller must pass it to a sequence with
// kv.Sequence.Adopt (which takes its own references) before the next call
// that may evict; Lookup holds the cache lock only during the call.
type Match struct {
	Blocks []int32
	Tokens int
}

// Lookup finds the longest cached prefix of tokens in namespace ns. It
// leaves at least one token uncached, because the caller needs the logits
// of the last prompt token.
func (c *Cache) Lookup(ns string, tokens []int32) Match {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	c.stats.Lookups++
	var m Match
	limit := (len(tokens) - 1) / c.bs // whole blocks that may be reused
	n := c.roots[ns]
	for i := 0; i < limit && n != nil; i++ {
		child := n.children[chunkKey(tokens[i*c.bs:(i+1)*c.bs])]
		if child == nil {
			break
		}
		child.lastUsed = c.tick
		child.hits++
		m.Blocks = append(m.Blocks, child.block)
		n = child
	}
	m.Tokens = len(m.Blocks) * c.bs
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
// namespace ns, in whole blocks, without counting a lookup or holding the
// blocks.
func (c *Cache) Cached(ns string, tokens []int32) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, held := c.roots[ns], 0
	for i := 0; i+c.bs <= len(tokens) && n != nil; i += c.bs {
		if n = n.children[chunkKey(tokens[i:i+c.bs])]; n != nil {
			held += c.bs
		}
	}
	return held
}

// Done releases the hold that Lookup took on a match; call it after the
// sequence adopted the blocks (or when the match is not used).
func (c *Cache) Done(m Match) { c.pool.Release(m.Blocks) }

// Insert records that blocks hold the keys and values of tokens in
// namespace ns. Only whole blocks are cached; the tree takes its own
// reference to each block it keeps. Where the tree already has a block for
// the same tokens, it keeps its own and ignores the caller's.
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
	full := min(len(tokens)/c.bs, len(blocks))
	for i := 0; i < full; i++ {
		key := chunkKey(tokens[i*c.bs : (i+1)*c.bs])
		child := n.children[key]
		if child == nil {
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
	if c.pool.ColdBlocks() > 0 {
		var walk func(*node)
		walk = func(n *node) {
			for _, ch := range n.children {
				if c.pool.Cold(ch.block) {
					s.ColdBlocks++
				}
				walk(ch)
			}
		}
		for _, r := range c.roots {
			walk(r)
		}
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
		out = append(out, Prefix{Namespace: x.ns, Tokens: x.depth * c.bs, Hits: x.hits, Head: headTokens(x, 16)})
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
		k := path[i].key
		toks := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.StringData(k))), len(k)/4)
		out = append(out, toks[:min(len(toks), n-len(out))]...)
	}
	return out
}
