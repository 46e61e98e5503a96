// Package finetune is ruvllmd's OpenAI-compatible fine-tuning: training
// files (POST /v1/files, purpose "fine-tune", JSONL chat examples) kept
// on disk with a record in the state store, and jobs (POST
// /v1/fine_tuning/jobs) that train a LoRA adapter over a model with
// engine/train, one at a time, as background work that yields to serving
// (train.Options.Yield is the model's scheduler's Yield). A job that
// succeeds installs its adapter in the adapter pool as
// "ft:<model>:<suffix>:<id>", usable like any adapter or as the model
// name of a request.
//
// Jobs survive restarts: a job that was running when the daemon stopped
// (or was killed) goes back to the queue and trains again from the start
// (training is deterministic for its seed), at most MaxAttempts times;
// queued jobs stay queued.
package finetune

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ruvllm/ruvllm/internal/disk"
	"github.com/ruvllm/ruvllm/ipc"
)

// Store buckets.
const (
	FilesBucket  = "files"
	JobsBucket   = "fine_tuning.jobs"
	EventsBucket = "fine_tuning.events"
)

// Limits on training files.
const (
	// DefaultMaxFileBytes bounds one uploaded file.
	DefaultMaxFileBytes = 512 << 20
	// MaxLineBytes bounds one JSONL line (one example).
	MaxLineBytes = 8 << 20
	// MaxExamples bounds the examples of one file.
	MaxExamples = 100000
	// MaxFilenameBytes bounds the name a file is listed under.
	MaxFilenameBytes = 256
)

// Errors callers branch on.
var (
	// ErrNotFound: no file or job of that id.
	ErrNotFound = errors.New("not found")
	// ErrTooLarge: an upload over the size limit.
	ErrTooLarge = errors.New("file too large")
)

// ParamError is a client mistake about one field (the API's 400 naming
// it).
type ParamError struct {
	Param string
	Msg   string
}

func (e *ParamError) Error() string { return e.Param + " " + e.Msg }

func paramErr(param, format string, args ...any) error {
	return &ParamError{Param: param, Msg: fmt.Sprintf(format, args...)}
}

func newID(prefix string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// Example is one training conversation of a file, as its line gave it.
type Example struct {
	Messages []exampleMessage `json:"messages"`
}

// exampleMessage is a chat message of a training file; Weight 0 leaves an
// assistant message out of the loss (OpenAI's multi-turn weights).
type exampleMessage struct {
	ipc.Message
	Weight *int `json:"weight,omitempty"`
}

// UnmarshalJSON reads the message (ipc.Message's forms of content) and
// its weight.
func (m *exampleMessage) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &m.Message); err != nil {
		return err
	}
	var w struct {
		Weight *int `json:"weight"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("weight: %w", err)
	}
	m.Weight = w.Weight
	return nil
}

// trained reports whether the message is an answer to learn.
func (m exampleMessage) trained() bool {
	return m.Role == "assistant" && (m.Weight == nil || *m.Weight != 0)
}

// parseLine checks one line of a training file: a JSON object whose
// "messages" hold system, user and assistant turns (text only), with at
// least one assistant turn to learn. line is 1-based, for the error.
func parseLine(b []byte, line int) (Example, error) {
	var ex Example
	bad := func(format string, args ...any) error {
		return paramErr("file", "line %d: "+format, append([]any{line}, args...)...)
	}
	// encoding/json turns invalid UTF-8 into U+FFFD: the model would learn
	// replacement characters where the file meant other text.
	if !utf8.Valid(b) {
		return ex, bad("is not UTF-8 text (save the file as UTF-8)")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&ex); err != nil {
		return ex, bad("is not a JSON object {\"messages\": [...]}: %v", err)
	}
	// One example a line: what follows the object (a second example, as a
	// file of objects joined by spaces has) was dropped without a word.
	if dec.InputOffset() != int64(len(b)) {
		return ex, bad("holds more than one JSON value (JSONL: one {\"messages\": [...]} per line)")
	}
	if len(ex.Messages) == 0 {
		return ex, bad("has no messages")
	}
	learned := 0
	for i, m := range ex.Messages {
		switch m.Role {
		case "system", "user", "assistant":
		case "developer":
			ex.Messages[i].Role = "system"
		default:
			return ex, bad("messages[%d].role is %q: use system, user or assistant", i, m.Role)
		}
		if len(m.NonText) > 0 || len(m.Images) > 0 {
			return ex, bad("messages[%d] is not text", i)
		}
		if len(m.ToolCalls) > 0 {
			return ex, bad("messages[%d] has tool calls, which ruvllm does not train on", i)
		}
		if m.Weight != nil && *m.Weight != 0 && *m.Weight != 1 {
			return ex, bad("messages[%d].weight must be 0 or 1", i)
		}
		if m.trained() {
			if strings.TrimSpace(m.Content) == "" {
				return ex, bad("messages[%d] is an empty assistant message", i)
			}
			if i == 0 {
				return ex, bad("the first message is the assistant's: nothing prompts it")
			}
			learned++
		}
	}
	if learned == 0 {
		return ex, bad("has no assistant message to learn")
	}
	return ex, nil
}

// readExamples reads a training file, calling fn with every example.
func readExamples(r io.Reader, fn func(Example) error) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	n, line := 0, 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if line == 1 {
			// A byte order mark, as Windows editors write one.
			b = bytes.TrimPrefix(b, []byte("\uFEFF"))
		}
		if len(b) == 0 {
			continue
		}
		ex, err := parseLine(b, line)
		if err != nil {
			return n, err
		}
		n++
		if n > MaxExamples {
			return n, paramErr("file", "holds more than %d examples", MaxExamples)
		}
		if fn != nil {
			if err := fn(ex); err != nil {
				return n, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return n, paramErr("file", "line %d is longer than %d bytes", line+1, MaxLineBytes)
		}
		return n, err
	}
	if n == 0 {
		return 0, paramErr("file", "holds no examples (JSONL: one {\"messages\": [...]} per line)")
	}
	return n, nil
}

// fileRecord is a stored file: the API object and where its bytes are.
type fileRecord struct {
	ipc.FileObject
	Path string `json:"path"`
}

// SaveUpload reads a multipart upload (OpenAI's POST /v1/files: the
// file in field "file", "purpose" before or after it), streams the file
// into the files directory (never into memory) within the size limit and
// the free space there, checks that it is a JSONL file of chat examples,
// and records it. size is the request's length when known (-1
// otherwise).
func (s *Service) SaveUpload(mr *multipart.Reader, size int64) (ipc.FileObject, error) {
	if err := os.MkdirAll(s.o.Dir, 0o700); err != nil {
		return ipc.FileObject{}, err
	}
	if err := disk.Check(s.o.Dir, size); err != nil {
		return ipc.FileObject{}, err
	}
	var (
		purpose, filename, tmpPath string
		n                          int64
	)
	defer func() {
		if tmpPath != "" {
			os.Remove(tmpPath)
		}
	}()
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return ipc.FileObject{}, uploadErr(err)
		}
		switch part.FormName() {
		case "purpose":
			b, _ := io.ReadAll(io.LimitReader(part, 64))
			purpose = strings.TrimSpace(string(b))
		case "file":
			if tmpPath != "" {
				return ipc.FileObject{}, paramErr("file", "is given more than once")
			}
			filename = part.FileName()
			tmp, err := os.CreateTemp(s.o.Dir, ".upload-*")
			if err != nil {
				return ipc.FileObject{}, fmt.Errorf("upload: %w", err)
			}
			tmpPath = tmp.Name()
			// Without a length Check had nothing to weigh: the upload
			// may take what leaves the margin free, not fill the disk.
			limit, room := s.o.MaxFileBytes, int64(-1)
			if size < 0 {
				if rm, ok := disk.Room(s.o.Dir); ok && rm < limit {
					limit, room = rm, rm
				}
			}
			n, err = io.Copy(tmp, io.LimitReader(part, limit+1))
			switch {
			case err == nil && room >= 0 && n > room:
				err = fmt.Errorf("%w in %s: the upload outgrew the %d MiB that keep %d MiB free", disk.ErrNoSpace, s.o.Dir, room>>20, int64(disk.Margin)>>20)
			case err == nil && n > s.o.MaxFileBytes:
				err = fmt.Errorf("%w: the upload is larger than %d MiB", ErrTooLarge, s.o.MaxFileBytes>>20)
			}
			if cerr := tmp.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				if errors.Is(err, disk.ErrNoSpace) { // it says so already
					return ipc.FileObject{}, err
				}
				if disk.IsFull(err) {
					return ipc.FileObject{}, fmt.Errorf("%w: the disk filled up during the upload: %w", disk.ErrNoSpace, err)
				}
				return ipc.FileObject{}, uploadErr(err)
			}
		}
	}
	if tmpPath == "" {
		return ipc.FileObject{}, paramErr("file", "is required (a multipart part named \"file\")")
	}
	if purpose != ipc.FilePurposeFineTune {
		return ipc.FileObject{}, paramErr("purpose", "must be %q (the only purpose this daemon serves), not %q", ipc.FilePurposeFineTune, purpose)
	}
	filename = filepath.Base(strings.TrimSpace(filename))
	if filename == "" || filename == "." || filename == "/" {
		filename = "training.jsonl"
	}
	if len(filename) > MaxFilenameBytes {
		return ipc.FileObject{}, paramErr("file", "name is longer than %d bytes", MaxFilenameBytes)
	}
	f, err := os.Open(tmpPath)
	if err != nil {
		return ipc.FileObject{}, err
	}
	examples, err := readExamples(f, nil)
	f.Close()
	if err != nil {
		return ipc.FileObject{}, err
	}
	id := newID("file-")
	path := filepath.Join(s.o.Dir, id+".jsonl")
	if err := os.Rename(tmpPath, path); err != nil {
		return ipc.FileObject{}, err
	}
	tmpPath = ""
	rec := fileRecord{FileObject: ipc.FileObject{ID: id, Object: "file", Bytes: n, CreatedAt: time.Now().Unix(), Filename: filename,
		Purpose: purpose, Status: "processed", Examples: examples}, Path: path}
	if err := s.o.Store.Put(FilesBucket, id, rec); err != nil {
		os.Remove(path)
		return ipc.FileObject{}, err
	}
	return rec.FileObject, nil
}

// uploadErr turns a failed read of the request body into a reason.
func uploadErr(err error) error {
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		return fmt.Errorf("%w: the upload exceeds %d bytes", ErrTooLarge, maxErr.Limit)
	}
	return paramErr("file", "upload: %v", err)
}

// file returns a stored file's record.
func (s *Service) file(id string) (fileRecord, error) {
	var rec fileRecord
	if err := s.o.Store.Get(FilesBucket, id, &rec); err != nil {
		return rec, fmt.Errorf("file %q: %w", id, ErrNotFound)
	}
	return rec, nil
}

// File returns an uploaded file.
func (s *Service) File(id string) (ipc.FileObject, error) {
	rec, err := s.file(id)
	return rec.FileObject, err
}

// OpenFile opens an uploaded file's content.
func (s *Service) OpenFile(id string) (ipc.FileObject, *os.File, error) {
	rec, err := s.file(id)
	if err != nil {
		return rec.FileObject, nil, err
	}
	f, err := os.Open(rec.Path)
	return rec.FileObject, f, err
}

// Files lists the uploaded files, newest first.
func (s *Service) Files() ([]ipc.FileObject, error) {
	out := []ipc.FileObject{}
	err := s.o.Store.List(FilesBucket, func(_ string, v []byte) error {
		var rec fileRecord
		if err := json.Unmarshal(v, &rec); err != nil {
			return nil
		}
		out = append(out, rec.FileObject)
		return nil
	})
	sortNewest(out, func(f ipc.FileObject) (int64, string) { return f.CreatedAt, f.ID })
	return out, err
}

// DeleteFile removes an uploaded file. Jobs that already read it are not
// affected; a queued job naming it fails when it starts.
func (s *Service) DeleteFile(id string) error {
	rec, err := s.file(id)
	if err != nil {
		return err
	}
	if err := s.o.Store.Delete(FilesBucket, id); err != nil {
		return err
	}
	os.Remove(rec.Path)
	return nil
}
