package serve

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStartRemovesCutOffUploads: the temporary files of uploads a kill -9
// cut off (adapter uploads and staging copies, Ollama blobs, fine-tuning
// files) are removed when the daemon starts again; they were kept for
// ever, up to the uploads' size caps (4 GiB adapters, 512 GiB blobs).
func TestStartRemovesCutOffUploads(t *testing.T) {
	dir := t.TempDir()
	leftovers := []string{
		filepath.Join(dir, "drop", ".installed", ".upload-1"),
		filepath.Join(dir, "drop", ".installed", ".stage-2"),
		filepath.Join(dir, "models", "blobs", ".upload-3"),
		filepath.Join(dir, "state", "files", ".upload-4"),
	}
	for _, p := range leftovers {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("half an upload"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, _, dial := startAdapterDaemonIn(t, dir)
	dial("test")
	for _, p := range leftovers {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is still there after the start", p)
		}
	}
}
