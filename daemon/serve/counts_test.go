package serve

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/daemon"
)

// TestRunRefusesNegativeCounts: a negative count is refused by its flag's
// name before the daemon takes its socket. ruvllmd took --kv-hot-window -1
// as 256 and --threads -1 as every core, where `ruvllm daemon` refused
// both.
func TestRunRefusesNegativeCounts(t *testing.T) {
	for _, tc := range []struct {
		flag string
		set  func(*Options)
	}{
		{"--threads", func(o *Options) { o.Threads = -1 }},
		{"--kv-hot-window", func(o *Options) { o.KVHotWindow = -1 }},
		{"--max-loaded", func(o *Options) { o.MaxLoaded = -2 }},
		{"--learning-deep-min", func(o *Options) { o.Learning.Config.DeepMin = -1 }},
		{"--learning-deep-every", func(o *Options) { o.Learning.DeepEvery = -3 }},
		{"--threads 100000", func(o *Options) { o.Threads = 100000 }}, // at most 1024
	} {
		t.Run(tc.flag, func(t *testing.T) {
			dir := t.TempDir()
			o := Options{Config: daemon.Config{SocketPath: filepath.Join(dir, "ruvllm.sock"), StateDir: filepath.Join(dir, "state")}}
			tc.set(&o)
			// Cancelled: a daemon that took the value would stop at once
			// instead of serving.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := Run(ctx, o)
			if err == nil || !strings.Contains(err.Error(), tc.flag) || !strings.Contains(err.Error(), "must be at") {
				t.Fatalf("Run: %v, want an error naming %s", err, tc.flag)
			}
		})
	}
}
