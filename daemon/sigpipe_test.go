package daemon

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// TestSignalContextSurvivesClosedLogPipe: a daemon whose stderr is a
// pipe nobody reads any more (`ruvllmd | tee log`, the tee gone) is not
// killed by its next log line. Go's default for a write to a broken pipe
// on fd 2 is to die of SIGPIPE: the daemon ended mid-service, without its
// shutdown, and left its socket behind.
func TestSignalContextSurvivesClosedLogPipe(t *testing.T) {
	if os.Getenv("RUVLLM_SIGPIPE_HELPER") == "1" {
		_, stop := SignalContext(context.Background())
		defer stop()
		fmt.Fprintln(os.Stderr, "a log line to a closed pipe")
		return
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // no reader: the helper's first write breaks the pipe
	defer w.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSignalContextSurvivesClosedLogPipe$")
	cmd.Env = append(os.Environ(), "RUVLLM_SIGPIPE_HELPER=1")
	cmd.Stderr = w
	if err := cmd.Run(); err != nil {
		t.Fatalf("the helper writing its log to a closed pipe: %v; want a clean exit", err)
	}
}
