package hostile

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestSecondSignalEndsShutdown: while a client holds a request open (half
// its body sent) and the daemon waits out a long grace after SIGTERM, a
// second SIGTERM ends it at once, as a second Ctrl-C ends most servers;
// it was ignored, and the daemon stayed up for the whole grace.
func TestSecondSignalEndsShutdown(t *testing.T) {
	p := start(t, startOptions{args: []string{"--shutdown-grace", "10m"}})
	c, err := net.Dial("unix", p.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"model":"tiny-qwen2","prompt":"hi"}`
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: ruvllm\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body)+100, body)
	p.cmd.Process.Signal(syscall.SIGTERM)
	// Shutdown has begun once the socket takes no more clients.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		cl, err := ipc.Dial(context.Background(), ipc.WithSocket(p.sock))
		if err != nil {
			break
		}
		_, herr := cl.Health(context.Background())
		cl.Close()
		if herr != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon still serves 30 s after SIGTERM\n%s", p.log)
		}
	}
	select {
	case <-p.exited:
		t.Fatalf("the daemon exited without waiting for the open request\n%s", p.log)
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("a second SIGTERM did not end the daemon's shutdown\n%s", p.log)
	}
}
