package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Learning states are stored in content-defined chunks. A scope's state
// is hundreds of megabytes on a 1B model (its adapters, their Fisher and
// optimizer moments, deep-loop candidates, the undo point: a copy of the
// last state) and every rating saves it, while one rating changes only
// the MicroLoRA, its moments and a record or two. Cut where the content
// says (a rolling hash over the last 64 bytes), the bytes that did not
// change fall into chunks already stored, wherever the changed ones moved
// them: a save writes the new chunks only. Chunks are kept by their
// SHA-256 with a count of the records that use them; a save, a scope set
// aside and a scope deleted adjust the counts in the same transaction as
// the record, so that kill -9 leaves either the old state whole or the
// new one.
const (
	learningChunks    = "learning.chunks"
	learningChunkRefs = "learning.chunkrefs"
)

// chunkedMagic starts a Learning record that lists chunks; any other
// record is a state stored whole (by versions before chunking).
var chunkedMagic = []byte("RVLCHNK1")

// Chunk sizes: boundaries are looked for from chunkMin bytes into a
// chunk, found every 256 KiB on average beyond it (where the top chunkBits
// bits of the rolling hash are zero), and forced at chunkMax.
const (
	chunkMin  = 64 << 10
	chunkMax  = 1 << 20
	chunkBits = 18
)

// gearTable is the rolling hash's table: 256 fixed pseudo-random words
// (splitmix64 from a fixed seed), so that boundaries are the same in
// every version that reads the store.
func gearTable() *[256]uint64 {
	var t [256]uint64
	x := uint64(0x72756c6c6d2d6364) // "rullm-cd"
	for i := range t {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		t[i] = z ^ z>>31
	}
	return &t
}

// chunkEnds returns the end offsets of data's chunks.
func chunkEnds(data []byte, gear *[256]uint64) []int {
	var ends []int
	for start := 0; start < len(data); {
		end := min(start+chunkMax, len(data))
		if end-start > chunkMin {
			var h uint64
			for i := start + chunkMin - 64; i < end; i++ {
				h = h<<1 + gear[data[i]]
				if i >= start+chunkMin && h>>(64-chunkBits) == 0 {
					end = i + 1
					break
				}
			}
		}
		ends = append(ends, end)
		start = end
	}
	return ends
}

// chunkedState is a state cut into chunks: their hashes, in order, and
// their bytes by hash.
type chunkedState struct {
	hashes [][sha256.Size]byte
	chunks map[[sha256.Size]byte][]byte
}

func cutState(state []byte) chunkedState {
	c := chunkedState{chunks: map[[sha256.Size]byte][]byte{}}
	gear := gearTable()
	start := 0
	for _, end := range chunkEnds(state, gear) {
		h := sha256.Sum256(state[start:end])
		c.hashes = append(c.hashes, h)
		c.chunks[h] = state[start:end]
		start = end
	}
	return c
}

// record is the Learning record that lists c's chunks.
func (c chunkedState) record() []byte {
	rec := make([]byte, 0, len(chunkedMagic)+len(c.hashes)*sha256.Size)
	rec = append(rec, chunkedMagic...)
	for _, h := range c.hashes {
		rec = append(rec, h[:]...)
	}
	return rec
}

// recordChunks returns the chunk hashes a Learning record lists, and
// false for a state stored whole.
func recordChunks(rec []byte) ([][sha256.Size]byte, bool, error) {
	if !bytes.HasPrefix(rec, chunkedMagic) {
		return nil, false, nil
	}
	body := rec[len(chunkedMagic):]
	if len(body)%sha256.Size != 0 {
		return nil, true, errors.New("chunk list of a partial hash")
	}
	hashes := make([][sha256.Size]byte, len(body)/sha256.Size)
	for i := range hashes {
		copy(hashes[i][:], body[i*sha256.Size:])
	}
	return hashes, true, nil
}

// putChunked stores c under key in Learning, writing the chunks no record
// holds yet, and releases the chunks of the record it replaces. It
// returns how many chunk bytes it wrote.
func putChunked(tx *bolt.Tx, key []byte, c chunkedState) (int, error) {
	chunks, refs := tx.Bucket([]byte(learningChunks)), tx.Bucket([]byte(learningChunkRefs))
	written := 0
	for _, h := range c.hashes {
		n := uint64(0)
		if v := refs.Get(h[:]); len(v) == 8 {
			n = binary.BigEndian.Uint64(v)
		}
		if n == 0 {
			if err := chunks.Put(h[:], c.chunks[h]); err != nil {
				return written, err
			}
			written += len(c.chunks[h])
		}
		if err := refs.Put(h[:], binary.BigEndian.AppendUint64(nil, n+1)); err != nil {
			return written, err
		}
	}
	if err := releaseChunks(tx, key); err != nil {
		return written, err
	}
	return written, tx.Bucket([]byte(Learning)).Put(key, c.record())
}

// releaseChunks drops one use of each chunk the Learning record under key
// lists, deleting the chunks no record uses any more. A record stored
// whole, or none, releases nothing.
func releaseChunks(tx *bolt.Tx, key []byte) error {
	hashes, _, err := recordChunks(tx.Bucket([]byte(Learning)).Get(key))
	if err != nil {
		return nil // a damaged list: its chunks stay (bytes, not state)
	}
	chunks, refs := tx.Bucket([]byte(learningChunks)), tx.Bucket([]byte(learningChunkRefs))
	for _, h := range hashes {
		v := refs.Get(h[:])
		if len(v) != 8 || binary.BigEndian.Uint64(v) <= 1 {
			if err := refs.Delete(h[:]); err != nil {
				return err
			}
			if err := chunks.Delete(h[:]); err != nil {
				return err
			}
			continue
		}
		if err := refs.Put(h[:], binary.BigEndian.AppendUint64(nil, binary.BigEndian.Uint64(v)-1)); err != nil {
			return err
		}
	}
	return nil
}

// readState returns the state a Learning record holds: the chunks it
// lists, put together, or the record itself for a state stored whole.
// The bytes are the caller's.
func readState(tx *bolt.Tx, rec []byte) ([]byte, error) {
	hashes, chunked, err := recordChunks(rec)
	if err != nil {
		return nil, err
	}
	if !chunked {
		return bytes.Clone(rec), nil
	}
	chunks := tx.Bucket([]byte(learningChunks))
	var state []byte
	for i, h := range hashes {
		c := chunks.Get(h[:])
		if c == nil {
			return nil, fmt.Errorf("chunk %d of %d (%x) is missing", i+1, len(hashes), h[:6])
		}
		state = append(state, c...)
	}
	return state, nil
}
