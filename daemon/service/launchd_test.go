package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"howett.net/plist"
)

func TestPlist(t *testing.T) {
	o := Options{Executable: "/Applications/Ruvllm.app/Contents/MacOS/ruvllm", Args: []string{"daemon"},
		SocketPath: "/Users/u/Library/Application Support/ruvllm/ruvllm.sock", Home: "/Users/u"}
	b, err := plistBytes(o)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if _, err := plist.Unmarshal(b, &doc); err != nil {
		t.Fatalf("plist does not parse: %v\n%s", err, b)
	}
	socks := doc["Sockets"].(map[string]any)["Listeners"].(map[string]any)
	if socks["SockPathName"] != o.SocketPath || fmt.Sprint(socks["SockPathMode"]) != "384" {
		t.Errorf("Sockets = %v", socks)
	}
	if doc["Label"] != "dev.ruvllm.ruvllmd" || doc["RunAtLoad"] != false ||
		fmt.Sprint(doc["ProgramArguments"]) != "[/Applications/Ruvllm.app/Contents/MacOS/ruvllm daemon --socket "+o.SocketPath+"]" ||
		fmt.Sprint(doc["KeepAlive"]) != "map[SuccessfulExit:false]" ||
		doc["StandardErrorPath"] != "/Users/u/Library/Logs/ruvllm/ruvllmd.log" {
		t.Errorf("plist = %v", doc)
	}
	if !strings.Contains(string(b), "<integer>384</integer>") || !strings.HasPrefix(string(b), "<?xml") {
		t.Errorf("plist XML:\n%s", b)
	}
}

func TestLaunchdFlow(t *testing.T) {
	home := t.TempDir()
	var calls []string
	loaded := false
	run := func(ctx context.Context, name string, args ...string) ([]byte, error) {
		calls = append(calls, name+" "+strings.Join(args, " "))
		switch args[0] {
		case "bootstrap":
			loaded = true
		case "bootout":
			if !loaded {
				return nil, errors.New("not loaded")
			}
			loaded = false
		case "kill":
			if !loaded {
				return nil, errors.New("not loaded")
			}
		case "print":
			if !loaded {
				return nil, errors.New("not found")
			}
			return []byte("gui/501/dev.ruvllm.ruvllmd = {\n\tactive count = 0\n\tstate = waiting\n\tsockets = {\n\t}\n}\n"), nil
		}
		return nil, nil
	}
	o := Options{Executable: "/usr/local/bin/ruvllmd", SocketPath: filepath.Join(home, "s", "ruvllm.sock"), Home: home, UID: 501,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), run: run}
	ctx := context.Background()
	if err := launchdInstall(ctx, o); err != nil {
		t.Fatal(err)
	}
	if !fileExists(plistPath(home)) || !fileExists(filepath.Join(home, "s")) {
		t.Fatal("plist or socket dir not written")
	}
	st, _ := launchdStatus(ctx, o)
	if u := st.Units[0]; !u.Installed || u.FileState != "loaded" || u.ActiveState != "waiting" {
		t.Fatalf("status = %+v", u)
	}
	if err := launchdStop(ctx, o); err != nil {
		t.Fatal(err)
	}
	if err := launchdUninstall(ctx, o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(plistPath(home)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("plist left after uninstall")
	}
	st, _ = launchdStatus(ctx, o)
	if u := st.Units[0]; u.Installed || u.FileState != "not loaded" {
		t.Fatalf("status after uninstall = %+v", u)
	}
	if err := launchdStop(ctx, o); err == nil {
		t.Fatal("stop of an agent not loaded: no error")
	}
	calls = calls[:len(calls)-1]
	want := "launchctl bootout gui/501/dev.ruvllm.ruvllmd|launchctl bootstrap gui/501 " + plistPath(home) +
		"|launchctl print gui/501/dev.ruvllm.ruvllmd|launchctl kill SIGTERM gui/501/dev.ruvllm.ruvllmd|launchctl bootout gui/501/dev.ruvllm.ruvllmd|launchctl print gui/501/dev.ruvllm.ruvllmd"
	if got := strings.Join(calls, "|"); got != want {
		t.Fatalf("calls:\n%s\nwant:\n%s", got, want)
	}
}
