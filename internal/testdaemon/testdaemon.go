// Package testdaemon runs a real ruvllmd in-process on a temporary socket
// with a synthetic model, for the app's tests and its browser dev server.
// Test code only: the app itself reaches the daemon through ipc.
package testdaemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/serve"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/ipc"
)

// ModelName is the synthetic model's name as the daemon lists it.
const ModelName = "tiny-qwen2"

// Daemon is a running ruvllmd.
type Daemon struct {
	Dir       string // holds models/, state/, cache/, drop/, run/
	Socket    string
	ModelPath string
	Client    *ipc.Client
	cancel    context.CancelFunc
	done      chan error
}

// Options configures Start.
type Options struct {
	// Dir is the daemon's directory (required).
	Dir     string
	Threads int // default 2
	Logger  *slog.Logger
	// ContextLength is the model's context per sequence (0: its 4096).
	ContextLength int
}

// WriteModel writes the synthetic qwen2 model (ChatML template, byte-level
// vocabulary) into dir/models unless it is there, and returns its path.
func WriteModel(ctx context.Context, dir string) (string, error) {
	path := filepath.Join(dir, "models", ModelName+".gguf")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	o := testmodel.DefaultOptions()
	o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = "qwen2", 2, 64, 4, 2, 128, 4096
	if err := testmodel.Write(ctx, o, path); err != nil {
		return "", fmt.Errorf("write test model: %w", err)
	}
	return path, nil
}

// WriteAdapter writes a random LoRA adapter for the model at modelPath.
func WriteAdapter(modelPath, out string, seed uint64) error {
	base, err := gguf.Open(modelPath)
	if err != nil {
		return err
	}
	defer base.Close()
	w, err := lora.Random(base, lora.RandomOptions{Rank: 8, Alpha: 16, Seed: seed})
	if err != nil {
		return err
	}
	return w.WriteFile(out)
}

// ControlTokenBans returns a logit_bias forbidding the model's control
// tokens, so the tiny model cannot end a reply on its own.
func ControlTokenBans(modelPath string) (map[string]float32, error) {
	ids, err := testmodel.ControlTokens(modelPath)
	if err != nil {
		return nil, err
	}
	bans := map[string]float32{}
	for _, id := range ids {
		bans[fmt.Sprint(id)] = -100
	}
	return bans, nil
}

// Start writes the model and serves until Stop; it returns once the
// daemon answers.
func Start(ctx context.Context, o Options) (*Daemon, error) {
	if o.Threads == 0 {
		o.Threads = 2
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	model, err := WriteModel(ctx, o.Dir)
	if err != nil {
		return nil, err
	}
	d := &Daemon{Dir: o.Dir, Socket: filepath.Join(o.Dir, "run", "ruvllm.sock"), ModelPath: model, done: make(chan error, 1)}
	cfg := daemon.Config{SocketPath: d.Socket, StateDir: filepath.Join(o.Dir, "state"), ModelsDir: filepath.Join(o.Dir, "models"),
		AdaptersDir: filepath.Join(o.Dir, "drop"), CacheDir: filepath.Join(o.Dir, "cache"), Threads: o.Threads,
		Version: "test", Logger: o.Logger}
	rctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	go func() {
		d.done <- serve.Run(rctx, serve.Options{Config: cfg, Model: ModelName, Preload: true, KeepAlive: -1, ContextLength: o.ContextLength})
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := ipc.Dial(ctx, ipc.WithSocket(d.Socket), ipc.WithApp("testdaemon"))
		if err == nil {
			d.Client = c
			return d, nil
		}
		select {
		case err := <-d.done:
			cancel()
			return nil, fmt.Errorf("daemon exited: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.Stop()
			return nil, fmt.Errorf("daemon did not answer: %w", err)
		}
	}
}

// Stop shuts the daemon down and returns its error.
func (d *Daemon) Stop() error {
	if d.cancel == nil {
		return nil
	}
	d.cancel()
	d.cancel = nil
	if d.Client != nil {
		d.Client.Close()
	}
	select {
	case err := <-d.done:
		return err
	case <-time.After(15 * time.Second):
		return fmt.Errorf("daemon did not stop")
	}
}
