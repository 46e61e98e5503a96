package gguf

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Open memory-maps the file at path read-only and parses it. On platforms
// without mmap support the file is read into memory instead. Close the File
// to release the mapping.
func Open(path string) (*File, error) {
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
	f, err := Parse(data)
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
