package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/pflag"

	"github.com/ruvllm/ruvllm/ipc"
)

// Config holds where the daemon keeps things and how it listens.
type Config struct {
	// SocketPath is the Unix socket; default ipc.SocketPath().
	SocketPath string
	// TCPAddr, when set, also listens on this loopback address, with the
	// bearer token from StateDir/token required on every request (on
	// Linux, not from processes of the daemon's own uid, unless
	// RequireToken is set).
	TCPAddr string
	// RequireToken demands the token from every TCP client, the daemon's
	// own user included.
	RequireToken bool
	// StateDir holds state.db and the token; ModelsDir the GGUF files;
	// AdaptersDir the adapter drop folder; CacheDir logs and prefix-cache
	// snapshots.
	StateDir, ModelsDir, AdaptersDir, CacheDir string
	// MaxBodyBytes limits request bodies (default 32 MiB).
	MaxBodyBytes int64
	// UnixWriteIdle cuts a Unix-socket connection whose peer stops reading
	// for that long (0: UnixWriteIdleTimeout).
	UnixWriteIdle time.Duration
	// Threads for inference (0: all cores).
	Threads int
	// Logger receives the daemon's logs.
	Logger *slog.Logger
	// Version is reported by /v1/health and /api/version.
	Version string
	// socketMode is the socket file's mode (0600); tests widen it to prove
	// the peer check, not file modes, refuses other users.
	socketMode os.FileMode
	dirMode    os.FileMode
	// beforeStaleRemove runs between finding the socket path stale and
	// removing it; tests start another daemon there.
	beforeStaleRemove func()
}

// DefaultConfig returns the platform's directories: XDG on Linux,
// ~/Library/Application Support/ruvllm on macOS. Without a home directory
// ($HOME unset: a system service, env -i) those under it are left empty
// for flags to give (CheckDirs says which): it failed, and no flag could
// start the daemon.
func DefaultConfig() (Config, error) {
	home, homeErr := os.UserHomeDir()
	sock, err := ipc.SocketPath()
	if err != nil {
		return Config{}, err
	}
	c := Config{SocketPath: sock, MaxBodyBytes: 32 << 20, Version: "dev"}
	under := func(parts ...string) string {
		if homeErr != nil {
			return ""
		}
		return filepath.Join(append([]string{home}, parts...)...)
	}
	if runtime.GOOS == "darwin" {
		if base := under("Library", "Application Support", "ruvllm"); base != "" {
			c.StateDir, c.ModelsDir, c.AdaptersDir = base, filepath.Join(base, "models"), filepath.Join(base, "adapters")
			c.CacheDir = under("Library", "Caches", "ruvllm")
		}
		return c, nil
	}
	xdg := func(env, def string, sub ...string) string {
		base := os.Getenv(env)
		if base == "" {
			if base = under(def); base == "" {
				return ""
			}
		}
		return filepath.Join(append([]string{base, "ruvllm"}, sub...)...)
	}
	c.StateDir = xdg("XDG_CONFIG_HOME", ".config")
	c.ModelsDir, c.AdaptersDir = xdg("XDG_DATA_HOME", ".local/share", "models"), xdg("XDG_DATA_HOME", ".local/share", "adapters")
	c.CacheDir = xdg("XDG_CACHE_HOME", ".cache")
	return c, nil
}

// CheckDirs refuses a configuration without one of its directories, as
// DefaultConfig leaves them without a home directory, naming the flag
// that gives it.
func (c Config) CheckDirs() error {
	for _, d := range []struct{ flag, dir string }{
		{"state-dir", c.StateDir}, {"models-dir", c.ModelsDir}, {"adapters-dir", c.AdaptersDir}, {"cache-dir", c.CacheDir},
	} {
		if d.dir == "" {
			return fmt.Errorf("--%s: no default without a home directory ($HOME is not set): give one", d.flag)
		}
	}
	return nil
}

// RegisterFlags binds the daemon's command-line flags to c (shared by
// ruvllmd and `ruvllm daemon`).
func (c *Config) RegisterFlags(f *pflag.FlagSet) {
	f.StringVar(&c.SocketPath, "socket", c.SocketPath, "Unix socket path")
	f.StringVar(&c.TCPAddr, "listen", "", "also listen on this loopback TCP address (bearer token required, except from your own user on Linux)")
	f.BoolVar(&c.RequireToken, "require-token", false, "require the bearer token on TCP from every client, your own user's too")
	f.StringVar(&c.StateDir, "state-dir", c.StateDir, "directory of state.db and the TCP token")
	f.StringVar(&c.ModelsDir, "models-dir", c.ModelsDir, "directory of GGUF models")
	f.StringVar(&c.AdaptersDir, "adapters-dir", c.AdaptersDir, "adapter drop folder")
	f.StringVar(&c.CacheDir, "cache-dir", c.CacheDir, "directory for logs and prefix-cache snapshots")
	f.IntVar(&c.Threads, "threads", 0, "inference threads (0: all cores)")
}
