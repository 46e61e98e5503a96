package service

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRelativeSocketPathMadeAbsolute: a socket path given relative
// (--socket or $RUVLLM_SOCKET) is written into the units and the plist as
// the absolute path it names from the working directory. Written as it
// was, ListenStream=rel.sock is no address systemd parses, and launchd
// and the daemon would have looked for it in their own directories.
func TestRelativeSocketPathMadeAbsolute(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(wd, "run", "ruvllm.sock")
	for _, tc := range []struct {
		name, flag, env string
	}{
		{"flag", "run/ruvllm.sock", ""},
		{"flag with dot", "./run/ruvllm.sock", ""},
		{"environment", "", "run/ruvllm.sock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("RUVLLM_SOCKET", tc.env)
			o, err := Options{Executable: "/usr/bin/ruvllmd", SocketPath: tc.flag, Home: t.TempDir(),
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			if o.SocketPath != want {
				t.Fatalf("socket path %q, want %q", o.SocketPath, want)
			}
			if unit := socketUnitText(o); !strings.Contains(unit, "ListenStream="+want+"\n") {
				t.Errorf("socket unit:\n%s", unit)
			}
			if unit := serviceUnitText(o); !strings.Contains(unit, "--socket "+want+"\n") {
				t.Errorf("service unit:\n%s", unit)
			}
			plist, err := plistBytes(o)
			if err != nil || !strings.Contains(string(plist), "<string>"+want+"</string>") {
				t.Errorf("plist (%v):\n%s", err, plist)
			}
		})
	}
}
