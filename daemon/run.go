package daemon

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// SignalContext returns a context cancelled by SIGINT or SIGTERM, for
// graceful shutdown.
func SignalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

// DefaultGrace is how long shutdown waits for in-flight requests.
const DefaultGrace = 10 * time.Second
