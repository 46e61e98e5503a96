package prefix

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
)

// KVData reads and writes one block's raw keys and values; a
// compute.KVStore satisfies it. A store with a cold tier also has
// ColdBlockBytes (compute.TieredKV): a cold block's bytes are its
// quantized form, saved and restored as they are.
type KVData interface {
	BlockBytes() int
	ReadBlock(b int32, dst []byte) error
	WriteBlock(b int32, src []byte) error
}

// coldBlockBytes is kvd's cold block size, 0 without a cold tier.
func coldBlockBytes(kvd KVData) int {
	if t, ok := kvd.(interface{ ColdBlockBytes() int }); ok {
		return t.ColdBlockBytes()
	}
	return 0
}

// ErrBadSnapshot is returned for a snapshot that is corrupt or was made for
// another model, cache layout or block size; such a file must be discarded.
var ErrBadSnapshot = errors.New("prefix snapshot rejected")

// snapshotMagic opens a snapshot. Version 2 added the cold tier: the
// header has both block sizes, and each record says which tier its
// block was in.
const snapshotMagic = "RUVLLM-PREFIX-2\n"

// The tier byte of a record.
const (
	tierHot  = 0
	tierCold = 1
)

// Save writes the hottest cached prefixes of namespace ns — whole-block
// nodes ranked by hits then recency, each with all its ancestors — up to maxBlocks blocks,
// with their keys and values, followed by a SHA-256 of everything before it.
func (c *Cache) Save(w io.Writer, ns string, kvd KVData, maxBlocks int) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	root := c.roots[ns]
	if root == nil || maxBlocks <= 0 {
		return 0, c.writeSnapshot(w, ns, kvd, nil)
	}
	var all []*node
	var walk func(*node)
	walk = func(n *node) {
		for _, ch := range n.children {
			if ch.partial(c.bs) {
				continue // snapshots hold whole blocks
			}
			all = append(all, ch)
			walk(ch)
		}
	}
	walk(root)
	sort.Slice(all, func(i, j int) bool {
		if all[i].hits != all[j].hits {
			return all[i].hits > all[j].hits
		}
		return all[i].lastUsed > all[j].lastUsed
	})
	chosen := map[*node]bool{}
	for _, n := range all {
		var path []*node
		for x := n; x.parent != nil && !chosen[x]; x = x.parent {
			path = append(path, x)
		}
		if len(chosen)+len(path) > maxBlocks {
			continue
		}
		for _, x := range path {
			chosen[x] = true
		}
	}
	var nodes []*node
	for n := range chosen {
		nodes = append(nodes, n)
	}
	// Parents before children, so Load can link each node on arrival.
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].depth < nodes[j].depth })
	return len(nodes), c.writeSnapshot(w, ns, kvd, nodes)
}

func (c *Cache) writeSnapshot(w io.Writer, ns string, kvd KVData, nodes []*node) error {
	h := sha256.New()
	bw := bufio.NewWriter(io.MultiWriter(w, h))
	le := binary.LittleEndian
	var hdr []byte
	hdr = append(hdr, snapshotMagic...)
	hdr = le.AppendUint32(hdr, uint32(len(ns)))
	hdr = append(hdr, ns...)
	hdr = le.AppendUint32(hdr, uint32(c.bs))
	hdr = le.AppendUint32(hdr, uint32(kvd.BlockBytes()))
	hdr = le.AppendUint32(hdr, uint32(coldBlockBytes(kvd)))
	hdr = le.AppendUint32(hdr, uint32(len(nodes)))
	if _, err := bw.Write(hdr); err != nil {
		return err
	}
	index := map[*node]int32{}
	hotBuf, coldBuf := make([]byte, kvd.BlockBytes()), make([]byte, coldBlockBytes(kvd))
	for i, n := range nodes {
		index[n] = int32(i)
		parent := int32(-1)
		if n.parent.parent != nil {
			parent = index[n.parent]
		}
		rec := le.AppendUint32(nil, uint32(parent))
		rec = le.AppendUint64(rec, n.hits)
		rec = append(rec, n.key...)
		buf := hotBuf
		if c.pool.Cold(n.block) {
			rec, buf = append(rec, tierCold), coldBuf
		} else {
			rec = append(rec, tierHot)
		}
		if _, err := bw.Write(rec); err != nil {
			return err
		}
		if err := kvd.ReadBlock(n.block, buf); err != nil {
			return fmt.Errorf("read block %d: %w", n.block, err)
		}
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(h.Sum(nil))
	return err
}

// maxNamespaceBytes bounds a snapshot's namespace, so that a corrupt
// length cannot make Load allocate gigabytes.
const maxNamespaceBytes = 64 << 10

// Load reads a snapshot written by Save into the cache. It checks the
// namespace and the block layout first, then streams the records: each
// saved prefix block takes a block from the pool (as many as are free) and
// gets its keys and values, one record in memory at a time, while the
// checksum is computed over what was read. If the checksum (or anything
// after the header) turns out wrong, every block restored so far is
// given back and the tree is as before: a corrupt snapshot loads nothing.
// It returns the number of blocks restored.
func (c *Cache) Load(r io.Reader, ns string, kvd KVData) (int, error) {
	n, _, err := c.LoadMatching(r, func(got string) bool { return got == ns }, kvd)
	if errors.Is(err, errOtherNamespace) {
		err = fmt.Errorf("%w, not %q", err, ns)
	}
	return n, err
}

// errOtherNamespace marks a snapshot of a namespace LoadMatching was not
// to take.
var errOtherNamespace = fmt.Errorf("%w: made for another namespace", ErrBadSnapshot)

// LoadMatching is Load for a snapshot of any namespace accept takes (the
// namespaces of a model's adapters, whose names hold their checksums): it
// returns the blocks restored and the snapshot's namespace.
func (c *Cache) LoadMatching(r io.Reader, accept func(ns string) bool, kvd KVData) (int, string, error) {
	h := sha256.New()
	br := bufio.NewReaderSize(r, 64<<10)
	tr := io.TeeReader(br, h)
	read := func(p []byte) error {
		if _, err := io.ReadFull(tr, p); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("%w: truncated", ErrBadSnapshot)
			}
			return fmt.Errorf("read prefix snapshot: %w", err)
		}
		return nil
	}
	le := binary.LittleEndian
	var word [4]byte
	u32 := func() (uint32, error) {
		if err := read(word[:]); err != nil {
			return 0, err
		}
		return le.Uint32(word[:]), nil
	}
	magic := make([]byte, len(snapshotMagic))
	if err := read(magic); err != nil || string(magic) != snapshotMagic {
		if err != nil && !errors.Is(err, ErrBadSnapshot) {
			return 0, "", err
		}
		return 0, "", fmt.Errorf("%w: not a prefix snapshot", ErrBadSnapshot)
	}
	nsLen, err := u32()
	if err != nil {
		return 0, "", err
	}
	if nsLen > maxNamespaceBytes {
		return 0, "", fmt.Errorf("%w: namespace of %d bytes", ErrBadSnapshot, nsLen)
	}
	gotNS := make([]byte, nsLen)
	if err := read(gotNS); err != nil {
		return 0, "", err
	}
	ns := string(gotNS)
	if !accept(ns) {
		return 0, "", fmt.Errorf("%w %q", errOtherNamespace, ns)
	}
	bs, err := u32()
	if err != nil {
		return 0, "", err
	}
	bb, err := u32()
	if err != nil {
		return 0, "", err
	}
	cb, err := u32()
	if err != nil {
		return 0, "", err
	}
	if int(bs) != c.bs || int(bb) != kvd.BlockBytes() || int(cb) != coldBlockBytes(kvd) {
		return 0, "", fmt.Errorf("%w: block layout %d positions/%d bytes/%d cold bytes, cache uses %d/%d/%d",
			ErrBadSnapshot, bs, bb, cb, c.bs, kvd.BlockBytes(), coldBlockBytes(kvd))
	}
	count, err := u32()
	if err != nil {
		return 0, "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	root := c.roots[ns]
	if root == nil {
		root = &node{children: map[string]*node{}, block: -1, ns: ns}
		c.roots[ns] = root
	}
	var created []*node
	fail := func(err error) (int, string, error) {
		// Children were created after their parents: undo in reverse.
		for i := len(created) - 1; i >= 0; i-- {
			n := created[i]
			delete(n.parent.children, n.key)
			c.pool.Release([]int32{n.block})
			c.nodes--
		}
		if len(root.children) == 0 {
			delete(c.roots, ns)
		}
		return 0, "", err
	}
	head := make([]byte, 4+8+4*c.bs+1)
	hotBytes, coldBytes := make([]byte, bb), make([]byte, cb)
	loaded := make([]*node, 0, min(count, 1<<16))
	for i := 0; i < int(count); i++ {
		if err := read(head); err != nil {
			return fail(err)
		}
		parentIdx := int32(le.Uint32(head))
		hits := le.Uint64(head[4:])
		key := string(head[12 : 12+4*c.bs])
		kvBytes, alloc := hotBytes, c.pool.Alloc
		switch head[len(head)-1] {
		case tierHot:
		case tierCold:
			if cb == 0 {
				return fail(fmt.Errorf("%w: a cold block in a snapshot without a cold tier", ErrBadSnapshot))
			}
			kvBytes, alloc = coldBytes, c.pool.AllocCold
		default:
			return fail(fmt.Errorf("%w: block tier %d", ErrBadSnapshot, head[len(head)-1]))
		}
		if err := read(kvBytes); err != nil {
			return fail(err)
		}
		parent := root
		if parentIdx >= 0 {
			if int(parentIdx) >= i || loaded[parentIdx] == nil {
				loaded = append(loaded, nil) // parent missing: skip the subtree
				continue
			}
			parent = loaded[parentIdx]
		}
		if existing := parent.children[key]; existing != nil {
			loaded = append(loaded, existing)
			continue
		}
		blocks, err := alloc(1)
		if err != nil {
			loaded = append(loaded, nil)
			continue // pool full: keep what fits
		}
		if err := kvd.WriteBlock(blocks[0], kvBytes); err != nil {
			c.pool.Release(blocks)
			return fail(err)
		}
		c.tick++
		n := &node{parent: parent, children: map[string]*node{}, key: key, block: blocks[0],
			depth: parent.depth + 1, ns: ns, hits: hits, lastUsed: c.tick}
		parent.children[key] = n
		c.nodes++
		created = append(created, n)
		loaded = append(loaded, n)
	}
	want := h.Sum(nil)
	sum := make([]byte, sha256.Size)
	if _, err := io.ReadFull(br, sum); err != nil {
		return fail(fmt.Errorf("%w: truncated", ErrBadSnapshot))
	}
	if !bytes.Equal(want, sum) {
		return fail(fmt.Errorf("%w: checksum mismatch", ErrBadSnapshot))
	}
	switch _, err := br.ReadByte(); {
	case err == nil:
		return fail(fmt.Errorf("%w: data after the checksum", ErrBadSnapshot))
	case err != io.EOF:
		return fail(fmt.Errorf("read prefix snapshot: %w", err))
	}
	return len(created), ns, nil
}
