package models

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
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

// ErrInsufficientMemory wraps the refusal of a model whose weights and KV
// cache need more memory than is free (Ollama's "model requires more
// system memory than is available").
var ErrInsufficientMemory = errors.New("model requires more system memory than is available")

// loadFitting loads the file at path (file: its stat, nil if unknown)
// unless it cannot fit in the free memory, which is checked for every
// load, the first one too (makeRoom's margin only decides which idle
// models to unload): refused, where the kernel would kill the daemon. The
// weights (the file's size) are checked before the file is read, the KV
// cache once loading it told its size: the cache is mapped, not yet
// touched (the warm-up touches it), so a model refused then is closed
// before it costs the memory.
func (m *Manager) loadFitting(path string, file os.FileInfo) (Model, error) {
	avail, known := m.o.MemAvailable()
	if !known || m.o.MemoryMargin < 0 {
		return m.o.Loader(context.Background(), path)
	}
	var weights int64
	if file != nil {
		weights = file.Size()
	}
	if err := checkFits(weights, 0, avail); err != nil {
		return nil, err
	}
	model, err := m.o.Loader(context.Background(), path)
	if err != nil {
		return nil, err
	}
	if err := checkFits(weights, model.Info().KVBytes, avail); err != nil {
		model.Close()
		return nil, err
	}
	return model, nil
}

// checkFits refuses weights and a KV cache of kv bytes (0: not yet known)
// that need more than avail bytes.
func checkFits(weights, kv, avail int64) error {
	need := weights + max(kv, 0)
	if need <= avail {
		return nil
	}
	if kv > 0 {
		return fmt.Errorf("%w: %s (weights %s, KV cache %s; a smaller --ctx-size shrinks the cache), %s free",
			ErrInsufficientMemory, mib(need), mib(weights), mib(kv), mib(avail))
	}
	return fmt.Errorf("%w: %s of weights, %s free", ErrInsufficientMemory, mib(weights), mib(avail))
}

// mib formats n bytes in MiB.
func mib(n int64) string { return strconv.FormatInt(n>>20, 10) + " MiB" }

// memAvailable reads MemAvailable from /proc/meminfo, lowered to what
// the daemon's memory cgroup has left where it has a limit (a container,
// a systemd unit's MemoryMax): past that limit the kernel kills the
// daemon, however much the machine has free. Other systems (darwin)
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
	avail, ok := parseMemAvailable(f)
	if !ok {
		return 0, false
	}
	if self, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		if left, limited := cgroupHeadroom(os.DirFS("/sys/fs/cgroup"), self); limited {
			avail = min(avail, left)
		}
	}
	return avail, true
}

// cgroupHeadroom is the memory the cgroup of /proc/self/cgroup (self)
// has left under its limit, in fsys (the cgroup file system's root):
// the limit less what is used, page cache that can be dropped not
// counted, the least of its own and its ancestors'. limited is false
// where no limit is set or none is found.
// cgroup v2 (0::/path: memory.max, memory.current, memory.stat's
// inactive_file) and v1 (N:memory:/path: memory.limit_in_bytes,
// memory.usage_in_bytes, memory.stat's total_inactive_file) are read.
func cgroupHeadroom(fsys fs.FS, self []byte) (left int64, limited bool) {
	for _, line := range strings.Split(string(self), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		v2 := parts[0] == "0" && parts[1] == ""
		v1 := slices.Contains(strings.Split(parts[1], ","), "memory")
		if !v2 && !v1 {
			continue
		}
		dir, limitFile, usageFile, inactiveKey := ".", "memory.max", "memory.current", "inactive_file"
		if v1 {
			dir, limitFile, usageFile, inactiveKey = "memory", "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"
		}
		// The cgroup and each one above it (a limit on a parent slice
		// holds too): the least headroom of those with a limit. A
		// container sees its own cgroup at the root.
		for d := path.Join(dir, strings.TrimPrefix(parts[2], "/")); ; d = path.Dir(d) {
			limit, ok := readBytes(fsys, path.Join(d, limitFile))
			if ok && limit < 1<<60 { // not "max", nor v1's page-rounded MaxInt64
				if used, ok := readBytes(fsys, path.Join(d, usageFile)); ok {
					if stat, err := fs.ReadFile(fsys, path.Join(d, "memory.stat")); err == nil {
						used -= min(used, statValue(stat, inactiveKey))
					}
					if here := max(limit-used, 0); !limited || here < left {
						left, limited = here, true
					}
				}
			}
			if d == dir || d == "." || d == "/" {
				break
			}
		}
	}
	return left, limited
}

// readBytes reads a cgroup file of one number of bytes ("max": no limit).
func readBytes(fsys fs.FS, name string) (int64, bool) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return math.MaxInt64, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= 0
}

// statValue is the value of key in a memory.stat file (0 when absent).
func statValue(stat []byte, key string) int64 {
	for _, line := range strings.Split(string(stat), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
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
