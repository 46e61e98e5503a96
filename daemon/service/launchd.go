package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"howett.net/plist"
)

// LaunchdLabel is the LaunchAgent's label and plist base name.
const LaunchdLabel = "dev.ruvllm.ruvllmd"

// launchdSocketName must match daemon.LaunchdSocketName, the key the daemon
// asks launch_activate_socket for.
const launchdSocketName = "Listeners"

// launchAgent is the plist document.
type launchAgent struct {
	Label             string                   `plist:"Label"`
	ProgramArguments  []string                 `plist:"ProgramArguments"`
	Sockets           map[string]launchdSocket `plist:"Sockets"`
	RunAtLoad         bool                     `plist:"RunAtLoad"`
	KeepAlive         map[string]bool          `plist:"KeepAlive"`
	ProcessType       string                   `plist:"ProcessType"`
	StandardOutPath   string                   `plist:"StandardOutPath"`
	StandardErrorPath string                   `plist:"StandardErrorPath"`
	EnvironmentVars   map[string]string        `plist:"EnvironmentVariables,omitempty"`
}

// launchdSocket is one Sockets entry: a Unix socket launchd listens on.
type launchdSocket struct {
	SockPathName string `plist:"SockPathName"`
	SockPathMode int    `plist:"SockPathMode"` // decimal 384 = 0600
}

func plistPath(home string) string {
	return filepath.Join(home, "Library", "LaunchAgents", LaunchdLabel+".plist")
}

func logPath(home string) string {
	return filepath.Join(home, "Library", "Logs", "ruvllm", "ruvllmd.log")
}

// plistBytes renders the LaunchAgent for o as an XML plist.
func plistBytes(o Options) ([]byte, error) {
	a := launchAgent{
		Label:            LaunchdLabel,
		ProgramArguments: o.command(),
		Sockets: map[string]launchdSocket{
			launchdSocketName: {SockPathName: o.SocketPath, SockPathMode: 0o600},
		},
		RunAtLoad: o.RunAtLoad,
		// Restart after a crash, not after a clean exit (idle shutdown or
		// SIGTERM); the socket brings it back on the next connection.
		KeepAlive:         map[string]bool{"SuccessfulExit": false},
		ProcessType:       "Interactive",
		StandardOutPath:   logPath(o.Home),
		StandardErrorPath: logPath(o.Home),
	}
	b, err := plist.MarshalIndent(a, plist.XMLFormat, "\t")
	if err != nil {
		return nil, fmt.Errorf("encode plist: %w", err)
	}
	return b, nil
}

// launchdInstall writes the plist and bootstraps it into gui/<uid>.
func launchdInstall(ctx context.Context, o Options) error {
	b, err := plistBytes(o)
	if err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	// launchd creates the socket but not its directory.
	if err := os.MkdirAll(filepath.Dir(o.SocketPath), 0o700); err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(logPath(o.Home)), 0o755); err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	p := plistPath(o.Home)
	domain := "gui/" + strconv.Itoa(o.UID)
	// Replace a loaded older version; bootout fails harmlessly when none is loaded.
	_, _ = o.run(ctx, "launchctl", "bootout", domain+"/"+LaunchdLabel)
	if err := writeFile(p, b); err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	if _, err := o.run(ctx, "launchctl", "bootstrap", domain, p); err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	o.Logger.Info("installed", "plist", p, "socket", o.SocketPath)
	return nil
}

// launchdUninstall boots the agent out and removes its plist.
func launchdUninstall(ctx context.Context, o Options) error {
	var errs []error
	if _, err := o.run(ctx, "launchctl", "bootout", "gui/"+strconv.Itoa(o.UID)+"/"+LaunchdLabel); err != nil && fileExists(plistPath(o.Home)) {
		errs = append(errs, err)
	}
	if err := os.Remove(plistPath(o.Home)); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("service uninstall: %w", err)
	}
	return nil
}

// launchdStop sends the agent's daemon SIGTERM through launchd; the agent
// stays loaded, so its socket starts the daemon again on the next
// connection (a clean exit is not restarted: KeepAlive SuccessfulExit
// false).
func launchdStop(ctx context.Context, o Options) error {
	if _, err := o.run(ctx, "launchctl", "kill", "SIGTERM", "gui/"+strconv.Itoa(o.UID)+"/"+LaunchdLabel); err != nil {
		return fmt.Errorf("service stop: %w", err)
	}
	return nil
}

// launchdStatus reads `launchctl print gui/<uid>/<label>`.
func launchdStatus(ctx context.Context, o Options) (State, error) {
	us := UnitStatus{Name: LaunchdLabel, Path: plistPath(o.Home)}
	us.Installed = fileExists(us.Path)
	out, err := o.run(ctx, "launchctl", "print", "gui/"+strconv.Itoa(o.UID)+"/"+LaunchdLabel)
	if err != nil {
		us.FileState = "not loaded"
	} else {
		us.FileState = "loaded"
		us.ActiveState = parseLaunchctlState(string(out))
	}
	return State{Manager: "launchd", Units: []UnitStatus{us}}, nil
}

// parseLaunchctlState finds the top-level "state = ..." line.
func parseLaunchctlState(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && strings.TrimSpace(k) == "state" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
