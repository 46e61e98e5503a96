package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/godbus/dbus/v5"

	"github.com/ruvllm/ruvllm/internal/sessionbus"
)

// systemd unit names and D-Bus coordinates.
const (
	SocketUnit  = "ruvllmd.socket"
	ServiceUnit = "ruvllmd.service"

	sdDest    = "org.freedesktop.systemd1"
	sdPath    = dbus.ObjectPath("/org/freedesktop/systemd1")
	sdManager = "org.freedesktop.systemd1.Manager"
	sdUnit    = "org.freedesktop.systemd1.Unit"
)

// systemdDir is where user units live.
func systemdDir(home string) string { return filepath.Join(home, ".config", "systemd", "user") }

// socketUnitText is ruvllmd.socket: systemd owns the socket, so the daemon
// starts on the first connection. ListenStream expands specifiers (%t,
// %h, ...), so a '%' of the path is written as "%%": written as it was,
// systemd listened elsewhere than the daemon's --socket, where clients look.
func socketUnitText(o Options) string {
	return fmt.Sprintf(`# Written by "ruvllm service install"; "ruvllm service uninstall" removes it.
[Unit]
Description=ruvllm daemon socket

[Socket]
ListenStream=%s
SocketMode=0600
DirectoryMode=0700
RemoveOnStop=yes
FileDescriptorName=ruvllmd

[Install]
WantedBy=sockets.target
`, strings.ReplaceAll(o.SocketPath, "%", "%%"))
}

// checkUnitWords refuses a socket path or command word a unit file cannot
// hold: a unit file is read line by line, so a newline (or another
// control character) in one ended its directive, and what followed it
// was read as a directive of its own.
func checkUnitWords(o Options) error {
	for _, w := range append([]string{o.SocketPath}, o.command()...) {
		if strings.IndexFunc(w, unicode.IsControl) >= 0 {
			return fmt.Errorf("%q holds a control character, which a systemd unit file cannot hold", w)
		}
	}
	return nil
}

// serviceUnitText is ruvllmd.service.
func serviceUnitText(o Options) string {
	q := make([]string, 0, 4)
	for _, a := range o.command() {
		q = append(q, systemdQuote(a))
	}
	return fmt.Sprintf(`# Written by "ruvllm service install"; "ruvllm service uninstall" removes it.
[Unit]
Description=ruvllm local LLM daemon
Requires=%s
After=%s

[Service]
Type=simple
ExecStart=%s
Restart=on-failure
RestartSec=2
KillSignal=SIGTERM
TimeoutStopSec=30

[Install]
WantedBy=default.target
`, SocketUnit, SocketUnit, strings.Join(q, " "))
}

// systemdQuote quotes one ExecStart word: double quotes with backslash
// escapes, and %% for systemd's specifier character.
func systemdQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "%", "%%", "$", "$$")
	esc := r.Replace(s)
	if esc == s && s != "" && !strings.ContainsAny(s, " \t\n'") {
		return s
	}
	return `"` + esc + `"`
}

// systemdManager calls org.freedesktop.systemd1.Manager on a bus.
type systemdManager struct {
	conn *dbus.Conn
	obj  dbus.BusObject
}

func connectSystemd(o Options) (*systemdManager, error) {
	var conn *dbus.Conn
	var err error
	if o.BusAddress != "" {
		conn, err = dbus.Connect(o.BusAddress)
	} else {
		conn, err = sessionbus.Connect()
	}
	if err != nil {
		return nil, fmt.Errorf("systemd user manager: %w", err)
	}
	return &systemdManager{conn: conn, obj: conn.Object(sdDest, sdPath)}, nil
}

func (m *systemdManager) close() { m.conn.Close() }

func (m *systemdManager) call(ctx context.Context, method string, args ...any) *dbus.Call {
	return m.obj.CallWithContext(ctx, sdManager+"."+method, 0, args...)
}

// unitChange is one (type, file, destination) entry of systemd's change lists.
type unitChange struct {
	Type, File, Destination string
}

// systemdInstall writes both units, reloads, enables them and starts the socket.
func systemdInstall(ctx context.Context, o Options) error {
	if err := checkUnitWords(o); err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	// The manager is reached before a file is written: without a session
	// bus, or without systemd on it (a container, an SSH login without a
	// user session), the units were written and left behind, and
	// uninstall, which needs the bus too, could not remove them.
	m, err := connectSystemd(o)
	if err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	defer m.close()
	var running bool
	if err := m.conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, sdDest).Store(&running); err != nil {
		return fmt.Errorf("service install: look for systemd on the session bus: %w", err)
	}
	if !running {
		return fmt.Errorf("service install: no systemd user manager on the session bus (%s has no owner): nothing installed", sdDest)
	}
	dir := systemdDir(o.Home)
	sockPath, svcPath := filepath.Join(dir, SocketUnit), filepath.Join(dir, ServiceUnit)
	if err := writeFile(sockPath, []byte(socketUnitText(o))); err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	if err := writeFile(svcPath, []byte(serviceUnitText(o))); err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	if err := m.call(ctx, "Reload").Err; err != nil {
		return fmt.Errorf("service install: systemd Reload: %w", err)
	}
	var carries bool
	var changes []unitChange
	if err := m.call(ctx, "EnableUnitFiles", []string{SocketUnit, ServiceUnit}, false, true).Store(&carries, &changes); err != nil {
		return fmt.Errorf("service install: systemd EnableUnitFiles: %w", err)
	}
	for _, c := range changes {
		o.Logger.Info("systemd", "change", c.Type, "file", c.File, "dest", c.Destination)
	}
	var job dbus.ObjectPath
	if err := m.call(ctx, "StartUnit", SocketUnit, "replace").Store(&job); err != nil {
		return fmt.Errorf("service install: systemd StartUnit %s: %w", SocketUnit, err)
	}
	o.Logger.Info("installed", "socket_unit", sockPath, "service_unit", svcPath, "socket", o.SocketPath)
	return nil
}

// systemdUninstall stops and disables the units, then removes their files.
func systemdUninstall(ctx context.Context, o Options) error {
	m, err := connectSystemd(o)
	if err != nil {
		return fmt.Errorf("service uninstall: %w", err)
	}
	defer m.close()
	var errs []error
	for _, u := range []string{ServiceUnit, SocketUnit} {
		var job dbus.ObjectPath
		if err := m.call(ctx, "StopUnit", u, "replace").Store(&job); err != nil && !isNoSuchUnit(err) {
			errs = append(errs, fmt.Errorf("systemd StopUnit %s: %w", u, err))
		}
	}
	var changes []unitChange
	if err := m.call(ctx, "DisableUnitFiles", []string{SocketUnit, ServiceUnit}, false).Store(&changes); err != nil {
		errs = append(errs, fmt.Errorf("systemd DisableUnitFiles: %w", err))
	}
	dir := systemdDir(o.Home)
	for _, u := range []string{SocketUnit, ServiceUnit} {
		if err := os.Remove(filepath.Join(dir, u)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := m.call(ctx, "Reload").Err; err != nil {
		errs = append(errs, fmt.Errorf("systemd Reload: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("service uninstall: %w", err)
	}
	return nil
}

// systemdStop stops ruvllmd.service and leaves ruvllmd.socket listening,
// so the next client starts the daemon again.
func systemdStop(ctx context.Context, o Options) error {
	m, err := connectSystemd(o)
	if err != nil {
		return fmt.Errorf("service stop: %w", err)
	}
	defer m.close()
	var job dbus.ObjectPath
	if err := m.call(ctx, "StopUnit", ServiceUnit, "replace").Store(&job); err != nil {
		return fmt.Errorf("service stop: systemd StopUnit %s: %w", ServiceUnit, err)
	}
	return nil
}

// systemdStatus reports each unit's file and active state.
func systemdStatus(ctx context.Context, o Options) (State, error) {
	st := State{Manager: "systemd"}
	m, err := connectSystemd(o)
	if err != nil {
		return st, fmt.Errorf("service status: %w", err)
	}
	defer m.close()
	for _, u := range []string{SocketUnit, ServiceUnit} {
		us := UnitStatus{Name: u, Path: filepath.Join(systemdDir(o.Home), u)}
		us.Installed = fileExists(us.Path)
		var fileState string
		if err := m.call(ctx, "GetUnitFileState", u).Store(&fileState); err == nil {
			us.FileState = fileState
		} else if !isNoSuchUnit(err) {
			return st, fmt.Errorf("service status: GetUnitFileState %s: %w", u, err)
		}
		var unitPath dbus.ObjectPath
		if err := m.call(ctx, "GetUnit", u).Store(&unitPath); err != nil {
			if !isNoSuchUnit(err) {
				return st, fmt.Errorf("service status: GetUnit %s: %w", u, err)
			}
			us.ActiveState = "inactive" // not loaded
		} else {
			v, err := m.conn.Object(sdDest, unitPath).GetProperty(sdUnit + ".ActiveState")
			if err != nil {
				return st, fmt.Errorf("service status: %s ActiveState: %w", u, err)
			}
			s, ok := v.Value().(string)
			if !ok {
				return st, fmt.Errorf("service status: %s ActiveState has type %s", u, v.Signature())
			}
			us.ActiveState = s
		}
		st.Units = append(st.Units, us)
	}
	return st, nil
}

// isNoSuchUnit reports systemd's "unit not loaded/found" errors.
func isNoSuchUnit(err error) bool {
	var de dbus.Error
	if errors.As(err, &de) {
		return de.Name == "org.freedesktop.systemd1.NoSuchUnit" || de.Name == "org.freedesktop.systemd1.UnitNotLoaded"
	}
	var dep *dbus.Error
	if errors.As(err, &dep) {
		return dep.Name == "org.freedesktop.systemd1.NoSuchUnit" || dep.Name == "org.freedesktop.systemd1.UnitNotLoaded"
	}
	return false
}
