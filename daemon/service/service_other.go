//go:build !linux && !darwin

package service

import "context"

// Install is not supported on this platform.
func Install(ctx context.Context, o Options) error { return ErrUnsupported }

// Uninstall is not supported on this platform.
func Uninstall(ctx context.Context, o Options) error { return ErrUnsupported }

// Status is not supported on this platform.
func Status(ctx context.Context, o Options) (State, error) {
	return State{}, ErrUnsupported
}

// Stop is not supported on this platform.
func Stop(ctx context.Context, o Options) error { return ErrUnsupported }
