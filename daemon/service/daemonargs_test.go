package service

import (
	"fmt"
	"strings"
	"testing"

	"howett.net/plist"
)

// TestDaemonArgsInUnitAndPlist: the daemon's own flags follow --socket on
// the command line of the systemd service unit (each word quoted) and of
// the launchd agent; a control character among them is refused, as in
// any command word.
func TestDaemonArgsInUnitAndPlist(t *testing.T) {
	o := Options{Executable: "/usr/bin/ruvllmd", SocketPath: "/run/user/1000/ruvllm.sock", Home: "/home/u",
		DaemonArgs: []string{"-m", "/models/a b.gguf", "--listen", "127.0.0.1:11434"}}
	want := []string{"/usr/bin/ruvllmd", "--socket", "/run/user/1000/ruvllm.sock", "-m", "/models/a b.gguf", "--listen", "127.0.0.1:11434"}
	if got := o.command(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("command %q, want %q", got, want)
	}
	var q []string
	for _, w := range want {
		q = append(q, systemdQuote(w))
	}
	if unit := serviceUnitText(o); !strings.Contains(unit, "ExecStart="+strings.Join(q, " ")+"\n") {
		t.Errorf("service unit:\n%s", unit)
	}
	b, err := plistBytes(o)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if _, err := plist.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(doc["ProgramArguments"]); got != fmt.Sprint(want) {
		t.Errorf("ProgramArguments %s, want %v", got, want)
	}
	o.DaemonArgs = []string{"--listen", "127.0.0.1:1\nExecStartPre=/bin/false"}
	if err := checkUnitWords(o); err == nil || !strings.Contains(err.Error(), "control character") {
		t.Errorf("a newline in a daemon flag: %v", err)
	}
}
