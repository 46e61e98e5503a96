package backends

import (
	"context"
	"errors"
	"runtime"
	"strings"

	"github.com/ruvllm/ruvllm/coreml"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/metal"
)

// Status describes one compute backend for `ruvllm backends`.
type Status struct {
	Name string `json:"name"`
	// Selectable is true for --backend values (the registration table).
	Selectable bool `json:"selectable"`
	// Available is true when this platform can run it.
	Available bool   `json:"available"`
	Note      string `json:"note"`
}

// Statuses lists the registered backends and what this machine offers,
// including Core ML, which is detected but not a selectable backend.
func Statuses(ctx context.Context) []Status {
	return statuses(ctx, runtime.GOOS, metal.Probe, coreml.Probe, cpuNote())
}

// cpuNote describes the CPU backend on this machine: the instruction set
// of its kernels, and which matrices take AMX tiles (BF16, Q8_0).
func cpuNote() string {
	_, isa := quant.Accelerated()
	note := "reference backend; kernels: " + isa
	var tiles []string
	if quant.AMXTiles() {
		tiles = append(tiles, "BF16")
	}
	if quant.AMXInt8Tiles() {
		tiles = append(tiles, "Q8_0")
	}
	if len(tiles) > 0 {
		note += "; " + strings.Join(tiles, " and ") + " on AMX tiles"
	}
	return note
}

func statuses(ctx context.Context, goos string, metalProbe func() (string, error), probe func(context.Context) (coreml.Info, error), cpu string) []Status {
	var out []Status
	for _, e := range registry {
		s := Status{Name: e.name, Selectable: true, Available: e.goos == "" || e.goos == goos}
		switch {
		case !s.Available:
			s.Note = "needs " + e.osName
		case e.name == "metal":
			name, err := metalProbe()
			switch {
			case err != nil:
				s.Available, s.Note = false, err.Error()
			default:
				s.Note = "device " + name
			}
		default:
			s.Note = cpu
		}
		out = append(out, s)
	}
	cm := Status{Name: "coreml"}
	info, err := probe(ctx)
	switch {
	case errors.Is(err, coreml.ErrUnavailable):
		cm.Note = "needs macOS; detection only, not a --backend (see coreml/doc.go)"
	case err != nil:
		cm.Note = "probe failed: " + err.Error()
	default:
		cm.Available = info.Framework
		cm.Note = info.String() + "; detection only, not a --backend (see coreml/doc.go)"
	}
	return append(out, cm)
}
