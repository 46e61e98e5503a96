//go:build linux

package service

import "context"

// Install writes the systemd user units and enables and starts the socket
// through D-Bus, so the daemon starts on the first connection.
func Install(ctx context.Context, o Options) error {
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	return systemdInstall(ctx, o)
}

// Uninstall stops and disables the units and removes their files.
func Uninstall(ctx context.Context, o Options) error {
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	return systemdUninstall(ctx, o)
}

// Status reports the units' file and active states.
func Status(ctx context.Context, o Options) (State, error) {
	o, err := o.withDefaults()
	if err != nil {
		return State{}, err
	}
	return systemdStatus(ctx, o)
}

// Stop stops the running daemon through the service manager and leaves
// its socket listening: the next client starts it again.
func Stop(ctx context.Context, o Options) error {
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	return systemdStop(ctx, o)
}
