package serve

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/internal/backends"
)

// TestRunRefusesUnavailableBackend: ruvllmd --backend metal off macOS
// exits with an error naming the platform, before creating its socket.
func TestRunRefusesUnavailableBackend(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("metal is selectable on darwin")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "run", "ruvllm.sock")
	cfg := daemon.Config{SocketPath: sock, StateDir: filepath.Join(dir, "state"), ModelsDir: filepath.Join(dir, "models"),
		CacheDir: filepath.Join(dir, "cache"), Version: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := Run(ctx, Options{Config: cfg, Backend: "metal"})
	if !errors.Is(err, backends.ErrPlatform) || !strings.Contains(err.Error(), runtime.GOOS+"/"+runtime.GOARCH) {
		t.Fatalf("Run with --backend metal on %s: %v, want ErrPlatform naming the platform", runtime.GOOS, err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket %s exists after a refused start (stat: %v)", sock, err)
	}
}

func TestBackendFlagRegistered(t *testing.T) {
	var o Options
	f := pflag.NewFlagSet("ruvllmd", pflag.ContinueOnError)
	RegisterFlags(&o, f)
	if o.Backend != "cpu" {
		t.Errorf("default backend %q, want cpu", o.Backend)
	}
	if err := f.Parse([]string{"--backend", "metal"}); err != nil {
		t.Fatal(err)
	}
	if o.Backend != "metal" {
		t.Errorf("--backend metal parsed as %q", o.Backend)
	}
}
