package main

import (
	"context"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestStopRefusesSpentTimeout: stop with a --timeout of 0 or less is
// refused before it touches the daemon. It sent SIGTERM, gave up waiting
// at once and failed with "did not exit", the daemon gone all the same.
func TestStopRefusesSpentTimeout(t *testing.T) {
	d := startHelperDaemon(t, t.TempDir(), "", nil)
	for _, v := range []string{"0s", "-5s"} {
		_, _, err := runCLI(t, newStopCmd(), "--timeout", v)
		if err == nil || !strings.Contains(err.Error(), "--timeout") {
			t.Fatalf("stop --timeout %s: %v, want an error naming --timeout", v, err)
		}
		c, err := ipc.Dial(context.Background(), ipc.WithSocket(d.sock))
		if err != nil {
			t.Fatalf("after stop --timeout %s the daemon does not answer: %v", v, err)
		}
		c.Close()
	}
}
