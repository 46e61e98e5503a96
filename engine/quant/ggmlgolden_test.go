package quant

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Golden results of llama.cpp's own routines (testdata/ggml_golden.json),
// recorded once with bench/iquant/oracle.sh (RUVLLM_UPDATE_GOLDEN=1) from
// the libggml of a llama.cpp build: for fixed pseudo-random inputs, the
// SHA-256 of ggml's dequantized values and dot products of every i-quant,
// and of ggml_quantize_chunk's bytes (llama-quantize's quantizers) with
// and without an importance matrix for every type QuantizeRows encodes.
// TestGGMLGolden checks the Go code against them without llama.cpp.

const ggmlGoldenFile = "testdata/ggml_golden.json"

// splitmix is a tiny deterministic generator (SplitMix64) so the inputs
// do not depend on math/rand's algorithms.
type splitmix uint64

func (s *splitmix) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// float returns a value in [-1, 1) shaped to have a heavier tail.
func (s *splitmix) float() float32 {
	u := float64(s.next()>>11)/(1<<53)*2 - 1
	return float32(u * u * u * 4)
}

// goldenInputs returns, for typ, nb random blocks (finite scales), three
// activation rows of nb·block elements and a row of nb·256 values with
// its importance weights, all from seed.
type goldenInput struct {
	blocks []byte
	acts   [][]float32
	src    []float32
	im     []float32
	n      int // elements of blocks and acts
	qn     int // elements per row of src (2 rows)
}

func goldenInputs(typ Type, seed uint64) goldenInput {
	s := splitmix(seed)
	var in goldenInput
	nb := 5
	in.n = nb * typ.BlockSize()
	bb := typ.BlockBytes()
	in.blocks = make([]byte, nb*bb)
	for i := range in.blocks {
		in.blocks[i] = byte(s.next())
	}
	for i := 0; i < nb; i++ {
		x := in.blocks[i*bb : (i+1)*bb]
		h := FP32ToFP16(s.float() * 0.01)
		if typ == IQ1_M {
			for w := 0; w < 4; w++ {
				x[48+2*w+1] = x[48+2*w+1]&0x0f | byte(h>>(4*w))<<4
			}
		} else {
			le.PutUint16(x, h)
		}
	}
	in.acts = make([][]float32, 3)
	for k := range in.acts {
		in.acts[k] = make([]float32, in.n)
		for i := range in.acts[k] {
			in.acts[k][i] = s.float() * float32(k+1)
		}
	}
	in.qn = 512
	in.src = make([]float32, 2*in.qn)
	for i := range in.src {
		in.src[i] = s.float() * 0.1
	}
	clear(in.src[32:64]) // a zero block
	for i := 64; i < 96; i++ {
		in.src[i] *= 1e-20 // a block of tiny values
	}
	in.im = make([]float32, in.qn)
	for i := range in.im {
		in.im[i] = float32(s.next()>>40) / (1 << 20)
	}
	return in
}

// goldenEntry holds the digests of one type.
type goldenEntry struct {
	Dequant  string `json:"dequant,omitempty"`
	Dot      string `json:"dot,omitempty"`
	Quant    string `json:"quant,omitempty"`
	QuantIm  string `json:"quant_imatrix,omitempty"`
	Repacked string `json:"repacked,omitempty"`
}

func sha(parts ...any) string {
	h := sha256.New()
	for _, p := range parts {
		binary.Write(h, binary.LittleEndian, p)
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

func goldenSeed(typ Type) uint64 { return 0x5eed0000 + uint64(typ) }

// goldenQuantTypes are the types whose file quantizers are pinned.
var goldenQuantTypes = []Type{F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M}

// computeGolden computes the digests of typ with the Go code (oracle nil)
// or with ggml.
func computeGolden(t *testing.T, typ Type, o *ggmlOracle) goldenEntry {
	t.Helper()
	in := goldenInputs(typ, goldenSeed(typ))
	var e goldenEntry
	if slices.Contains(iqTypes, typ) {
		deq := make([]float32, in.n)
		dots := make([]float32, len(in.acts))
		if o != nil {
			var err error
			if deq, err = o.dequantize(typ, in.blocks, in.n); err != nil {
				t.Fatal(err)
			}
			if dots, err = o.dot(typ, in.blocks, in.n, in.acts); err != nil {
				t.Fatal(err)
			}
		} else {
			if err := Dequantize(typ, in.blocks, deq); err != nil {
				t.Fatal(err)
			}
			vt := VecDotType(typ)
			act, _ := QuantizeRowFor(vt)
			ab := make([]byte, must(vt.RowBytes(in.n)))
			for k, a := range in.acts {
				act(ab, a)
				dots[k] = VecDot(typ, in.n, in.blocks, ab)
			}
		}
		e.Dequant, e.Dot = sha(deq), sha(dots)
	}
	if typ == IQ4_NL {
		// the repacked order: 8 weight rows of the blocks' first 4
		const rows = 8
		nb := 4
		w := make([]byte, rows*nb*iq4_NLBytes)
		for i := 0; i < rows; i++ {
			copy(w[i*nb*iq4_NLBytes:], in.blocks[(i%2)*iq4_NLBytes:(i%2+nb)*iq4_NLBytes])
			w[i*nb*iq4_NLBytes+5] ^= byte(i)
		}
		n := nb * QK
		out := make([]float32, rows)
		if o != nil {
			var err error
			if out, err = o.repacked(typ, w, n, rows, in.acts[0][:n]); err != nil {
				t.Fatal(err)
			}
		} else {
			ab := make([]byte, must(Q8_0.RowBytes(n)))
			quantizeActQ8_0(ab, in.acts[0][:n])
			for i := range out {
				out[i] = DotIQ4_NLInterleaved(n, w[i*nb*iq4_NLBytes:], ab)
			}
		}
		e.Repacked = sha(out)
	}
	if slices.Contains(goldenQuantTypes, typ) {
		for _, im := range [][]float32{nil, in.im} {
			if _, needs := CanQuantizeFile(typ); needs && im == nil {
				continue
			}
			var q []byte
			if o != nil {
				var err error
				if q, err = o.quantize(typ, in.src, 2, in.qn, im); err != nil {
					t.Fatal(err)
				}
			} else {
				q = make([]byte, 2*must(typ.RowBytes(in.qn)))
				if err := QuantizeRows(typ, q, in.src, 2, in.qn, im); err != nil {
					t.Fatal(err)
				}
			}
			if im == nil {
				e.Quant = sha(q)
			} else {
				e.QuantIm = sha(q)
			}
		}
	}
	return e
}

func goldenTypes() []Type {
	ts := append(slices.Clone(goldenQuantTypes), iqTypes...)
	slices.Sort(ts)
	return slices.Compact(ts)
}

// TestGGMLGolden checks the i-quants' dequantizers and dot products and
// the file quantizers against the digests of llama.cpp's results.
func TestGGMLGolden(t *testing.T) {
	raw, err := os.ReadFile(ggmlGoldenFile)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]goldenEntry
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	forEachISA(t, func(t *testing.T) {
		for _, typ := range goldenTypes() {
			w, ok := want[typ.String()]
			if !ok {
				t.Errorf("%s: no golden entry", typ)
				continue
			}
			if got := computeGolden(t, typ, nil); got != w {
				t.Errorf("%s: got %+v, llama.cpp %+v", typ, got, w)
			}
		}
	})
}

// TestGGMLOracleWriteGolden records testdata/ggml_golden.json from the
// oracle when RUVLLM_UPDATE_GOLDEN is set.
func TestGGMLOracleWriteGolden(t *testing.T) {
	if os.Getenv("RUVLLM_UPDATE_GOLDEN") == "" {
		t.Skip("RUVLLM_UPDATE_GOLDEN is not set")
	}
	o := startOracle(t)
	out := map[string]goldenEntry{}
	for _, typ := range goldenTypes() {
		out[typ.String()] = computeGolden(t, typ, o)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(ggmlGoldenFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ggmlGoldenFile, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
