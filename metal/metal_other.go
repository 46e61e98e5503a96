//go:build !darwin

package metal

import "github.com/ruvllm/ruvllm/engine/compute"

// Open returns ErrUnavailable: Metal exists only on macOS.
func Open(o Options) (compute.Backend, error) { return nil, ErrUnavailable }

// Probe returns ErrUnavailable: Metal exists only on macOS.
func Probe() (string, error) { return "", ErrUnavailable }
