// Package adapters is ruvllmd's LoRA adapter pool: a registry of installed
// adapters (files in a registry directory, records in the state store),
// loaded lazily per model and kept under a memory budget with LRU
// eviction, installed from a watched drop folder or the API, and resolved
// by name for each request. An adapter in use is an immutable
// *lora.Adapter held by the request, so installing a new version under
// the same name or evicting it never disturbs running requests.
package adapters

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ruvllm/ruvllm/daemon/store"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/internal/disk"
	"github.com/ruvllm/ruvllm/ipc"
)

// Bucket is the state-store bucket of adapter records.
const Bucket = "adapters"

// Sentinel errors callers branch on.
var (
	// ErrUnknown: no adapter of that name is installed.
	ErrUnknown = errors.New("unknown adapter")
	// ErrInvalid: the file is not a valid adapter (the reason follows).
	ErrInvalid = errors.New("invalid adapter")
	// ErrInUse: a created model is made with the adapter, so removing it
	// would break that model.
	ErrInUse = errors.New("adapter in use")
	// ErrUnavailable: adapters cannot be installed, their directory could
	// not be created (read-only, a file in the way); the reason follows.
	ErrUnavailable = errors.New("adapter installs are unavailable")
)

// Publisher receives pool events ("adapter.installed", "adapter.removed",
// "adapter.rejected").
type Publisher interface{ Publish(typ string, data any) }

// Model is what the pool needs of a loaded model: *llm.Model.
type Model interface {
	LoadAdapter(path string) (*lora.Adapter, error)
	Info() llm.Info
}

// Options configures a Pool.
type Options struct {
	// DropDir is the watched folder users drop adapter files into.
	DropDir string
	// RegistryDir holds installed adapter files; not watched.
	RegistryDir string
	Store       *store.DB
	Events      Publisher
	// Budget bounds the bytes of adapters kept loaded (default 1 GiB).
	Budget int64
	// Base, when set, returns the path of the model to validate new
	// adapters against ("" when none is configured).
	Base   func() string
	Logger *slog.Logger
	// Settle is how long a dropped file's size must stay unchanged before
	// it is read (default 250ms); a file that is stable but does not parse
	// is rejected only after RejectAfter (default 3s), in case the copy
	// stalled.
	Settle, RejectAfter time.Duration
	// UsedBy, when set, names the models made with an adapter (created
	// models that carry it); Remove refuses an adapter they name.
	UsedBy func(adapter string) []string
}

// Pool is the adapter registry and the cache of loaded adapters.
type Pool struct {
	o   Options
	log *slog.Logger

	mu      sync.Mutex
	records map[string]ipc.AdapterInfo
	loaded  map[loadKey]*loadedAdapter
	bytes   int64
	clock   uint64

	// noInstall, set when RegistryDir could not be created, refuses
	// installs; noWatch, set when DropDir could not be, stops Watch.
	noInstall, noWatch error
}

// loadKey is one adapter version on one model.
type loadKey struct {
	model  Model
	name   string
	sha256 string
}

type loadedAdapter struct {
	a       *lora.Adapter
	err     error
	done    chan struct{}
	lastUse uint64
	bytes   int64
}

// New opens the pool: reads the records from the store and creates the
// directories. A directory that cannot be created (read-only, a file in
// the way) costs what needs it, not the daemon: it is logged, and installs
// (the registry directory) are refused with ErrUnavailable, or the drop
// folder is not watched; models and installed adapters still serve.
func New(o Options) (*Pool, error) {
	if o.Budget <= 0 {
		o.Budget = 1 << 30
	}
	if o.Settle <= 0 {
		o.Settle = 250 * time.Millisecond
	}
	if o.RejectAfter <= 0 {
		o.RejectAfter = 3 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.RegistryDir == "" || o.Store == nil {
		return nil, errors.New("adapters: a registry directory and a store are required")
	}
	p := &Pool{o: o, log: o.Logger, records: map[string]ipc.AdapterInfo{}, loaded: map[loadKey]*loadedAdapter{}}
	if o.DropDir != "" {
		if err := os.MkdirAll(o.DropDir, 0o700); err != nil {
			p.noWatch = fmt.Errorf("the adapters folder %s cannot be created: %w", o.DropDir, err)
			p.log.Warn("adapters folder not watched", "dir", o.DropDir, "err", err)
		}
	}
	if err := os.MkdirAll(o.RegistryDir, 0o700); err != nil {
		p.noInstall = fmt.Errorf("%w: the adapters directory %s cannot be created: %w", ErrUnavailable, o.RegistryDir, err)
		p.log.Warn("adapter installs disabled", "dir", o.RegistryDir, "err", err)
	}
	err := o.Store.List(Bucket, func(key string, value []byte) error {
		var r ipc.AdapterInfo
		if err := json.Unmarshal(value, &r); err != nil {
			p.log.Warn("skipping unreadable adapter record", "name", key, "err", err)
			return nil
		}
		p.records[key] = r
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("adapters: read registry: %w", err)
	}
	return p, nil
}

// List returns the installed adapters by name.
func (p *Pool) List() []ipc.AdapterInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]ipc.AdapterInfo, 0, len(p.records))
	for _, r := range p.records {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,99}$`)

// cleanName turns a file name into an adapter name.
func cleanName(s string) (string, error) {
	n := lora.NameFromPath(s)
	n = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, n)
	if !nameRE.MatchString(n) {
		return "", fmt.Errorf("%w: bad adapter name %q", ErrInvalid, s)
	}
	return n, nil
}

// ftNameRE is the form of a fine-tuning job's adapter name,
// "ft:<model>:<suffix>:<id>" (OpenAI's form; the suffix may be empty).
// Names from files never take it: cleanName turns ':' into '-'.
var ftNameRE = regexp.MustCompile(`^ft:[a-z0-9][a-z0-9._/-]{0,99}(:[a-z0-9][a-z0-9._-]{0,99})?:[a-z0-9._-]{0,64}:[a-z0-9]{1,40}$`)

// IsFineTuned reports whether name is a fine-tuning job's adapter name.
func IsFineTuned(name string) bool { return ftNameRE.MatchString(name) }

// Get returns the installed adapter named name.
func (p *Pool) Get(name string) (ipc.AdapterInfo, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.records[name]
	return r, ok
}

// InstallFineTuned installs the adapter a fine-tuning job wrote at src (a
// GGUF file of the daemon's own in the registry directory or elsewhere,
// moved into the registry) under name, which must have the form
// "ft:<model>:<suffix>:<id>", validated against the model file basePath
// (the job's model, not necessarily the default), whose name the record
// keeps as its base model. from, when the job trained on a created or
// fine-tuned model, is that model resolved (kept as FineTunedFrom).
func (p *Pool) InstallFineTuned(ctx context.Context, src, name, basePath, baseName string, from *ipc.ModelManifest) (ipc.AdapterInfo, error) {
	if !IsFineTuned(name) {
		return ipc.AdapterInfo{}, fmt.Errorf("%w: %q is not a fine-tuned adapter name (ft:<model>:<suffix>:<id>)", ErrInvalid, name)
	}
	return p.installAs(ctx, src, src, name, true, installExtra{baseOf: func() (string, string) { return basePath, baseName }, fineTunedFrom: from})
}

// inspect parses the staged adapter at path without a backend, validating
// it against the base model (baseOf's, or the configured one) when there
// is one. src is the path the user gave, which errors name (the file's
// own bytes never appear in an error).
func (p *Pool) inspect(path, src string, dir bool, baseOf func() (string, string)) (*lora.Adapter, string, error) {
	var base *gguf.File
	baseName := ""
	if baseOf != nil {
		if bp, bn := baseOf(); bp != "" {
			f, err := gguf.Open(bp)
			if err != nil {
				return nil, "", fmt.Errorf("open the base model %s: %w", bp, err)
			}
			defer f.Close()
			base, baseName = f, bn
		}
	} else if p.o.Base != nil {
		if bp := p.o.Base(); bp != "" {
			f, err := gguf.Open(bp)
			if err != nil {
				p.log.Warn("cannot open the base model to validate adapters", "path", bp, "err", err)
			} else {
				defer f.Close()
				base, baseName = f, llm.NameFromPath(bp)
			}
		}
	}
	if dir {
		if base == nil {
			return nil, "", fmt.Errorf("%w: a PEFT adapter needs the daemon's default model (-m) to map its names", ErrInvalid)
		}
		a, err := lora.LoadPEFT(path, base, nil)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %s: %v", ErrInvalid, src, err)
		}
		return a, baseName, nil
	}
	f, err := gguf.Open(path)
	if errors.Is(err, gguf.ErrNotGGUF) {
		return nil, "", fmt.Errorf("%w: not a GGUF file: %s", ErrInvalid, src)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s: %v", ErrInvalid, src, err)
	}
	defer f.Close()
	a, err := lora.LoadGGUF(f, base, nil)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s: %v", ErrInvalid, src, err)
	}
	return a, baseName, nil
}

// Install installs the adapter at src under name (default: from the file
// name), replacing an older version of that name. The file (or PEFT
// directory) is first copied into the registry (see stage: regular files
// only, symlinks resolved), and that copy is what is validated, hashed and
// installed; with move, src is removed once it is installed (of a PEFT
// directory, its two files, and the directory when nothing else is in
// it). The new
// version serves requests that start afterwards; requests holding the old
// one finish on it.
func (p *Pool) Install(ctx context.Context, src, name string, move bool) (ipc.AdapterInfo, error) {
	info, err := p.install(ctx, src, src, name, false)
	if err == nil && move {
		removeMoved(src)
	}
	return info, err
}

// removeMoved deletes what Install copied from src: the file (a symlink
// itself, never its target), or a PEFT directory's config and weights and
// then the directory, which is left in place when anything else is in it:
// a training run's output folder holds tokenizer files, checkpoints and
// notes besides the adapter, and they were deleted with it.
func removeMoved(src string) {
	st, err := os.Lstat(src)
	if err != nil {
		return
	}
	if !st.IsDir() {
		os.Remove(src)
		return
	}
	for _, n := range []string{lora.PEFTConfig, lora.PEFTWeights} {
		os.Remove(filepath.Join(src, n))
	}
	os.Remove(src) // only an empty directory goes
}

// install is Install; owned marks src as the daemon's own temporary file
// in the registry directory, which is renamed instead of copied. label is
// what errors call the file (an upload's own name, not the temporary one).
func (p *Pool) install(ctx context.Context, src, label, name string, owned bool) (ipc.AdapterInfo, error) {
	if name == "" {
		name = filepath.Base(src)
	}
	name, err := cleanName(name)
	if err != nil {
		return ipc.AdapterInfo{}, err
	}
	return p.installAs(ctx, src, label, name, owned, installExtra{})
}

// installExtra is what some installs add to installAs.
type installExtra struct {
	// baseOf returns the model to validate against (nil: the configured
	// base).
	baseOf func() (string, string)
	// fineTunedFrom and createdFor go to the record.
	fineTunedFrom *ipc.ModelManifest
	createdFor    string
}

// InstallFor installs the adapter at src under name for the created model
// named model (its Modelfile's ADAPTER), recorded as CreatedFor.
func (p *Pool) InstallFor(ctx context.Context, src, name, model string) (ipc.AdapterInfo, error) {
	name, err := cleanName(name)
	if err != nil {
		return ipc.AdapterInfo{}, err
	}
	return p.installAs(ctx, src, src, name, false, installExtra{createdFor: model})
}

// installAs installs src under a checked name, validated against the base
// model (x.baseOf's, or the configured one).
func (p *Pool) installAs(ctx context.Context, src, label, name string, owned bool, x installExtra) (ipc.AdapterInfo, error) {
	baseOf := x.baseOf
	var info ipc.AdapterInfo
	if p.noInstall != nil {
		return info, p.noInstall
	}
	// An adapter a created model's Modelfile installed is part of that
	// model, which stays as it was made: only re-creating the model
	// replaces it (removing it is refused too). Another install of its
	// name swapped the model's weights and dropped the record's owner.
	p.mu.Lock()
	prev, had := p.records[name]
	p.mu.Unlock()
	if had && prev.CreatedFor != "" && prev.CreatedFor != x.createdFor {
		return info, fmt.Errorf("%w: %q is part of the model %q: pick another name, or delete or re-create that model first",
			ErrInUse, name, prev.CreatedFor)
	}
	s, err := p.stage(src, owned)
	if err != nil {
		return info, err
	}
	a, baseName, err := p.inspect(s.path, label, s.dir, baseOf)
	if err != nil {
		s.remove()
		return info, err
	}
	dst := filepath.Join(p.o.RegistryDir, strings.ReplaceAll(name, ":", "_")+"-"+s.sha256[:12])
	if !s.dir {
		dst += ".gguf"
	}
	if err := replace(s, dst); err != nil {
		s.remove()
		return info, fmt.Errorf("install adapter %s: %w", name, err)
	}
	info = ipc.AdapterInfo{
		Name: name, File: dst, Format: a.Format, Arch: a.Arch, BaseModel: baseName, Rank: a.Rank, Alpha: a.Alpha,
		Targets: a.Names(), SHA256: s.sha256, Size: s.size, InstalledAt: time.Now().UTC(), FineTunedFrom: x.fineTunedFrom, CreatedFor: x.createdFor,
	}
	if err := p.o.Store.Put(Bucket, name, info); err != nil {
		return ipc.AdapterInfo{}, fmt.Errorf("install adapter %s: %w", name, err)
	}
	p.mu.Lock()
	old, had := p.records[name]
	p.records[name] = info
	p.mu.Unlock()
	if had && old.File != dst {
		removeInstalled(old.File) // loaded copies live in memory
	}
	p.log.Info("adapter installed", "name", name, "rank", a.Rank, "targets", len(a.Targets), "sha256", s.sha256[:12])
	if p.o.Events != nil {
		p.o.Events.Publish("adapter.installed", info)
	}
	return info, nil
}

// replace renames a staged adapter to its final name, replacing the same
// version installed before.
func replace(s staged, dst string) error {
	if s.dir {
		os.RemoveAll(dst)
	}
	return os.Rename(s.path, dst)
}

// Remove uninstalls the named adapter. Requests using it finish normally.
func (p *Pool) Remove(name string) error {
	if p.o.UsedBy != nil {
		if users := p.o.UsedBy(name); len(users) > 0 {
			return fmt.Errorf("%w: %q is part of %s: delete or re-create %s first",
				ErrInUse, name, quotedList(users), pronoun(len(users)))
		}
	}
	p.mu.Lock()
	r, ok := p.records[name]
	if ok {
		delete(p.records, name)
		for k, l := range p.loaded {
			if k.name == name {
				p.drop(k, l)
			}
		}
	}
	p.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknown, name)
	}
	if err := p.o.Store.Delete(Bucket, name); err != nil {
		return err
	}
	removeInstalled(r.File)
	if p.o.Events != nil {
		p.o.Events.Publish("adapter.removed", map[string]string{"name": name})
	}
	return nil
}

// drop forgets a loaded entry; p.mu is held.
func (p *Pool) drop(k loadKey, l *loadedAdapter) {
	delete(p.loaded, k)
	p.bytes -= l.bytes
}

// Resolve returns the adapters a request names, loaded on m. A scale of 0
// (absent) means 1. An unknown name or an adapter that does not fit m is
// an ErrUnknown / ErrInvalid error.
func (p *Pool) Resolve(ctx context.Context, m Model, refs []ipc.AdapterRef) ([]lora.Applied, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	out := make([]lora.Applied, 0, len(refs))
	for _, ref := range refs {
		a, err := p.get(ctx, m, ref.Name)
		if err != nil {
			return nil, err
		}
		scale := ref.Scale
		if scale == 0 {
			scale = 1
		}
		out = append(out, lora.Applied{Adapter: a, Scale: scale})
	}
	return out, nil
}

// get returns the current version of name loaded on m, loading it once
// however many requests ask at the same time.
func (p *Pool) get(ctx context.Context, m Model, name string) (*lora.Adapter, error) {
	p.mu.Lock()
	r, ok := p.records[name]
	if !ok {
		p.mu.Unlock()
		return nil, fmt.Errorf("%w %q (see GET /v1/adapters)", ErrUnknown, name)
	}
	k := loadKey{model: m, name: name, sha256: r.SHA256}
	l := p.loaded[k]
	p.clock++
	if l != nil {
		l.lastUse = p.clock
		p.mu.Unlock()
	} else {
		l = &loadedAdapter{done: make(chan struct{}), lastUse: p.clock}
		p.loaded[k] = l
		p.mu.Unlock()
		go p.load(k, l, r.File)
	}
	select {
	case <-l.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if l.err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, name, l.err)
	}
	return l.a, nil
}

// load reads one adapter version onto its model and evicts least recently
// used entries beyond the budget.
func (p *Pool) load(k loadKey, l *loadedAdapter, path string) {
	defer close(l.done)
	a, err := k.model.LoadAdapter(path)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		l.err = err
		if p.loaded[k] == l {
			delete(p.loaded, k) // retry on the next request
		}
		return
	}
	a.Name = k.name
	l.a, l.bytes = a, a.Bytes()
	if p.loaded[k] != l {
		return // removed while loading
	}
	p.bytes += l.bytes
	for p.bytes > p.o.Budget {
		var victim loadKey
		var vl *loadedAdapter
		for kk, ll := range p.loaded {
			if ll == l || ll.a == nil {
				continue
			}
			if vl == nil || ll.lastUse < vl.lastUse {
				victim, vl = kk, ll
			}
		}
		if vl == nil {
			break
		}
		p.drop(victim, vl)
	}
}

// LoadedBytes is the memory held by loaded adapters.
func (p *Pool) LoadedBytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}

// removeInstalled deletes an installed adapter: a file, or a PEFT
// directory of the registry.
func removeInstalled(path string) {
	if st, err := os.Lstat(path); err == nil && st.IsDir() {
		os.RemoveAll(path)
		return
	}
	os.Remove(path)
}

// dirSHA256 hashes a PEFT directory's config and weights.
func dirSHA256(dir string) (string, int64, error) {
	h := sha256.New()
	var total int64
	for _, n := range []string{lora.PEFTConfig, lora.PEFTWeights} {
		f, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			return "", 0, err
		}
		fmt.Fprintf(h, "%s;", n)
		k, err := io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", 0, err
		}
		total += k
	}
	return hex.EncodeToString(h.Sum(nil)), total, nil
}

// StatusOf maps pool errors to HTTP statuses.
func StatusOf(err error) int {
	switch {
	case errors.Is(err, ErrUnknown), errors.Is(err, ErrInvalid), errors.Is(err, os.ErrNotExist):
		return http.StatusBadRequest
	case errors.Is(err, ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrInUse):
		return http.StatusConflict
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	case disk.IsFull(err):
		return http.StatusInsufficientStorage
	}
	return http.StatusInternalServerError
}

// CreateTemp creates a temporary file in the registry directory for an
// adapter the daemon writes itself (a fine-tuning job's result), so that
// installing it is a rename.
func (p *Pool) CreateTemp() (*os.File, error) {
	if p.noInstall != nil {
		return nil, p.noInstall
	}
	return disk.CreateTemp(p.o.RegistryDir, ".upload-*")
}

// quotedList names models for a message: "model(s) "a", "b"".
func quotedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	if len(q) == 1 {
		return "the model " + q[0]
	}
	return "the models " + strings.Join(q, ", ")
}

// pronoun is "it" or "them".
func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}
