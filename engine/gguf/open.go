package gguf

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/ruvllm/ruvllm/engine/mapfault"
)

// Open memory-maps the file at path read-only and parses it. On platforms
// without mmap support the file is read into memory instead. Close the File
// to release the mapping.
func Open(path string) (*File, error) {
	// Stat before opening: opening a FIFO for reading blocks until a
	// writer comes, and a device or socket is no model file either.
	if st, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("gguf: %w", err) // "stat PATH: why"
	} else if st.IsDir() {
		return nil, fmt.Errorf("gguf: %s is a directory", path)
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("gguf: %s is not a regular file (%s)", path, FileKind(st.Mode()))
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err) // "open PATH: why"
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err) // "stat PATH: why"
	}
	if st.IsDir() {
		return nil, fmt.Errorf("gguf: %s is a directory", path)
	}
	size := st.Size()
	if size < 4 {
		return nil, fmt.Errorf("gguf: %s: %w: %d bytes", path, ErrNotGGUF, size)
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("gguf: %s: %d bytes do not fit in this platform's address space", path, size)
	}
	data, unmap, err := mapFile(fh, int(size))
	if err != nil {
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			return nil, fmt.Errorf("gguf: %w", err) // names the path
		}
		return nil, fmt.Errorf("gguf: map %s: %w", path, err)
	}
	f, err := parseMapped(data)
	if err != nil {
		if unmap != nil {
			_ = unmap()
		}
		return nil, fmt.Errorf("gguf: %s: %w", path, err)
	}
	f.closer = unmap
	f.mapped = unmap != nil
	return f, nil
}

// FileKind names the kind of a file ("a named pipe", "a directory", ...)
// for errors about a path: a mode's type bits alone print a regular file
// as "----------", which names nothing.
func FileKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "mode " + m.String()
}

// parseMapped is Parse over a file's mapping, where a fault (the file
// truncated while it is read) is an error rather than the end of the
// process.
func parseMapped(data []byte) (_ *File, err error) {
	defer mapfault.Catch(&err, mapfault.Arm())
	return Parse(data)
}
