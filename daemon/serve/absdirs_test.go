package serve

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/ipc"
)

// TestFinishFlagsMakesPathsAbsolute: directories and the socket given by
// relative paths are made absolute, as the daemon reports them in
// /v1/health to clients in other directories: `ruvllm env` failed with
// "read token: open st/token: no such file or directory", and `ruvllm
// status` printed "socket s.sock".
func TestFinishFlagsMakesPathsAbsolute(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	long := strings.Repeat("d", ipc.MaxSocketPath()-len("/s.sock")) + "/s.sock" // fits only relative
	for _, tc := range []struct {
		name string
		args []string
		get  func(daemon.Config) string
		want string
	}{
		{"state dir", []string{"--state-dir", "st"}, func(c daemon.Config) string { return c.StateDir }, filepath.Join(wd, "st")},
		{"models dir", []string{"--models-dir", "./mo"}, func(c daemon.Config) string { return c.ModelsDir }, filepath.Join(wd, "mo")},
		{"adapters dir", []string{"--adapters-dir", "ad"}, func(c daemon.Config) string { return c.AdaptersDir }, filepath.Join(wd, "ad")},
		{"cache dir", []string{"--cache-dir", "ca/x/.."}, func(c daemon.Config) string { return c.CacheDir }, filepath.Join(wd, "ca")},
		{"socket", []string{"--socket", "run/s.sock"}, func(c daemon.Config) string { return c.SocketPath }, filepath.Join(wd, "run", "s.sock")},
		{"absolute kept", []string{"--state-dir", "/x/y"}, func(c daemon.Config) string { return c.StateDir }, "/x/y"},
		{"socket too long absolute", []string{"--socket", long}, func(c daemon.Config) string { return c.SocketPath }, long},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, fs, err := parseFlags(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if err := FinishFlags(&o, fs); err != nil {
				t.Fatal(err)
			}
			if got := tc.get(o.Config); got != tc.want {
				t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
			}
		})
	}
}

// TestFinishFlagsRefusesNoLoadedModels: --max-loaded 0 is refused by
// name; it held one model, as 1 does, while the message for a negative
// value ("must be at least 0") said 0 was a value of its own.
func TestFinishFlagsRefusesNoLoadedModels(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{{[]string{"--max-loaded", "0"}, false}, {[]string{"--max-loaded", "1"}, true}, {nil, true}} {
		o, fs, err := parseFlags(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		err = FinishFlags(&o, fs)
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "--max-loaded 0")) {
			t.Errorf("%v: %v", tc.args, err)
		}
	}
}

// TestKeepAliveFlagTakesSeconds: --keep-alive takes a duration or, as
// Ollama's keep_alive does, a number of seconds; "-1" (forever, as the
// help says negative means) was refused as a duration without a unit.
func TestKeepAliveFlagTakesSeconds(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
		bad  bool
	}{
		{nil, 5 * time.Minute, false},
		{[]string{"--keep-alive", "-1"}, -time.Second, false},
		{[]string{"--keep-alive=300"}, 5 * time.Minute, false},
		{[]string{"--keep-alive", "10m"}, 10 * time.Minute, false},
		{[]string{"--keep-alive", "0"}, 0, false},
		{[]string{"--keep-alive", "1.5"}, 1500 * time.Millisecond, false},
		{[]string{"--keep-alive", "soon"}, 0, true},
		{[]string{"--keep-alive", "1e300"}, 0, true},
		{[]string{"--keep-alive", "NaN"}, 0, true},
	} {
		o, _, err := parseFlags(tc.args)
		if tc.bad {
			if err == nil {
				t.Errorf("%v: accepted as %v", tc.args, o.KeepAlive)
			}
			continue
		}
		if err != nil || o.KeepAlive != tc.want {
			t.Errorf("%v: %v, %v; want %v", tc.args, o.KeepAlive, err, tc.want)
		}
	}
}

// parseFlags parses args as ruvllmd's flags into fresh Options.
func parseFlags(args []string) (Options, *pflag.FlagSet, error) {
	var o Options
	var p Process
	fs := pflag.NewFlagSet("ruvllmd", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	RegisterAllFlags(fs, &o, &p)
	return o, fs, fs.Parse(args)
}
