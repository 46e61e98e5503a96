package store

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// ring is a bucket of records by id kept within a count and a byte
// budget, the oldest dropped first. Beside the data bucket it keeps
// <name>.seq (8-byte big-endian sequence → id, in arrival order), <name>.ids
// (id → its sequence, so a record stored again under the same id drops its
// old position) and <name>.meta ("bytes": the data's total size, "count":
// the positions in <name>.seq).
type ring struct {
	name               string
	maxCount           int
	maxBytes           int64
	seq, ids, metaName string
}

func newRing(name string, maxCount int, maxBytes int64) ring {
	return ring{name: name, maxCount: maxCount, maxBytes: maxBytes,
		seq: name + ".seq", ids: name + ".ids", metaName: name + ".meta"}
}

// buckets are the ring's bucket names, for Open to create.
func (r ring) buckets() []string { return []string{r.name, r.seq, r.ids, r.metaName} }

// fits reports whether a value of n bytes is kept at all: one record may
// take at most an eighth of the byte budget.
func (r ring) fits(n int) bool { return int64(n)+32 <= r.maxBytes/8 }

// put stores value under id and drops the oldest records beyond the
// budgets, in tx.
func (r ring) put(tx *bolt.Tx, id string, value []byte) error {
	data, seqs, ids, meta := tx.Bucket([]byte(r.name)), tx.Bucket([]byte(r.seq)), tx.Bucket([]byte(r.ids)), tx.Bucket([]byte(r.metaName))
	total, count := r.total(meta), r.count(meta, seqs)
	if old := ids.Get([]byte(id)); len(old) == 8 {
		if err := seqs.Delete(old); err != nil {
			return err
		}
		count--
	}
	if old := data.Get([]byte(id)); old != nil {
		total -= int64(len(old))
	}
	seq, err := seqs.NextSequence()
	if err != nil {
		return err
	}
	key := binary.BigEndian.AppendUint64(nil, seq)
	if err := data.Put([]byte(id), value); err != nil {
		return err
	}
	if err := seqs.Put(key, []byte(id)); err != nil {
		return err
	}
	if err := ids.Put([]byte(id), key); err != nil {
		return err
	}
	total += int64(len(value))
	count++
	c := seqs.Cursor()
	for k, oldID := c.First(); k != nil && (count > r.maxCount || total > r.maxBytes); k, oldID = c.First() {
		// A position left over from an id stored again is only dropped;
		// the record itself goes with its current position.
		if cur := ids.Get(oldID); string(cur) == string(k) {
			if v := data.Get(oldID); v != nil {
				total -= int64(len(v))
				if err := data.Delete(oldID); err != nil {
					return err
				}
			}
			if err := ids.Delete(oldID); err != nil {
				return err
			}
		}
		if err := c.Delete(); err != nil {
			return err
		}
		count--
	}
	if err := meta.Put(countKey, binary.BigEndian.AppendUint64(nil, uint64(max(count, 0)))); err != nil {
		return err
	}
	return meta.Put(bytesKey, binary.BigEndian.AppendUint64(nil, uint64(max(total, 0))))
}

// remove deletes the record id, in tx.
func (r ring) remove(tx *bolt.Tx, id string) (bool, error) {
	data, seqs, ids, meta := tx.Bucket([]byte(r.name)), tx.Bucket([]byte(r.seq)), tx.Bucket([]byte(r.ids)), tx.Bucket([]byte(r.metaName))
	v := data.Get([]byte(id))
	if v == nil {
		return false, nil
	}
	total, count := r.total(meta)-int64(len(v)), r.count(meta, seqs)
	if key := ids.Get([]byte(id)); len(key) == 8 {
		if err := seqs.Delete(key); err != nil {
			return false, err
		}
		count--
	}
	if err := meta.Put(countKey, binary.BigEndian.AppendUint64(nil, uint64(max(count, 0)))); err != nil {
		return false, err
	}
	if err := ids.Delete([]byte(id)); err != nil {
		return false, err
	}
	if err := data.Delete([]byte(id)); err != nil {
		return false, err
	}
	return true, meta.Put(bytesKey, binary.BigEndian.AppendUint64(nil, uint64(max(total, 0))))
}

var countKey = []byte("count")

// count is the number of positions in the sequence bucket, kept in meta
// (counted once for a state.db written before it was).
func (r ring) count(meta, seqs *bolt.Bucket) int {
	if v := meta.Get(countKey); len(v) == 8 {
		return int(binary.BigEndian.Uint64(v))
	}
	n := 0
	seqs.ForEach(func(k, v []byte) error { n++; return nil })
	return n
}

func (r ring) total(meta *bolt.Bucket) int64 {
	if v := meta.Get(bytesKey); len(v) == 8 {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

// rebuildIDs fills <name>.ids from <name>.seq when it is empty (a state.db
// written before it existed): each id's latest position.
func (r ring) rebuildIDs(tx *bolt.Tx) error {
	ids, seqs := tx.Bucket([]byte(r.ids)), tx.Bucket([]byte(r.seq))
	if k, _ := ids.Cursor().First(); k != nil {
		return nil
	}
	if k, _ := seqs.Cursor().First(); k == nil {
		return nil
	}
	return seqs.ForEach(func(k, id []byte) error {
		return ids.Put(id, append([]byte(nil), k...))
	})
}
