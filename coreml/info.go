package coreml

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnavailable is returned by Probe on systems without Core ML.
var ErrUnavailable = errors.New("core ML is only available on macOS")

// Kind is the kind of a compute device Core ML can dispatch to.
type Kind int

const (
	// CPU is the host processor.
	CPU Kind = iota
	// GPU is a Metal GPU.
	GPU
	// NeuralEngine is the Apple Neural Engine (ANE).
	NeuralEngine
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case CPU:
		return "cpu"
	case GPU:
		return "gpu"
	case NeuralEngine:
		return "neural-engine"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Device is one compute device Core ML reports.
type Device struct {
	Kind Kind
	// Name is the Metal device name of a GPU ("" for other kinds).
	Name string
	// Cores is the Neural Engine's core count (0 for other kinds).
	Cores int
}

// Info is what Probe found.
type Info struct {
	// Framework is true when CoreML.framework loaded and has MLModel.
	Framework bool
	// DevicesKnown is false where the OS cannot list devices (macOS
	// before 14, which lacks MLAllComputeDevices).
	DevicesKnown bool
	Devices      []Device
}

// HasNeuralEngine reports whether Core ML listed a Neural Engine.
func (i Info) HasNeuralEngine() bool {
	for _, d := range i.Devices {
		if d.Kind == NeuralEngine {
			return true
		}
	}
	return false
}

// String summarises the probe in one line, for `ruvllm backends`.
func (i Info) String() string {
	if !i.Framework {
		return "Core ML not available"
	}
	if !i.DevicesKnown {
		return "Core ML present; compute devices unknown (MLAllComputeDevices needs macOS 14)"
	}
	var parts []string
	for _, d := range i.Devices {
		switch {
		case d.Kind == GPU && d.Name != "":
			parts = append(parts, fmt.Sprintf("gpu (%s)", d.Name))
		case d.Kind == NeuralEngine:
			parts = append(parts, fmt.Sprintf("neural-engine (%d cores)", d.Cores))
		default:
			parts = append(parts, d.Kind.String())
		}
	}
	if len(parts) == 0 {
		return "Core ML present; no compute devices reported"
	}
	return "Core ML devices: " + strings.Join(parts, ", ")
}
