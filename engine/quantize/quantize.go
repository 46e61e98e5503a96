package quantize

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/mapfault"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// Options configures a conversion.
type Options struct {
	// Type is the file type to make.
	Type FileType
	// Imatrix, if not nil, weights the quantizers' errors (and changes some
	// of the rules, as in llama.cpp). ImatrixPath is recorded in the output
	// as quantize.imatrix.file, as llama-quantize records its argument.
	Imatrix     *Imatrix
	ImatrixPath string
	// Pure gives every quantizable tensor the file type's default type (no
	// mix rules; the shape fallbacks still apply), as llama-quantize --pure.
	Pure bool
	// AllowRequantize accepts an input that is already quantized: its
	// tensors are dequantized to float32 and quantized again, as
	// llama-quantize --allow-requantize does. The result carries the
	// errors of both types, so it is worse than quantizing the original
	// F16/BF16/F32 weights; its use is a smaller copy of a model whose
	// original is not at hand, such as a draft model for speculation.
	AllowRequantize bool
	// Threads quantizes rows in parallel (0: all cores); the output does
	// not depend on it.
	Threads int
	// Progress, if set, is called as tensors are converted with the
	// weights (elements) done so far and the total, and the name of the
	// tensor being written.
	Progress func(done, total int64, tensor string)
	// Logger receives one line per tensor at debug level and the
	// fallbacks at info level; nil discards them.
	Logger *slog.Logger
}

// TensorPlan is what happens to one tensor.
type TensorPlan struct {
	Name     string
	Shape    []uint64 // GGML order
	From, To quant.Type
	// Fallback is set when the mix's type did not fit the row length and
	// llama.cpp's fallback type was taken.
	Fallback bool
	// Imatrix holds the tensor's importance weights (Shape[0] per expert),
	// nil without.
	Imatrix []float32
}

// Elements is the number of weights of the tensor.
func (p TensorPlan) Elements() int64 {
	n := int64(1)
	for _, d := range p.Shape {
		n *= int64(d)
	}
	return n
}

// ErrUnsupported is wrapped by errors for inputs or types this package
// cannot convert.
var ErrUnsupported = errors.New("not supported")

// ErrRequantize is wrapped by the error for a quantized input without
// Options.AllowRequantize (it wraps ErrUnsupported).
var ErrRequantize = fmt.Errorf("requantizing a quantized model is %w", ErrUnsupported)

// Plan decides the output type of every tensor of in, in llama-quantize's
// tensor order (by layer, then name), or returns a clear error: a tensor
// type that needs an importance matrix when there is none, a type this
// package cannot encode, an input that is already quantized (unless
// AllowRequantize), an imatrix entry of the wrong size.
func Plan(in *gguf.File, o Options) ([]TensorPlan, error) {
	m, err := modelParams(in)
	if err != nil {
		return nil, err
	}
	tensors := slices.Clone(in.Tensors)
	slices.SortStableFunc(tensors, func(a, b gguf.TensorInfo) int {
		la, lb := layerOf(a.Name), layerOf(b.Name)
		if la != lb {
			return la - lb
		}
		return strings.Compare(a.Name, b.Name)
	})
	m.tiedEmbeddings = true
	for _, t := range tensors {
		c := tensorCategory(t.Name)
		if c.attnVLike() {
			m.attnV++
		}
		if c == catOutput {
			m.tiedEmbeddings = false
		}
	}
	r := &rules{m: m, ft: o.Type.ID, hasImatrix: o.Imatrix != nil}
	def := o.Type.Default
	plans := make([]TensorPlan, 0, len(tensors))
	converted, matched := false, false // tensors converted, of them with an imatrix entry
	for _, t := range tensors {
		p := TensorPlan{Name: t.Name, Shape: t.Shape, From: t.Type, To: t.Type}
		allowed := allowsQuantization(t.Name, t.Shape)
		if allowed {
			p.To = def
			if def.BlockSize() > 1 {
				if !o.Pure {
					if p.To, err = r.typeFor(def, t.Name, t.Shape, tensorCategory(t.Name)); err != nil {
						return nil, err
					}
				}
				p.To, p.Fallback = fallback(p.To, int(t.Shape[0]))
			}
		}
		req := allowed && requiresImatrix(t.Name, p.To, o.Type.ID)
		if o.Imatrix == nil && req {
			return nil, fmt.Errorf("%s: type %s of tensor %s needs an importance matrix (--imatrix, from llama-imatrix)", o.Type.Name, p.To, t.Name)
		}
		if p.To != p.From {
			if p.From != quant.F32 && p.From != quant.F16 && p.From != quant.BF16 && !o.AllowRequantize {
				return nil, fmt.Errorf("tensor %s is %s: %w (the input should be F32, F16 or BF16)", t.Name, p.From, ErrRequantize)
			}
			if ok, _ := quant.CanQuantizeFile(p.To); !ok {
				return nil, fmt.Errorf("%s: tensor %s would be %s, which ruvllm cannot encode yet (%w; llama-quantize can)", o.Type.Name, t.Name, p.To, ErrUnsupported)
			}
			if o.Imatrix != nil {
				if e, ok := o.Imatrix.Entries[t.Name]; ok {
					experts := uint64(1)
					if len(t.Shape) > 2 {
						experts = t.Shape[2]
					}
					switch {
					case uint64(len(e)) == t.Shape[0]*experts:
						p.Imatrix = e
					case tensorCategory(t.Name) == catTokenEmbd:
						// llama.cpp ignores a token embedding's mismatch
					default:
						return nil, fmt.Errorf("imatrix size %d is different from tensor size %d for %s", len(e), t.Shape[0]*experts, t.Name)
					}
				}
				if p.Imatrix == nil && req {
					return nil, fmt.Errorf("missing importance matrix for tensor %s in a very low-bit quantization (%s)", t.Name, p.To)
				}
				converted, matched = true, matched || p.Imatrix != nil
			}
		}
		plans = append(plans, p)
	}
	// An importance matrix of another model weighted nothing, yet it
	// changed the mix (the rules differ with one) and was recorded in the
	// output's quantize.imatrix.* keys, without a word.
	if converted && !matched {
		return nil, fmt.Errorf("the importance matrix has no entry for any tensor of this model (its %d entries, e.g. %q): is it another model's?", len(o.Imatrix.Entries), firstKey(o.Imatrix.Entries))
	}
	return plans, nil
}

// firstKey returns the least key of m ("" if m is empty), for errors that
// show an example.
func firstKey(m map[string][]float32) string {
	keys := slices.Sorted(maps.Keys(m))
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

// layerOf is the layer number of a blk.N. tensor, -1 for others (which
// llama.cpp's loader sorts first).
func layerOf(name string) int {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return -1
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 || i >= len(rest) || rest[i] != '.' {
		return -1
	}
	n, err := strconv.Atoi(rest[:i])
	if err != nil {
		return -1
	}
	return n
}

// modelParams reads the hyperparameters the rules need.
func modelParams(in *gguf.File) (*model, error) {
	arch := in.Architecture()
	if arch == "" {
		return nil, fmt.Errorf("no general.architecture: not a model file")
	}
	m := &model{arch: arch}
	u := func(suffix string) int {
		if v, ok := in.ArchUint(suffix); ok && v < 1<<31 {
			return int(v)
		}
		// per-layer arrays: the first layer's value
		if v, ok := in.Get(arch + "." + suffix); ok && v.IsArray() && v.Len() > 0 {
			if e, ok := v.Index(0); ok {
				if x, ok := e.Uint(); ok && x < 1<<31 {
					return int(x)
				}
			}
		}
		return 0
	}
	m.layers = u("block_count")
	m.heads = u("attention.head_count")
	m.headsKV = u("attention.head_count_kv")
	if _, ok := in.Get(arch + ".attention.head_count_kv"); !ok {
		m.headsKV = m.heads
	}
	m.experts = u("expert_count")
	// llama.cpp's LLM_TYPE_70B: 80-layer llama models with grouped KV
	// heads, and 80-layer qwen2.
	m.is70B = m.layers == 80 && (arch == "llama" && m.heads != m.headsKV || arch == "qwen2")
	return m, nil
}

// keys llama-quantize sets or removes rather than copies.
const (
	keyQuantVersion = "general.quantization_version"
	keyFileType     = "general.file_type"
)

var droppedKeys = map[string]bool{
	keyQuantVersion: true, keyFileType: true,
	"split.no": true, "split.count": true, "split.tensors.count": true,
}

// Stats summarises a conversion.
type Stats struct {
	Tensors, Quantized, Fallbacks int
	BytesIn, BytesOut             int64
}

// File converts in to the file type of o and writes the result to out
// (atomically). The output is llama-quantize's: the input's metadata in
// order, general.quantization_version and general.file_type at the end
// (then the quantize.imatrix.* keys with an imatrix), the tensors in its
// order, every tensor's data padded to the alignment.
func File(ctx context.Context, in *gguf.File, out string, o Options) (Stats, error) {
	w, st, err := Writer(ctx, in, o)
	if err != nil {
		return st, err
	}
	if err := w.WriteFile(out); err != nil {
		return st, err
	}
	return st, nil
}

// Writer plans the conversion of in and returns a gguf.Writer that
// converts the tensors as it writes them (WriteTo or WriteFile), and the
// conversion's sizes.
func Writer(ctx context.Context, in *gguf.File, o Options) (*gguf.Writer, Stats, error) {
	var st Stats
	plans, err := Plan(in, o)
	if err != nil {
		return nil, st, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := gguf.NewWriter()
	w.PadLast()
	for _, kv := range in.KV {
		if droppedKeys[kv.Key] {
			continue
		}
		if err := w.AddKV(kv.Key, kv.Value); err != nil {
			return nil, st, err
		}
	}
	if err := w.AddKV(keyQuantVersion, uint32(2)); err != nil {
		return nil, st, err
	}
	if err := w.AddKV(keyFileType, o.Type.ID); err != nil {
		return nil, st, err
	}
	if im := o.Imatrix; im != nil {
		// llama-quantize passes these as overrides: strings cut to 127 bytes
		if err := w.AddKV("quantize.imatrix.file", cut127(o.ImatrixPath)); err != nil {
			return nil, st, err
		}
		if len(im.Datasets) > 0 {
			if err := w.AddKV("quantize.imatrix.dataset", cut127(im.Datasets[0])); err != nil {
				return nil, st, err
			}
		}
		if err := w.AddKV("quantize.imatrix.entries_count", uint32(len(im.Entries))); err != nil {
			return nil, st, err
		}
		if im.Chunks > 0 {
			if err := w.AddKV("quantize.imatrix.chunks_count", uint32(im.Chunks)); err != nil {
				return nil, st, err
			}
		}
	}
	var total int64
	for _, p := range plans {
		total += p.Elements()
	}
	threads := o.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	done := new(int64)
	for _, p := range plans {
		data, err := in.TensorData(p.Name)
		if err != nil {
			return nil, st, err
		}
		st.Tensors++
		st.BytesIn += int64(len(data))
		size, err := gguf.TensorSize(p.To, p.Shape)
		if err != nil {
			return nil, st, fmt.Errorf("tensor %s: %w", p.Name, err)
		}
		st.BytesOut += size
		if p.Fallback {
			st.Fallbacks++
			log.Info("fallback type", "tensor", p.Name, "cols", p.Shape[0], "type", p.To)
		}
		write := copyTensor(ctx, p, data, o.Progress, done, total)
		if p.To != p.From {
			st.Quantized++
			write = convertTensor(ctx, p, data, threads, o.Progress, done, total)
		}
		log.Debug("tensor", "name", p.Name, "shape", p.Shape, "from", p.From, "to", p.To)
		if err := w.AddTensorFunc(p.Name, p.To, p.Shape, write); err != nil {
			return nil, st, err
		}
	}
	return w, st, nil
}

func cut127(s string) string {
	if len(s) > 127 {
		return s[:127]
	}
	return s
}

// copyTensor writes a tensor that keeps its type.
func copyTensor(ctx context.Context, p TensorPlan, data []byte, progress func(int64, int64, string), done *int64, total int64) func(io.Writer) error {
	return func(out io.Writer) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := out.Write(data); err != nil {
			return err
		}
		*done += p.Elements()
		if progress != nil {
			progress(*done, total, p.Name)
		}
		return nil
	}
}

// slabElements bounds the float32 values converted at once (64 MiB).
const slabElements = 16 << 20

// convertTensor writes a tensor converted from its F32/F16/BF16 data to
// p.To, in slabs of whole rows quantized by threads goroutines.
func convertTensor(ctx context.Context, p TensorPlan, data []byte, threads int, progress func(int64, int64, string), done *int64, total int64) func(io.Writer) error {
	return func(out io.Writer) (err error) {
		// data is the source file's mapping: a file truncated under it
		// is this conversion's error (a daemon converts drafts and
		// created models).
		defer mapfault.Catch(&err, mapfault.Arm())
		cols := int(p.Shape[0])
		rows := int(p.Elements()) / max(cols, 1)
		rowsPerExpert := rows
		if len(p.Shape) > 2 {
			rowsPerExpert = int(p.Shape[1])
		}
		srcRB, err := p.From.RowBytes(cols)
		if err != nil {
			return err
		}
		dstRB, err := p.To.RowBytes(cols)
		if err != nil {
			return err
		}
		slab := max(1, min(rows, slabElements/max(cols, 1)))
		f := make([]float32, slab*cols)
		q := make([]byte, slab*dstRB)
		for r0 := 0; r0 < rows; r0 += slab {
			if err := ctx.Err(); err != nil {
				return err
			}
			n := min(slab, rows-r0)
			x := f[:n*cols]
			if err := quant.Dequantize(p.From, data[r0*srcRB:(r0+n)*srcRB], x); err != nil {
				return fmt.Errorf("tensor %s: %w", p.Name, err)
			}
			if i := nonFinite(x); i >= 0 {
				return fmt.Errorf("tensor %s: row %d column %d is %g: the input has a value no quantizer can encode", p.Name, r0+i/cols, i%cols, x[i])
			}
			if err := quantizeRows(p, q[:n*dstRB], x, r0, n, cols, rowsPerExpert, dstRB, threads); err != nil {
				return err
			}
			// Finite values past what the type holds (an F16 value or
			// block scale ends near 65504) were written as ±Inf: a model
			// that answered every request with nothing.
			if err := quant.Dequantize(p.To, q[:n*dstRB], x); err != nil {
				return fmt.Errorf("tensor %s: %w", p.Name, err)
			}
			if i := nonFinite(x); i >= 0 {
				return fmt.Errorf("tensor %s: row %d column %d does not fit %s: the input's values are too large for it", p.Name, r0+i/cols, i%cols, p.To)
			}
			if _, err := out.Write(q[:n*dstRB]); err != nil {
				return err
			}
			*done += int64(n * cols)
			if progress != nil {
				progress(*done, total, p.Name)
			}
		}
		return nil
	}
}

// nonFinite returns the index of the first NaN or infinity in x, or -1.
func nonFinite(x []float32) int {
	for i, v := range x {
		if v-v != 0 { // NaN and ±Inf
			return i
		}
	}
	return -1
}

// quantizeRows encodes n rows (the first being row r0 of the tensor) on
// threads goroutines in chunks of rows; each row takes the importance
// weights of its expert.
func quantizeRows(p TensorPlan, dst []byte, x []float32, r0, n, cols, rowsPerExpert, dstRB, threads int) error {
	chunk := max(1, (32*512+cols-1)/cols)
	var wg sync.WaitGroup
	errs := make(chan error, threads)
	next := make(chan int, (n+chunk-1)/chunk)
	for c := 0; c < n; c += chunk {
		next <- c
	}
	close(next)
	for range min(threads, (n+chunk-1)/chunk) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				for r := c; r < min(c+chunk, n); {
					g := r0 + r
					// rows of one expert at a time
					k := min(min(c+chunk, n)-r, rowsPerExpert-g%rowsPerExpert)
					var im []float32
					if p.Imatrix != nil {
						e := g / rowsPerExpert
						im = p.Imatrix[e*cols : (e+1)*cols]
					}
					if err := quant.QuantizeRows(p.To, dst[r*dstRB:(r+k)*dstRB], x[r*cols:(r+k)*cols], k, cols, im); err != nil {
						errs <- fmt.Errorf("tensor %s: %w", p.Name, err)
						return
					}
					r += k
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
