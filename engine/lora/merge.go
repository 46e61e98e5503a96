package lora

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// mergeTerm is one adapter's contribution to one weight.
type mergeTerm struct {
	pair  *Pair
	scale float32 // user scale × alpha/rank
}

// Merge returns a GGUF writer for base with adapters folded into its
// weights: W' = W + Σ scale·(alpha/rank)·B·A, re-encoded in each base
// tensor's own type. Every other tensor and all metadata are copied.
// Tensors are produced while the writer writes, one row at a time, so
// base must stay open until then; ctx is checked between tensors.
func Merge(ctx context.Context, base *gguf.File, adapters []Applied) (*gguf.Writer, error) {
	terms := map[string][]mergeTerm{}
	var ids []string
	for _, ap := range adapters {
		a := ap.Adapter
		if a == nil {
			continue
		}
		if err := Validate(a, base); err != nil {
			return nil, fmt.Errorf("adapter %s: %w", a.Name, err)
		}
		for name, p := range a.Targets {
			terms[name+".weight"] = append(terms[name+".weight"], mergeTerm{pair: p, scale: ap.Scale * p.Scale})
		}
		ids = append(ids, fmt.Sprintf("%s:%s*%g", a.Name, a.Checksum, ap.Scale))
	}
	w := gguf.NewWriter()
	for _, kv := range base.KV {
		if kv.Key == "ruvllm.merged_adapters" {
			continue
		}
		if err := w.AddKV(kv.Key, kv.Value); err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
	}
	if len(ids) > 0 {
		if err := w.AddKV("ruvllm.merged_adapters", ids); err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
	}
	for _, t := range base.Tensors {
		t := t
		ts := terms[t.Name]
		if len(ts) == 0 {
			if err := w.AddTensorFunc(t.Name, t.Type, t.Shape, func(out io.Writer) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				data, err := base.TensorData(t.Name)
				if err != nil {
					return err
				}
				_, err = out.Write(data)
				return err
			}); err != nil {
				return nil, fmt.Errorf("merge: %w", err)
			}
			continue
		}
		in := int(t.Shape[0])
		probe := make([]byte, mustRowBytes(t.Type, in))
		if err := quant.Quantize(t.Type, probe, make([]float32, in)); err != nil {
			return nil, fmt.Errorf("merge %s: cannot re-encode %s: %w", t.Name, t.Type, err)
		}
		if err := w.AddTensorFunc(t.Name, t.Type, t.Shape, mergeWriter(ctx, base, t, ts)); err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
	}
	return w, nil
}

func mustRowBytes(t quant.Type, n int) int {
	rb, err := t.RowBytes(n)
	if err != nil {
		return 0
	}
	return rb
}

// mergeWriter streams one adapted weight, row by row.
func mergeWriter(ctx context.Context, base *gguf.File, t gguf.TensorInfo, ts []mergeTerm) func(io.Writer) error {
	return func(out io.Writer) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := base.TensorData(t.Name)
		if err != nil {
			return err
		}
		in, rows := int(t.Shape[0]), int(t.Shape[1])
		rb, err := t.Type.RowBytes(in)
		if err != nil {
			return err
		}
		type dense struct {
			a, b  []float32
			rank  int
			scale float32
		}
		ds := make([]dense, len(ts))
		for i, tm := range ts {
			if ds[i].a, err = tm.pair.HostA.Floats(); err != nil {
				return fmt.Errorf("%s lora_a: %w", t.Name, err)
			}
			if ds[i].b, err = tm.pair.HostB.Floats(); err != nil {
				return fmt.Errorf("%s lora_b: %w", t.Name, err)
			}
			ds[i].rank, ds[i].scale = tm.pair.Rank, tm.scale
		}
		row := make([]float32, in)
		check := make([]float32, in)
		acc := make([]float64, in)
		enc := make([]byte, rb)
		for o := 0; o < rows; o++ {
			if err := quant.Dequantize(t.Type, data[o*rb:(o+1)*rb], row); err != nil {
				return err
			}
			for j, v := range row {
				acc[j] = float64(v)
			}
			for _, d := range ds {
				for r := 0; r < d.rank; r++ {
					c := float64(d.scale) * float64(d.b[o*d.rank+r])
					if c == 0 {
						continue
					}
					arow := d.a[r*in : (r+1)*in]
					for j, v := range arow {
						acc[j] += c * float64(v)
					}
				}
			}
			for j, v := range acc {
				row[j] = float32(v)
			}
			if err := quant.Quantize(t.Type, enc, row); err != nil {
				return err
			}
			// A merged weight past float32, or past what the type's
			// scales hold (an F16 block scale ends near 65504 times the
			// largest quant), was written as ±Inf or NaN: a model that
			// answered every request with nothing.
			if err := quant.Dequantize(t.Type, enc, check); err != nil {
				return err
			}
			for j, v := range check {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					return fmt.Errorf("merge %s: row %d column %d: the merged weight %g does not fit %s (the adapters' deltas are too large)",
						t.Name, o, j, acc[j], t.Type)
				}
			}
			if _, err := out.Write(enc); err != nil {
				return err
			}
		}
		return nil
	}
}

// Spec names an adapter file (or PEFT directory) and its scale, as written
// on the command line: "PATH" or "PATH:SCALE".
type Spec struct {
	Path  string
	Scale float32
}

// ParseSpec parses "PATH[:SCALE]"; a suffix that is not a number is part
// of the path.
func ParseSpec(s string) (Spec, error) {
	if i := strings.LastIndexByte(s, ':'); i > 0 {
		if v, err := strconv.ParseFloat(s[i+1:], 32); err == nil {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return Spec{}, fmt.Errorf("adapter %q: bad scale", s)
			}
			return Spec{Path: s[:i], Scale: float32(v)}, nil
		}
	}
	if s == "" {
		return Spec{}, fmt.Errorf("empty adapter path")
	}
	return Spec{Path: s, Scale: 1}, nil
}

// MergeFile merges the adapters into the base model at basePath and writes
// the result to out atomically.
// out must be another file than the base and the adapters: the rename
// would replace the base model (or an adapter) with the merged one.
func MergeFile(ctx context.Context, basePath string, specs []Spec, out string) error {
	if ost, err := os.Stat(out); err == nil {
		if st, err := os.Stat(basePath); err == nil && os.SameFile(ost, st) {
			return fmt.Errorf("merge: the output %s is the base model: write the merged model to another file", out)
		}
		for _, s := range specs {
			if st, err := os.Stat(s.Path); err == nil && os.SameFile(ost, st) {
				return fmt.Errorf("merge: the output %s is the adapter %s: write the merged model to another file", out, s.Path)
			}
		}
	}
	base, err := gguf.Open(basePath)
	if err != nil {
		return err
	}
	defer base.Close()
	var as []Applied
	for _, s := range specs {
		a, err := Load(s.Path, base, nil)
		if err != nil {
			return err
		}
		as = append(as, Applied{Adapter: a, Scale: s.Scale})
	}
	w, err := Merge(ctx, base, as)
	if err != nil {
		return err
	}
	return w.WriteFile(out)
}
