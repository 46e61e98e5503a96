package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ruvllm/ruvllm/engine/mapfault"
	"github.com/ruvllm/ruvllm/engine/prefix"
)

// SaveCache writes the hottest cached prefixes (up to maxBlocks KV blocks)
// with their keys and values to path, atomically. The snapshot is bound to
// this model file: another model rejects it. Prefixes cached under the
// model's adapters (a learned adapter's included: every request of a user
// whose feedback trained one runs under it) go beside path, one file per
// adapter set (SnapshotFiles names them all), within the same maxBlocks:
// the model's own first, then the most recently used sets. Without them,
// no prefix survived a restart once the model had learned anything.
func (m *Model) SaveCache(path string, maxBlocks int) (int, error) {
	if m.cache == nil {
		return 0, nil
	}
	m.mu.Lock() // no forward pass may write KV blocks while they are read
	defer m.mu.Unlock()
	if m.faulted.Load() {
		// Blocks computed from a file changed under the model: keep the
		// snapshot saved before, if any, rather than these.
		return 0, fmt.Errorf("save prefix cache: %w", mapfault.ErrFault)
	}
	total, err := m.saveNamespace(path, m.namespace, maxBlocks)
	if err != nil {
		return 0, err
	}
	kept := map[string]bool{}
	for _, ns := range m.cache.Namespaces() {
		if !m.adapterNamespaceOf(ns) || total >= maxBlocks {
			continue
		}
		p := adapterSnapshotPath(path, ns)
		n, err := m.saveNamespace(p, ns, maxBlocks-total)
		if err != nil {
			// The adapters' files of the last save stay, as a crash
			// here would leave them: each is whole, and the next
			// complete save replaces or removes it.
			return total, err
		}
		if n == 0 {
			os.Remove(p)
			continue
		}
		kept[p] = true
		total += n
	}
	// Only once every file is written do those of the last save that this
	// one did not rewrite go (their adapters may be gone): removed first,
	// a crash or kill -9 mid-save lost every adapter's prefixes.
	for _, p := range SnapshotFiles(path)[1:] {
		if !kept[p] {
			os.Remove(p)
		}
	}
	return total, nil
}

// saveNamespace writes the prefixes of namespace ns (at most maxBlocks
// blocks) to path: to a temporary file that replaces path only once it is
// complete and synced, so a crash mid-write leaves the old snapshot, and
// no copy of the blocks is held in memory.
func (m *Model) saveNamespace(path, ns string, maxBlocks int) (int, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".prefix-*")
	if err != nil {
		return 0, fmt.Errorf("save prefix cache: %w", err)
	}
	defer os.Remove(tmp.Name())
	n, err := m.cache.Save(tmp, ns, m.kv, maxBlocks)
	if err != nil {
		tmp.Close()
		return 0, fmt.Errorf("save prefix cache: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return 0, fmt.Errorf("save prefix cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return 0, fmt.Errorf("save prefix cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return 0, fmt.Errorf("save prefix cache: %w", err)
	}
	return n, nil
}

// adapterNamespaceOf reports whether ns is the namespace of one of this
// model's adapter sets (adapterNamespace): its name holds the adapters'
// checksums, so the same adapters applied again find its prefixes.
func (m *Model) adapterNamespaceOf(ns string) bool {
	return strings.HasPrefix(ns, m.namespace+"|lora:")
}

// adapterSnapshotPath is the file beside the snapshot at path that holds
// the prefixes of adapter namespace ns.
func adapterSnapshotPath(path, ns string) string {
	sum := sha256.Sum256([]byte(ns))
	return strings.TrimSuffix(path, ".snap") + ".lora-" + hex.EncodeToString(sum[:8]) + ".snap"
}

// SnapshotFiles returns the files of the snapshot SaveCache wrote to path:
// path itself, then those of the model's adapters beside it.
func SnapshotFiles(path string) []string {
	files := []string{path}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	head := strings.TrimSuffix(base, ".snap") + ".lora-"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return files
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, head) && strings.HasSuffix(n, ".snap") && e.Type().IsRegular() {
			files = append(files, filepath.Join(dir, n))
		}
	}
	return files
}

// LoadCache restores prefixes saved by SaveCache: the model's own from
// path, then those of its adapters beside it, and returns the blocks
// restored. A corrupt snapshot at path, or one made for another model or
// cache layout, is an error wrapping prefix.ErrBadSnapshot (a missing one
// os.ErrNotExist) and nothing of it is loaded; the adapters' files are
// loaded either way, and a bad one is logged, removed and skipped.
func (m *Model) LoadCache(path string) (int, error) {
	if m.cache == nil {
		return 0, nil
	}
	n, baseErr := m.loadSnapshot(path, func(ns string) bool { return ns == m.namespace })
	if baseErr != nil {
		n = 0
	}
	// The adapters' files are loaded whatever became of the model's own:
	// a missing or corrupt one cost them all.
	for _, p := range SnapshotFiles(path)[1:] {
		k, err := m.loadSnapshot(p, m.adapterNamespaceOf)
		if err != nil {
			m.log.Warn("prefix-cache snapshot of an adapter not restored", "path", p, "err", err)
			if errors.Is(err, prefix.ErrBadSnapshot) {
				os.Remove(p)
			}
			continue
		}
		n += k
	}
	return n, baseErr
}

// loadSnapshot loads the snapshot at path if accept takes its namespace.
// Only a regular file is read, opened without blocking: a FIFO (or a
// device) at a snapshot's name blocked the model's load for ever, and
// every request waiting for the model with it.
func (m *Model) loadSnapshot(path string, accept func(ns string) bool) (int, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return 0, fmt.Errorf("prefix snapshot %s: %w", path, err)
	} else if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%w: %s is not a regular file (%s)", prefix.ErrBadSnapshot, path, fi.Mode().Type())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, _, err := m.cache.LoadMatching(f, accept, m.kv)
	return n, err
}

// CacheLayout names what the options chose of the cached keys and values
// (the arithmetic that computed them, the KV layout: an f16 cache or one
// with a quantized cold tier of Q8_0 or Q4_0; for Phi-3's LongRoPE, the
// factors the context picked). Snapshots of one layout are
// not restored in another, so a daemon keeps one snapshot per layout and
// a switch of options does not lose the other's.
func (m *Model) CacheLayout() string { return m.cacheLayout }
