// Package service installs ruvllmd as a per-user service that the system
// starts on the first connection to its socket: a systemd user unit pair
// (ruvllmd.socket + ruvllmd.service, driven over D-Bus) on Linux, a
// LaunchAgent with a Sockets entry on macOS.
package service

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/ruvllm/ruvllm/ipc"
)

// ErrUnsupported is returned on platforms without a supported service manager.
var ErrUnsupported = errors.New("service install is supported on Linux (systemd) and macOS (launchd) only")

// Options says what to install and where. Zero fields take defaults.
type Options struct {
	// Executable is the daemon binary (default: ruvllmd beside the running
	// executable if present, else the running executable with Args "daemon").
	Executable string
	// Args come before the --socket flag on the daemon's command line.
	Args []string
	// DaemonArgs are the daemon's own flags (-m, --listen, ...), after
	// --socket on its command line.
	DaemonArgs []string
	// SocketPath is where the service manager listens (default
	// ipc.SocketPath()); a relative one is taken from the working directory.
	SocketPath string
	// Home is the user's home directory (default os.UserHomeDir()).
	Home string
	// UID is the user id for launchctl's gui/<uid> domain (default os.Getuid()).
	UID int
	// BusAddress is the D-Bus address to use instead of the session bus (Linux; tests).
	BusAddress string
	// RunAtLoad starts the daemon at login instead of on first connection (macOS).
	RunAtLoad bool
	// Logger receives progress messages (slog.Default() when nil).
	Logger *slog.Logger

	// run executes launchctl; tests replace it.
	run runFunc
}

// UnitStatus is the state of one installed unit or agent.
type UnitStatus struct {
	Name string `json:"name"`
	// Path is the unit file or plist.
	Path string `json:"path"`
	// Installed says whether the file exists.
	Installed bool `json:"installed"`
	// FileState is systemd's UnitFileState ("enabled", "disabled", ...) or
	// for launchd "loaded"/"not loaded".
	FileState string `json:"file_state,omitempty"`
	// ActiveState is systemd's ActiveState ("active", "inactive", "failed",
	// ...) or launchd's state ("running", "waiting", ...).
	ActiveState string `json:"active_state,omitempty"`
}

// State is the service manager and every unit it manages for us.
type State struct {
	Manager string       `json:"manager"` // "systemd" or "launchd"
	Units   []UnitStatus `json:"units"`
}

// withDefaults fills the zero fields of o.
func (o Options) withDefaults() (Options, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return o, fmt.Errorf("service: %w", err)
		}
		o.Home = h
	}
	if o.SocketPath == "" {
		p, err := ipc.SocketPath()
		if err != nil {
			return o, fmt.Errorf("service: %w", err)
		}
		o.SocketPath = p
	}
	// The service manager listens where the unit or plist says, from its
	// own working directory: a relative path (--socket or $RUVLLM_SOCKET
	// given as one) made a systemd socket unit that does not parse
	// (ListenStream takes an absolute path, a port or an address), so the
	// install failed after writing it. It means the path from here.
	if !filepath.IsAbs(o.SocketPath) {
		abs, err := filepath.Abs(o.SocketPath)
		if err != nil {
			return o, fmt.Errorf("service: socket path %s: %w", o.SocketPath, err)
		}
		o.SocketPath = abs
	}
	if o.UID == 0 {
		o.UID = os.Getuid()
	}
	if o.Executable == "" {
		self, err := os.Executable()
		if err != nil {
			return o, fmt.Errorf("service: %w", err)
		}
		if self, err = filepath.EvalSymlinks(self); err != nil {
			return o, fmt.Errorf("service: %w", err)
		}
		if d := filepath.Join(filepath.Dir(self), "ruvllmd"); fileExists(d) {
			o.Executable = d
		} else {
			o.Executable, o.Args = self, []string{"daemon"}
		}
	}
	if !filepath.IsAbs(o.Executable) {
		return o, fmt.Errorf("service: executable %q must be an absolute path", o.Executable)
	}
	if o.run == nil {
		o.run = execRun
	}
	return o, nil
}

// command is the daemon's full command line.
func (o Options) command() []string {
	cmd := append(append([]string{o.Executable}, o.Args...), "--socket", o.SocketPath)
	return append(cmd, o.DaemonArgs...)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// writeFile writes data atomically (temp file + rename) with mode 0644.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
