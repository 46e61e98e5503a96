package models

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/spec"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// stubModel is a loaded model that records its Close, which waits for
// closeGate when it is set.
type stubModel struct {
	path      string
	closed    atomic.Bool
	faulted   atomic.Bool
	closeGate chan struct{}
}

func (s *stubModel) Faulted() bool { return s.faulted.Load() }

func (s *stubModel) Info() llm.Info { return llm.Info{Name: llm.NameFromPath(s.path), Path: s.path} }
func (s *stubModel) Generate(ctx context.Context, req llm.Request, fn func(llm.Token) error) (llm.Result, error) {
	return llm.Result{}, nil
}
func (s *stubModel) Embed(ctx context.Context, in []string, opts llm.EmbedOptions) ([][]float32, int, error) {
	return nil, 0, nil
}
func (s *stubModel) Close() error {
	if s.closeGate != nil {
		<-s.closeGate
	}
	s.closed.Store(true)
	return nil
}

type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Publish(typ string, data any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, typ+":"+data.(map[string]any)["model"].(string))
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

// countingLoader loads stub models, counting loads per path; a path
// containing "broken" fails, gate (when set) holds every load and
// closeGate every model's Close.
type countingLoader struct {
	mu        sync.Mutex
	loads     map[string]int
	gate      chan struct{}
	closeGate chan struct{}
	last      *stubModel
}

func (l *countingLoader) load(ctx context.Context, path string) (Model, error) {
	if l.gate != nil {
		<-l.gate
	}
	l.mu.Lock()
	l.loads[filepath.Base(path)]++
	l.mu.Unlock()
	if strings.Contains(path, "broken") {
		return nil, errors.New("bad magic")
	}
	sm := &stubModel{path: path, closeGate: l.closeGate}
	l.mu.Lock()
	l.last = sm
	l.mu.Unlock()
	return sm, nil
}

func (l *countingLoader) count(file string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.loads[file]
}

func newTestManager(t *testing.T, o Options, files ...string) (*Manager, *countingLoader, *recorder) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("GGUF"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l := &countingLoader{loads: map[string]int{}}
	rec := &recorder{}
	o.Dir, o.Loader, o.Events = dir, l.load, rec
	if o.MemAvailable == nil {
		o.MemAvailable = func() (int64, bool) { return 0, false }
	}
	m := New(o)
	t.Cleanup(func() { m.Close(context.Background()) })
	return m, l, rec
}

func TestNamesFromFiles(t *testing.T) {
	m, _, _ := newTestManager(t, Options{}, "Qwen2.5-0.5B-Instruct-Q4_K_M.gguf", "notes.txt", "tiny.gguf")
	list, err := m.List()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range list {
		names = append(names, a.Name)
	}
	if got, want := strings.Join(names, ","), "qwen2.5-0.5b-instruct-q4_k_m,tiny"; got != want {
		t.Fatalf("names %q, want %q", got, want)
	}
	for _, in := range []string{"qwen2.5-0.5b-instruct-q4_k_m", "Qwen2.5-0.5B-Instruct-Q4_K_M.gguf", "qwen2.5-0.5b-instruct-q4_k_m:latest"} {
		p, err := m.Resolve(in)
		if err != nil || filepath.Base(p) != "Qwen2.5-0.5B-Instruct-Q4_K_M.gguf" {
			t.Errorf("Resolve(%q) = %q, %v", in, p, err)
		}
	}
	if _, err := m.Resolve("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve(nope) err = %v, want ErrNotFound", err)
	}
}

func TestConcurrentAcquireLoadsOnce(t *testing.T) {
	m, l, rec := newTestManager(t, Options{}, "a.gguf")
	l.gate = make(chan struct{})
	var wg sync.WaitGroup
	handles := make([]*Handle, 8)
	errs := make([]error, 8)
	for i := range handles {
		wg.Add(1)
		go func() { defer wg.Done(); handles[i], errs[i] = m.Acquire(context.Background(), "a", nil) }()
	}
	time.Sleep(20 * time.Millisecond)
	close(l.gate)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
		if handles[i].Model != handles[0].Model {
			t.Fatalf("caller %d got a different model instance", i)
		}
		handles[i].Release()
	}
	if n := l.count("a.gguf"); n != 1 {
		t.Fatalf("loaded %d times, want 1", n)
	}
	if ev := rec.list(); len(ev) != 1 || ev[0] != "model.loaded:a" {
		t.Fatalf("events %v", ev)
	}
}

func TestFailedLoadReachesEveryCaller(t *testing.T) {
	m, l, _ := newTestManager(t, Options{}, "broken.gguf")
	l.gate = make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[i] = m.Acquire(context.Background(), "broken", nil) }()
	}
	time.Sleep(20 * time.Millisecond)
	close(l.gate)
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, ErrLoadFailed) || !strings.Contains(err.Error(), "bad magic") {
			t.Fatalf("caller %d: err %v, want ErrLoadFailed with cause", i, err)
		}
	}
	if n := l.count("broken.gguf"); n != 1 {
		t.Fatalf("loaded %d times, want 1", n)
	}
}

func TestLRUUnloadNeverTouchesModelInUse(t *testing.T) {
	m, _, rec := newTestManager(t, Options{MaxLoaded: 1}, "a.gguf", "b.gguf", "c.gguf")
	ctx := context.Background()
	ha, err := m.Acquire(ctx, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ha.Release) // before the manager's Close, even when the test fails
	// a is in use: loading b goes over the limit rather than unload a.
	hb, err := m.Acquire(ctx, "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ha.Model.(*stubModel).closed.Load() {
		t.Fatal("model in use was closed")
	}
	if n := len(m.Loaded()); n != 2 {
		t.Fatalf("%d loaded, want 2", n)
	}
	hb.Release() // idle over the limit while a is busy: unloaded at once
	if got := m.Loaded(); len(got) != 1 || got[0].Name != "a" {
		t.Fatalf("loaded %+v after b's release, want a only", got)
	}
	waitFor(t, hb.Model.(*stubModel).closed.Load, "b closed")
	ha.Release()
	hc, err := m.Acquire(ctx, "c", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Release()
	var names []string
	for _, lm := range m.Loaded() {
		names = append(names, lm.Name)
	}
	if got := strings.Join(names, ","); got != "c" {
		t.Fatalf("loaded %q, want c only (a unloaded to make room)", got)
	}
	if !ha.Model.(*stubModel).closed.Load() || !hb.Model.(*stubModel).closed.Load() {
		t.Fatal("unloaded models were not closed")
	}
	ev := rec.list()
	if !(len(ev) == 5 && ev[2] == "model.unloaded:b" && ev[3] == "model.unloaded:a") {
		t.Fatalf("events %v: want b unloaded at its release, then a for c", ev)
	}
}

func TestKeepAlive(t *testing.T) {
	m, _, _ := newTestManager(t, Options{KeepAlive: 30 * time.Millisecond}, "a.gguf", "b.gguf")
	ctx := context.Background()
	h, _ := m.Acquire(ctx, "a", nil)
	time.Sleep(60 * time.Millisecond)
	if len(m.Loaded()) != 1 {
		t.Fatal("model unloaded while in use")
	}
	h.Release()
	if exp := m.Loaded()[0].ExpiresAt; exp.IsZero() {
		t.Fatal("idle model has no expiry")
	}
	waitFor(t, func() bool { return len(m.Loaded()) == 0 }, "idle model unloaded after keep-alive")

	forever := time.Duration(-1)
	h, _ = m.Acquire(ctx, "b", &forever)
	h.Release()
	time.Sleep(60 * time.Millisecond)
	if l := m.Loaded(); len(l) != 1 || !l[0].ExpiresAt.IsZero() {
		t.Fatalf("keep_alive -1: loaded %+v, want b kept with no expiry", l)
	}
	zero := time.Duration(0)
	h, _ = m.Acquire(ctx, "b", &zero)
	h.Release()
	if l := m.Loaded(); len(l) != 0 {
		t.Fatalf("keep_alive 0: %+v still listed when Release returned", l)
	}
}

// TestKeepAliveZeroUnloadFinishesBeforeClose checks that a model released
// with keep-alive 0 leaves the loaded list at once while its unload (the
// cache snapshot and Close) runs behind, and that Close waits for that
// unload instead of returning with the model still open.
func TestKeepAliveZeroUnloadFinishesBeforeClose(t *testing.T) {
	m, l, _ := newTestManager(t, Options{}, "a.gguf")
	l.closeGate = make(chan struct{})
	var open sync.Once
	release := func() { open.Do(func() { close(l.closeGate) }) }
	t.Cleanup(release) // before the manager's Close, even when the test fails
	zero := time.Duration(0)
	h, err := m.Acquire(context.Background(), "a", &zero)
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	if got := m.Loaded(); len(got) != 0 {
		t.Fatalf("loaded %+v after a keep-alive 0 release", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := m.Close(ctx); err == nil || !strings.Contains(err.Error(), "1 unloading") {
		t.Fatalf("Close with an unload in progress: %v, want it to wait and time out", err)
	}
	release()
	if err := m.Close(context.Background()); err != nil {
		t.Fatalf("Close after the unload: %v", err)
	}
	if !l.last.closed.Load() {
		t.Fatal("the model was not closed")
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestMemoryPressureUnloadsIdleFirst(t *testing.T) {
	var free atomic.Int64
	free.Store(1 << 30)
	m, _, _ := newTestManager(t, Options{MaxLoaded: 4, MemoryMargin: 1 << 20,
		MemAvailable: func() (int64, bool) { return free.Load(), true }}, "a.gguf", "b.gguf")
	ctx := context.Background()
	h, _ := m.Acquire(ctx, "a", nil)
	h.Release()
	free.Store(1 << 19) // below the margin: loading b must unload idle a
	h, err := m.Acquire(ctx, "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	if l := m.Loaded(); len(l) != 1 || l[0].Name != "b" {
		t.Fatalf("loaded %+v, want b only", l)
	}
}

type memRegistry struct{ deleted []string }

func (r *memRegistry) Put(bucket, key string, v any) error { return nil }
func (r *memRegistry) Delete(bucket, key string) error {
	r.deleted = append(r.deleted, bucket+"/"+key)
	return nil
}

func TestRemove(t *testing.T) {
	reg := &memRegistry{}
	m, _, _ := newTestManager(t, Options{Registry: reg}, "a.gguf")
	ctx := context.Background()
	h, _ := m.Acquire(ctx, "a", nil)
	if err := m.Remove("a"); !errors.Is(err, ErrInUse) {
		t.Fatalf("Remove while in use: %v, want ErrInUse", err)
	}
	h.Release()
	if err := m.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(m.o.Dir, "a.gguf")); !os.IsNotExist(err) {
		t.Fatalf("file still there: %v", err)
	}
	if len(m.Loaded()) != 0 || !h.Model.(*stubModel).closed.Load() {
		t.Fatal("removed model still loaded")
	}
	if len(reg.deleted) != 1 || reg.deleted[0] != "models/a" {
		t.Fatalf("registry deletes %v", reg.deleted)
	}
	if err := m.Remove("a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Remove: %v, want ErrNotFound", err)
	}
	outside := filepath.Join(t.TempDir(), "elsewhere.gguf")
	os.WriteFile(outside, []byte("GGUF"), 0o600)
	if err := m.Remove(outside); !errors.Is(err, ErrOutsideDir) {
		t.Fatalf("Remove outside the models dir: %v, want ErrOutsideDir", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatalf("file outside the models dir touched: %v", err)
	}
}

func TestParseMemAvailable(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"MemTotal:       16000000 kB\nMemFree:  100 kB\nMemAvailable:    8000000 kB\n", 8000000 * 1024, true},
		{"MemAvailable: 42\n", 42, true},
		{"MemFree: 1 kB\n", 0, false},
		{"MemAvailable: x kB\n", 0, false},
		{"MemAvailable:\n", 0, false},
		{"MemAvailable: 99999999999999999 kB\n", 0, false},
	} {
		got, ok := parseMemAvailable(strings.NewReader(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("%q: %d,%v want %d,%v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseMemAvailable(f *testing.F) {
	f.Add("MemAvailable:    8000000 kB\n")
	f.Add("MemAvailable: -1 kB\n")
	f.Fuzz(func(t *testing.T, s string) {
		if n, ok := parseMemAvailable(strings.NewReader(s)); ok && n < 0 {
			t.Fatalf("negative %d", n)
		}
	})
}

// TestDefaultLoaderUsesNewBackend: the default loader hands NewBackend to
// llm.Load, so the daemon's --backend reaches every model it loads.
func TestDefaultLoaderUsesNewBackend(t *testing.T) {
	dir := t.TempDir()
	o := testmodel.DefaultOptions()
	o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = "llama", 1, 32, 2, 2, 64, 256
	if err := testmodel.Write(context.Background(), o, filepath.Join(dir, "tiny.gguf")); err != nil {
		t.Fatal(err)
	}
	var opened atomic.Int32
	boom := errors.New("device lost")
	m := New(Options{Dir: dir, Threads: 1, NewBackend: func() (compute.Backend, error) {
		opened.Add(1)
		return nil, boom
	}})
	defer m.Close(context.Background())
	if _, err := m.Acquire(context.Background(), "tiny", nil); !errors.Is(err, boom) {
		t.Fatalf("Acquire with a failing backend: %v, want %v", err, boom)
	}
	if opened.Load() != 1 {
		t.Errorf("NewBackend called %d times, want 1", opened.Load())
	}

	m2 := New(Options{Dir: dir, Threads: 1, NewBackend: func() (compute.Backend, error) {
		opened.Add(1)
		return cpu.New(cpu.Options{Threads: 1}), nil
	}})
	defer m2.Close(context.Background())
	h, err := m2.Acquire(context.Background(), "tiny", nil)
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	if opened.Load() != 2 {
		t.Errorf("NewBackend called %d times in all, want 2", opened.Load())
	}
}

// warmingModel is a stub model that records its warm-ups.
type warmingModel struct {
	stubModel
	warmups atomic.Int32
	fail    bool
}

func (w *warmingModel) Warmup(ctx context.Context) error {
	w.warmups.Add(1)
	if w.fail {
		return errors.New("no memory for scratch")
	}
	return nil
}

// TestLoadWarmsUpBeforeServing checks that a model with Warmup is warmed
// up once, before the caller that loaded it gets it, and that a failed
// warm-up does not fail the load.
func TestLoadWarmsUpBeforeServing(t *testing.T) {
	for _, fail := range []bool{false, true} {
		m, _, _ := newTestManager(t, Options{}, "a.gguf")
		var loaded *warmingModel
		m.o.Loader = func(ctx context.Context, path string) (Model, error) {
			loaded = &warmingModel{stubModel: stubModel{path: path}, fail: fail}
			return loaded, nil
		}
		h, err := m.Acquire(context.Background(), "a", nil)
		if err != nil {
			t.Fatalf("fail=%v: %v", fail, err)
		}
		if n := loaded.warmups.Load(); n != 1 {
			t.Errorf("fail=%v: %d warm-ups when Acquire returned, want 1", fail, n)
		}
		h.Release()
		h, err = m.Acquire(context.Background(), "a", nil)
		if err != nil {
			t.Fatal(err)
		}
		h.Release()
		if n := loaded.warmups.Load(); n != 1 {
			t.Errorf("fail=%v: %d warm-ups after a second Acquire, want 1", fail, n)
		}
	}
}

// gatedWarmingModel is a stub model whose warm-up signals that it started
// and then waits for its gate.
type gatedWarmingModel struct {
	stubModel
	started, gate chan struct{}
}

func (g *gatedWarmingModel) Warmup(ctx context.Context) error {
	close(g.started)
	<-g.gate
	return nil
}

// TestNoCallerGetsModelBeforeWarmup checks that a caller arriving while a
// model is restoring its cache or warming up waits for the load to end
// instead of getting the model early: a request served then would miss
// the prefixes a restart restores (bench/restart.sh's first request after
// a restart did, at 0 of 1740 tokens cached).
func TestNoCallerGetsModelBeforeWarmup(t *testing.T) {
	m, _, _ := newTestManager(t, Options{}, "a.gguf")
	g := &gatedWarmingModel{started: make(chan struct{}), gate: make(chan struct{})}
	m.o.Loader = func(ctx context.Context, path string) (Model, error) {
		g.path = path
		return g, nil
	}
	first := make(chan error, 1)
	go func() {
		h, err := m.Acquire(context.Background(), "a", nil)
		if err == nil {
			h.Release()
		}
		first <- err
	}()
	<-g.started
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if h, err := m.Acquire(ctx, "a", nil); err == nil {
		h.Release()
		t.Fatal("a second caller got the model while it was warming up")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second caller: %v, want the deadline", err)
	}
	close(g.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	h, err := m.Acquire(context.Background(), "a", nil)
	if err != nil {
		t.Fatalf("after the warm-up: %v", err)
	}
	h.Release()
}

// TestCloseDuringLoadClosesModel checks that a model whose load ends after
// Close is closed, not left loaded in a closed manager.
func TestCloseDuringLoadClosesModel(t *testing.T) {
	m, _, _ := newTestManager(t, Options{}, "a.gguf")
	g := &gatedWarmingModel{started: make(chan struct{}), gate: make(chan struct{})}
	m.o.Loader = func(ctx context.Context, path string) (Model, error) {
		g.path = path
		return g, nil
	}
	first := make(chan error, 1)
	go func() {
		h, err := m.Acquire(context.Background(), "a", nil)
		if err == nil {
			h.Release()
		}
		first <- err
	}()
	<-g.started
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(g.gate)
	if err := <-first; err == nil {
		t.Error("Acquire succeeded on a manager closed during the load")
	}
	if !g.closed.Load() {
		t.Error("the model loaded during Close was not closed")
	}
}

// TestDefaultNeverShadowed: a file in the models directory with the name of
// the default model (given by path) neither replaces it for requests nor
// lets a delete of that name unload or remove it.
func TestDefaultNeverShadowed(t *testing.T) {
	def := filepath.Join(t.TempDir(), "same.gguf")
	os.WriteFile(def, []byte("GGUF"), 0o600)
	m, _, _ := newTestManager(t, Options{Default: def}, "same.gguf")
	got, err := m.Resolve("same")
	if err != nil || got != def {
		t.Fatalf("Resolve(same) = %q, %v; want the default %q", got, err, def)
	}
	h, err := m.Acquire(context.Background(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	if err := m.Remove("same"); !errors.Is(err, ErrOutsideDir) {
		t.Fatalf("Remove(same): %v, want ErrOutsideDir", err)
	}
	if len(m.Loaded()) != 1 {
		t.Fatal("the default model was unloaded by a delete of its name")
	}
	if _, err := os.Stat(def); err != nil {
		t.Fatal(err)
	}
}

// TestDefaultLoaderServesWithoutBrokenDraft: a model whose configured draft
// model cannot be used (a missing file, the model's own type as a self
// draft) is served without speculation from a draft model, with a warning,
// instead of failing every request for it.
func TestDefaultLoaderServesWithoutBrokenDraft(t *testing.T) {
	dir := t.TempDir()
	o := testmodel.DefaultOptions()
	o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = "llama", 1, 32, 2, 2, 64, 256
	o.Type = quant.Q8_0
	if err := testmodel.Write(context.Background(), o, filepath.Join(dir, "tiny.gguf")); err != nil {
		t.Fatal(err)
	}
	for _, draft := range []string{filepath.Join(dir, "missing.gguf"), "self:Q8_0"} {
		var logs strings.Builder
		m := New(Options{Dir: dir, CacheDir: t.TempDir(), Threads: 1, Speculate: spec.KindsAll,
			Draft:  func(string) string { return draft },
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		h, err := m.Acquire(context.Background(), "tiny", nil)
		if err != nil {
			t.Fatalf("draft %s: %v", draft, err)
		}
		h.Release()
		m.Close(context.Background())
		if !strings.Contains(logs.String(), "without its draft model") {
			t.Errorf("draft %s: no warning logged:\n%s", draft, logs.String())
		}
	}
}

// TestListMatchesExtensionInAnyCase: a model file whose extension is not
// lower-case (a pull of OWNER/REPO/NAME.GGUF lands as NAME.GGUF) is listed
// and resolves; of two files sharing a name, the ".gguf" one keeps it.
func TestListMatchesExtensionInAnyCase(t *testing.T) {
	for _, tc := range []struct {
		files    []string
		names    string // the names List gives, joined by ","
		resolve  string // a name to resolve
		wantFile string // the file it resolves to
	}{
		{files: []string{"Pulled.GGUF"}, names: "pulled", resolve: "pulled", wantFile: "Pulled.GGUF"},
		{files: []string{"mixed.Gguf", "notes.txt", "a.gguf.partial"}, names: "mixed", resolve: "MIXED:latest", wantFile: "mixed.Gguf"},
		{files: []string{"UPPER.GGUF", "Upper.gguf"}, names: "upper", resolve: "upper", wantFile: "Upper.gguf"},
	} {
		t.Run(tc.files[0], func(t *testing.T) {
			m, _, _ := newTestManager(t, Options{}, tc.files...)
			list, err := m.List()
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, a := range list {
				names = append(names, a.Name)
			}
			if got := strings.Join(names, ","); got != tc.names {
				t.Fatalf("names %q, want %q", got, tc.names)
			}
			p, err := m.Resolve(tc.resolve)
			if err != nil {
				t.Fatalf("resolve %q: %v", tc.resolve, err)
			}
			if filepath.Base(p) != tc.wantFile {
				t.Fatalf("resolve %q = %s, want %s", tc.resolve, p, tc.wantFile)
			}
		})
	}
}

// TestReleaseTrimsToMaxLoaded: models loaded over --max-loaded while every
// loaded one was busy are unloaded as they go idle, least recently used
// first, so the limit holds again once the burst ends, whatever their
// keep-alive (they stayed loaded for ever with a negative one).
func TestReleaseTrimsToMaxLoaded(t *testing.T) {
	forever := time.Duration(-1)
	for _, tc := range []struct {
		name      string
		max       int
		keepAlive *time.Duration
		release   []string // the order requests end in
		want      string   // loaded models after every release
	}{
		{name: "limit 1", max: 1, release: []string{"a", "b", "c"}, want: "c"},
		{name: "limit 1 forever", max: 1, keepAlive: &forever, release: []string{"c", "a", "b"}, want: "b"},
		{name: "limit 2", max: 2, keepAlive: &forever, release: []string{"b", "a", "c"}, want: "a,c"},
		{name: "limit 3", max: 3, release: []string{"a", "b", "c"}, want: "a,b,c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, _ := newTestManager(t, Options{MaxLoaded: tc.max}, "a.gguf", "b.gguf", "c.gguf")
			hs := map[string]*Handle{}
			for _, n := range []string{"a", "b", "c"} {
				h, err := m.Acquire(context.Background(), n, tc.keepAlive)
				if err != nil {
					t.Fatal(err)
				}
				hs[n] = h
			}
			if n := len(m.Loaded()); n != 3 {
				t.Fatalf("%d loaded while all are busy, want 3", n)
			}
			for _, n := range tc.release {
				hs[n].Release()
			}
			var names []string
			for _, lm := range m.Loaded() {
				names = append(names, lm.Name)
			}
			if got := strings.Join(names, ","); got != tc.want {
				t.Fatalf("loaded %q after the releases, want %q", got, tc.want)
			}
			for n, h := range hs {
				if !strings.Contains(tc.want, n) {
					waitFor(t, h.Model.(*stubModel).closed.Load, n+" closed")
				}
			}
		})
	}
}

// TestReplacedFileLoadsAgain: a model file replaced on disk while its model
// is loaded (a new quantization renamed over it) is loaded again by the
// next request once the model is idle; requests kept getting the old
// model, for ever with a negative keep-alive.
func TestReplacedFileLoadsAgain(t *testing.T) {
	for _, tc := range []struct {
		name      string
		replace   func(t *testing.T, path string)
		busy      bool // a request holds the model while the file changes
		fault     bool // the model faulted reading its mapping
		wantLoads int
	}{
		{name: "unchanged", replace: func(*testing.T, string) {}, wantLoads: 1},
		// The file truncated and written again to the same size and time
		// (a copy preserving times): only the fault tells.
		{name: "faulted, file looks the same", replace: func(*testing.T, string) {}, fault: true, wantLoads: 2},
		{name: "renamed over", replace: func(t *testing.T, path string) {
			tmp := path + ".tmp"
			if err := os.WriteFile(tmp, []byte("GGUF new"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}, wantLoads: 2},
		{name: "rewritten in place", replace: func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("GGUF longer"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, wantLoads: 2},
		{name: "renamed over while in use", busy: true, replace: func(t *testing.T, path string) {
			tmp := path + ".tmp"
			if err := os.WriteFile(tmp, []byte("GGUF new"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}, wantLoads: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forever := time.Duration(-1)
			m, l, _ := newTestManager(t, Options{}, "a.gguf")
			ctx := context.Background()
			h, err := m.Acquire(ctx, "a", &forever)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(h.Release)
			h.Model.(*stubModel).faulted.Store(tc.fault)
			if !tc.busy {
				h.Release()
			}
			tc.replace(t, filepath.Join(m.o.Dir, "a.gguf"))
			h2, err := m.Acquire(ctx, "a", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer h2.Release()
			if n := l.count("a.gguf"); n != tc.wantLoads {
				t.Fatalf("%d loads, want %d", n, tc.wantLoads)
			}
			if replaced := h2.Model != h.Model; replaced != (tc.wantLoads == 2) {
				t.Fatalf("new model %v, want %v", replaced, tc.wantLoads == 2)
			}
			if tc.wantLoads == 2 && !h.Model.(*stubModel).closed.Load() {
				t.Fatal("the model of the replaced file was not closed")
			}
			h2.Release()
			if got := m.Loaded(); len(got) != 1 || !got[0].ExpiresAt.IsZero() {
				t.Fatalf("loaded %+v: want the model kept for ever, as its keep-alive said", got)
			}
		})
	}
}

// TestListRegularFilesOnly: a FIFO, a directory or a dangling link named
// like a model is not listed (a FIFO was listed as a model of size 0 that
// every request refused); a link to a model file is.
func TestListRegularFilesOnly(t *testing.T) {
	m, _, _ := newTestManager(t, Options{}, "real.gguf")
	dir := m.o.Dir
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.gguf"), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	os.Mkdir(filepath.Join(dir, "folder.gguf"), 0o700)
	os.Symlink(filepath.Join(dir, "missing.bin"), filepath.Join(dir, "dangling.gguf"))
	os.Symlink(filepath.Join(dir, "real.gguf"), filepath.Join(dir, "linked.gguf"))
	list, err := m.List()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range list {
		names = append(names, a.Name)
	}
	if got := strings.Join(names, ","); got != "linked,real" {
		t.Fatalf("listed %q, want linked,real", got)
	}
}
