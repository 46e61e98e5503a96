// Package backends maps the --backend flag of the binaries (ruvllm run,
// bench, perplexity; ruvllmd and `ruvllm daemon`) to the compute backend
// the engine runs on. It is the one place that imports the accelerator
// packages, so engine never does: each selectable backend is one entry of
// a registration table, with the platform it needs.
//
// Only backends that compute real results are registered. coreml is not:
// it detects Core ML and the Neural Engine but runs no model operation
// (see coreml/doc.go).
package backends

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/metal"
)

// ErrPlatform is returned (wrapped, with the platform named) when a known
// backend cannot exist on this operating system.
var ErrPlatform = errors.New("backend not available on this platform")

// entry registers one selectable backend.
type entry struct {
	name string
	// goos is the one operating system the backend runs on ("" for all)
	// and osName its human name, for messages.
	goos, osName string
	// open creates the backend; nil means the engine's CPU backend
	// (llm.Options.NewBackend left nil).
	open func(threads int) (compute.Backend, error)
}

// registry is the table of selectable backends, in the order help lists
// them.
var registry = []entry{
	{name: "cpu"},
	{name: "metal", goos: "darwin", osName: "macOS", open: func(threads int) (compute.Backend, error) {
		return metal.Open(metal.Options{Threads: threads})
	}},
}

// Names lists every accepted --backend value, whether or not this
// platform can run it.
func Names() []string {
	names := make([]string, len(registry))
	for i, e := range registry {
		names[i] = e.name
	}
	return names
}

// Available lists the backends this platform (goos) can run.
func Available(goos string) []string {
	var names []string
	for _, e := range registry {
		if e.goos == "" || e.goos == goos {
			names = append(names, e.name)
		}
	}
	return names
}

// Factory returns the function that creates the named backend, for
// llm.Options.NewBackend; nil selects the engine's CPU backend. threads
// sizes the CPU backend, or an accelerator's CPU fallback. A backend this
// platform cannot have is an error at once, before any model is read.
func Factory(name string, threads int) (func() (compute.Backend, error), error) {
	return factory(name, threads, runtime.GOOS, runtime.GOARCH)
}

// factory is Factory for a given platform, so tests can ask as if on
// another one.
func factory(name string, threads int, goos, goarch string) (func() (compute.Backend, error), error) {
	want := strings.ToLower(strings.TrimSpace(name))
	if want == "" {
		want = "cpu"
	}
	for _, e := range registry {
		if e.name != want {
			continue
		}
		if e.goos != "" && e.goos != goos {
			return nil, fmt.Errorf("--backend %s needs %s; this is %s/%s (available here: %s): %w",
				e.name, e.osName, goos, goarch, strings.Join(Available(goos), ", "), ErrPlatform)
		}
		if e.open == nil {
			return nil, nil
		}
		open := e.open
		return func() (compute.Backend, error) { return open(threads) }, nil
	}
	return nil, fmt.Errorf("unknown backend %q (want one of %s)", name, strings.Join(Names(), ", "))
}

// ExactFlag binds --exact, which makes the CPU backend compute llama.cpp's
// arithmetic rounding for rounding (llm.Options.Exact) instead of its
// fastest one.
func ExactFlag(f *pflag.FlagSet, dst *bool) {
	f.BoolVar(dst, "exact", false, "compute llama.cpp's CPU arithmetic bit for bit (greedy tokens equal llama.cpp's; slower)")
}

// BuildFlag binds --llama-build, which llama.cpp build's arithmetic
// --exact reproduces (ParseBuild).
func BuildFlag(f *pflag.FlagSet, dst *string) {
	f.StringVar(dst, "llama-build", "prebuilt", "with --exact, the llama.cpp build to match: prebuilt (released x86-64 backends, the golden files) or native-fp16 (built with -march=native on a CPU with AVX512-FP16, no AMX)")
}

// ParseBuild returns the cpu.LlamaBuild --llama-build names.
func ParseBuild(name string) (cpu.LlamaBuild, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", "prebuilt":
		return cpu.BuildPrebuilt, nil
	case "native-fp16":
		return cpu.BuildNativeFP16, nil
	}
	return 0, fmt.Errorf("--llama-build %q: want prebuilt or native-fp16", name)
}

// amxNames are the --amx values, in cpu.AMXMode order.
var amxNames = []string{cpu.AMXAuto: "auto", cpu.AMXOff: "off", cpu.AMXOn: "on"}

// amxValue is the pflag.Value behind --amx.
type amxValue struct{ dst *cpu.AMXMode }

func (v amxValue) String() string {
	if v.dst == nil || int(*v.dst) >= len(amxNames) {
		return amxNames[cpu.AMXAuto]
	}
	return amxNames[*v.dst]
}

func (v amxValue) Set(s string) error {
	want := strings.ToLower(strings.TrimSpace(s))
	for i, n := range amxNames {
		if n == want {
			*v.dst = cpu.AMXMode(i)
			return nil
		}
	}
	return fmt.Errorf("unknown --amx %q (want one of %s)", s, strings.Join(amxNames, ", "))
}

func (amxValue) Type() string { return "mode" }

// AMXFlag binds --amx (llm.Options.AMX). With --exact it says whether
// Q8_0 and F16 matrix products sum in the order of llama.cpp's AMX
// kernels: auto follows llama.cpp on this CPU, off matches a llama.cpp
// built without AMX or run with --no-repack (-nr), on matches its AMX
// build on a CPU with AMX-INT8 (the shared golden files). Without it, off
// keeps BF16 and Q8_0 matrices off the AMX tiles (auto and on use them
// where the CPU has AMX-BF16 and AMX-INT8).
func AMXFlag(f *pflag.FlagSet, dst *cpu.AMXMode) {
	f.Var(amxValue{dst}, "amx", "AMX: with --exact, sum Q8_0/F16 products in llama.cpp's AMX order: auto (as llama.cpp on this CPU), "+
		"off (llama.cpp without AMX or with --no-repack), on; without --exact, off keeps BF16 and Q8_0 matrices off the AMX tiles")
}

// Flag registers --backend on f, storing the name in dst.
func Flag(f *pflag.FlagSet, dst *string) {
	var help []string
	for _, e := range registry {
		if e.goos != "" {
			help = append(help, e.name+" ("+e.osName+" only)")
		} else {
			help = append(help, e.name)
		}
	}
	f.StringVar(dst, "backend", "cpu", "compute backend: "+strings.Join(help, ", "))
}
