package finetune

import (
	"bytes"
	"errors"
	"fmt"
	"mime/multipart"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/daemon/store"
	"github.com/ruvllm/ruvllm/internal/disk"
)

// TestChunkedUploadKeepsDiskMargin: a training file uploaded without a
// length may take what leaves disk.Margin free, as one announcing its
// length is checked against: it was written until the disk was full, and
// on a disk of the margin + 1 MiB a 2 MiB file was stored, leaving less.
func TestChunkedUploadKeepsDiskMargin(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := filepath.Join(t.TempDir(), "files")
	os.MkdirAll(dir, 0o700)
	size := fmt.Sprintf("size=%dk", (disk.Margin+1<<20)>>10)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	line := `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}` + "\n"
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("purpose", "fine-tune")
	fw, _ := mw.CreateFormFile("file", "train.jsonl")
	fw.Write([]byte(strings.Repeat(line, (2<<20)/len(line))))
	mw.Close()
	db, err := store.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := &Service{o: Options{Dir: dir, MaxFileBytes: 512 << 20, Store: db}}
	_, err = s.SaveUpload(multipart.NewReader(&buf, mw.Boundary()), -1)
	if !errors.Is(err, disk.ErrNoSpace) {
		t.Fatalf("2 MiB chunked upload on a disk of the margin + 1 MiB: %v; want ErrNoSpace", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a refused upload left %d files", len(ents))
	}
}
