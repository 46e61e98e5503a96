package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestStartedDaemonThatNeverAnswersIsStopped: a daemon the CLI started
// that never answers (here a process that never listens), or whose wait
// the user interrupts, is stopped rather than left running: it held the
// socket's place, and every later command found a daemon that never
// answered.
func TestStartedDaemonThatNeverAnswersIsStopped(t *testing.T) {
	t.Setenv(ipc.EnvSocket, filepath.Join(t.TempDir(), "none.sock"))
	for _, tc := range []struct {
		name    string
		ctx     func() (context.Context, context.CancelFunc)
		wantErr string
	}{
		{name: "no answer in time", ctx: func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			wantErr: "did not answer"},
		{name: "interrupted", ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, wantErr: context.Canceled.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logf, err := os.Create(filepath.Join(t.TempDir(), "ruvllmd.log"))
			if err != nil {
				t.Fatal(err)
			}
			defer logf.Close()
			ctx, cancel := tc.ctx()
			defer cancel()
			cmd := exec.Command("sleep", "600")
			_, err = launchDaemon(ctx, cmd, logf, 300*time.Millisecond)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("startDaemon = %v, want an error saying %q", err, tc.wantErr)
			}
			if cmd.ProcessState == nil {
				t.Fatal("the started process was not waited for")
			}
			if err := cmd.Process.Signal(syscall.Signal(0)); !errors.Is(err, os.ErrProcessDone) {
				t.Fatalf("the started process still runs (signal 0: %v)", err)
			}
		})
	}
}
