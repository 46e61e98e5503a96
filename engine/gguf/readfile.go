package gguf

import (
	"io"
	"os"
)

// readFile is the fallback when the file cannot be mapped.
func readFile(fh *os.File, size int) ([]byte, func() error, error) {
	b := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(fh, 0, int64(size)), b); err != nil {
		return nil, nil, err
	}
	return b, nil, nil
}
