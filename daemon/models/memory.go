package models

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"runtime"
	"strconv"
)

// lowMemory reports whether loading the file at path would leave less free
// memory than the margin. The file size stands in for the model's resident
// size (weights are mapped from the file). Called with m.mu held.
func (m *Manager) lowMemory(path string) bool {
	if m.o.MemoryMargin < 0 || len(m.loaded) == 0 {
		return false
	}
	avail, ok := m.o.MemAvailable()
	if !ok {
		return false
	}
	var need int64
	if st, err := os.Stat(path); err == nil {
		need = st.Size()
	}
	return avail-need < m.o.MemoryMargin
}

// memAvailable reads MemAvailable from /proc/meminfo. Other systems (darwin)
// report ok=false and the memory check is skipped.
func memAvailable() (int64, bool) {
	if runtime.GOOS != "linux" {
		return 0, false
	}
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	return parseMemAvailable(f)
}

// parseMemAvailable finds the "MemAvailable:  N kB" line of a meminfo file.
func parseMemAvailable(r io.Reader) (int64, bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, found := bytes.CutPrefix(sc.Bytes(), []byte("MemAvailable:"))
		if !found {
			continue
		}
		fields := bytes.Fields(rest)
		if len(fields) == 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(string(fields[0]), 10, 64)
		if err != nil || n < 0 {
			return 0, false
		}
		mult := int64(1)
		if len(fields) > 1 && string(fields[1]) == "kB" {
			mult = 1024
		}
		if n > (1<<62)/mult {
			return 0, false
		}
		return n * mult, true
	}
	return 0, false
}
