package quant_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// realTensors are tensors of the shared llama test model of every shape
// class: attention, FFN in and out, and the output matrix.
var realTensors = []string{"blk.0.attn_q.weight", "blk.3.attn_k.weight", "blk.5.ffn_gate.weight", "blk.7.ffn_down.weight", "output.weight"}

func loadTensor(t *testing.T, f *gguf.File, name string) ([]float32, []byte, quant.Type) {
	t.Helper()
	ti, ok := f.Tensor(name)
	if !ok {
		t.Fatalf("tensor %s not found", name)
	}
	raw, err := f.TensorData(name)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, ti.Elements())
	if err := quant.Dequantize(ti.Type, raw, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v, raw, ti.Type
}

// relErr returns the RMSE of got against ref relative to ref's RMS, and
// the largest error relative to ref's largest magnitude.
func relErr(ref, got []float32) (rmse, mx float64) {
	var se, ss, me, amax float64
	for i := range ref {
		e := float64(got[i]) - float64(ref[i])
		se += e * e
		ss += float64(ref[i]) * float64(ref[i])
		me = max(me, math.Abs(e))
		amax = max(amax, math.Abs(float64(ref[i])))
	}
	return math.Sqrt(se / ss), me / amax
}

// TestRealModelFiles reads the same tensors from the F16, Q8_0 and Q4_0
// files of the shared llama model (quantized by llama.cpp's layouts from
// the same weights): the quantized ones must decode within their format's
// bound of the F16 one, re-quantizing the F16 weights must reproduce
// llama.cpp's bytes, and every format this package writes must round-trip
// the real weights within its bound.
func TestRealModelFiles(t *testing.T) {
	dir := testpath.Shared(t, "models")
	open := func(suffix string) *gguf.File {
		f, err := gguf.Open(filepath.Join(dir, "ruvllm-test-llama-19m-"+suffix+".gguf"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	f16, q8, q4 := open("f16"), open("q8_0"), open("q4_0")
	for _, name := range realTensors {
		ref, _, typ := loadTensor(t, f16, name)
		if typ != quant.F16 {
			t.Fatalf("%s is %s in the f16 file", name, typ)
		}
		for _, qf := range []*gguf.File{q8, q4} {
			got, raw, typ := loadTensor(t, qf, name)
			rmse, mx := relErr(ref, got)
			br, bm := quant.RMSEBound(typ)
			t.Logf("%s %s: relative rmse %.5f, max %.5f", name, typ, rmse, mx)
			if rmse > br || mx > bm {
				t.Errorf("%s %s: relative rmse %.5f, max %.5f against f16; bound %.5f, %.5f", name, typ, rmse, mx, br, bm)
			}
			mine := make([]byte, len(raw))
			if err := quant.Quantize(typ, mine, ref); err != nil {
				t.Fatal(err)
			}
			checkSameQuants(t, name, typ, mine, raw)
		}
		// The searches of the K-quants are slow: a slice of each tensor
		// keeps the test fast.
		if len(ref) > 1<<16 {
			ref = ref[:1<<16]
		}
		for _, typ := range quant.QuantTypes {
			b := make([]byte, len(ref)/typ.BlockSize()*typ.BlockBytes())
			if err := quant.Quantize(typ, b, ref); err != nil {
				t.Fatal(err)
			}
			got := make([]float32, len(ref))
			if err := quant.Dequantize(typ, b, got); err != nil {
				t.Fatal(err)
			}
			rmse, mx := relErr(ref, got)
			t.Logf("%s re-quantized as %s: relative rmse %.5f, max %.5f", name, typ, rmse, mx)
			if br, bm := quant.RMSEBound(typ); rmse > br || mx > bm {
				t.Errorf("%s as %s: relative rmse %.5f, max %.5f; bound %.5f, %.5f", name, typ, rmse, mx, br, bm)
			}
		}
	}
}

// checkSameQuants compares quantizing the f16 weights with the file's
// bytes. Q4_0 must match exactly: the file was made with llama.cpp's
// reference quantizer. The Q8_0 file's quantizer computed x/d in another
// precision, so values within a hair of a rounding tie (x/d = k+0.5±0.02)
// may land one level apart; the scales must still be identical and such
// values rare.
func checkSameQuants(t *testing.T, name string, typ quant.Type, mine, file []byte) {
	t.Helper()
	switch typ {
	case quant.Q4_0:
		for i := range mine {
			if mine[i] != file[i] {
				t.Errorf("%s %s: byte %d is %#02x, llama.cpp wrote %#02x", name, typ, i, mine[i], file[i])
				return
			}
		}
	case quant.Q8_0:
		const bb = 34
		differ := 0
		for b := 0; b < len(file)/bb; b++ {
			if mine[b*bb] != file[b*bb] || mine[b*bb+1] != file[b*bb+1] {
				t.Fatalf("%s %s: block %d has another scale", name, typ, b)
			}
			for i := 2; i < bb; i++ {
				d := int(int8(mine[b*bb+i])) - int(int8(file[b*bb+i]))
				if d != 0 {
					differ++
				}
				if d < -1 || d > 1 {
					t.Fatalf("%s %s: block %d value %d is %d levels off", name, typ, b, i-2, d)
				}
			}
		}
		if n := len(file) / bb * 32; differ*1000 > n {
			t.Errorf("%s %s: %d of %d values one level off", name, typ, differ, n)
		}
	}
}
