// Package disk answers two questions the daemon asks before and while it
// writes large files (adapter uploads, model downloads): how much room is
// left on a file system, and whether a write failed because it is full.
package disk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// ErrNoSpace is returned when a file would not fit on its file system, or
// when a write ran out of room. The API answers it with 507.
var ErrNoSpace = errors.New("not enough free disk space")

// Margin is the free space a large write must leave behind.
const Margin = 256 << 20

// Check returns ErrNoSpace (with the figures) when writing need more bytes
// into dir would leave less than Margin free. Where free space cannot be
// read, it returns nil: the write itself will tell.
func Check(dir string, need int64) error {
	free, ok := Free(dir)
	if !ok || need < 0 {
		return nil
	}
	if need+Margin > free {
		return fmt.Errorf("%w in %s: %d MiB needed (and %d MiB kept free), %d MiB free",
			ErrNoSpace, dir, need>>20, int64(Margin)>>20, free>>20)
	}
	return nil
}

// Room returns how many bytes a write of unknown length (a chunked
// upload) may put into dir and still leave Margin free, as Check keeps it
// for a write whose length is known. ok is false where free space cannot
// be read: the write itself will tell.
func Room(dir string) (room int64, ok bool) {
	free, ok := Free(dir)
	if !ok {
		return 0, false
	}
	return max(free-Margin, 0), true
}

// IsFull reports whether err is a write that ran out of space (ENOSPC or
// a disk quota).
func IsFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, ErrNoSpace)
}

// RemoveTemp removes the daemon's temporary upload files in dir (regular
// files whose names start with one of prefixes, as os.CreateTemp makes
// them) and returns the bytes it freed. An upload streams into such a file
// and renames or removes it when it ends, so at start any that remain
// were cut off by a crash or kill -9, and nothing else would ever remove
// them; except one another daemon is writing (made with CreateTemp, still
// locked): the state store's lock keeps a second daemon off the state
// directory only, and one with its own state directory shares the models,
// cache and adapters directories. Its start removed the first's
// quantization or upload under way, which then failed at its rename.
func RemoveTemp(dir string, prefixes ...string) int64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var freed int64
	for _, e := range ents {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(e.Name(), p) }) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		info, err := e.Info()
		if err != nil {
			continue
		}
		switch {
		case info.Mode().IsRegular():
			if inUse(p) {
				continue
			}
			if os.Remove(p) == nil {
				freed += info.Size()
			}
		case info.IsDir(): // a PEFT adapter's staging directory
			if os.RemoveAll(p) == nil {
				freed += info.Size()
			}
		}
	}
	return freed
}
