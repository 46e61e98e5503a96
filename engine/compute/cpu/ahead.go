package cpu

import "unsafe"

// decodeChain learns the order of a decode step's matrix products (one
// activation row against repacked weights), so that runPacked can tell
// the helpers what the next product reads first (workers.runAhead). A
// decode step multiplies the same weights in the same order token after
// token, with small operations (normalization, attention, activation)
// between two products during which memory would sit idle: the helpers
// load the start of their share of the next product into their caches
// then. A product is known by the address of its first weight's first
// byte; one never seen before, or a batch of several rows, starts the
// chain again.
type decodeChain struct {
	next map[unsafe.Pointer]chainLink
	last unsafe.Pointer
}

// chainLink is the product that followed another: its weights in group
// order, and how its loop was run.
type chainLink struct {
	parts      [maxLinkParts][]byte
	nparts     int
	groupBytes int
	groups     int
	grain      int
}

// maxLinkParts is the most weights a product of the chain may have (a
// fused q, k and v: three); one of more is not recorded. A fixed array
// keeps the chain from allocating as a mixture of experts' products
// change token by token.
const maxLinkParts = 4

// aheadBytes is how much of the next product each helper prefetches at
// most: about what it reads in the 15 µs of a typical gap.
const aheadBytes = 256 << 10

// maxChainLinks bounds the chain (a model has a few hundred products; the
// chain starts over past this, as after loading many models).
const maxChainLinks = 4096

// step records that the one-row product of parts (groups groups of
// groupBytes, run in grains of grain) follows the previous one, and
// returns the memory the helpers of w should prefetch once they are done
// with it: the start of the part of the next product that they will claim
// first, after the caller's first claim.
func (c *decodeChain) step(parts []packedPart, groupBytes, groups, grain int, w *workers) []byte {
	key := unsafe.Pointer(unsafe.SliceData(parts[0].w))
	if c.last != nil && len(parts) <= maxLinkParts {
		if l, ok := c.next[c.last]; !ok || unsafe.Pointer(unsafe.SliceData(l.parts[0])) != key {
			if c.next == nil || len(c.next) >= maxChainLinks {
				c.next = make(map[unsafe.Pointer]chainLink)
			}
			l := chainLink{nparts: len(parts), groupBytes: groupBytes, groups: groups, grain: grain}
			for i := range parts {
				l.parts[i] = parts[i].w
			}
			c.next[c.last] = l
		}
	}
	c.last = key
	l, ok := c.next[key]
	if !ok || w.n == 1 {
		return nil
	}
	off := w.firstClaim(l.groups, l.grain) * l.groupBytes
	for _, p := range l.parts[:l.nparts] {
		if off < len(p) {
			return p[off:min(len(p), off+aheadBytes*(w.n-1))]
		}
		off -= len(p)
	}
	return nil
}

// reset starts the chain again (a product of several rows ran).
func (c *decodeChain) reset() { c.last = nil }
