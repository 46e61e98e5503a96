package llm

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ruvllm/ruvllm/engine/mapfault"
)

// SaveCache writes the hottest cached prefixes (up to maxBlocks KV blocks)
// with their keys and values to path, atomically. The snapshot is bound to
// this model file: another model rejects it.
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
	// The snapshot goes straight to a temporary file that replaces path
	// only once it is complete and synced: a crash mid-write leaves the
	// old snapshot, and no copy of the blocks is held in memory.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".prefix-*")
	if err != nil {
		return 0, fmt.Errorf("save prefix cache: %w", err)
	}
	defer os.Remove(tmp.Name())
	n, err := m.cache.Save(tmp, m.namespace, m.kv, maxBlocks)
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

// LoadCache restores prefixes saved by SaveCache. A corrupt snapshot, or
// one made for another model or cache layout, is rejected with an error
// wrapping prefix.ErrBadSnapshot and nothing is loaded.
func (m *Model) LoadCache(path string) (int, error) {
	if m.cache == nil {
		return 0, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cache.Load(f, m.namespace, m.kv)
}

// CacheLayout names what the options chose of the cached keys and values
// (the arithmetic that computed them, the KV layout: an f16 cache or one
// with a quantized cold tier of Q8_0 or Q4_0). Snapshots of one layout are
// not restored in another, so a daemon keeps one snapshot per layout and
// a switch of options does not lose the other's.
func (m *Model) CacheLayout() string { return m.cacheLayout }
