package backends

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/coreml"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/metal"
)

func TestStatuses(t *testing.T) {
	mac := func(context.Context) (coreml.Info, error) {
		return coreml.Info{Framework: true, DevicesKnown: true, Devices: []coreml.Device{{Kind: coreml.CPU}, {Kind: coreml.NeuralEngine, Cores: 16}}}, nil
	}
	none := func(context.Context) (coreml.Info, error) { return coreml.Info{}, coreml.ErrUnavailable }
	broken := func(context.Context) (coreml.Info, error) { return coreml.Info{}, errors.New("dlopen failed") }
	gpu := func() (string, error) { return "Apple M2", nil }
	noGPU := func() (string, error) { return "", metal.ErrNoDevice }
	tests := []struct {
		goos  string
		metal func() (string, error)
		probe func(context.Context) (coreml.Info, error)
		want  []Status
	}{
		{"linux", nil, none, []Status{
			{Name: "cpu", Selectable: true, Available: true, Note: "reference backend"},
			{Name: "metal", Selectable: true, Note: "needs macOS"},
			{Name: "coreml", Note: "needs macOS; detection only, not a --backend (see coreml/doc.go)"},
		}},
		{"darwin", gpu, mac, []Status{
			{Name: "cpu", Selectable: true, Available: true, Note: "reference backend"},
			{Name: "metal", Selectable: true, Available: true, Note: "device Apple M2"},
			{Name: "coreml", Available: true, Note: "Core ML devices: cpu, neural-engine (16 cores); detection only, not a --backend (see coreml/doc.go)"},
		}},
		{"darwin", noGPU, broken, []Status{
			{Name: "cpu", Selectable: true, Available: true, Note: "reference backend"},
			{Name: "metal", Selectable: true, Note: "no Metal device"},
			{Name: "coreml", Note: "probe failed: dlopen failed"},
		}},
	}
	for _, tt := range tests {
		if got := statuses(context.Background(), tt.goos, tt.metal, tt.probe, "reference backend"); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("statuses(%s) =\n%+v\nwant\n%+v", tt.goos, got, tt.want)
		}
	}
	// The real probe on this machine agrees with the table's notion of
	// the platform.
	for _, s := range Statuses(context.Background()) {
		if s.Name == "coreml" && s.Selectable {
			t.Error("coreml is listed as selectable; it computes nothing")
		}
	}
}

// TestCPUNote checks that the CPU backend's note names its kernels'
// instruction set, and the AMX tiles exactly where BF16 or Q8_0 takes
// them.
func TestCPUNote(t *testing.T) {
	_, isa := quant.Accelerated()
	note := cpuNote()
	if !strings.Contains(note, "kernels: "+isa) {
		t.Errorf("note %q does not name the kernels' %s", note, isa)
	}
	if got := strings.Contains(note, "AMX"); got != (quant.AMXTiles() || quant.AMXInt8Tiles()) {
		t.Errorf("note %q: mentions AMX %v, BF16 takes the tiles %v, Q8_0 %v", note, got, quant.AMXTiles(), quant.AMXInt8Tiles())
	}
	for typ, on := range map[string]bool{"BF16": quant.AMXTiles(), "Q8_0": quant.AMXInt8Tiles()} {
		if strings.Contains(note, typ) != on {
			t.Errorf("note %q: names %s %v, it takes the tiles %v", note, typ, !on, on)
		}
	}
}
