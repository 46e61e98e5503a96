// Package pull downloads GGUF model files from a Hugging Face–style
// registry (GET {base}/{owner}/{repo}/resolve/main/{file}) into the models
// directory: into "<file>.partial" first, resumed with a Range request when
// a partial exists, verified against the SHA-256 the server publishes for
// LFS files, checked to be a readable GGUF, and only then renamed into
// place, so the models directory never holds a half-written model.
package pull

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/internal/disk"
)

// DefaultRegistry is the registry used when none is configured.
const DefaultRegistry = "https://huggingface.co"

// RegistryEnv names the environment variable that overrides the registry.
const RegistryEnv = "RUVLLM_REGISTRY"

// Errors callers branch on.
var (
	// ErrNotFound: the registry has no such file (HTTP 404).
	ErrNotFound = errors.New("not found in the registry")
	// ErrChecksum: the downloaded bytes do not match the published
	// SHA-256; the data is kept as "<file>.corrupt" for inspection.
	ErrChecksum = errors.New("sha256 mismatch")
	// ErrInvalidRef: the reference is not OWNER/REPO/FILE.gguf.
	ErrInvalidRef = errors.New("invalid model reference")
	// ErrDestination: something that is not a file has the file's name
	// in the models directory.
	ErrDestination = errors.New("the download's destination is taken")
)

// Progress is one report of a pull, shaped like Ollama's pull progress.
type Progress struct {
	Status    string // "pulling", "downloading", "verifying sha256 digest", "validating", "success"
	Digest    string // "sha256:<hex>" when the registry published one
	Total     int64  // bytes in the file, 0 when unknown
	Completed int64  // bytes on disk so far
}

// Options configures a pull.
type Options struct {
	// Registry is the base URL (default DefaultRegistry).
	Registry string
	// Dir is the models directory the file lands in.
	Dir string
	// Client makes the requests (default: a client with no overall
	// timeout; cancel ctx to stop).
	Client *http.Client
	// Progress, when set, receives reports (at most every ~100 ms while
	// downloading, and at every change of status).
	Progress func(Progress)
	// Validate checks the finished file (default: it parses as GGUF).
	Validate func(path string) error
}

// Result describes a finished pull.
type Result struct {
	Name    string // model name derived from the file name
	Path    string
	Size    int64
	SHA256  string // hex digest of the file
	Source  string // the URL it came from
	Resumed bool   // a partial download was continued
	// Verified says the digest matched one the registry published.
	Verified bool
}

// ParseRef splits "OWNER/REPO/PATH/TO/FILE.gguf" into the repository and
// the file path inside it.
func ParseRef(ref string) (repo, file string, err error) {
	if hint := refHint(ref); hint != "" {
		return "", "", fmt.Errorf("%w %q: %s", ErrInvalidRef, ref, hint)
	}
	parts := strings.Split(strings.Trim(ref, "/"), "/")
	if len(parts) < 3 {
		return "", "", fmt.Errorf("%w %q: want OWNER/REPO/FILE.gguf", ErrInvalidRef, ref)
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return "", "", fmt.Errorf("%w %q: empty or relative path segment", ErrInvalidRef, ref)
		}
	}
	if len(ref) > maxRefBytes || len(parts) > maxRefSegments {
		return "", "", fmt.Errorf("%w: longer than %d bytes or %d segments", ErrInvalidRef, maxRefBytes, maxRefSegments)
	}
	for _, p := range parts {
		if !segmentRE.MatchString(p) {
			return "", "", fmt.Errorf("%w %q: segment %q may hold only letters, digits, '.', '_' and '-' (and must start with a letter or digit)",
				ErrInvalidRef, ref, p)
		}
	}
	file = strings.Join(parts[2:], "/")
	if !strings.HasSuffix(strings.ToLower(file), ".gguf") {
		return "", "", fmt.Errorf("%w %q: the file must be a .gguf", ErrInvalidRef, ref)
	}
	return parts[0] + "/" + parts[1], file, nil
}

// refHint says what to give instead of a reference in another tool's
// form (a URL, Ollama's hf.co/OWNER/REPO:QUANT or a library name), which
// ParseRef would refuse for a reason that does not name the form it
// takes; "" for any other reference.
func refHint(ref string) string {
	const want = "want OWNER/REPO/FILE.gguf, a GGUF file of a Hugging Face repository"
	lower := strings.ToLower(ref)
	switch {
	case strings.Contains(lower, "://"):
		return want + ", not a URL (--registry or $RUVLLM_REGISTRY sets the registry's base URL)"
	case strings.HasPrefix(lower, "hf.co/") || strings.HasPrefix(lower, "huggingface.co/"):
		return want + ", without the host: Ollama's hf.co/OWNER/REPO:QUANT form names no file"
	case !strings.Contains(ref, "/"):
		return want + " (Ollama's library names, such as llama3.2, are not a registry here)"
	}
	return ""
}

// Bounds of a reference: each segment of OWNER/REPO/PATH/FILE.gguf is a
// name of a fixed character set, so a reference can never hold a newline,
// a path trick or a URL of its own.
const (
	maxRefBytes    = 512
	maxRefSegments = 8
)

var segmentRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// StaleAge is how long an interrupted download (".partial") or a rejected
// one (".corrupt") is kept for resuming or inspection before CleanStale
// removes it.
const StaleAge = 24 * time.Hour

// CleanStale removes the partial and corrupt downloads in dir that have not
// changed for StaleAge (older than now - age) and returns how many bytes it
// freed. The daemon runs it at start and before each pull, so interrupted
// downloads cannot fill the disk.
func CleanStale(dir string, age time.Duration) (int64, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var freed int64
	cutoff := time.Now().Add(-age)
	for _, e := range ents {
		n := e.Name()
		if !strings.HasSuffix(n, ".partial") && !strings.HasSuffix(n, ".partial.json") && !strings.HasSuffix(n, ".partial.lock") && !strings.HasSuffix(n, ".corrupt") {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || info.ModTime().After(cutoff) {
			continue
		}
		if strings.HasSuffix(n, ".partial.lock") {
			// Only a lock no download holds (its time is when it was made).
			l, busy, err := tryLock(filepath.Join(dir, n))
			if err != nil || busy {
				continue
			}
			os.Remove(filepath.Join(dir, n))
			l.unlock()
			continue
		}
		if os.Remove(filepath.Join(dir, n)) == nil {
			freed += info.Size()
		}
	}
	return freed, nil
}

// lockPoll is how often a pull waiting for another download of its file
// tries the lock again.
const lockPoll = 200 * time.Millisecond

// waitLock takes the download lock at path, calling waiting once if
// another download holds it, until it is free or ctx ends.
func waitLock(ctx context.Context, path string, waiting func()) (*fileLock, error) {
	told := false
	for {
		l, busy, err := tryLock(path)
		if err != nil || !busy {
			return l, err
		}
		if !told {
			waiting()
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("pull: waiting for another download: %w", ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

// partialMeta is kept beside a partial download so a resume can ask the
// server for the same version of the file (If-Range).
type partialMeta struct {
	ETag   string `json:"etag"`
	SHA256 string `json:"sha256,omitempty"`
	Total  int64  `json:"total,omitempty"`
	URL    string `json:"url"`
}

// Pull downloads ref into o.Dir. An existing complete file is left alone
// and reported as success.
func Pull(ctx context.Context, ref string, o Options) (Result, error) {
	repo, file, err := ParseRef(ref)
	if err != nil {
		return Result{}, err
	}
	if o.Registry == "" {
		o.Registry = DefaultRegistry
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Validate == nil {
		o.Validate = validateGGUF
	}
	if o.Progress == nil {
		o.Progress = func(Progress) {}
	}
	base, err := url.Parse(strings.TrimRight(o.Registry, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") {
		return Result{}, fmt.Errorf("pull: registry %q is not an http(s) URL", o.Registry)
	}
	u := *base
	u.Path = path.Join(base.Path, repo, "resolve", "main", file)
	dest := filepath.Join(o.Dir, path.Base(file))
	res := Result{Name: llm.NameFromPath(dest), Path: dest, Source: u.String()}
	if st, err := os.Stat(dest); err == nil {
		if !st.Mode().IsRegular() {
			// Checked before the download, which could not be put there
			// (it downloaded the whole file, then failed to rename it).
			return res, fmt.Errorf("pull: %w: %s is %s, not a model file: move it away", ErrDestination, dest, gguf.FileKind(st.Mode()))
		}
		res.Size = st.Size()
		o.Progress(Progress{Status: "success", Total: st.Size(), Completed: st.Size()})
		return res, nil
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return res, fmt.Errorf("pull: %w", err)
	}
	if _, err := CleanStale(o.Dir, StaleAge); err != nil {
		return res, fmt.Errorf("pull: %w", err)
	}
	// One download of a file at a time, across processes (the daemon and
	// `ruvllm pull --local` share the models directory): a second waits
	// for the first, then finds the file there.
	lock, err := waitLock(ctx, dest+".partial.lock", func() {
		o.Progress(Progress{Status: "waiting for another download of " + res.Name})
	})
	if err != nil {
		return res, err
	}
	defer lock.unlock()
	if st, err := os.Stat(dest); err == nil && !st.IsDir() {
		res.Size = st.Size()
		o.Progress(Progress{Status: "success", Total: st.Size(), Completed: st.Size()})
		return res, nil
	}
	o.Progress(Progress{Status: "pulling " + res.Name})
	d := &download{o: o, url: u.String(), partial: dest + ".partial", res: &res}
	if err := d.run(ctx); err != nil {
		return res, err
	}
	if err := os.Rename(d.partial, dest); err != nil {
		return res, fmt.Errorf("pull: %w", err)
	}
	os.Remove(d.metaPath())
	o.Progress(Progress{Status: "success", Digest: digest(res.SHA256), Total: res.Size, Completed: res.Size})
	return res, nil
}

func digest(hexSum string) string {
	if hexSum == "" {
		return ""
	}
	return "sha256:" + hexSum
}

type download struct {
	o       Options
	url     string
	partial string
	res     *Result
}

func (d *download) metaPath() string { return d.partial + ".json" }

func (d *download) readMeta() (partialMeta, int64) {
	var m partialMeta
	st, err := os.Stat(d.partial)
	if err != nil {
		return m, 0
	}
	b, err := os.ReadFile(d.metaPath())
	if err != nil || json.Unmarshal(b, &m) != nil || m.URL != d.url {
		return partialMeta{}, 0 // a partial of unknown origin is not resumed
	}
	return m, st.Size()
}

// run fetches the file into the partial, resuming when possible, then
// verifies and validates it.
func (d *download) run(ctx context.Context) error {
	meta, offset := d.readMeta()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.url, nil)
	if err != nil {
		return fmt.Errorf("pull: %w", err)
	}
	req.Header.Set("User-Agent", "ruvllm")
	if offset > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(offset, 10)+"-")
		if meta.ETag != "" {
			req.Header.Set("If-Range", meta.ETag)
		}
	}
	// Hugging Face answers /resolve/ for LFS files with a redirect to a CDN
	// whose response lacks the repository's headers; the SHA-256 is in the
	// redirect's X-Linked-Etag, so look at every hop.
	var linked string
	client := *d.o.Client
	inner := client.CheckRedirect
	client.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if r.Response != nil {
			if s := sha256Of(r.Response.Header); s != "" {
				linked = s
			}
		}
		if inner != nil {
			return inner(r, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("pull %s: %w", d.url, err)
	}
	defer resp.Body.Close()
	if s := sha256Of(resp.Header); s != "" {
		linked = s
	}
	var f *os.File
	switch resp.StatusCode {
	case http.StatusOK: // whole file: start over
		offset = 0
		f, err = os.OpenFile(d.partial, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	case http.StatusPartialContent:
		start, total, perr := parseContentRange(resp.Header.Get("Content-Range"))
		if perr != nil || start != offset {
			return fmt.Errorf("pull %s: server resumed at %q, asked for byte %d", d.url, resp.Header.Get("Content-Range"), offset)
		}
		if total > 0 {
			meta.Total = total
		}
		d.res.Resumed = true
		f, err = os.OpenFile(d.partial, os.O_WRONLY|os.O_APPEND, 0o600)
	case http.StatusRequestedRangeNotSatisfiable:
		if offset == 0 {
			return fmt.Errorf("pull %s: %s", d.url, resp.Status)
		}
		// The partial is as long as (or longer than) the file: start over.
		os.Remove(d.partial)
		os.Remove(d.metaPath())
		return d.run(ctx)
	case http.StatusNotFound:
		return fmt.Errorf("pull %s: %w", d.url, ErrNotFound)
	default:
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("pull %s: %s: %s", d.url, resp.Status, strings.TrimSpace(string(msg)))
	}
	if err != nil {
		return fmt.Errorf("pull: %w", err)
	}
	defer f.Close()
	if resp.StatusCode == http.StatusOK {
		meta = partialMeta{Total: resp.ContentLength}
		if meta.Total < 0 {
			meta.Total = 0
		}
	}
	meta.URL = d.url
	if et := resp.Header.Get("ETag"); et != "" {
		meta.ETag = et
	}
	if linked != "" {
		meta.SHA256 = linked
	}
	if b, err := json.Marshal(meta); err == nil {
		if err := os.WriteFile(d.metaPath(), b, 0o600); err != nil {
			// A full disk: nothing worth resuming is left behind (empty
			// files stayed until the 24-hour sweep).
			os.Remove(d.metaPath())
			if offset == 0 {
				os.Remove(d.partial)
			}
			return fmt.Errorf("pull: %w", err)
		}
	}

	// Room: the rest of the file must fit with disk.Margin to spare; a
	// server that announces no length gets at most what fits.
	room := int64(-1)
	if meta.Total > 0 {
		if err := disk.Check(filepath.Dir(d.partial), meta.Total-offset); err != nil {
			if offset == 0 { // nothing worth resuming
				os.Remove(d.partial)
				os.Remove(d.metaPath())
			}
			return fmt.Errorf("pull %s: %w", d.url, err)
		}
	} else if free, ok := disk.Free(filepath.Dir(d.partial)); ok {
		room = max(free-disk.Margin, 0)
	}
	h := sha256.New()
	if offset > 0 { // hash what is already on disk
		pf, err := os.Open(d.partial)
		if err != nil {
			return fmt.Errorf("pull: %w", err)
		}
		_, err = io.Copy(h, io.LimitReader(pf, offset))
		pf.Close()
		if err != nil {
			return fmt.Errorf("pull: rehash partial: %w", err)
		}
	}
	pw := &progressWriter{report: d.o.Progress, p: Progress{Status: "downloading", Digest: digest(meta.SHA256), Total: meta.Total, Completed: offset}}
	pw.emit()
	body := io.Reader(resp.Body)
	if room >= 0 {
		body = io.LimitReader(resp.Body, room+1)
	}
	n, copyErr := io.Copy(io.MultiWriter(f, h, pw), body)
	if copyErr == nil && room >= 0 && n > room {
		copyErr = fmt.Errorf("%w: the download outgrew the free space of %s", disk.ErrNoSpace, filepath.Dir(d.partial))
	}
	pw.emit()
	if err := f.Close(); err != nil && copyErr == nil {
		copyErr = err
	}
	size := offset + n
	if copyErr != nil {
		if disk.IsFull(copyErr) {
			os.Remove(d.partial)
			os.Remove(d.metaPath())
			if errors.Is(copyErr, disk.ErrNoSpace) { // it says so already
				return fmt.Errorf("pull %s: %w", d.url, copyErr)
			}
			return fmt.Errorf("pull %s: %w: %w", d.url, disk.ErrNoSpace, copyErr)
		}
		return fmt.Errorf("pull %s: download interrupted at %d bytes (run pull again to resume): %w", d.url, size, copyErr)
	}
	if meta.Total > 0 && size != meta.Total {
		return fmt.Errorf("pull %s: got %d of %d bytes (run pull again to resume)", d.url, size, meta.Total)
	}
	d.res.Size = size
	d.res.SHA256 = hex.EncodeToString(h.Sum(nil))
	if meta.SHA256 != "" {
		d.o.Progress(Progress{Status: "verifying sha256 digest", Digest: digest(meta.SHA256), Total: size, Completed: size})
		if meta.SHA256 != d.res.SHA256 {
			corrupt := strings.TrimSuffix(d.partial, ".partial") + ".corrupt"
			os.Rename(d.partial, corrupt)
			os.Remove(d.metaPath())
			return fmt.Errorf("pull %s: %w: registry says %s, downloaded data is %s; kept as %s",
				d.url, ErrChecksum, meta.SHA256, d.res.SHA256, corrupt)
		}
		d.res.Verified = true
	}
	d.o.Progress(Progress{Status: "validating", Digest: digest(d.res.SHA256), Total: size, Completed: size})
	if err := d.o.Validate(d.partial); err != nil {
		corrupt := strings.TrimSuffix(d.partial, ".partial") + ".corrupt"
		os.Rename(d.partial, corrupt)
		os.Remove(d.metaPath())
		return fmt.Errorf("pull %s: downloaded file is not a usable GGUF (kept as %s): %w", d.url, corrupt, err)
	}
	return nil
}

// sha256Of returns the SHA-256 a response publishes: Hugging Face's
// X-Linked-Etag (LFS files) or an ETag that is a bare 64-hex digest.
func sha256Of(h http.Header) string {
	for _, k := range []string{"X-Linked-Etag", "ETag"} {
		v := strings.TrimPrefix(strings.TrimSpace(h.Get(k)), "W/")
		v = strings.ToLower(strings.Trim(v, `"`))
		if len(v) == 64 && isHex(v) {
			return v
		}
	}
	return ""
}

func isHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// parseContentRange reads "bytes START-END/TOTAL" (TOTAL may be "*").
func parseContentRange(v string) (start, total int64, err error) {
	rest, ok := strings.CutPrefix(v, "bytes ")
	if !ok {
		return 0, 0, fmt.Errorf("content-range %q", v)
	}
	rng, tot, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, 0, fmt.Errorf("content-range %q", v)
	}
	s, _, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, fmt.Errorf("content-range %q", v)
	}
	if start, err = strconv.ParseInt(s, 10, 64); err != nil || start < 0 {
		return 0, 0, fmt.Errorf("content-range %q", v)
	}
	if tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil || total < 0 {
			return 0, 0, fmt.Errorf("content-range %q", v)
		}
	}
	return start, total, nil
}

// progressWriter counts bytes and reports at most every 100 ms.
type progressWriter struct {
	report func(Progress)
	p      Progress
	last   time.Time
}

func (w *progressWriter) Write(b []byte) (int, error) {
	w.p.Completed += int64(len(b))
	if time.Since(w.last) >= 100*time.Millisecond {
		w.emit()
	}
	return len(b), nil
}

func (w *progressWriter) emit() {
	w.last = time.Now()
	w.report(w.p)
}

func validateGGUF(p string) error {
	f, err := gguf.Open(p)
	if err != nil {
		return err
	}
	return f.Close()
}

// Registry returns the registry base URL: flag value, else $RUVLLM_REGISTRY,
// else DefaultRegistry.
func Registry(flag string) string {
	if flag != "" {
		return flag
	}
	if v := os.Getenv(RegistryEnv); v != "" {
		return v
	}
	return DefaultRegistry
}
