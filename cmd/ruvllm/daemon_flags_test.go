package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDaemonCmdTakesRuvllmdFlags: `ruvllm daemon` takes ruvllmd's
// --log-level and --cpuprofile (the README gives it as ruvllmd's other
// name; it refused both as unknown flags).
func TestDaemonCmdTakesRuvllmdFlags(t *testing.T) {
	dir := t.TempDir()
	// A group-writable socket directory makes the daemon stop at once,
	// after its flags were read.
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o770); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(open, "s.sock")
	prof := filepath.Join(dir, "cpu.prof")
	base := []string{"--socket", sock, "--preload=false", "--state-dir", filepath.Join(dir, "state"),
		"--models-dir", filepath.Join(dir, "models"), "--cache-dir", filepath.Join(dir, "cache"), "--adapters-dir", filepath.Join(dir, "adapters")}
	for _, tc := range []struct {
		args    []string
		wantErr string
		profile bool // the profile file is written
	}{
		{args: []string{"--log-level", "loud"}, wantErr: "--log-level"},
		{args: []string{"--log-level", "debug"}, wantErr: "writable"},
		{args: []string{"--log-level", "warn", "--cpuprofile", prof}, wantErr: "writable", profile: true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, _, err := runCLI(t, newDaemonCmd(), append(tc.args, base...)...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "unknown flag") {
				t.Fatalf("ruvllm daemon %v: %v, want an error naming %q", tc.args, err, tc.wantErr)
			}
			if _, err := os.Stat(prof); tc.profile && err != nil {
				t.Fatalf("no CPU profile: %v", err)
			}
		})
	}
}
