package adapters

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/internal/disk"
)

// MaxAdapterBytes bounds one adapter file (a rank-64 LoRA of a 70B model in
// f16 is about 1.6 GB).
const MaxAdapterBytes = 4 << 30

// ErrTooLarge: the adapter file is larger than MaxAdapterBytes.
var ErrTooLarge = errors.New("adapter file too large")

// staged is an adapter copied into the registry directory under a
// temporary name: the bytes that are validated, hashed and installed.
type staged struct {
	path   string // a file, or a PEFT directory
	sha256 string
	size   int64
	dir    bool
}

func (s staged) remove() {
	if s.dir {
		os.RemoveAll(s.path)
	} else if s.path != "" {
		os.Remove(s.path)
	}
}

// stage brings the adapter at src into the registry directory. A file is
// opened without blocking and must be a regular file (a FIFO, a device or
// a socket is refused, never read); a symlink's target is copied, never
// the link. With owned, src is a temporary file of the daemon's own in
// the registry directory (an upload) and is renamed, not copied. Nothing
// is read through src after staging, so what is validated and installed
// cannot change under the daemon's feet.
func (p *Pool) stage(src string, owned bool) (staged, error) {
	lst, err := os.Lstat(src)
	if err != nil {
		return staged{}, fmt.Errorf("%w: %s: %w", ErrInvalid, src, err)
	}
	st := lst
	if lst.Mode()&os.ModeSymlink != 0 {
		if st, err = os.Stat(src); err != nil {
			return staged{}, fmt.Errorf("%w: %s: broken symlink: %w", ErrInvalid, src, err)
		}
	}
	if st.IsDir() {
		return p.stageDir(src)
	}
	if !st.Mode().IsRegular() {
		return staged{}, fmt.Errorf("%w: %s is not a regular file (%v)", ErrInvalid, src, st.Mode().Type())
	}
	if owned && lst.Mode().IsRegular() && links(lst) == 1 {
		tmp, err := reserveTemp(p.o.RegistryDir)
		if err != nil {
			return staged{}, err
		}
		if err := os.Rename(src, tmp); err != nil {
			os.Remove(tmp)
			return staged{}, fmt.Errorf("stage adapter: %w", err)
		}
		s, err := hashStaged(tmp)
		if err != nil {
			os.Remove(tmp)
			return staged{}, err
		}
		return s, nil
	}
	return p.copyIn(src, p.o.RegistryDir)
}

// copyIn copies the regular file at src into a new temporary file in dir,
// hashing it on the way, within MaxAdapterBytes and the free space of dir.
func (p *Pool) copyIn(src, dir string) (staged, error) {
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return staged{}, fmt.Errorf("%w: %s: %w", ErrInvalid, src, err)
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return staged{}, fmt.Errorf("%w: %s: %w", ErrInvalid, src, err)
	}
	if !st.Mode().IsRegular() { // swapped in after the Lstat
		return staged{}, fmt.Errorf("%w: %s is not a regular file (%v)", ErrInvalid, src, st.Mode().Type())
	}
	if st.Size() > MaxAdapterBytes {
		return staged{}, fmt.Errorf("%w: %s is %d MiB; at most %d MiB are accepted", ErrTooLarge, src, st.Size()>>20, MaxAdapterBytes>>20)
	}
	if err := disk.Check(dir, st.Size()); err != nil {
		return staged{}, err
	}
	out, err := disk.CreateTemp(dir, ".stage-*")
	if err != nil {
		return staged{}, fmt.Errorf("stage adapter: %w", err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(in, MaxAdapterBytes+1))
	if err == nil && n > MaxAdapterBytes {
		err = fmt.Errorf("%w: %s grew past %d MiB while being copied", ErrTooLarge, src, MaxAdapterBytes>>20)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out.Name())
		if disk.IsFull(err) {
			return staged{}, fmt.Errorf("%w: copying %s: %w", disk.ErrNoSpace, src, err)
		}
		return staged{}, fmt.Errorf("stage adapter %s: %w", src, err)
	}
	return staged{path: out.Name(), sha256: hex.EncodeToString(h.Sum(nil)), size: n}, nil
}

// stageDir copies a PEFT directory's two files into a temporary directory
// of the registry.
func (p *Pool) stageDir(src string) (staged, error) {
	tmp, err := os.MkdirTemp(p.o.RegistryDir, ".stage-*")
	if err != nil {
		return staged{}, fmt.Errorf("stage adapter: %w", err)
	}
	s := staged{path: tmp, dir: true}
	for _, n := range []string{lora.PEFTConfig, lora.PEFTWeights} {
		f, err := p.copyIn(filepath.Join(src, n), tmp)
		if err != nil {
			s.remove()
			return staged{}, err
		}
		if err := os.Rename(f.path, filepath.Join(tmp, n)); err != nil {
			os.Remove(f.path)
			s.remove()
			return staged{}, fmt.Errorf("stage adapter: %w", err)
		}
	}
	sum, size, err := dirSHA256(tmp)
	if err != nil {
		s.remove()
		return staged{}, err
	}
	s.sha256, s.size = sum, size
	return s, nil
}

// reserveTemp creates an empty temporary file in dir for a rename to
// replace.
func reserveTemp(dir string) (string, error) {
	f, err := os.CreateTemp(dir, ".stage-*")
	if err != nil {
		return "", fmt.Errorf("stage adapter: %w", err)
	}
	f.Close()
	return f.Name(), nil
}

// links is a file's hard-link count (1 where unknown).
func links(st os.FileInfo) uint64 {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Nlink)
	}
	return 1
}

// hashStaged hashes a file already in the registry directory.
func hashStaged(path string) (staged, error) {
	f, err := os.Open(path)
	if err != nil {
		return staged{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return staged{}, err
	}
	if st.Size() > MaxAdapterBytes {
		return staged{}, fmt.Errorf("%w: %d MiB; at most %d MiB are accepted", ErrTooLarge, st.Size()>>20, MaxAdapterBytes>>20)
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return staged{}, err
	}
	return staged{path: path, sha256: hex.EncodeToString(h.Sum(nil)), size: n}, nil
}
