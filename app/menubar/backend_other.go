//go:build !darwin

package menubar

import "context"

// newBackend reports that there is no menu bar to draw in; Linux desktops
// use app/tray instead.
func newBackend(ctx context.Context, m *MenuBar) (backend, error) {
	return nil, ErrUnsupported
}
