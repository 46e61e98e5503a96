package backends

import (
	"errors"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/metal"
)

func TestFactorySelection(t *testing.T) {
	tests := []struct {
		name, goos string
		wantOpen   bool     // a NewBackend function (false: the engine's CPU default)
		wantErr    error    // errors.Is target; nil: no error
		errHas     []string // substrings the message must name
	}{
		{name: "", goos: "linux"},
		{name: "cpu", goos: "linux"},
		{name: " CPU ", goos: "darwin"},
		{name: "metal", goos: "darwin", wantOpen: true},
		{name: "Metal", goos: "darwin", wantOpen: true},
		{name: "metal", goos: "linux", wantErr: ErrPlatform, errHas: []string{"metal", "macOS", "linux/amd64", "available here: cpu"}},
		{name: "metal", goos: "windows", wantErr: ErrPlatform, errHas: []string{"windows/amd64"}},
		{name: "coreml", goos: "darwin", errHas: []string{`unknown backend "coreml"`, "cpu, metal"}},
		{name: "cuda", goos: "linux", errHas: []string{`unknown backend "cuda"`}},
	}
	for _, tt := range tests {
		f, err := factory(tt.name, 2, tt.goos, "amd64")
		wantAnyErr := tt.wantErr != nil || len(tt.errHas) > 0
		if (err != nil) != wantAnyErr {
			t.Errorf("factory(%q, %s) error = %v, want error %v", tt.name, tt.goos, err, wantAnyErr)
			continue
		}
		if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
			t.Errorf("factory(%q, %s) = %v, want %v", tt.name, tt.goos, err, tt.wantErr)
		}
		for _, s := range tt.errHas {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("factory(%q, %s) error %q does not name %q", tt.name, tt.goos, err, s)
			}
		}
		if got := f != nil; got != tt.wantOpen {
			t.Errorf("factory(%q, %s) returned a backend function: %v, want %v", tt.name, tt.goos, got, tt.wantOpen)
		}
	}
}

// TestMetalEntryOpensMetal proves the registered function is metal.Open:
// on a system without Metal it must fail with metal's own error.
func TestMetalEntryOpensMetal(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("darwin: Factory opens a real device; see TestFactoryOnThisPlatform")
	}
	f, err := factory("metal", 1, "darwin", "arm64")
	if err != nil || f == nil {
		t.Fatalf("factory(metal, darwin) = %v, %v", f != nil, err)
	}
	b, err := f()
	if !errors.Is(err, metal.ErrUnavailable) || b != nil {
		t.Fatalf("metal entry on %s opened %v, %v; want metal.ErrUnavailable", runtime.GOOS, b, err)
	}
}

func TestFactoryOnThisPlatform(t *testing.T) {
	f, err := Factory("metal", 1)
	if runtime.GOOS != "darwin" {
		if !errors.Is(err, ErrPlatform) || f != nil {
			t.Fatalf("Factory(metal) on %s = %v, %v; want ErrPlatform", runtime.GOOS, f != nil, err)
		}
		if !strings.Contains(err.Error(), runtime.GOOS+"/"+runtime.GOARCH) {
			t.Errorf("error %q does not name the platform %s/%s", err, runtime.GOOS, runtime.GOARCH)
		}
		return
	}
	if err != nil || f == nil {
		t.Fatalf("Factory(metal) on darwin = %v, %v", f != nil, err)
	}
	b, err := f()
	if errors.Is(err, metal.ErrNoDevice) {
		t.Skip("no Metal device")
	}
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != "metal" {
		t.Errorf("Name() = %q", b.Name())
	}
	if c, ok := b.(interface{ Close() }); ok {
		c.Close()
	}
}

func TestAvailable(t *testing.T) {
	for goos, want := range map[string][]string{"linux": {"cpu"}, "darwin": {"cpu", "metal"}} {
		if got := Available(goos); !slices.Equal(got, want) {
			t.Errorf("Available(%s) = %v, want %v", goos, got, want)
		}
	}
	if got := Names(); !slices.Equal(got, []string{"cpu", "metal"}) {
		t.Errorf("Names() = %v", got)
	}
}

func TestFlag(t *testing.T) {
	var name string
	f := pflag.NewFlagSet("x", pflag.ContinueOnError)
	Flag(f, &name)
	if name != "cpu" {
		t.Errorf("default %q, want cpu", name)
	}
	if err := f.Parse([]string{"--backend", "metal"}); err != nil {
		t.Fatal(err)
	}
	if name != "metal" {
		t.Errorf("parsed %q, want metal", name)
	}
	if u := f.Lookup("backend").Usage; !strings.Contains(u, "metal (macOS only)") {
		t.Errorf("usage %q does not say metal is macOS only", u)
	}
}

// TestParseBuild checks --llama-build's names and its error.
func TestParseBuild(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want cpu.LlamaBuild
		ok   bool
	}{
		{"", cpu.BuildPrebuilt, true},
		{"prebuilt", cpu.BuildPrebuilt, true},
		{" Native-FP16 ", cpu.BuildNativeFP16, true},
		{"amx", 0, false},
	} {
		got, err := ParseBuild(tc.in)
		if (err == nil) != tc.ok || err == nil && got != tc.want {
			t.Errorf("ParseBuild(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestAMXFlag(t *testing.T) {
	tests := []struct {
		args    []string
		want    cpu.AMXMode
		wantErr string // substring of the parse error; "" for none
	}{
		{args: nil, want: cpu.AMXAuto},
		{args: []string{"--amx", "off"}, want: cpu.AMXOff},
		{args: []string{"--amx=ON"}, want: cpu.AMXOn},
		{args: []string{"--amx", " auto "}, want: cpu.AMXAuto},
		{args: []string{"--amx", "amx"}, wantErr: `unknown --amx "amx" (want one of auto, off, on)`},
		{args: []string{"--amx", "off"}, want: cpu.AMXOff}, // the default mode: BF16 off the AMX tiles
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			f := pflag.NewFlagSet("t", pflag.ContinueOnError)
			f.SetOutput(io.Discard)
			got := cpu.AMXMode(99)
			AMXFlag(f, &got)
			if got != 99 {
				t.Fatalf("AMXFlag changed the destination to %d before parsing", got)
			}
			got = cpu.AMXAuto
			err := f.Parse(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("mode %d, want %d", got, tc.want)
			}
			if s := f.Lookup("amx").Value.String(); s != amxNames[tc.want] {
				t.Errorf("flag prints %q, want %q", s, amxNames[tc.want])
			}
		})
	}
}
