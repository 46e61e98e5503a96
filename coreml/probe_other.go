//go:build !darwin

package coreml

import "context"

// Probe returns ErrUnavailable: Core ML exists only on macOS.
func Probe(ctx context.Context) (Info, error) { return Info{}, ErrUnavailable }
