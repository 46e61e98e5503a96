package serve

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStartRemovesCutOffUploads: the temporary files of writes a kill -9
// cut off (adapter uploads and staging copies, Ollama blobs, fine-tuning
// files, /api/create's quantizations, prefix-cache snapshots) are removed
// when the daemon starts again; they were kept for ever, up to the
// uploads' size caps (4 GiB adapters, 512 GiB blobs), and a quantization
// or a snapshot left one more each time a kill -9 cut it off.
func TestStartRemovesCutOffUploads(t *testing.T) {
	dir := t.TempDir()
	leftovers := []string{
		filepath.Join(dir, "drop", ".installed", ".upload-1"),
		filepath.Join(dir, "drop", ".installed", ".stage-2"),
		filepath.Join(dir, "models", "blobs", ".upload-3"),
		filepath.Join(dir, "state", "files", ".upload-4"),
		filepath.Join(dir, "models", "blobs", ".quantize-5.gguf"),
		filepath.Join(dir, "cache", ".prefix-6"),
	}
	for _, p := range leftovers {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("half an upload"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A finished snapshot (of a model not loaded here) is no temporary file.
	kept := filepath.Join(dir, "cache", "prefix-other.snap")
	if err := os.WriteFile(kept, []byte("a snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, dial := startAdapterDaemonIn(t, dir)
	dial("test")
	for _, p := range leftovers {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is still there after the start", p)
		}
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("the snapshot %s was removed: %v", kept, err)
	}
}
