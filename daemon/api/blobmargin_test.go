package api

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/internal/disk"
)

// TestBlobUploadKeepsDiskMargin: a blob upload leaves disk.Margin free
// whether or not it announces its length. The ollama CLI streams the file
// chunked (no Content-Length), which the free-space check used to let
// fill the disk the state store shares: here a 2 MiB blob on a disk of
// Margin + 1 MiB was stored, leaving less than the margin.
func TestBlobUploadKeepsDiskMargin(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	for _, tc := range []struct {
		name    string
		chunked bool
	}{{"with length", false}, {"chunked", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ta := startAPI(t)
			blobs := filepath.Join(ta.srv.Config().ModelsDir, "blobs")
			if err := os.MkdirAll(blobs, 0o700); err != nil {
				t.Fatal(err)
			}
			size := fmt.Sprintf("size=%dk", (disk.Margin+1<<20)>>10)
			if out, err := exec.Command("mount", "-t", "tmpfs", "-o", size, "tmpfs", blobs).CombinedOutput(); err != nil {
				t.Skipf("mount tmpfs: %v %s", err, out)
			}
			t.Cleanup(func() { exec.Command("umount", blobs).Run() })
			data := make([]byte, 2<<20)
			rand.Read(data)
			sum := sha256.Sum256(data)
			var body io.Reader = strings.NewReader(string(data))
			if tc.chunked {
				body = io.MultiReader(body) // hides the length: sent chunked
			}
			req, _ := http.NewRequest(http.MethodPost, "http://ruvllm/api/blobs/sha256:"+hex.EncodeToString(sum[:]), body)
			resp, err := ta.http.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusInsufficientStorage || !strings.Contains(string(msg), "free") {
				t.Fatalf("2 MiB blob on a disk of the margin + 1 MiB: %d %s; want 507", resp.StatusCode, msg)
			}
			if ents, _ := os.ReadDir(blobs); len(ents) != 0 {
				t.Fatalf("a refused upload left %d files in %s", len(ents), blobs)
			}
		})
	}
}
