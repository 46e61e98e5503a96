// Package serve wires a complete ruvllmd: server, model manager and API.
// Both cmd/ruvllmd and `ruvllm daemon` call it, so they behave the same.
package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/adapters"
	"github.com/ruvllm/ruvllm/daemon/api"
	"github.com/ruvllm/ruvllm/daemon/finetune"
	"github.com/ruvllm/ruvllm/daemon/learning"
	"github.com/ruvllm/ruvllm/daemon/models"
	"github.com/ruvllm/ruvllm/daemon/pull"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/model"
	"github.com/ruvllm/ruvllm/engine/quantize"
	"github.com/ruvllm/ruvllm/engine/spec"
	"github.com/ruvllm/ruvllm/internal/backends"
	"github.com/ruvllm/ruvllm/internal/disk"
	"github.com/ruvllm/ruvllm/ipc"
)

// Options adds model settings to the server configuration.
type Options struct {
	daemon.Config
	// Model is the default model (name or path) for requests naming none,
	// loaded at start when Preload is set.
	Model   string
	Preload bool
	// KeepAlive is how long an idle model stays loaded: negative for ever,
	// 0 the default (5m) unless UnloadIdle.
	KeepAlive time.Duration
	// UnloadIdle makes a KeepAlive of 0 mean none, not the default: a model
	// is unloaded as soon as its requests end (--keep-alive 0, as Ollama's
	// OLLAMA_KEEP_ALIVE=0; FinishFlags sets it).
	UnloadIdle bool
	MaxLoaded  int
	// MaxQueue bounds the requests waiting for each model (--max-queue;
	// 0: no bound).
	MaxQueue int
	// AdapterBudget bounds the memory of loaded LoRA adapters (0: 1 GiB).
	AdapterBudget int64
	// Backend names the compute backend models run on (internal/backends:
	// "cpu", the default, or "metal" on macOS).
	Backend string
	// Speculate is the speculative decoding offered to requests
	// (spec.ParseKinds: "all", "lookup+tree", "off", ...).
	Speculate string
	// Drafts are draft models: "FILE" for the default model, "NAME=FILE"
	// for the model NAME.
	Drafts []string
	// KVType is the KV cache type (llm.ParseKVType: f16, q8_0, q4_0) and
	// KVHotWindow the positions each sequence keeps in f16.
	KVType      string
	KVHotWindow int
	// Grace is how long a shutdown lets requests in flight finish before
	// it cuts them (default daemon.DefaultGrace).
	Grace time.Duration
	// ContextLength is the context of each sequence of a loaded model
	// (0: the model's own, at most 4096).
	ContextLength int
	// ContextOverflow is the default for requests that name no
	// context_overflow (api.SetContextOverflow: "auto" or a mode).
	ContextOverflow string
	// Learning configures learning from feedback (daemon/learning); its
	// Store, Events and Logger are the server's.
	Learning learning.Options
	// Exact runs models in llama.cpp's arithmetic, bit for bit (--exact).
	Exact bool
}

// drafts maps model names to draft files from o.Drafts.
func (o Options) drafts() (func(name string) string, error) {
	byName := map[string]string{}
	for _, d := range o.Drafts {
		name, file, ok := strings.Cut(d, "=")
		if !ok {
			if o.Model == "" {
				return nil, fmt.Errorf("--draft %s: name the model (NAME=FILE) or set a default model", d)
			}
			name, file = llm.NameFromPath(o.Model), d
		}
		if name == "" || file == "" {
			return nil, fmt.Errorf("--draft %q: want FILE or NAME=FILE", d)
		}
		if typ, ok := strings.CutPrefix(file, llm.SelfDraftPrefix); ok {
			if _, err := quantize.ParseFileType(typ); err != nil {
				return nil, fmt.Errorf("--draft %s: %w", d, err)
			}
		}
		byName[strings.ToLower(name)] = file
	}
	return func(name string) string { return byName[name] }, nil
}

// checkCounts refuses a negative count by its flag's name. Each was
// silently replaced by its default in ruvllmd (--kv-hot-window -1 kept 256
// positions hot, --threads -1 used every core) while `ruvllm daemon`
// refused it; both start here, so both refuse it alike.
func (o Options) checkCounts() error {
	for _, c := range []struct {
		flag string
		v    int
	}{
		{"threads", o.Threads},
		{"kv-hot-window", o.KVHotWindow},
		{"max-loaded", o.MaxLoaded},
		{"max-queue", o.MaxQueue},
		{"learning-deep-min", o.Learning.Config.DeepMin},
		{"learning-deep-every", o.Learning.DeepEvery},
	} {
		if c.v < 0 {
			return fmt.Errorf("--%s %d: must be at least 0", c.flag, c.v)
		}
	}
	if o.Threads > MaxThreads {
		return fmt.Errorf("--threads %d: must be at most %d", o.Threads, MaxThreads)
	}
	return nil
}

// MaxThreads bounds --threads, the daemon's and every command's (far
// above any core count; a typo of 100000 started that many threads).
const MaxThreads = 1024

// Check refuses the options Run refuses before it takes the socket
// (--ctx-size, negative counts, --context-overflow, --backend, --spec,
// --draft, --kv-type) and a --listen address it will not listen on, so
// that a command which only records them (ruvllm service install) tells
// the mistake at once rather than leaving a service that fails at its
// first connection.
func (o Options) Check() error {
	if o.ContextLength < 0 || o.ContextLength > model.MaxContextLength {
		return fmt.Errorf("--ctx-size %d: want 0 (the model's) up to %d", o.ContextLength, model.MaxContextLength)
	}
	if err := o.checkCounts(); err != nil {
		return err
	}
	if err := api.CheckContextOverflow(o.ContextOverflow); err != nil {
		return err
	}
	if _, err := backends.Factory(o.Backend, o.Threads); err != nil {
		return err
	}
	if _, err := spec.ParseKinds(cmp.Or(o.Speculate, "all")); err != nil {
		return fmt.Errorf("--spec: %w", err)
	}
	if _, err := o.drafts(); err != nil {
		return err
	}
	if _, err := llm.ParseKVType(o.KVType); err != nil {
		return fmt.Errorf("--kv-type: %w", err)
	}
	if o.TCPAddr != "" {
		return daemon.CheckTCPAddr(o.TCPAddr)
	}
	return nil
}

// Run serves until ctx is cancelled.
func Run(ctx context.Context, o Options) error {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if err := o.Check(); err != nil {
		return fmt.Errorf("ruvllmd: %w", err)
	}
	// A backend this platform lacks fails before the socket is taken.
	newBackend, err := backends.Factory(o.Backend, o.Threads)
	if err != nil {
		return fmt.Errorf("ruvllmd: %w", err)
	}
	kinds, err := spec.ParseKinds(cmp.Or(o.Speculate, "all"))
	if err != nil {
		return fmt.Errorf("ruvllmd: --spec: %w", err)
	}
	drafts, err := o.drafts()
	if err != nil {
		return fmt.Errorf("ruvllmd: %w", err)
	}
	kvCold, err := llm.ParseKVType(o.KVType)
	if err != nil {
		return fmt.Errorf("ruvllmd: --kv-type: %w", err)
	}
	srv, err := daemon.New(o.Config)
	if err != nil {
		return err
	}
	if freed, err := pull.CleanStale(o.ModelsDir, pull.StaleAge); err != nil {
		o.Logger.Warn("cleaning interrupted downloads", "dir", o.ModelsDir, "err", err)
	} else if freed > 0 {
		o.Logger.Info("removed interrupted downloads older than a day", "dir", o.ModelsDir, "bytes", freed)
	}
	// Writes a crash or kill -9 cut off (uploads of adapters, blobs and
	// fine-tuning files, /api/create's quantizations, prefix-cache
	// snapshots) are never resumed: remove their temporary files.
	type tempDir struct {
		dir      string
		prefixes []string
	}
	var temps []tempDir
	if o.ModelsDir != "" {
		temps = append(temps, tempDir{filepath.Join(o.ModelsDir, "blobs"), []string{".upload-", ".quantize-"}})
	}
	if o.StateDir != "" {
		temps = append(temps, tempDir{filepath.Join(o.StateDir, "adapters"), []string{".upload-", ".stage-"}},
			tempDir{filepath.Join(o.StateDir, "files"), []string{".upload-"}})
	}
	if o.AdaptersDir != "" {
		temps = append(temps, tempDir{filepath.Join(o.AdaptersDir, ".installed"), []string{".upload-", ".stage-"}})
	}
	if o.CacheDir != "" {
		temps = append(temps, tempDir{o.CacheDir, []string{".prefix-"}})
	}
	for _, t := range temps {
		if freed := disk.RemoveTemp(t.dir, t.prefixes...); freed > 0 {
			o.Logger.Info("removed temporary files cut off by the last stop", "dir", t.dir, "bytes", freed)
		}
	}
	lo := o.Learning
	lo.Store, lo.Events, lo.Logger = srv.Store(), srv.Events(), o.Logger
	if lo.Threads == 0 {
		lo.Threads = o.Threads
	}
	learner := learning.New(lo)
	mgr := models.New(models.Options{Dir: o.ModelsDir, CacheDir: o.CacheDir, KeepAlive: o.KeepAlive, UnloadIdle: o.UnloadIdle && o.KeepAlive == 0, MaxLoaded: o.MaxLoaded, MaxQueue: o.MaxQueue,
		Threads: o.Threads, ContextLength: o.ContextLength, NewBackend: newBackend, Exact: o.Exact, Default: o.Model, Events: srv.Events(), Logger: o.Logger, Registry: srv.Store(),
		Speculate: kinds, Draft: drafts, KVCold: kvCold, KVHotWindow: o.KVHotWindow,
		OnLoad:   func(name, path string, m models.Model) { learner.Attach(name, path, m) },
		OnUnload: func(name string, m models.Model) { learner.Detach(name, m) }})
	a := api.Register(srv, mgr)
	a.SetContextOverflow(o.ContextOverflow) // checked above
	a.SetLearning(learner)
	// The background loop's consolidation at shutdown runs before the
	// models unload (hooks run in order; mgr.Close is registered last).
	srv.OnShutdown(learner.Shutdown)
	// The registry lives in a hidden folder inside the drop folder: the
	// watcher ignores it, and installing is a rename on one file system.
	registry := filepath.Join(o.StateDir, "adapters")
	if o.AdaptersDir != "" {
		registry = filepath.Join(o.AdaptersDir, ".installed")
	}
	pool, err := adapters.New(adapters.Options{
		DropDir: o.AdaptersDir, RegistryDir: registry,
		Store: srv.Store(), Events: srv.Events(), Budget: o.AdapterBudget, Logger: o.Logger,
		UsedBy: a.AdapterUsers,
		Base: func() string { // validate new adapters against the default model
			if o.Model == "" {
				return ""
			}
			path, err := mgr.Resolve(o.Model)
			if err != nil {
				return ""
			}
			return path
		},
	})
	if err != nil {
		return err
	}
	pool.Register(srv)
	a.SetAdapters(pool)
	a.PruneBlobs(pull.StaleAge) // uploads no /api/create used within a day
	ft := finetune.New(finetune.Options{Dir: filepath.Join(o.StateDir, "files"), Store: srv.Store(), Events: srv.Events(),
		Logger: o.Logger, Models: mgr, Adapters: pool, Threads: o.Threads, Expand: a.ExpandModel})
	a.SetFineTuning(ft, finetune.DefaultMaxFileBytes)
	if err := ft.Start(); err != nil {
		return err
	}
	// Before the models unload: a job in progress goes back to the queue
	// and releases its model.
	srv.OnShutdown(ft.Close)
	srv.OnShutdown(mgr.Close)
	if o.AdaptersDir != "" {
		go func() {
			if err := pool.Watch(ctx); err != nil {
				o.Logger.Error("adapter folder watch stopped", "err", err)
			}
		}()
	}
	if o.Preload && o.Model != "" {
		go func() {
			h, err := mgr.Acquire(ctx, o.Model, nil)
			if err != nil {
				o.Logger.Error("preload", "model", o.Model, "err", err)
				return
			}
			h.Release()
		}()
	}
	grace := o.Grace
	if grace <= 0 {
		grace = daemon.DefaultGrace
	}
	if err := srv.Run(ctx, grace); err != nil {
		return fmt.Errorf("ruvllmd: %w", err)
	}
	return nil
}

// FinishFlags completes what the flags bound by RegisterFlags mean where
// Options cannot tell a value given from its default: --keep-alive 0
// (UnloadIdle), --shutdown-grace and --learning-interval of 0 or less
// (which Options reads as unset: refused, where they became 10 s and 2 min
// without a word), and the hot window's rules (CheckHotWindow).
func FinishFlags(o *Options, f *pflag.FlagSet) error {
	o.UnloadIdle = f.Changed("keep-alive") && o.KeepAlive == 0
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"shutdown-grace", o.Grace}, {"learning-interval", o.Learning.Interval}} {
		if f.Changed(d.flag) && d.v <= 0 {
			return fmt.Errorf("--%s %s: want a positive duration", d.flag, d.v)
		}
	}
	if err := CheckHotWindow(f.Changed("kv-hot-window"), o.KVHotWindow, o.KVType); err != nil {
		return err
	}
	if f.Changed("max-loaded") && o.MaxLoaded == 0 {
		// It held one model, as 1 does, without a word.
		return errors.New("--max-loaded 0: must be at least 1 (models held in memory at once)")
	}
	o.Model = absModelPath(o.Model)
	if err := absDirs(&o.Config); err != nil {
		return err
	}
	return nil
}

// absDirs makes the socket path and the directories given relative
// (--state-dir st, $RUVLLM_SOCKET=s.sock) absolute: the daemon reported
// them as given in /v1/health, where they mean nothing to a client in
// another directory (`ruvllm env` failed to read "st/token", `ruvllm
// status` named files no one could find). A socket path whose absolute
// form is longer than a socket address holds stays relative: it still
// binds, from the daemon's directory.
func absDirs(c *daemon.Config) error {
	for _, d := range []struct {
		flag string
		p    *string
	}{{"state-dir", &c.StateDir}, {"models-dir", &c.ModelsDir}, {"adapters-dir", &c.AdaptersDir}, {"cache-dir", &c.CacheDir}, {"socket", &c.SocketPath}} {
		if *d.p == "" || filepath.IsAbs(*d.p) {
			continue
		}
		abs, err := filepath.Abs(*d.p)
		if err != nil {
			return fmt.Errorf("--%s %s: %w", d.flag, *d.p, err)
		}
		if d.p == &c.SocketPath && ipc.CheckSocketPath(abs) != nil {
			continue
		}
		*d.p = abs
	}
	return nil
}

// absModelPath makes a --model that names a file by a relative path
// (../models/x.gguf) absolute: the daemon showed the relative path in
// /api/show's FROM lines and created models made from it, where it means
// nothing to a client in another directory. Names and absolute paths are
// returned as they are.
func absModelPath(m string) string {
	if m == "" || filepath.IsAbs(m) || !(strings.ContainsRune(m, filepath.Separator) || strings.HasSuffix(strings.ToLower(m), ".gguf")) {
		return m
	}
	if st, err := os.Stat(m); err != nil || st.IsDir() {
		return m
	}
	if abs, err := filepath.Abs(m); err == nil {
		return abs
	}
	return m
}

// CheckHotWindow refuses a --kv-hot-window given (on the command line) as
// 0, which Options and llm.Options read as the default 256, or given for
// an f16 cache, which has no cold tier for it to bound: both were ignored
// in silence.
func CheckHotWindow(given bool, window int, kvType string) error {
	if !given {
		return nil
	}
	if window < 1 {
		return fmt.Errorf("--kv-hot-window %d: must be at least 1", window)
	}
	if cold, err := llm.ParseKVType(kvType); err == nil && cold == 0 {
		return fmt.Errorf("--kv-hot-window applies to a quantized cold tier: give --kv-type q8_0 or q4_0 with it")
	}
	return nil
}

// RegisterFlags binds the model flags.
func RegisterFlags(o *Options, f *pflag.FlagSet) {
	f.StringVarP(&o.Model, "model", "m", "", "default model (name or .gguf path), used when a request names none")
	f.BoolVar(&o.Preload, "preload", true, "load the default model at start")
	o.KeepAlive = 5 * time.Minute
	f.Var((*keepAliveFlag)(&o.KeepAlive), "keep-alive", "how long an idle model stays loaded: a duration (5m) or seconds, as Ollama's keep_alive (negative: forever; 0: unloaded once idle)")
	f.IntVar(&o.MaxLoaded, "max-loaded", 1, "models held in memory at once")
	f.IntVar(&o.MaxQueue, "max-queue", 512, "requests that may wait for each model; more get 503 server busy (0: no bound; Ollama's OLLAMA_MAX_QUEUE)")
	f.StringVar(&o.Speculate, "spec", "all", "speculative decoding offered to requests: all, off, or kinds joined by + (lookup, draft, tree)")
	f.StringArrayVar(&o.Drafts, "draft", nil, "draft model for speculative decoding: FILE (for the default model) or NAME=FILE (repeatable); FILE may be self:TYPE, the model converted to TYPE once (kept in the cache dir)")
	f.StringVar(&o.KVType, "kv-type", "f16", "KV cache type: f16, or q8_0/q4_0 for a quantized cold tier behind an f16 hot window (more cached prefixes in the same memory)")
	f.IntVar(&o.KVHotWindow, "kv-hot-window", 256, "positions of each sequence kept in f16 (at least 1; only with --kv-type q8_0/q4_0)")
	f.DurationVar(&o.Grace, "shutdown-grace", daemon.DefaultGrace, "how long a shutdown (SIGTERM) lets requests in flight finish before it ends them")
	f.IntVar(&o.ContextLength, "ctx-size", 0, "context length of each sequence, in tokens (0: the model's trained context, at most 4096)")
	f.StringVar(&o.ContextOverflow, "context-overflow", api.OverflowAuto,
		"what requests that outgrow the context get unless they say: drop_oldest (a chat's oldest turns), shift (that, and a full context shifts while the reply goes on), error, or auto (chats drop_oldest, Ollama's API shift, raw completions error)")
	f.BoolVar(&o.Learning.Disabled, "no-learning", false, "store feedback but do not learn from it")
	f.BoolVar(&o.Learning.PerApp, "learning-per-app", false, "learn in a scope per app (X-Ruvllm-Client) instead of one per user")
	f.DurationVar(&o.Learning.Interval, "learning-interval", 2*time.Minute, "period of the background loop (consolidation, deep runs)")
	f.IntVar(&o.Learning.Config.DeepMin, "learning-deep-min", 0, "stored exchanges before a deep run (0: 20)")
	f.IntVar(&o.Learning.DeepEvery, "learning-deep-every", 0, "new signals between deep runs (0: the deep minimum)")
	backends.Flag(f, &o.Backend)
	backends.ExactFlag(f, &o.Exact)
}

// keepAliveFlag is --keep-alive: a Go duration ("5m", "-1s") or, as
// Ollama's keep_alive and OLLAMA_KEEP_ALIVE take it, a number of seconds
// ("-1", "300"); "-1" was refused though the help says negative means
// forever.
type keepAliveFlag time.Duration

func (k *keepAliveFlag) String() string { return time.Duration(*k).String() }

// Type names the flag's kind in the help.
func (k *keepAliveFlag) Type() string { return "duration" }

// Set reads a duration or a number of seconds.
func (k *keepAliveFlag) Set(s string) error {
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(secs) || math.Abs(secs) > math.MaxInt64/float64(time.Second) {
			return fmt.Errorf("%q: want a duration (5m) or a number of seconds", s)
		}
		*k = keepAliveFlag(time.Duration(secs * float64(time.Second)))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q: want a duration (5m) or a number of seconds", s)
	}
	*k = keepAliveFlag(d)
	return nil
}
