package store

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"unsafe"

	bolt "go.etcd.io/bbolt"
)

// ErrCorrupt is returned by Open for a file whose pages do not hold
// together (a disk error, a flipped bit): bbolt trusts every offset and
// length it reads from a page, so the first request to read such a page
// killed the daemon (fatal error: fault) or panicked in its handler.
var ErrCorrupt = errors.New("state store is corrupt")

// verify walks every key and value of db once and returns an error
// wrapping ErrCorrupt for the first that does not lie inside the file's
// pages in use. The records of a bucket stored inline in its parent's
// value may be a copy bbolt made, elsewhere in memory: their last bytes
// are read instead. A read that faults (a record or a page past the
// mapping) is turned into a panic and recovered. A file it passes cannot
// make the daemon's reads leave the file.
func verify(db *bolt.DB) error {
	return db.View(func(tx *bolt.Tx) (err error) {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%w: %v", ErrCorrupt, r)
			}
		}()
		// The read transaction holds the mapping in place.
		in := extent{start: db.Info().Data, end: db.Info().Data + uintptr(tx.Size())}
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return in.walk(b, name)
		})
	})
}

// extent is the address range of the file's pages in use.
type extent struct{ start, end uintptr }

// holds reports whether the bytes of p lie inside e.
func (e extent) holds(p []byte) bool {
	if len(p) == 0 {
		return true
	}
	a := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	return a >= e.start && a <= e.end && uintptr(len(p)) <= e.end-a
}

// walk checks every key and value of the bucket b, named name, and of the
// buckets nested in it.
func (e extent) walk(b *bolt.Bucket, name []byte) error {
	inline := b.Root() == 0
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		switch {
		case inline:
			// KeepAlive keeps the reads, which nothing else uses.
			if len(k) > 0 {
				runtime.KeepAlive(k[len(k)-1])
			}
			if len(v) > 0 {
				runtime.KeepAlive(v[len(v)-1])
			}
		case !e.holds(k) || !e.holds(v):
			return fmt.Errorf("%w: a record of bucket %q lies outside the file", ErrCorrupt, name)
		}
		if v != nil {
			continue
		}
		nb := b.Bucket(k)
		if nb == nil {
			return fmt.Errorf("%w: key %q of bucket %q has no value and is no bucket", ErrCorrupt, k, name)
		}
		if err := e.walk(nb, k); err != nil {
			return err
		}
	}
	return nil
}

// openBolt is bolt.Open with the errors of a file that does not read
// whole wrapped in ErrCorrupt: both meta pages invalid, or a page Open
// itself reads (the freelist's) past the end of a truncated file. bbolt
// follows that page into the mapping beyond the file's end, and the
// SIGBUS killed the daemon at every start ("fatal error: fault") where a
// corrupt store is set aside. A read that faults is turned into a panic
// and recovered; the file descriptor, lock and mapping bbolt had opened
// then stay open, as Open left no handle to close them with (the caller
// sets the file aside and opens a new one, so they are the old file's).
func openBolt(path string, opts *bolt.Options) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("%w: reading it faulted (truncated?): %v", ErrCorrupt, r)
		}
	}()
	db, err = bolt.Open(path, 0o600, opts)
	if errors.Is(err, bolt.ErrInvalid) || errors.Is(err, bolt.ErrChecksum) {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return db, err
}
