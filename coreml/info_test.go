package coreml

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

func TestInfoString(t *testing.T) {
	tests := []struct {
		info Info
		want string
		ane  bool
	}{
		{Info{}, "Core ML not available", false},
		{Info{Framework: true}, "Core ML present; compute devices unknown (MLAllComputeDevices needs macOS 14)", false},
		{Info{Framework: true, DevicesKnown: true}, "Core ML present; no compute devices reported", false},
		{Info{Framework: true, DevicesKnown: true, Devices: []Device{
			{Kind: CPU}, {Kind: GPU, Name: "Apple M2"}, {Kind: NeuralEngine, Cores: 16},
		}}, "Core ML devices: cpu, gpu (Apple M2), neural-engine (16 cores)", true},
		{Info{Framework: true, DevicesKnown: true, Devices: []Device{{Kind: CPU}, {Kind: GPU}}}, "Core ML devices: cpu, gpu", false},
	}
	for _, tt := range tests {
		if got := tt.info.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.info, got, tt.want)
		}
		if got := tt.info.HasNeuralEngine(); got != tt.ane {
			t.Errorf("%+v.HasNeuralEngine() = %v, want %v", tt.info, got, tt.ane)
		}
	}
	if got := Kind(7).String(); got != "Kind(7)" {
		t.Errorf("Kind(7) = %q", got)
	}
}

func TestProbe(t *testing.T) {
	info, err := Probe(context.Background())
	if runtime.GOOS != "darwin" {
		if !errors.Is(err, ErrUnavailable) || info.Framework {
			t.Fatalf("Probe on %s = %+v, %v; want ErrUnavailable", runtime.GOOS, info, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if !info.Framework {
		t.Fatal("Probe succeeded without Core ML")
	}
	if info.DevicesKnown {
		cpu := false
		for _, d := range info.Devices {
			cpu = cpu || d.Kind == CPU
		}
		if !cpu {
			t.Errorf("Core ML listed no CPU device: %+v", info.Devices)
		}
	}
	t.Log(info)
}
