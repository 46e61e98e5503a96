//go:build darwin

package service

import "context"

// Install writes the LaunchAgent plist (with a Sockets entry, so launchd
// starts the daemon on the first connection) and bootstraps it.
func Install(ctx context.Context, o Options) error {
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	return launchdInstall(ctx, o)
}

// Uninstall boots the agent out and removes its plist.
func Uninstall(ctx context.Context, o Options) error {
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	return launchdUninstall(ctx, o)
}

// Status reports whether the agent is loaded and its launchd state.
func Status(ctx context.Context, o Options) (State, error) {
	o, err := o.withDefaults()
	if err != nil {
		return State{}, err
	}
	return launchdStatus(ctx, o)
}

// Stop stops the running daemon through the service manager and leaves
// its socket listening: the next client starts it again.
func Stop(ctx context.Context, o Options) error {
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	return launchdStop(ctx, o)
}
