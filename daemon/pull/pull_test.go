package pull

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/internal/disk"
)

// tinyGGUF returns a valid GGUF file of about 64 KiB.
func tinyGGUF(t *testing.T) []byte {
	t.Helper()
	w := gguf.NewWriter()
	if err := w.AddKV("general.architecture", "llama"); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 4*16384)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := w.AddTensor("x", quant.F32, []uint64{16384}, data); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// hub imitates Hugging Face's /resolve/: a redirect carrying
// X-Linked-Etag to a CDN path that serves the bytes with Range support.
// cutAt > 0 makes the first full (non-range) download drop the connection
// after that many bytes.
type hub struct {
	file      []byte
	sha       string // published digest
	cutAt     int
	cuts      atomic.Int32
	ranges    atomic.Int32
	lastRange atomic.Value
}

func (h *hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/Org/Model-GGUF/resolve/main/sub/Tiny-Model-Q8_0.gguf":
		w.Header().Set("X-Linked-Etag", `"`+h.sha+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(h.file)))
		http.Redirect(w, r, "/cdn/blob", http.StatusFound)
	case r.URL.Path == "/cdn/blob":
		etag := `"cdn-v1"`
		w.Header().Set("ETag", etag)
		w.Header().Set("Accept-Ranges", "bytes")
		rg := r.Header.Get("Range")
		h.lastRange.Store(rg + "|" + r.Header.Get("If-Range"))
		if rg != "" && r.Header.Get("If-Range") == etag {
			h.ranges.Add(1)
			start, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"))
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(h.file)-1, len(h.file)))
			w.Header().Set("Content-Length", strconv.Itoa(len(h.file)-start))
			w.WriteHeader(http.StatusPartialContent)
			w.Write(h.file[start:])
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(h.file)))
		w.WriteHeader(http.StatusOK)
		if h.cutAt > 0 && h.cuts.Add(1) == 1 {
			w.Write(h.file[:h.cutAt])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // drop the connection mid-body
		}
		w.Write(h.file)
	default:
		http.NotFound(w, r)
	}
}

func newHub(t *testing.T) (*hub, *httptest.Server) {
	file := tinyGGUF(t)
	sum := sha256.Sum256(file)
	h := &hub{file: file, sha: hex.EncodeToString(sum[:])}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

const ref = "Org/Model-GGUF/sub/Tiny-Model-Q8_0.gguf"

func TestFullDownload(t *testing.T) {
	h, srv := newHub(t)
	dir := t.TempDir()
	var statuses []string
	res, err := Pull(context.Background(), ref, Options{Registry: srv.URL, Dir: dir, Progress: func(p Progress) {
		if len(statuses) == 0 || statuses[len(statuses)-1] != p.Status {
			statuses = append(statuses, p.Status)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Name != "tiny-model-q8_0" || res.Size != int64(len(h.file)) || res.SHA256 != h.sha || !res.Verified || res.Resumed {
		t.Fatalf("result %+v", res)
	}
	got, err := os.ReadFile(filepath.Join(dir, "Tiny-Model-Q8_0.gguf"))
	if err != nil || !bytes.Equal(got, h.file) {
		t.Fatalf("file differs (%v)", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*.partial*"))
	if len(left) != 0 {
		t.Fatalf("leftovers %v", left)
	}
	want := "pulling tiny-model-q8_0,downloading,verifying sha256 digest,validating,success"
	if strings.Join(statuses, ",") != want {
		t.Fatalf("statuses %q, want %q", strings.Join(statuses, ","), want)
	}
	// A second pull finds the file and does not download.
	if _, err := Pull(context.Background(), ref, Options{Registry: srv.URL, Dir: dir}); err != nil {
		t.Fatal(err)
	}
}

func TestResumeAfterCutOff(t *testing.T) {
	h, srv := newHub(t)
	h.cutAt = 20000
	dir := t.TempDir()
	_, err := Pull(context.Background(), ref, Options{Registry: srv.URL, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "resume") {
		t.Fatalf("first pull: err %v, want an interrupted download", err)
	}
	st, err := os.Stat(filepath.Join(dir, "Tiny-Model-Q8_0.gguf.partial"))
	if err != nil || st.Size() != 20000 {
		t.Fatalf("partial after cut-off: %v %v", st, err)
	}
	res, err := Pull(context.Background(), ref, Options{Registry: srv.URL, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || h.ranges.Load() != 1 || h.lastRange.Load() != `bytes=20000-|"cdn-v1"` {
		t.Fatalf("not resumed with Range/If-Range: %+v, last %v", res, h.lastRange.Load())
	}
	got, _ := os.ReadFile(res.Path)
	if !bytes.Equal(got, h.file) || !res.Verified {
		t.Fatal("resumed file differs or is unverified")
	}
}

func TestResumeRestartsWhenServerSendsWholeFile(t *testing.T) {
	h, srv := newHub(t)
	dir := t.TempDir()
	// A partial with a stale ETag: the server answers 200 with the whole file.
	p := filepath.Join(dir, "Tiny-Model-Q8_0.gguf.partial")
	os.WriteFile(p, []byte("garbage that must not survive"), 0o600)
	os.WriteFile(p+".json", []byte(`{"etag":"\"old\"","url":"`+srv.URL+`/Org/Model-GGUF/resolve/main/sub/Tiny-Model-Q8_0.gguf"}`), 0o600)
	res, err := Pull(context.Background(), ref, Options{Registry: srv.URL, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(res.Path)
	if res.Resumed || !bytes.Equal(got, h.file) {
		t.Fatalf("result %+v; file equal %v", res, bytes.Equal(got, h.file))
	}
}

func TestChecksumMismatchKeepsCorruptFile(t *testing.T) {
	h, srv := newHub(t)
	h.sha = strings.Repeat("ab", 32)
	dir := t.TempDir()
	_, err := Pull(context.Background(), ref, Options{Registry: srv.URL, Dir: dir})
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), h.sha) {
		t.Fatalf("err %v, want ErrChecksum naming the published digest", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "Tiny-Model-Q8_0.gguf")); !os.IsNotExist(err) {
		t.Fatal("corrupt download was installed")
	}
	got, err := os.ReadFile(filepath.Join(dir, "Tiny-Model-Q8_0.gguf.corrupt"))
	if err != nil || !bytes.Equal(got, h.file) {
		t.Fatalf("corrupt copy not kept: %v", err)
	}
}

func TestNotFoundAndInvalid(t *testing.T) {
	_, srv := newHub(t)
	dir := t.TempDir()
	if _, err := Pull(context.Background(), "Org/Model-GGUF/missing.gguf", Options{Registry: srv.URL, Dir: dir}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("err %v, want ErrNotFound", err)
	}
	for _, bad := range []string{"model.gguf", "Org/model.gguf", "Org/Repo/../x.gguf", "Org/Repo/readme.md", "Org//x.gguf",
		"Org/Repo/x\n.gguf", "Org/Re po/x.gguf", "Org/Repo/x.gguf?a=b", "Org/Repo/%2e%2e/x.gguf", "-Org/Repo/x.gguf",
		"Org/Repo/" + strings.Repeat("a/", 10) + "x.gguf", "Org/Repo/" + strings.Repeat("a", 200) + ".gguf", "Org/Repo/x.gguf\r\nHost: evil"} {
		if _, err := Pull(context.Background(), bad, Options{Registry: srv.URL, Dir: dir}); !errors.Is(err, ErrInvalidRef) {
			t.Errorf("%q: err %v, want ErrInvalidRef", bad, err)
		}
	}
	// A file that downloads fine but is not GGUF is refused.
	notGGUF := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>login</html>")) }))
	defer notGGUF.Close()
	_, err := Pull(context.Background(), "Org/Repo/m.gguf", Options{Registry: notGGUF.URL, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "not a usable GGUF") {
		t.Fatalf("err %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "m.gguf")); !os.IsNotExist(err) {
		t.Fatal("invalid file installed")
	}
}

func TestParseContentRange(t *testing.T) {
	for _, tc := range []struct {
		in           string
		start, total int64
		ok           bool
	}{
		{"bytes 100-199/200", 100, 200, true},
		{"bytes 0-0/*", 0, 0, true},
		{"bytes x-1/2", 0, 0, false},
		{"items 1-2/3", 0, 0, false},
		{"bytes 1-2", 0, 0, false},
		{"bytes -5-2/3", 0, 0, false},
	} {
		s, tot, err := parseContentRange(tc.in)
		if (err == nil) != tc.ok || s != tc.start || tot != tc.total {
			t.Errorf("%q: %d %d %v", tc.in, s, tot, err)
		}
	}
}

func FuzzParseRef(f *testing.F) {
	for _, s := range []string{ref, "a/b/c.gguf", "a/b/../c.gguf", "", "///"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		repo, file, err := ParseRef(s)
		if err != nil {
			return
		}
		if strings.Contains(file, "..") && strings.Contains("/"+file+"/", "/../") || strings.Count(repo, "/") != 1 {
			t.Fatalf("%q accepted as %q %q", s, repo, file)
		}
	})
}

func TestCleanStale(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-2 * StaleAge)
	files := map[string]bool{ // name: removed
		"a.gguf.partial": true, "a.gguf.partial.json": true, "b.corrupt": true,
		"fresh.gguf.partial": false, "model.gguf": false, "notes.txt": false,
	}
	for name := range files {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("0123456789"), 0o600)
		if name != "fresh.gguf.partial" {
			os.Chtimes(p, old, old)
		}
	}
	freed, err := CleanStale(dir, StaleAge)
	if err != nil {
		t.Fatal(err)
	}
	if freed != 30 {
		t.Fatalf("freed %d bytes, want 30", freed)
	}
	for name, removed := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		if gone := errors.Is(err, os.ErrNotExist); gone != removed {
			t.Errorf("%s: removed %v, want %v", name, gone, removed)
		}
	}
	if _, err := CleanStale(filepath.Join(dir, "missing"), StaleAge); err != nil {
		t.Fatalf("missing dir: %v", err)
	}
}

func TestPullRefusedWithoutRoom(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	h, srv := newHub(t)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	_, err := Pull(context.Background(), "Org/Model-GGUF/sub/Tiny-Model-Q8_0.gguf", Options{Registry: srv.URL, Dir: dir})
	if !errors.Is(err, disk.ErrNoSpace) {
		t.Fatalf("err %v, want ErrNoSpace", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 1 { // the partial's meta file at most
		t.Fatalf("a refused pull left %d files", len(ents))
	}
	_ = h
}

// TestPullWaitsForAnotherDownload: a pull of a file another process is
// downloading (the daemon and `ruvllm pull --local` share the models
// directory) waits for it and then finds the file, instead of writing the
// same partial at the same time.
func TestPullWaitsForAnotherDownload(t *testing.T) {
	h, srv := newHub(t)
	dir := t.TempDir()
	dest := filepath.Join(dir, "Tiny-Model-Q8_0.gguf")
	other, busy, err := tryLock(dest + ".partial.lock") // the other download
	if err != nil || busy {
		t.Fatalf("lock: busy %v, %v", busy, err)
	}
	waiting := make(chan struct{})
	done := make(chan error, 1)
	var statuses []string
	go func() {
		_, err := Pull(context.Background(), ref, Options{Registry: srv.URL, Dir: dir, Progress: func(p Progress) {
			statuses = append(statuses, p.Status)
			if strings.HasPrefix(p.Status, "waiting for another download") {
				close(waiting)
			}
		}})
		done <- err
	}()
	<-waiting
	// The other download ends with the file in place.
	if err := os.WriteFile(dest, h.file, 0o600); err != nil {
		t.Fatal(err)
	}
	other.unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := h.ranges.Load(); n != 0 || h.lastRange.Load() != nil {
		t.Fatalf("the waiting pull downloaded too (%d ranges, last %v)", n, h.lastRange.Load())
	}
	if last := statuses[len(statuses)-1]; last != "success" {
		t.Fatalf("statuses %q", statuses)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.partial*")); len(left) != 0 {
		t.Fatalf("leftovers %v", left)
	}
	// A pull cancelled while it waits says so.
	other, _, _ = tryLock(filepath.Join(dir, "Other.gguf.partial.lock"))
	defer other.unlock()
	ctx, cancel := context.WithCancel(context.Background())
	_, err = Pull(ctx, "Org/Model-GGUF/Other.gguf", Options{Registry: srv.URL, Dir: dir, Progress: func(p Progress) {
		if strings.HasPrefix(p.Status, "waiting") {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait: %v", err)
	}
}

// TestPullOnFullDiskLeavesNothing: a pull on a disk too full for even the
// partial's meta file fails saying so and leaves no empty partial behind
// (they stayed until the 24-hour sweep).
func TestPullOnFullDiskLeavesNothing(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	_, srv := newHub(t)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	filler, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = filler.Write(make([]byte, 4096))
	}
	filler.Close()
	if _, err := Pull(context.Background(), ref, Options{Registry: srv.URL, Dir: dir}); err == nil || !disk.IsFull(err) {
		t.Fatalf("pull on a full disk: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != "filler" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// TestPullRefusesTakenDestination: a directory with the file's name in the
// models directory is refused before anything is downloaded (the whole
// file was downloaded, then its rename failed).
func TestPullRefusesTakenDestination(t *testing.T) {
	h, srv := newHub(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "Tiny-Model-Q8_0.gguf"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Pull(context.Background(), ref, Options{Registry: srv.URL, Dir: dir})
	if !errors.Is(err, ErrDestination) || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("pull onto a directory: %v", err)
	}
	if h.lastRange.Load() != nil {
		t.Fatal("the refused pull downloaded the file")
	}
}
