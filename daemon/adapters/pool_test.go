package adapters

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/daemon/store"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/ipc"
)

type fixture struct {
	dir, base string
	pool      *Pool
	model     *llm.Model
	events    *recorder
}

type recorder struct{ ch chan string }

func (r *recorder) Publish(typ string, data any) {
	select {
	case r.ch <- typ:
	default:
	}
}

func newFixture(t *testing.T, budget int64) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dir: dir, base: filepath.Join(dir, "base.gguf"), events: &recorder{ch: make(chan string, 16)}}
	o := testmodel.DefaultOptions()
	o.Arch = "qwen2"
	if err := testmodel.Write(context.Background(), o, f.base); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f.pool, err = New(Options{DropDir: filepath.Join(dir, "drop"), RegistryDir: filepath.Join(dir, "registry"), Store: db,
		Events: f.events, Budget: budget, Base: func() string { return f.base },
		Settle: 50 * time.Millisecond, RejectAfter: 600 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f.model, err = llm.Load(context.Background(), f.base, llm.Options{Threads: 1, ContextLength: 128})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.model.Close() })
	return f
}

// adapterFile writes a random adapter for the fixture's base.
func (f *fixture) adapterFile(t *testing.T, name string, seed uint64, rank int) string {
	t.Helper()
	base, err := gguf.Open(f.base)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	w, err := lora.Random(base, lora.RandomOptions{Rank: rank, Alpha: 8, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(f.dir, name)
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestInstallResolveHotSwap(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	info, err := f.pool.Install(ctx, f.adapterFile(t, "Tone.gguf", 1, 4), "", false)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "tone" || info.Rank != 4 || info.BaseModel != "base" || len(info.SHA256) != 64 || len(info.Targets) == 0 {
		t.Fatalf("record %+v", info)
	}
	if ev := <-f.events.ch; ev != "adapter.installed" {
		t.Fatalf("event %q", ev)
	}
	v1, err := f.pool.Resolve(ctx, f.model, []ipc.AdapterRef{{Name: "tone"}})
	if err != nil {
		t.Fatal(err)
	}
	if v1[0].Scale != 1 || v1[0].Adapter.Name != "tone" {
		t.Fatalf("applied %+v", v1[0])
	}
	again, _ := f.pool.Resolve(ctx, f.model, []ipc.AdapterRef{{Name: "tone", Scale: 0.5}})
	if again[0].Adapter != v1[0].Adapter || again[0].Scale != 0.5 {
		t.Fatal("a second request loaded the adapter again")
	}
	sum1 := v1[0].Adapter.Checksum

	// A new version under the same name: new requests get it, the old one
	// held by a running request is untouched and still usable.
	info2, err := f.pool.Install(ctx, f.adapterFile(t, "tone-v2.gguf", 2, 4), "tone", false)
	if err != nil {
		t.Fatal(err)
	}
	if info2.SHA256 == info.SHA256 {
		t.Fatal("new version has the old checksum")
	}
	if _, err := os.Stat(info.File); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("old version's file still in the registry: %v", err)
	}
	v2, err := f.pool.Resolve(ctx, f.model, []ipc.AdapterRef{{Name: "tone"}})
	if err != nil {
		t.Fatal(err)
	}
	if v2[0].Adapter == v1[0].Adapter || v2[0].Adapter.Checksum == sum1 {
		t.Fatal("hot swap: still the old version")
	}
	if v1[0].Adapter.Checksum != sum1 || len(v1[0].Adapter.Targets) == 0 {
		t.Fatal("hot swap disturbed the old version")
	}
	_, err = f.model.Generate(ctx, llm.Request{Tokens: []int32{1, 2, 3}, MaxTokens: 2, IgnoreEOS: true, Adapters: v1}, func(llm.Token) error { return nil })
	if err != nil {
		t.Fatalf("generate with the old version: %v", err)
	}

	// The registry survives a restart of the pool.
	p2, err := New(f.pool.o)
	if err != nil {
		t.Fatal(err)
	}
	if l := p2.List(); len(l) != 1 || l[0].SHA256 != info2.SHA256 {
		t.Fatalf("registry after reopen: %+v", l)
	}

	if _, err := f.pool.Resolve(ctx, f.model, []ipc.AdapterRef{{Name: "nope"}}); !errors.Is(err, ErrUnknown) {
		t.Fatalf("unknown: %v", err)
	}
	if err := f.pool.Remove("tone"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Resolve(ctx, f.model, []ipc.AdapterRef{{Name: "tone"}}); !errors.Is(err, ErrUnknown) {
		t.Fatalf("after remove: %v", err)
	}
	if err := f.pool.Remove("tone"); !errors.Is(err, ErrUnknown) {
		t.Fatalf("second remove: %v", err)
	}
}

func TestBudgetEvictsLeastRecentlyUsed(t *testing.T) {
	f := newFixture(t, 1)
	ctx := context.Background()
	for i, n := range []string{"a.gguf", "b.gguf"} {
		if _, err := f.pool.Install(ctx, f.adapterFile(t, n, uint64(i+1), 4), "", false); err != nil {
			t.Fatal(err)
		}
	}
	a1, err := f.pool.Resolve(ctx, f.model, []ipc.AdapterRef{{Name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	one := f.pool.LoadedBytes()
	if _, err := f.pool.Resolve(ctx, f.model, []ipc.AdapterRef{{Name: "b"}}); err != nil {
		t.Fatal(err)
	}
	if got := f.pool.LoadedBytes(); got > one*3/2 {
		t.Fatalf("loaded bytes %d after a second adapter over a 1-byte budget (one adapter: %d)", got, one)
	}
	a2, _ := f.pool.Resolve(ctx, f.model, []ipc.AdapterRef{{Name: "a"}})
	if a2[0].Adapter == a1[0].Adapter {
		t.Fatal("a was not evicted")
	}
	if a1[0].Adapter.Checksum != a2[0].Adapter.Checksum {
		t.Fatal("reloaded adapter differs")
	}
}

func TestInstallRejectsMismatch(t *testing.T) {
	f := newFixture(t, 0)
	// An adapter for a model with another shape.
	other := filepath.Join(f.dir, "other.gguf")
	o := testmodel.DefaultOptions()
	o.Arch, o.Dim, o.FF = "qwen2", 32, 64
	if err := testmodel.Write(context.Background(), o, other); err != nil {
		t.Fatal(err)
	}
	f.base, other = other, f.base
	bad := f.adapterFile(t, "bad.gguf", 1, 2)
	f.base = other
	if _, err := f.pool.Install(context.Background(), bad, "", false); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "blk.0") {
		t.Fatalf("err = %v", err)
	}
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

func TestDropFolder(t *testing.T) {
	f := newFixture(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.pool.Watch(ctx)
	drop := f.pool.o.DropDir

	// Garbage is moved to rejected/ with a reason, never deleted.
	os.WriteFile(filepath.Join(drop, "junk.gguf"), []byte("definitely not gguf"), 0o600)
	waitFor(t, 10*time.Second, "rejection", func() bool {
		_, err := os.Stat(filepath.Join(drop, RejectedDir, "junk.gguf.reason.txt"))
		return err == nil
	})
	reason, _ := os.ReadFile(filepath.Join(drop, RejectedDir, "junk.gguf.reason.txt"))
	if !strings.Contains(string(reason), "not installed") {
		t.Fatalf("reason: %s", reason)
	}
	if _, err := os.Stat(filepath.Join(drop, RejectedDir, "junk.gguf")); err != nil {
		t.Fatal("rejected file is gone")
	}

	// A file copied slowly (half, a pause longer than Settle, the rest)
	// is installed once complete, not rejected.
	src, _ := os.ReadFile(f.adapterFile(t, "slow.gguf", 3, 4))
	out, err := os.Create(filepath.Join(drop, "slow.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	out.Write(src[:len(src)/2])
	time.Sleep(250 * time.Millisecond)
	out.Write(src[len(src)/2:])
	out.Close()
	took := waitFor(t, 10*time.Second, "install", func() bool { return len(f.pool.List()) == 1 })
	t.Logf("installed %v after the copy completed", took)
	if _, err := os.Stat(filepath.Join(drop, RejectedDir, "slow.gguf")); err == nil {
		t.Fatal("half-copied file was rejected")
	}
	if _, err := os.Stat(filepath.Join(drop, "slow.gguf")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("installed file still in the drop folder")
	}
	if _, err := f.pool.Resolve(ctx, f.model, []ipc.AdapterRef{{Name: "slow"}}); err != nil {
		t.Fatal(err)
	}
}

func TestInstallPEFTDirectory(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	base, err := gguf.Open(f.base)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	a, err := lora.Load(f.adapterFile(t, "x.gguf", 7, 4), base, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.dir, "My-PEFT")
	if err := lora.ExportPEFT(a, base, dir); err != nil {
		t.Fatal(err)
	}
	info, err := f.pool.Install(ctx, dir, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if info.Format != "peft" || info.Name != "my-peft" {
		t.Fatalf("record %+v", info)
	}
	got, err := f.pool.Resolve(ctx, f.model, []ipc.AdapterRef{{Name: "my-peft"}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Adapter.Checksum != a.Checksum {
		t.Fatal("installed PEFT adapter differs from its GGUF source")
	}
	if err := f.pool.Remove("my-peft"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(info.File); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("removed PEFT directory still in the registry")
	}
}

// TestRegistryInsideDropFolder: the daemon keeps its registry in a hidden
// folder of the drop folder; installed files there are never picked up
// again.
func TestRegistryInsideDropFolder(t *testing.T) {
	f := newFixture(t, 0)
	drop := f.pool.o.DropDir
	f.pool.o.RegistryDir = filepath.Join(drop, ".installed")
	os.MkdirAll(f.pool.o.RegistryDir, 0o700)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.pool.Watch(ctx)
	src, _ := os.ReadFile(f.adapterFile(t, "x.gguf", 1, 4))
	os.WriteFile(filepath.Join(drop, "x.gguf"), src, 0o600)
	waitFor(t, 10*time.Second, "install", func() bool { return len(f.pool.List()) == 1 })
	time.Sleep(300 * time.Millisecond) // several settle periods and a rescan
	if l := f.pool.List(); len(l) != 1 || l[0].Name != "x" {
		t.Fatalf("registry %+v", l)
	}
	if _, err := os.Stat(f.pool.List()[0].File); err != nil {
		t.Fatal(err)
	}
}

// TestDropPEFTDirectory: a PEFT folder copied into the drop folder file by
// file is installed once both files are there and stable.
func TestDropPEFTDirectory(t *testing.T) {
	f := newFixture(t, 0)
	base, err := gguf.Open(f.base)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	a, err := lora.Load(f.adapterFile(t, "x.gguf", 9, 4), base, nil)
	if err != nil {
		t.Fatal(err)
	}
	staged := filepath.Join(f.dir, "staged")
	if err := lora.ExportPEFT(a, base, staged); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.pool.Watch(ctx)
	dst := filepath.Join(f.pool.o.DropDir, "coder")
	os.MkdirAll(dst, 0o700)
	cfg, _ := os.ReadFile(filepath.Join(staged, lora.PEFTConfig))
	os.WriteFile(filepath.Join(dst, lora.PEFTConfig), cfg, 0o600)
	time.Sleep(200 * time.Millisecond) // config alone: incomplete, must not be rejected yet
	w, _ := os.ReadFile(filepath.Join(staged, lora.PEFTWeights))
	os.WriteFile(filepath.Join(dst, lora.PEFTWeights), w, 0o600)
	// The record comes first, then the dropped folder is removed (Install
	// with move): wait for both, not the record alone.
	waitFor(t, 10*time.Second, "install and removal from the drop folder", func() bool {
		_, err := os.Stat(dst)
		return len(f.pool.List()) == 1 && errors.Is(err, os.ErrNotExist)
	})
	info := f.pool.List()[0]
	if info.Name != "coder" || info.Format != "peft" {
		t.Fatalf("record %+v", info)
	}
	got, err := f.pool.Resolve(ctx, f.model, []ipc.AdapterRef{{Name: "coder"}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Adapter.Checksum != a.Checksum {
		t.Fatal("dropped PEFT adapter differs from its source")
	}
}

// TestDropPEFTDirectoryWeightsLate: a PEFT directory whose weights arrive
// long after its config (a download that writes them under another name
// until they are whole) is installed once they do; it was moved into
// rejected/ after RejectAfter, under the download's feet.
func TestDropPEFTDirectoryWeightsLate(t *testing.T) {
	f := newFixture(t, 0)
	base, err := gguf.Open(f.base)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	a, err := lora.Load(f.adapterFile(t, "x.gguf", 9, 4), base, nil)
	if err != nil {
		t.Fatal(err)
	}
	staged := filepath.Join(f.dir, "staged")
	if err := lora.ExportPEFT(a, base, staged); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.pool.Watch(ctx)
	dst := filepath.Join(f.pool.o.DropDir, "late")
	os.MkdirAll(dst, 0o700)
	cfg, _ := os.ReadFile(filepath.Join(staged, lora.PEFTConfig))
	os.WriteFile(filepath.Join(dst, lora.PEFTConfig), cfg, 0o600)
	time.Sleep(3 * f.pool.o.RejectAfter) // config alone, well past RejectAfter
	if _, err := os.Stat(dst); err != nil {
		t.Fatalf("the incomplete directory was moved away: %v", err)
	}
	w, _ := os.ReadFile(filepath.Join(staged, lora.PEFTWeights))
	os.WriteFile(filepath.Join(dst, lora.PEFTWeights), w, 0o600)
	waitFor(t, 10*time.Second, "install", func() bool { return len(f.pool.List()) == 1 })
	if info := f.pool.List()[0]; info.Name != "late" || info.Format != "peft" {
		t.Fatalf("record %+v", info)
	}
}

// TestMovedPEFTDirectoryKeepsOtherFiles: installing a PEFT directory with
// move (a drop) takes its config and weights, and removes the directory
// only when nothing else is in it. A training run's output folder dropped
// as a whole lost its tokenizer files, checkpoints and notes.
func TestMovedPEFTDirectoryKeepsOtherFiles(t *testing.T) {
	f := newFixture(t, 0)
	base, err := gguf.Open(f.base)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	a, err := lora.Load(f.adapterFile(t, "x.gguf", 7, 4), base, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		extras []string // files besides the adapter's, kept
	}{
		{"adapter only", nil},
		{"training output", []string{"notes.txt", "tokenizer.json", filepath.Join("checkpoint-100", "optimizer.pt")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			if err := lora.ExportPEFT(a, base, dir); err != nil {
				t.Fatal(err)
			}
			for _, e := range tc.extras {
				p := filepath.Join(dir, e)
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(e), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := f.pool.Install(context.Background(), dir, "", true); err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{lora.PEFTConfig, lora.PEFTWeights} {
				if _, err := os.Lstat(filepath.Join(dir, n)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s was not moved: %v", n, err)
				}
			}
			for _, e := range tc.extras {
				if b, err := os.ReadFile(filepath.Join(dir, e)); err != nil || string(b) != e {
					t.Errorf("%s: %q, %v: want it kept", e, b, err)
				}
			}
			if _, err := os.Lstat(dir); (err == nil) != (len(tc.extras) > 0) {
				t.Errorf("directory: %v (with %d other files)", err, len(tc.extras))
			}
		})
	}
}

// TestCreatedModelsAdapterNotReplaced: an adapter a created model's
// Modelfile installed (recorded as CreatedFor) is not replaced by another
// install of its name, which swapped the model's weights and dropped the
// record's owner; re-creating that model replaces it.
func TestCreatedModelsAdapterNotReplaced(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	first, other := f.adapterFile(t, "a.gguf", 1, 4), f.adapterFile(t, "b.gguf", 2, 4)
	made, err := f.pool.InstallFor(ctx, first, "tone-adapter-1", "tone")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		install func() (ipc.AdapterInfo, error)
		ok      bool
	}{
		{"install by path", func() (ipc.AdapterInfo, error) { return f.pool.Install(ctx, other, "tone-adapter-1", false) }, false},
		{"another created model", func() (ipc.AdapterInfo, error) { return f.pool.InstallFor(ctx, other, "tone-adapter-1", "mood") }, false},
		{"the model re-created", func() (ipc.AdapterInfo, error) { return f.pool.InstallFor(ctx, other, "tone-adapter-1", "tone") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.install()
			got, _ := f.pool.Get("tone-adapter-1")
			if tc.ok {
				if err != nil || got.CreatedFor != "tone" || got.SHA256 == made.SHA256 {
					t.Fatalf("err %v, record %+v: want the new version, still the model's", err, got)
				}
				return
			}
			if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), `"tone"`) {
				t.Fatalf("err = %v, want ErrInUse naming the model", err)
			}
			if got.SHA256 != made.SHA256 || got.CreatedFor != "tone" {
				t.Fatalf("record %+v: replaced", got)
			}
		})
	}
}
