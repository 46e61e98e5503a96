package adapters

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/ruvllm/ruvllm/engine/lora"
)

// RejectedDir is the drop folder's subdirectory for invalid files.
const RejectedDir = "rejected"

// pending is a dropped file being watched until it is complete.
type pending struct {
	size    int64
	mod     time.Time
	stable  time.Time // since when size and mtime have not changed
	lastErr error
}

// Watch installs every adapter that appears in the drop folder — a GGUF
// LoRA file or a PEFT directory — until
// ctx ends: files already there at start, and files created, copied or
// moved in later. A file is read only once its size and modification time
// have been stable for Settle; a valid one is moved into the registry, an
// invalid one into rejected/ next to a <name>.reason.txt once it has been
// stable for RejectAfter (a stalled copy is not rejected early). Nothing is
// deleted. fsnotify events make pickup immediate; a periodic rescan covers
// events a platform drops. A drop folder New could not create is not
// watched: Watch returns nil at once (New logged why).
func (p *Pool) Watch(ctx context.Context) error {
	if p.o.DropDir == "" {
		return errors.New("adapters: no drop folder configured")
	}
	if p.noWatch != nil {
		return nil // New logged why
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch %s: %w", p.o.DropDir, err)
	}
	defer w.Close()
	if err := w.Add(p.o.DropDir); err != nil {
		return fmt.Errorf("watch %s: %w", p.o.DropDir, err)
	}
	files := map[string]*pending{}
	tick := time.NewTicker(p.o.Settle / 2)
	defer tick.Stop()
	rescan := time.NewTicker(2 * time.Second)
	defer rescan.Stop()
	p.scan(files)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Op&(fsnotify.Create|fsnotify.Write|fsnotify.Rename|fsnotify.Chmod) != 0 && candidate(ev.Name) {
				if _, seen := files[ev.Name]; !seen {
					files[ev.Name] = &pending{size: -1}
				}
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			p.log.Warn("adapter folder watch", "err", err)
		case <-rescan.C:
			p.scan(files)
		case <-tick.C:
			p.check(ctx, files)
		}
	}
}

// candidate says whether a drop-folder entry may be an adapter: regular
// names only, not hidden, not a browser's or editor's partial download.
func candidate(path string) bool {
	base := filepath.Base(path)
	if strings.HasPrefix(base, ".") || strings.HasSuffix(base, ".reason.txt") {
		return false
	}
	for _, s := range []string{".part", ".crdownload", ".download", ".tmp", "~"} {
		if strings.HasSuffix(base, s) {
			return false
		}
	}
	return true
}

// scan adds the drop folder's regular files to files.
func (p *Pool) scan(files map[string]*pending) {
	ents, err := os.ReadDir(p.o.DropDir)
	if err != nil {
		p.log.Warn("scan adapter folder", "err", err)
		return
	}
	for _, e := range ents {
		path := filepath.Join(p.o.DropDir, e.Name())
		// A symlink is a candidate too: its target is what gets copied.
		if (e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0 || e.IsDir() && e.Name() != RejectedDir) && candidate(path) {
			if _, seen := files[path]; !seen {
				files[path] = &pending{size: -1}
			}
		}
	}
}

// check installs or rejects the files that have settled.
func (p *Pool) check(ctx context.Context, files map[string]*pending) {
	now := time.Now()
	for path, f := range files {
		size, mod, ok := entryState(path)
		if !ok {
			delete(files, path) // gone (moved away) or not an adapter candidate
			continue
		}
		if size != f.size || !mod.Equal(f.mod) {
			f.size, f.mod, f.stable = size, mod, now
			continue
		}
		if now.Sub(f.stable) < p.o.Settle {
			continue
		}
		if incompletePEFT(path) {
			// A PEFT directory whose weights have not arrived is still
			// being copied or downloaded (tools write the small config
			// first and the weights under another name until they are
			// whole): wait, however long, rather than move it into
			// rejected/ under the copy's feet.
			continue
		}
		_, err := p.Install(ctx, path, "", true)
		if err == nil {
			delete(files, path)
			continue
		}
		if !errors.Is(err, ErrInvalid) {
			p.log.Error("install dropped adapter", "file", path, "err", err)
			delete(files, path)
			continue
		}
		if now.Sub(f.stable) < p.o.RejectAfter {
			f.lastErr = err
			continue // perhaps still being written: wait a little longer
		}
		p.reject(path, err)
		delete(files, path)
	}
}

// incompletePEFT reports whether path is a PEFT adapter directory whose
// config has arrived and whose weights have not (a directory without the
// config is judged, and rejected, as any other drop).
func incompletePEFT(path string) bool {
	if st, err := os.Stat(filepath.Join(path, lora.PEFTConfig)); err != nil || !st.Mode().IsRegular() {
		return false
	}
	_, err := os.Stat(filepath.Join(path, lora.PEFTWeights))
	return errors.Is(err, fs.ErrNotExist)
}

// entryState is the size and modification time of a dropped file, or of
// a dropped PEFT directory (the sum of its files' sizes, the latest time),
// so a directory still being copied keeps changing.
func entryState(path string) (int64, time.Time, bool) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, time.Time{}, false
	}
	if st.Mode().IsRegular() {
		return st.Size(), st.ModTime(), true
	}
	if !st.IsDir() || filepath.Base(path) == RejectedDir {
		return 0, time.Time{}, false
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return 0, time.Time{}, false
	}
	size, mod := int64(len(ents)), st.ModTime()
	for _, e := range ents {
		if info, err := e.Info(); err == nil {
			size += info.Size()
			if info.ModTime().After(mod) {
				mod = info.ModTime()
			}
		}
	}
	return size, mod, true
}

// reject moves an invalid dropped file into rejected/ with the reason.
func (p *Pool) reject(path string, reason error) {
	dir := filepath.Join(p.o.DropDir, RejectedDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		p.log.Error("reject adapter", "file", path, "err", err)
		return
	}
	base := filepath.Base(path)
	dst := filepath.Join(dir, base)
	for i := 1; ; i++ { // never overwrite an earlier rejected file
		if _, err := os.Lstat(dst); errors.Is(err, os.ErrNotExist) {
			break
		}
		dst = filepath.Join(dir, fmt.Sprintf("%s.%d", base, i))
	}
	if err := os.Rename(path, dst); err != nil {
		p.log.Error("reject adapter", "file", path, "err", err)
		return
	}
	msg := fmt.Sprintf("%s was not installed: %v\n", base, reason)
	if err := os.WriteFile(strings.TrimSuffix(dst, "/")+".reason.txt", []byte(msg), 0o600); err != nil {
		p.log.Error("write rejection reason", "file", dst, "err", err)
	}
	p.log.Warn("adapter rejected", "file", base, "reason", reason)
	if p.o.Events != nil {
		p.o.Events.Publish("adapter.rejected", map[string]string{"file": base, "moved_to": dst, "reason": reason.Error()})
	}
}
