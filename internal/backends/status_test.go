package backends

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/ruvllm/ruvllm/coreml"
)

func TestStatuses(t *testing.T) {
	mac := func(context.Context) (coreml.Info, error) {
		return coreml.Info{Framework: true, DevicesKnown: true, Devices: []coreml.Device{{Kind: coreml.CPU}, {Kind: coreml.NeuralEngine, Cores: 16}}}, nil
	}
	none := func(context.Context) (coreml.Info, error) { return coreml.Info{}, coreml.ErrUnavailable }
	broken := func(context.Context) (coreml.Info, error) { return coreml.Info{}, errors.New("dlopen failed") }
	tests := []struct {
		goos  string
		probe func(context.Context) (coreml.Info, error)
		want  []Status
	}{
		{"linux", none, []Status{
			{Name: "cpu", Selectable: true, Available: true, Note: "reference backend"},
			{Name: "metal", Selectable: true, Note: "needs macOS"},
			{Name: "coreml", Note: "needs macOS; detection only, not a --backend (see coreml/doc.go)"},
		}},
		{"darwin", mac, []Status{
			{Name: "cpu", Selectable: true, Available: true, Note: "reference backend"},
			{Name: "metal", Selectable: true, Available: true, Note: "the Metal device is opened when a model loads"},
			{Name: "coreml", Available: true, Note: "Core ML devices: cpu, neural-engine (16 cores); detection only, not a --backend (see coreml/doc.go)"},
		}},
		{"darwin", broken, []Status{
			{Name: "cpu", Selectable: true, Available: true, Note: "reference backend"},
			{Name: "metal", Selectable: true, Available: true, Note: "the Metal device is opened when a model loads"},
			{Name: "coreml", Note: "probe failed: dlopen failed"},
		}},
	}
	for _, tt := range tests {
		if got := statuses(context.Background(), tt.goos, tt.probe); !reflect.DeepEqual(got, tt.want) {
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
