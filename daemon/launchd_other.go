//go:build !darwin

package daemon

import "net"

// launchdListeners: launchd exists only on darwin.
func launchdListeners() ([]net.Listener, error) { return nil, nil }
