package daemon

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestUnixPeerThatStopsReadingIsCut: a local app that stops reading a
// stream made the daemon's writes block for ever while the reply queued
// in memory (TCP had its write timeout, the Unix socket none). A write
// to such a peer now fails once it has waited the idle time.
func TestUnixPeerThatStopsReadingIsCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pl := &peerListener{Listener: ln, uid: uint32(os.Getuid()), log: slog.New(slog.DiscardHandler), writeIdle: 200 * time.Millisecond}
	client, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close() // never read
	c, err := pl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	chunk := make([]byte, 64<<10)
	for written := 0; ; written += len(chunk) {
		if _, err := c.Write(chunk); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("write failed with %v, want a deadline", err)
			}
			return
		}
		if written > 1<<30 {
			t.Fatal("1 GiB written to a peer that reads nothing")
		}
	}
}
