// Package models is ruvllmd's model manager: it resolves model names to
// GGUF files, loads a model on first use (one load shared by concurrent
// callers), keeps it warm for its keep-alive, unloads idle models (least
// recently used first when over the limit), and saves and restores each
// model's prefix cache across restarts.
package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/prefix"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/spec"
	"github.com/ruvllm/ruvllm/ipc"
)

// ErrNotFound is returned for a model name that matches no file.
var ErrNotFound = errors.New("model not found")

// ErrLoadFailed wraps a failed model load; every caller waiting on that
// load gets it (the API answers 503).
var ErrLoadFailed = errors.New("model load failed")

// Publisher receives manager events.
type Publisher interface{ Publish(typ string, data any) }

// Model is a loaded model as the manager and the API handlers use it;
// *llm.Model implements it. Handlers reach optional abilities (prefix-cache
// statistics, tokenizer, architecture config) through type assertions, so
// a test double needs only these four methods.
type Model interface {
	Info() llm.Info
	// Generate streams tokens to onToken; an error from onToken or a
	// cancelled ctx stops generation within one token.
	Generate(ctx context.Context, req llm.Request, onToken func(llm.Token) error) (llm.Result, error)
	// Embed returns one normalised mean-pooled vector per input and the
	// number of tokens read.
	Embed(ctx context.Context, inputs []string, opts llm.EmbedOptions) ([][]float32, int, error)
	Close() error
}

// Warmer is implemented by models that can run a throw-away pass after
// loading (llm.Model.Warmup), so that the first request does not pay for
// paging in the weights and sizing scratch buffers. Callers waiting for
// the load are released after it.
type Warmer interface {
	Warmup(ctx context.Context) error
}

// Loader opens the model file at path.
type Loader func(ctx context.Context, path string) (Model, error)

// CacheSnapshotter is implemented by models whose prefix cache can be saved
// on unload and restored on load.
type CacheSnapshotter interface {
	SaveCache(path string, maxBlocks int) (int, error)
	LoadCache(path string) (int, error)
}

// Options configures a Manager.
type Options struct {
	Dir       string        // models directory
	CacheDir  string        // where prefix-cache snapshots and drafts made from a model itself live ("" disables both)
	KeepAlive time.Duration // default keep-alive (default 5m; negative: forever; 0 with UnloadIdle: none)
	// UnloadIdle makes a KeepAlive of 0 mean none: a model is unloaded as
	// soon as no request uses it (Ollama's OLLAMA_KEEP_ALIVE=0), where a
	// zero KeepAlive otherwise takes the default.
	UnloadIdle bool
	MaxLoaded  int // models held at once (default 1)
	// MaxQueue bounds each model's waiting requests (llm.Options.MaxQueue).
	MaxQueue int
	Threads  int
	// ContextLength is each loaded model's context per sequence
	// (llm.Options.ContextLength; 0: the model's own, at most 4096).
	ContextLength int
	// NewBackend, when set, creates each loaded model's compute backend
	// (llm.Options.NewBackend); nil runs models on the CPU backend.
	NewBackend func() (compute.Backend, error)
	// Exact runs models on the CPU backend in llama.cpp's arithmetic
	// (llm.Options.Exact).
	Exact bool
	// Default is the model used when a request names none.
	Default string
	Events  Publisher
	Logger  *slog.Logger
	// SnapshotBlocks bounds each saved prefix cache (default 4096 blocks).
	SnapshotBlocks int
	// Registry, when set, records pulled models and forgets removed ones.
	Registry Registry
	// Loader opens model files (default: llm.Load with Threads,
	// NewBackend, Speculate and Draft).
	Loader Loader
	// Speculate is the speculative decoding the default loader offers
	// requests; Draft names the draft model file of a model name ("" for
	// none).
	Speculate spec.Kinds
	Draft     func(name string) string
	// KVCold and KVHotWindow are llm.Options' cold KV tier for the
	// default loader.
	KVCold      quant.Type
	KVHotWindow int
	// MemoryMargin is the free memory (bytes) a load must leave; before a
	// load that would go below it, idle models are unloaded first
	// (default 512 MiB; negative disables the check).
	MemoryMargin int64
	// MemAvailable reports free memory in bytes (default: /proc/meminfo's
	// MemAvailable on Linux; where unknown, ok is false and the check is
	// skipped).
	MemAvailable func() (n int64, ok bool)
	// OnLoad, when set, is called once a model is loaded and serving
	// (the learning loops attach there); it must not block.
	OnLoad func(name, path string, m Model)
	// OnUnload, when set, is called when a model is about to unload,
	// before it closes; the model is no longer served. It may block until
	// the work on the model has stopped.
	OnUnload func(name string, m Model)
}

// Manager owns the loaded models.
type Manager struct {
	o Options

	mu        sync.Mutex
	loaded    map[string]*entry
	loading   map[string]*loadCall
	unloading int // models taken out of loaded whose unload has not finished
	closed    bool
	// cleared counts ClearSnapshots calls: a model loading or unloading
	// across one keeps none of the prefixes it cleared.
	cleared uint64
}

type entry struct {
	name, path string
	// shown is the name Loaded gives the model: the one the request that
	// loaded it named (a created model over this file), "" for name.
	shown     string
	model     Model
	refs      int
	lastUsed  time.Time
	keepAlive time.Duration
	timer     *time.Timer
	loadTime  time.Duration
	// cleared is Manager.cleared when the entry was detached.
	cleared uint64
	// file is the model file as it was when loading began (nil if it
	// could not be read): a file replaced since is loaded again.
	file os.FileInfo
}

type loadCall struct {
	done chan struct{}
	path string
	as   string // the entry's shown name
	e    *entry
	err  error
}

// New returns a manager; it loads nothing until asked.
func New(o Options) *Manager {
	if o.KeepAlive == 0 && !o.UnloadIdle {
		o.KeepAlive = 5 * time.Minute
	}
	if o.MaxLoaded <= 0 {
		o.MaxLoaded = 1
	}
	if o.SnapshotBlocks <= 0 {
		o.SnapshotBlocks = 4096
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Loader == nil {
		threads, logger, newBackend, speculate, draft, exact := o.Threads, o.Logger, o.NewBackend, o.Speculate, o.Draft, o.Exact
		var draftDir string // drafts made from a model itself ("self:TYPE")
		if o.CacheDir != "" {
			draftDir = filepath.Join(o.CacheDir, "drafts")
		}
		cold, window, ctxLen, maxQueue := o.KVCold, o.KVHotWindow, o.ContextLength, o.MaxQueue
		o.Loader = func(ctx context.Context, path string) (Model, error) {
			// A draft model that cannot be used costs speculation, not the
			// model: DraftOptional serves it without; so does a cold tier
			// the model's head size cannot take (KVColdOptional).
			lo := llm.Options{Threads: threads, Logger: logger, Sequences: 4, NewBackend: newBackend, Speculate: speculate,
				KVCold: cold, KVHotWindow: window, Exact: exact, ContextLength: ctxLen, DraftOptional: true, KVColdOptional: true,
				MaxQueue: maxQueue}
			if draft != nil {
				lo.Draft, lo.DraftDir = draft(llm.NameFromPath(path)), draftDir
			}
			return llm.Load(ctx, path, lo)
		}
	}
	if o.MemoryMargin == 0 {
		o.MemoryMargin = 512 << 20
	}
	if o.MemAvailable == nil {
		o.MemAvailable = memAvailable
	}
	return &Manager{o: o, loaded: map[string]*entry{}, loading: map[string]*loadCall{}}
}

// Available is a model the manager can load.
type Available struct {
	Name     string
	Path     string
	Size     int64
	Modified time.Time
}

// List returns the models in the models directory, plus the default and
// any loaded model given by path.
func (m *Manager) List() ([]Available, error) {
	seen := map[string]bool{}
	var out []Available
	add := func(path string) {
		// Regular files only (a symlink's target): a FIFO or a device was
		// listed as a model of size 0 that every request refused.
		st, err := os.Stat(path)
		if err != nil || !st.Mode().IsRegular() {
			return
		}
		name := llm.NameFromPath(path)
		if seen[name] {
			return
		}
		seen[name] = true
		out = append(out, Available{Name: name, Path: path, Size: st.Size(), Modified: st.ModTime()})
	}
	// The default model given by path comes first: a file of the same
	// name in the models directory never shadows it (nor does deleting
	// that file reach it).
	if m.o.Default != "" && strings.HasSuffix(m.o.Default, ".gguf") {
		add(m.o.Default)
	}
	if m.o.Dir != "" {
		// The extension in any case: a pull of OWNER/REPO/NAME.GGUF lands
		// as NAME.GGUF, and a model it reports pulled must be listed (a
		// case-sensitive "*.gguf" glob left it on disk, never served).
		// Files ending in ".gguf" come first, so a name two files share
		// keeps naming the one it named before. As with a glob, a
		// directory that cannot be read lists nothing.
		ents, _ := os.ReadDir(m.o.Dir)
		for _, exact := range []bool{true, false} {
			for _, e := range ents {
				ext := filepath.Ext(e.Name())
				if strings.EqualFold(ext, ".gguf") && (ext == ".gguf") == exact {
					add(filepath.Join(m.o.Dir, e.Name()))
				}
			}
		}
	}
	m.mu.Lock()
	for _, e := range m.loaded {
		add(e.path)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Resolve maps a request's model name to a file: "" means the default, an
// existing .gguf path is used as is, otherwise the name is matched against
// the models directory (case-insensitive, ".gguf" optional, Ollama's
// ":latest" tag ignored).
func (m *Manager) Resolve(name string) (string, error) {
	if name == "" || name == "default" {
		if m.o.Default == "" {
			return "", fmt.Errorf("%w: no model named and no default model configured", ErrNotFound)
		}
		name = m.o.Default
	}
	if strings.HasSuffix(name, ".gguf") || filepath.IsAbs(name) {
		if st, err := os.Stat(name); err == nil && st.Mode().IsRegular() {
			return filepath.Abs(name)
		}
	}
	want := strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(name, ":latest"), ".gguf"))
	list, err := m.List()
	if err != nil {
		return "", err
	}
	for _, a := range list {
		if a.Name == want {
			return a.Path, nil
		}
	}
	return "", fmt.Errorf("%w: %q (see GET /v1/models)", ErrNotFound, name)
}

// nameTaken is the error for a request of the model file path while
// another file of the same name (key) is loaded or loading: models are
// known by name (requests, the prefix-cache snapshot, learning), so
// handing out the loaded one served another model than the one asked for
// — a path naming a file called like the default model took that name
// from every app until it unloaded.
func nameTaken(key, loaded, path string) error {
	return fmt.Errorf("%w: %q is loaded from %s, so %s (a file of the same name) cannot be loaded until it unloads",
		ErrInUse, key, loaded, path)
}

// sameFile reports whether paths a and b name one file (a symlink and its
// target do).
func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// Handle is a model in use; Release it when the request ends.
type Handle struct {
	Model    Model
	Name     string
	LoadTime time.Duration // time spent loading for this request (0 when warm)
	m        *Manager
	e        *entry
	once     sync.Once
}

// Release ends the use and restarts the keep-alive countdown.
func (h *Handle) Release() { h.once.Do(func() { h.m.release(h.e) }) }

// Acquire returns the named model, loading it if needed. keepAlive, when
// non-nil, sets how long the model stays loaded after this use.
func (m *Manager) Acquire(ctx context.Context, name string, keepAlive *time.Duration) (*Handle, error) {
	return m.AcquireAs(ctx, name, "", keepAlive)
}

// AcquireAs is Acquire for a request that named the model as another
// name (a created model made from it): a load it starts shows as that
// name in Loaded, as Ollama's ps names a loaded model by the model whose
// request loaded it, for as long as it stays loaded. "" is name.
func (m *Manager) AcquireAs(ctx context.Context, name, as string, keepAlive *time.Duration) (*Handle, error) {
	path, err := m.Resolve(name)
	if err != nil {
		return nil, err
	}
	key := llm.NameFromPath(path)
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, errors.New("model manager closed")
		}
		if e := m.loaded[key]; e != nil {
			if !sameFile(e.path, path) {
				// An idle model of this name from another file (a created
				// model FROM a path named like a file of the models
				// directory) is unloaded and this file loaded, as for any
				// other model; it refused every request for the file until
				// its keep-alive ran out. One in use keeps its name.
				if m.detach(e) {
					m.mu.Unlock()
					m.finishUnload(e)
					continue
				}
				m.mu.Unlock()
				return nil, nameTaken(key, e.path, path)
			}
			// The file was replaced (a new quantization renamed over it):
			// the loaded model is another one, which requests naming it
			// kept getting while /api/show and /api/tags described the
			// new file. An idle model is unloaded and the file loaded
			// again, keeping its keep-alive; one in use serves its
			// requests on.
			if e.refs == 0 && (fileReplaced(e) || faulted(e)) && m.detach(e) {
				if keepAlive == nil {
					kept := e.keepAlive
					keepAlive = &kept
				}
				m.mu.Unlock()
				m.finishUnload(e)
				continue
			}
			e.refs++
			e.lastUsed = time.Now()
			if e.timer != nil {
				e.timer.Stop()
				e.timer = nil
			}
			if keepAlive != nil {
				e.keepAlive = *keepAlive
			}
			m.mu.Unlock()
			return &Handle{Model: e.model, Name: key, m: m, e: e}, nil
		}
		call := m.loading[key]
		if call == nil {
			call = &loadCall{done: make(chan struct{}), path: path, as: as}
			m.loading[key] = call
			m.mu.Unlock()
			go m.load(key, path, call)
		} else if !sameFile(call.path, path) {
			m.mu.Unlock()
			return nil, nameTaken(key, call.path, path)
		} else {
			m.mu.Unlock()
		}
		select {
		case <-call.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if call.err != nil {
			return nil, call.err
		}
		m.mu.Lock()
		if e := m.loaded[key]; e != nil && e == call.e {
			e.refs++
			e.lastUsed = time.Now()
			if keepAlive != nil {
				e.keepAlive = *keepAlive
			}
			m.mu.Unlock()
			return &Handle{Model: e.model, Name: key, LoadTime: e.loadTime, m: m, e: e}, nil
		}
		m.mu.Unlock() // unloaded again in between: retry
	}
}

// fileReplaced reports whether e's file is no longer the one it was loaded
// from: another file at its path, or the same one rewritten (size or time
// changed). A file that is gone is not replaced: requests cannot name it.
func fileReplaced(e *entry) bool {
	if e.file == nil {
		return false
	}
	st, err := os.Stat(e.path)
	if err != nil {
		return false
	}
	return !os.SameFile(st, e.file) || st.Size() != e.file.Size() || !st.ModTime().Equal(e.file.ModTime())
}

// rewrittenInPlace reports whether e's file was written to since it was
// loaded (truncated, copied over with cp, dd conv=notrunc): the same file,
// another size or modification time. Its mapping then read the new bytes,
// unlike a file renamed over, whose old data the mapping keeps.
func rewrittenInPlace(e *entry) bool {
	if e.file == nil {
		return false
	}
	st, err := os.Stat(e.path)
	if err != nil {
		return false
	}
	return os.SameFile(st, e.file) && (st.Size() != e.file.Size() || !st.ModTime().Equal(e.file.ModTime()))
}

// faulted reports whether e's model faulted reading its file's mapping
// (the file truncated or overwritten in place): it can serve nothing
// more, and is loaded again from the file as it is now.
func faulted(e *entry) bool {
	f, ok := e.model.(interface{ Faulted() bool })
	return ok && f.Faulted()
}

// load runs in its own goroutine so a cancelled caller does not abort a
// load other callers wait for.
func (m *Manager) load(key, path string, call *loadCall) {
	defer close(call.done)
	m.makeRoom(path)
	file, _ := os.Stat(path)
	start := time.Now()
	model, err := m.loadFitting(path, file)
	if err != nil {
		m.mu.Lock()
		delete(m.loading, key)
		m.mu.Unlock()
		call.err = fmt.Errorf("%w: %s: %w", ErrLoadFailed, key, err)
		m.o.Logger.Error("model load failed", "model", key, "err", err)
		return
	}
	e := &entry{name: key, path: path, shown: call.as, model: model, keepAlive: m.o.KeepAlive, lastUsed: time.Now(), loadTime: time.Since(start), file: file}
	m.mu.Lock()
	cleared := m.cleared
	m.mu.Unlock()
	// The saved prefixes are restored and the warm-up run before the model
	// is published: until then callers wait on call.done, so the first
	// request after a restart finds its prefix in the cache instead of
	// racing the restore (and then missing it).
	restored := m.restoreCache(e)
	var warmup time.Duration
	if w, ok := model.(Warmer); ok {
		start := time.Now()
		if err := w.Warmup(context.Background()); err != nil {
			m.o.Logger.Warn("model warm-up failed", "model", key, "err", err)
		}
		warmup = time.Since(start)
	}
	m.mu.Lock()
	// DELETE /v1/cache came while the model was restoring its snapshot:
	// what it restored was cleared, so it must not be served.
	for m.cleared != cleared {
		cleared = m.cleared
		m.mu.Unlock()
		if c, ok := model.(interface{ ClearCache() }); ok {
			c.ClearCache()
		}
		m.mu.Lock()
	}
	delete(m.loading, key)
	if m.closed { // Close did not see this model: it must not outlive the manager
		m.mu.Unlock()
		model.Close()
		call.err = errors.New("model manager closed")
		return
	}
	m.loaded[key] = e
	call.e = e
	m.mu.Unlock()
	if m.o.OnLoad != nil {
		m.o.OnLoad(key, path, model)
	}
	m.o.Logger.Info("model loaded", "model", key, "path", path, "seconds", e.loadTime.Seconds(),
		"warmup_seconds", warmup.Seconds(), "cached_blocks_restored", restored)
	if m.o.Events != nil {
		m.o.Events.Publish("model.loaded", map[string]any{"model": key, "path": path, "load_seconds": e.loadTime.Seconds(), "cached_blocks": restored})
	}
}

// snapshotPath is where a model's prefix cache is saved: one file per
// cache layout (the arithmetic and KV type chosen), so restarting with
// other options keeps the snapshot of the earlier ones for a switch back
// (a snapshot of another layout is discarded as unusable).
func (m *Manager) snapshotPath(e *entry) string {
	if m.o.CacheDir == "" {
		return ""
	}
	name := "prefix-" + e.name
	if l, ok := e.model.(interface{ CacheLayout() string }); ok && l.CacheLayout() != "" {
		sum := sha256.Sum256([]byte(l.CacheLayout()))
		name += "." + hex.EncodeToString(sum[:4])
	}
	return filepath.Join(m.o.CacheDir, name+".snap")
}

// ClearSnapshots removes the saved prefix caches of every model (the
// prefix-*.snap files of CacheDir), for DELETE /v1/cache, which drops the
// loaded models' cached prefixes: without this, what it dropped came back
// when a model unloaded at the time loaded again, or after a restart. A
// model loading or unloading meanwhile restores or keeps nothing either.
func (m *Manager) ClearSnapshots() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cleared++
	if m.o.CacheDir == "" {
		return nil
	}
	paths, err := filepath.Glob(filepath.Join(m.o.CacheDir, "prefix-*.snap"))
	if err != nil {
		return fmt.Errorf("clear prefix-cache snapshots: %w", err)
	}
	var errs []error
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("clear prefix-cache snapshots: %w", errors.Join(errs...))
	}
	return nil
}

// removeSnapshotsOf removes the saved prefix caches of the model named key,
// of every cache layout, its adapters' files included: a deleted model's
// snapshots (up to Options.SnapshotBlocks blocks of keys and values per
// layout) were kept in the cache dir for ever. Only names snapshotPath
// and llm.SnapshotFiles give are matched, so a model whose name extends
// key ("qwen2.5" for "qwen2") keeps its own.
func (m *Manager) removeSnapshotsOf(key string) {
	if m.o.CacheDir == "" {
		return
	}
	entries, err := os.ReadDir(m.o.CacheDir)
	if err != nil {
		return
	}
	for _, d := range entries {
		if !isSnapshotOf(d.Name(), key) || d.IsDir() {
			continue
		}
		if err := os.Remove(filepath.Join(m.o.CacheDir, d.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			m.o.Logger.Warn("removing a deleted model's prefix-cache snapshot", "model", key, "err", err)
		}
	}
}

// isSnapshotOf reports whether file is a prefix-cache snapshot of the
// model named key: prefix-KEY.snap (before layouts), prefix-KEY.LAYOUT.snap
// or an adapter set's prefix-KEY.LAYOUT.lora-SET.snap, LAYOUT 8 and SET 16
// hex digits.
func isSnapshotOf(file, key string) bool {
	rest, ok := strings.CutPrefix(file, "prefix-"+key+".")
	if !ok {
		return false
	}
	if rest == "snap" {
		return true
	}
	rest, ok = strings.CutSuffix(rest, ".snap")
	if !ok || len(rest) < 8 || !isHex(rest[:8]) {
		return false
	}
	set, ok := strings.CutPrefix(rest[8:], ".lora-")
	return rest[8:] == "" || ok && len(set) == 16 && isHex(set)
}

// isHex reports whether s is made of lowercase hex digits only.
func isHex(s string) bool {
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// restoreCache loads the model's saved prefix cache; a bad snapshot is
// logged and deleted, never trusted.
func (m *Manager) restoreCache(e *entry) int {
	p := m.snapshotPath(e)
	snap, ok := e.model.(CacheSnapshotter)
	if p == "" || !ok {
		return 0
	}
	// n counts the adapters' prefixes too, restored whatever became of the
	// model's own file.
	n, err := snap.LoadCache(p)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrNotExist):
	case errors.Is(err, prefix.ErrBadSnapshot):
		m.o.Logger.Warn("discarding prefix-cache snapshot", "path", p, "err", err)
		os.Remove(p)
	default:
		m.o.Logger.Warn("prefix-cache snapshot not restored", "path", p, "err", err)
	}
	return n
}

// makeRoom unloads idle models, least recently used first, while the
// limit would be exceeded or loading path would leave less free memory
// than the margin. A model in use is never unloaded.
func (m *Manager) makeRoom(path string) {
	for {
		m.mu.Lock()
		if len(m.loaded) < m.o.MaxLoaded && !m.lowMemory(path) {
			m.mu.Unlock()
			return
		}
		victim := m.idleLRU()
		m.mu.Unlock()
		if victim == nil {
			return // all busy: load anyway, over the limit, rather than fail
		}
		m.unload(victim)
	}
}

// idleLRU is the least recently used loaded model no request uses (nil
// when all are busy); m.mu is held.
func (m *Manager) idleLRU() *entry {
	var victim *entry
	for _, e := range m.loaded {
		if e.refs == 0 && (victim == nil || e.lastUsed.Before(victim.lastUsed)) {
			victim = e
		}
	}
	return victim
}

func (m *Manager) release(e *entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e.refs--
	e.lastUsed = time.Now()
	if e.refs > 0 {
		return
	}
	// Models loaded over the limit while every loaded one was busy
	// (makeRoom loads anyway) go once idle, least recently used first:
	// otherwise they stayed until the next load or their keep-alive, for
	// ever with a negative one. As with keep-alive 0, the caller answers
	// while their caches are saved and they close.
	for len(m.loaded) > m.o.MaxLoaded {
		victim := m.idleLRU()
		if victim == nil || !m.detach(victim) {
			break
		}
		go m.finishUnload(victim)
	}
	if m.loaded[e.name] != e || e.keepAlive < 0 {
		return
	}
	if e.keepAlive == 0 {
		// Out of the loaded set before the caller answers, so that a
		// client that asks what is loaded next does not see it (Ollama's
		// keep_alive 0); saving its cache and closing it go on behind.
		if m.detach(e) {
			go m.finishUnload(e)
		}
		return
	}
	e.timer = time.AfterFunc(e.keepAlive, func() { m.unload(e) })
}

// unload removes an idle model, saving its prefix cache first.
func (m *Manager) unload(e *entry) {
	m.mu.Lock()
	ok := m.detach(e)
	m.mu.Unlock()
	if ok {
		m.finishUnload(e)
	}
}

// detach takes the idle model e out of the loaded set, m.mu held, and
// reports whether it did (false: another unload took it, or a request
// holds it); finishUnload must follow.
func (m *Manager) detach(e *entry) bool {
	if m.loaded[e.name] != e || e.refs > 0 {
		return false
	}
	delete(m.loaded, e.name)
	if e.timer != nil {
		e.timer.Stop()
	}
	m.unloading++
	e.cleared = m.cleared
	return true
}

// finishUnload saves a detached model's prefix cache and closes it.
func (m *Manager) finishUnload(e *entry) {
	defer func() {
		m.mu.Lock()
		m.unloading--
		m.mu.Unlock()
	}()
	if m.o.OnUnload != nil {
		m.o.OnUnload(e.name, e.model)
	}
	snap, ok := e.model.(CacheSnapshotter)
	if ok && m.snapshotPath(e) != "" && rewrittenInPlace(e) {
		// Blocks computed since the file changed under the mapping are
		// neither the old file's nor the new one's, and its identity
		// (sampled) may be the old one's: a file put back as it was then
		// restored them and answered wrongly. Keep the snapshot saved
		// before, if any.
		m.o.Logger.Warn("not saving the prefix cache: the model file was rewritten while loaded", "model", e.name)
		ok = false
	}
	if ok && m.snapshotPath(e) != "" {
		n, err := snap.SaveCache(m.snapshotPath(e), m.o.SnapshotBlocks)
		if err != nil {
			m.o.Logger.Warn("saving prefix cache", "model", e.name, "err", err)
		}
		// Cleared after the model left the loaded set: keep nothing, of a
		// save that failed partway too (its files written before the error
		// brought back what the clear dropped).
		m.mu.Lock()
		if m.cleared != e.cleared {
			for _, p := range llm.SnapshotFiles(m.snapshotPath(e)) {
				if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
					m.o.Logger.Warn("removing a cleared prefix-cache snapshot", "model", e.name, "err", err)
				}
			}
			n = 0
		}
		m.mu.Unlock()
		if err == nil {
			m.o.Logger.Info("prefix cache saved", "model", e.name, "blocks", n)
			// The one file of versions that kept a snapshot per model.
			os.Remove(filepath.Join(m.o.CacheDir, "prefix-"+e.name+".snap"))
		}
	}
	e.model.Close()
	m.o.Logger.Info("model unloaded", "model", e.name)
	if m.o.Events != nil {
		m.o.Events.Publish("model.unloaded", map[string]any{"model": e.name})
	}
}

// Unload unloads the named model now if it is idle.
func (m *Manager) Unload(name string) {
	m.mu.Lock()
	e := m.loaded[strings.ToLower(name)]
	m.mu.Unlock()
	if e != nil {
		m.unload(e)
	}
}

// Loaded describes the models in memory.
func (m *Manager) Loaded() []ipc.LoadedModel {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ipc.LoadedModel
	for _, e := range m.loaded {
		info := e.model.Info()
		name := e.name
		if e.shown != "" {
			name = e.shown
		}
		lm := ipc.LoadedModel{Name: name, Path: e.path, Arch: info.Architecture, FileType: info.FileType,
			Size: info.FileSize, Context: info.ContextLength, KVBytes: info.KVBytes, Active: e.refs}
		if e.keepAlive >= 0 && e.refs == 0 {
			lm.ExpiresAt = e.lastUsed.Add(e.keepAlive)
		}
		out = append(out, lm)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Models returns the loaded models by name (for cache statistics).
func (m *Manager) Models() map[string]Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]Model{}
	for k, e := range m.loaded {
		out[k] = e.model
	}
	return out
}

// Close unloads every model (saving prefix caches); in-use models are
// waited for until ctx ends.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	for {
		m.mu.Lock()
		var busy, idle []*entry
		for _, e := range m.loaded {
			if e.refs > 0 {
				busy = append(busy, e)
			} else {
				idle = append(idle, e)
			}
		}
		unloading := m.unloading
		m.mu.Unlock()
		for _, e := range idle {
			m.unload(e)
		}
		if len(busy) == 0 && unloading == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("close models: %d still in use, %d unloading: %w", len(busy), unloading, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ErrInUse is returned by Remove for a model a request is using.
var ErrInUse = errors.New("model in use")

// ErrOutsideDir is returned by Remove for a model given by a path outside
// the models directory: ruvllm deletes only files it manages.
var ErrOutsideDir = errors.New("not in the models directory")

// Registry records where pulled models came from; the daemon's bbolt store
// implements it. Entries live in bucket "models" keyed by model name.
type Registry interface {
	Put(bucket, key string, v any) error
	Delete(bucket, key string) error
}

// RegistryBucket is the store bucket of model registry entries.
const RegistryBucket = "models"

// Remove deletes the named model's file from the models directory and its
// registry entry. An idle loaded model is unloaded first; a model in use is
// refused with ErrInUse. Files outside the models directory (explicit
// paths) are never deleted.
func (m *Manager) Remove(name string) error {
	path, err := m.Resolve(name)
	if err != nil {
		return err
	}
	key := llm.NameFromPath(path)
	if m.o.Dir == "" || filepath.Dir(path) != filepath.Clean(m.o.Dir) {
		return fmt.Errorf("remove %s: %s: %w", key, path, ErrOutsideDir)
	}
	m.mu.Lock()
	e := m.loaded[key]
	if e != nil && e.refs > 0 {
		m.mu.Unlock()
		return fmt.Errorf("remove %s: %w by %d request(s)", key, ErrInUse, e.refs)
	}
	m.mu.Unlock()
	if e != nil {
		m.unload(e)
		m.mu.Lock()
		still := m.loaded[key] == e
		m.mu.Unlock()
		if still { // acquired again in between
			return fmt.Errorf("remove %s: %w", key, ErrInUse)
		}
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove %s: %w", key, err)
	}
	m.removeSnapshotsOf(key)
	if m.o.Registry != nil {
		if err := m.o.Registry.Delete(RegistryBucket, key); err != nil {
			return fmt.Errorf("remove %s: registry: %w", key, err)
		}
	}
	m.o.Logger.Info("model removed", "model", key, "path", path)
	if m.o.Events != nil {
		m.o.Events.Publish("model.removed", map[string]any{"model": key})
	}
	return nil
}

// The engine's model is the production Model, with prefix-cache snapshots.
var (
	_ Model            = (*llm.Model)(nil)
	_ CacheSnapshotter = (*llm.Model)(nil)
)
