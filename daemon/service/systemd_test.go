package service

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/ruvllm/ruvllm/internal/dbustest"
)

// fakeSystemd implements the parts of org.freedesktop.systemd1.Manager the
// package uses and records every call.
type fakeSystemd struct {
	mu     sync.Mutex
	calls  []string
	active map[string]string // unit -> ActiveState, present = loaded
	files  map[string]string // unit -> UnitFileState
	conn   *dbus.Conn
}

func (f *fakeSystemd) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeSystemd) Reload() *dbus.Error { f.record("Reload"); return nil }

func (f *fakeSystemd) EnableUnitFiles(files []string, runtime, force bool) (bool, []unitChange, *dbus.Error) {
	f.record(fmt.Sprintf("EnableUnitFiles %v runtime=%v force=%v", files, runtime, force))
	var ch []unitChange
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, u := range files {
		f.files[u] = "enabled"
		ch = append(ch, unitChange{"symlink", "/wants/" + u, "/units/" + u})
	}
	return true, ch, nil
}

func (f *fakeSystemd) DisableUnitFiles(files []string, runtime bool) ([]unitChange, *dbus.Error) {
	f.record(fmt.Sprintf("DisableUnitFiles %v runtime=%v", files, runtime))
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, u := range files {
		f.files[u] = "disabled"
	}
	return nil, nil
}

func (f *fakeSystemd) StartUnit(name, mode string) (dbus.ObjectPath, *dbus.Error) {
	f.record("StartUnit " + name + " " + mode)
	f.mu.Lock()
	f.active[name] = "active"
	f.mu.Unlock()
	return "/org/freedesktop/systemd1/job/1", nil
}

func (f *fakeSystemd) StopUnit(name, mode string) (dbus.ObjectPath, *dbus.Error) {
	f.record("StopUnit " + name + " " + mode)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.active[name]; !ok {
		return "", &dbus.Error{Name: "org.freedesktop.systemd1.NoSuchUnit", Body: []any{"Unit " + name + " not loaded."}}
	}
	f.active[name] = "inactive"
	return "/org/freedesktop/systemd1/job/2", nil
}

func (f *fakeSystemd) GetUnitFileState(name string) (string, *dbus.Error) {
	f.record("GetUnitFileState " + name)
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.files[name]
	if !ok {
		return "", &dbus.Error{Name: "org.freedesktop.systemd1.NoSuchUnit", Body: []any{"No such file"}}
	}
	return s, nil
}

func (f *fakeSystemd) GetUnit(name string) (dbus.ObjectPath, *dbus.Error) {
	f.record("GetUnit " + name)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.active[name]; !ok {
		return "", &dbus.Error{Name: "org.freedesktop.systemd1.NoSuchUnit", Body: []any{"Unit " + name + " not loaded."}}
	}
	p := unitObjectPath(name)
	f.conn.Export(&fakeUnitProps{f: f, name: name}, p, "org.freedesktop.DBus.Properties")
	return p, nil
}

// unitObjectPath escapes a unit name the way systemd does (enough for ours).
func unitObjectPath(name string) dbus.ObjectPath {
	r := strings.NewReplacer(".", "_2e", "-", "_2d")
	return dbus.ObjectPath("/org/freedesktop/systemd1/unit/" + r.Replace(name))
}

// fakeUnitProps serves org.freedesktop.DBus.Properties.Get for one unit.
type fakeUnitProps struct {
	f    *fakeSystemd
	name string
}

func (p *fakeUnitProps) Get(iface, prop string) (dbus.Variant, *dbus.Error) {
	p.f.mu.Lock()
	defer p.f.mu.Unlock()
	if iface != sdUnit || prop != "ActiveState" {
		return dbus.Variant{}, &dbus.Error{Name: "org.freedesktop.DBus.Error.UnknownProperty", Body: []any{iface + "." + prop}}
	}
	return dbus.MakeVariant(p.f.active[p.name]), nil
}

func startFake(t *testing.T, addr string) *fakeSystemd {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	f := &fakeSystemd{active: map[string]string{}, files: map[string]string{}, conn: conn}
	if err := conn.Export(f, sdPath, sdManager); err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName(sdDest, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("request name: %v %v", reply, err)
	}
	return f
}

func TestSystemdInstallStatusUninstall(t *testing.T) {
	addr := dbustest.Start(t)
	fake := startFake(t, addr)
	home := t.TempDir()
	o, err := Options{
		Executable: "/opt/ruv llm/bin/ruvllmd",
		SocketPath: "/run/user/1000/ruvllm/ruvllm.sock",
		Home:       home,
		BusAddress: addr,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	st, err := systemdStatus(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range st.Units {
		if u.Installed || u.ActiveState != "inactive" || u.FileState != "" {
			t.Fatalf("before install: %+v", u)
		}
	}

	if err := systemdInstall(ctx, o); err != nil {
		t.Fatal(err)
	}
	sock, _ := os.ReadFile(filepath.Join(home, ".config/systemd/user/ruvllmd.socket"))
	svc, _ := os.ReadFile(filepath.Join(home, ".config/systemd/user/ruvllmd.service"))
	for _, want := range []string{"[Socket]\nListenStream=/run/user/1000/ruvllm/ruvllm.sock\n", "SocketMode=0600\n", "WantedBy=sockets.target\n"} {
		if !strings.Contains(string(sock), want) {
			t.Errorf("socket unit lacks %q:\n%s", want, sock)
		}
	}
	for _, want := range []string{
		`ExecStart="/opt/ruv llm/bin/ruvllmd" --socket /run/user/1000/ruvllm/ruvllm.sock` + "\n",
		"Requires=ruvllmd.socket\n", "After=ruvllmd.socket\n", "Restart=on-failure\n", "WantedBy=default.target\n",
	} {
		if !strings.Contains(string(svc), want) {
			t.Errorf("service unit lacks %q:\n%s", want, svc)
		}
	}

	st, err = systemdStatus(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%s %v %s %s | %s %v %s %s", st.Units[0].Name, st.Units[0].Installed, st.Units[0].FileState, st.Units[0].ActiveState,
		st.Units[1].Name, st.Units[1].Installed, st.Units[1].FileState, st.Units[1].ActiveState)
	if got != "ruvllmd.socket true enabled active | ruvllmd.service true enabled inactive" {
		t.Fatalf("status after install: %s", got)
	}

	fake.mu.Lock()
	fake.active[ServiceUnit] = "active" // a client started the daemon
	fake.mu.Unlock()
	if err := systemdStop(ctx, o); err != nil {
		t.Fatal(err)
	}
	st, err = systemdStatus(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if st.Units[0].ActiveState != "active" || st.Units[1].ActiveState != "inactive" {
		t.Fatalf("after stop the socket stays and the service stops: %+v", st.Units)
	}

	if err := systemdUninstall(ctx, o); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{SocketUnit, ServiceUnit} {
		if fileExists(filepath.Join(home, ".config/systemd/user", u)) {
			t.Errorf("%s left after uninstall", u)
		}
	}
	fake.mu.Lock()
	calls := strings.Join(fake.calls, "\n")
	fake.mu.Unlock()
	want := strings.Join([]string{
		"GetUnitFileState ruvllmd.socket", "GetUnit ruvllmd.socket",
		"GetUnitFileState ruvllmd.service", "GetUnit ruvllmd.service",
		"Reload",
		"EnableUnitFiles [ruvllmd.socket ruvllmd.service] runtime=false force=true",
		"StartUnit ruvllmd.socket replace",
		"GetUnitFileState ruvllmd.socket", "GetUnit ruvllmd.socket",
		"GetUnitFileState ruvllmd.service", "GetUnit ruvllmd.service",
		"StopUnit ruvllmd.service replace",
		"GetUnitFileState ruvllmd.socket", "GetUnit ruvllmd.socket",
		"GetUnitFileState ruvllmd.service", "GetUnit ruvllmd.service",
		"StopUnit ruvllmd.service replace",
		"StopUnit ruvllmd.socket replace",
		"DisableUnitFiles [ruvllmd.socket ruvllmd.service] runtime=false",
		"Reload",
	}, "\n")
	if calls != want {
		t.Fatalf("D-Bus calls:\n%s\nwant:\n%s", calls, want)
	}
}

// TestSystemdInstallWithoutManagerWritesNothing checks that an install
// that cannot reach systemd fails before it writes a unit file.
func TestSystemdInstallWithoutManagerWritesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		bus  func(t *testing.T) string
		want string
	}{
		{"no bus", func(t *testing.T) string { return "unix:path=" + filepath.Join(t.TempDir(), "no-bus") }, "systemd user manager"},
		{"bus without systemd", func(t *testing.T) string { return dbustest.Start(t) }, "no systemd user manager"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			o, err := Options{Executable: "/usr/bin/ruvllmd", SocketPath: "/run/user/1000/ruvllm/ruvllm.sock", Home: home,
				BusAddress: tc.bus(t), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := systemdInstall(ctx, o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("install = %v, want an error with %q", err, tc.want)
			}
			for _, u := range []string{SocketUnit, ServiceUnit} {
				if fileExists(filepath.Join(systemdDir(home), u)) {
					t.Errorf("%s written by a failed install", u)
				}
			}
		})
	}
}

// TestSystemdUnitSpecials checks paths with characters a unit file
// treats specially: a '%' of the socket path is escaped in ListenStream
// as in ExecStart, and a control character is refused before a file is
// written.
func TestSystemdUnitSpecials(t *testing.T) {
	for _, tc := range []struct {
		name, sock, exe string
		listen          string // the socket unit's ListenStream line; "" for a refused install
	}{
		{"percent", "/run/user/1000/100%t/ruvllm.sock", "/usr/bin/ruvllmd", "ListenStream=/run/user/1000/100%%t/ruvllm.sock\n"},
		{"newline in the socket path", "/run/user/1000/r\nExecStartPre=/bin/false/s.sock", "/usr/bin/ruvllmd", ""},
		{"newline in the executable", "/run/user/1000/ruvllm.sock", "/opt/r\nExecStartPre=/bin/false", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			o, err := Options{Executable: tc.exe, SocketPath: tc.sock, Home: home, BusAddress: "unix:path=" + filepath.Join(home, "no-bus"),
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			if tc.listen != "" {
				if got := socketUnitText(o); !strings.Contains(got, tc.listen) {
					t.Fatalf("socket unit lacks %q:\n%s", tc.listen, got)
				}
				return
			}
			err = systemdInstall(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), "control character") {
				t.Fatalf("install = %v, want the control character refused", err)
			}
			for _, u := range []string{SocketUnit, ServiceUnit} {
				if fileExists(filepath.Join(systemdDir(home), u)) {
					t.Errorf("%s written for a refused install", u)
				}
			}
		})
	}
}

func TestSystemdQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/bin/ruvllmd": "/usr/bin/ruvllmd",
		"/a b/c":           `"/a b/c"`,
		`/a"b`:             `"/a\"b"`,
		"/100%":            `"/100%%"`,
		"$HOME":            `"$$HOME"`,
		"":                 `""`,
	} {
		if got := systemdQuote(in); got != want {
			t.Errorf("systemdQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
