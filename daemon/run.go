package daemon

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// SignalContext returns a context cancelled by SIGINT, SIGTERM or SIGHUP,
// for graceful shutdown. SIGHUP is the terminal a foreground daemon runs
// in closing: left to Go's default it ended the process at once, without
// the grace for requests in flight, the prefix-cache snapshots or the
// socket's removal.
//
// It also ignores SIGPIPE for the whole process: a daemon whose log went
// to a pipe (`ruvllmd | tee log`, the tee gone with its terminal) was
// killed by its next log line, there and then, with the same losses, and
// its socket left behind. Its writes to the closed pipe now fail instead,
// and it keeps serving.
//
// A second signal, once shutdown has begun, ends the process at once (the
// signals' default), as a second Ctrl-C does in most servers: it was
// ignored, and a client holding a request open kept the daemon up for its
// whole grace. Every file the daemon writes is written whole or not at all
// (a temporary file renamed), so nothing is lost but the grace.
func SignalContext(parent context.Context) (context.Context, context.CancelFunc) {
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	context.AfterFunc(ctx, stop) // the next signal takes its default
	return ctx, stop
}

// DefaultGrace is how long shutdown waits for in-flight requests.
const DefaultGrace = 10 * time.Second
