package quantize

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// Imatrix is an importance matrix: for each weight tensor, the mean
// squared activation each of its input columns saw while llama-imatrix
// ran the model over some text (per expert for 3-D tensors, the experts'
// columns one after another). The quantizers weight their errors with it.
type Imatrix struct {
	Entries  map[string][]float32
	Datasets []string // the text files it was computed on
	Chunks   int      // chunks of text processed
}

// ErrImatrix is wrapped by every error about a malformed imatrix file.
var ErrImatrix = errors.New("malformed imatrix")

// maxImatrixValues bounds the values of one entry (a row length times
// the experts) and of the whole file, so that a damaged file cannot make
// the reader allocate without limit.
const (
	maxImatrixValues = 1 << 28
	maxImatrixNames  = 1 << 20
)

// ReadImatrix reads an importance matrix file in either of llama.cpp's
// formats: GGUF (what llama-imatrix writes by default: tensors
// <name>.in_sum2 and <name>.counts and imatrix.* metadata) or the legacy
// .dat (--output-format dat). The values are normalised as llama-quantize
// does: the GGUF sums divided by each expert's count, the legacy ones by
// their number of calls.
func ReadImatrix(path string) (*Imatrix, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read imatrix: %w", err)
	}
	im, err := ParseImatrix(b)
	if err != nil {
		return nil, fmt.Errorf("imatrix %s: %w", path, err)
	}
	return im, nil
}

// ParseImatrix parses an importance matrix held in memory (see
// ReadImatrix).
func ParseImatrix(b []byte) (*Imatrix, error) {
	var (
		im  *Imatrix
		err error
	)
	if len(b) >= 4 && string(b[:4]) == "GGUF" {
		f, perr := gguf.Parse(b)
		if perr != nil {
			return nil, fmt.Errorf("%w: %w", ErrImatrix, perr)
		}
		im, err = imatrixFromGGUF(f)
	} else {
		im, err = parseLegacyImatrix(b)
	}
	if err != nil {
		return nil, err
	}
	if err := im.checkValues(); err != nil {
		return nil, err
	}
	return im, nil
}

// checkValues refuses importance values that are not finite or are
// negative (they are means of squares): the weighted quantizers turned
// them into NaN block scales, a model that answered every request with
// nothing.
func (im *Imatrix) checkValues() error {
	for _, name := range slices.Sorted(maps.Keys(im.Entries)) {
		for i, v := range im.Entries[name] {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || v < 0 {
				return fmt.Errorf("%w: %s value %d is %g: importance values are finite and not negative", ErrImatrix, name, i, v)
			}
		}
	}
	return nil
}

func imatrixFromGGUF(f *gguf.File) (*Imatrix, error) {
	im := &Imatrix{Entries: map[string][]float32{}}
	ds, hasDS := f.Strings("imatrix.datasets")
	chunks, hasChunks := f.Uint("imatrix.chunk_count")
	_, hasSize := f.Uint("imatrix.chunk_size")
	if !(hasDS && hasChunks && hasSize) {
		return nil, fmt.Errorf("%w: missing imatrix metadata (imatrix.datasets, imatrix.chunk_count, imatrix.chunk_size)", ErrImatrix)
	}
	im.Datasets, im.Chunks = ds, int(min(chunks, math.MaxInt32))
	type pair struct{ sums, counts *gguf.TensorInfo }
	pairs := map[string]*pair{}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if name, ok := strings.CutSuffix(t.Name, ".in_sum2"); ok {
			p := pairs[name]
			if p == nil {
				p = &pair{}
				pairs[name] = p
			}
			p.sums = t
		} else if name, ok := strings.CutSuffix(t.Name, ".counts"); ok {
			p := pairs[name]
			if p == nil {
				p = &pair{}
				pairs[name] = p
			}
			p.counts = t
		}
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("%w: no entries", ErrImatrix)
	}
	total := uint64(0)
	for name, p := range pairs {
		if p.sums == nil || p.counts == nil {
			return nil, fmt.Errorf("%w: mismatched sums and counts for %s", ErrImatrix, name)
		}
		if p.sums.Type != quant.F32 || p.counts.Type != quant.F32 {
			return nil, fmt.Errorf("%w: sums and counts for %s must be F32", ErrImatrix, name)
		}
		nval, ncounts := p.sums.Elements(), p.counts.Elements()
		total += nval
		if nval == 0 || ncounts == 0 || nval%ncounts != 0 || nval > maxImatrixValues || total > maxImatrixValues {
			return nil, fmt.Errorf("%w: %s has %d sums for %d counts", ErrImatrix, name, nval, ncounts)
		}
		sums, err := f.TensorData(p.sums.Name)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrImatrix, err)
		}
		counts, err := f.TensorData(p.counts.Name)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrImatrix, err)
		}
		ne0 := nval / ncounts
		e := make([]float32, nval)
		for j := uint64(0); j < ncounts; j++ {
			// A count is a number of calls: one that is NaN or infinite is
			// a damaged file. An infinite count made every value 0, and the
			// weighted quantizers wrote such tensors as zeros: a model of
			// noise, without a word.
			if raw := float64(f32le(counts[4*j:])); math.IsNaN(raw) || math.IsInf(raw, 0) {
				return nil, fmt.Errorf("%w: %s count %d is %g: counts are finite", ErrImatrix, name, j, raw)
			}
			// llama.cpp rounds the count to an integer, then divides by it
			// as a float
			c := float32(math.Round(float64(f32le(counts[4*j:]))))
			for i := uint64(0); i < ne0; i++ {
				k := j*ne0 + i
				if c > 0 {
					e[k] = f32le(sums[4*k:]) / c
				} else {
					e[k] = 1
				}
			}
		}
		im.Entries[name] = e
	}
	return im, nil
}

func f32le(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }

// parseLegacyImatrix reads the .dat format: int32 entry count; per entry
// int32 name length, the name, int32 calls, int32 value count and the
// float32 values (sums times calls... divided here by the calls); then
// optionally int32 chunks and int32 length plus the dataset name.
func parseLegacyImatrix(b []byte) (*Imatrix, error) {
	r := bytes.NewReader(b)
	i32 := func(what string) (int32, error) {
		var v int32
		if err := binary.Read(r, binary.LittleEndian, &v); err != nil {
			return 0, fmt.Errorf("%w: reading %s: %w", ErrImatrix, what, err)
		}
		return v, nil
	}
	n, err := i32("the entry count")
	if err != nil {
		return nil, err
	}
	if n < 1 || n > maxImatrixNames {
		return nil, fmt.Errorf("%w: %d entries", ErrImatrix, n)
	}
	im := &Imatrix{Entries: map[string][]float32{}}
	total := 0
	for i := 0; i < int(n); i++ {
		l, err := i32("a name length")
		if err != nil {
			return nil, err
		}
		if l < 0 || int(l) > r.Len() || l > 1<<16 {
			return nil, fmt.Errorf("%w: entry %d: name of %d bytes", ErrImatrix, i, l)
		}
		name := make([]byte, l)
		if _, err := r.Read(name); err != nil && l > 0 {
			return nil, fmt.Errorf("%w: entry %d: %w", ErrImatrix, i, err)
		}
		ncall, err := i32("a call count")
		if err != nil {
			return nil, err
		}
		nval, err := i32("a value count")
		if err != nil {
			return nil, err
		}
		total += int(nval)
		if nval < 1 || int(nval) > r.Len()/4 || total > maxImatrixValues {
			return nil, fmt.Errorf("%w: entry %q: %d values", ErrImatrix, name, nval)
		}
		e := make([]float32, nval)
		if err := binary.Read(r, binary.LittleEndian, e); err != nil {
			return nil, fmt.Errorf("%w: entry %q: %w", ErrImatrix, name, err)
		}
		if ncall > 0 {
			for k := range e {
				e[k] /= float32(ncall)
			}
		}
		// a name's null byte ends it, as llama.cpp reads it into a C string
		s := string(name)
		if z := strings.IndexByte(s, 0); z >= 0 {
			s = s[:z]
		}
		im.Entries[s] = e
	}
	if r.Len() >= 4 {
		chunks, _ := i32("the chunk count")
		im.Chunks = int(chunks)
		if l, err := i32("the dataset length"); err == nil && l > 0 && int(l) <= r.Len() {
			ds := make([]byte, l)
			r.Read(ds)
			s := string(ds)
			if z := strings.IndexByte(s, 0); z >= 0 {
				s = s[:z]
			}
			im.Datasets = append(im.Datasets, s)
		}
	}
	return im, nil
}
