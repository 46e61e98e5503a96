package quant

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
)

// ggmlOracle talks to bench/iquant/oracle.cpp, a program linked against a
// llama.cpp build's libggml, over its stdin and stdout. The tests that use
// it run only when RUVLLM_GGML_ORACLE names the program
// (bench/iquant/oracle.sh builds it and sets the variable), never in make
// test.
type ggmlOracle struct {
	cmd *exec.Cmd
	w   *bufio.Writer
	r   *bufio.Reader
}

func startOracle(t testing.TB) *ggmlOracle {
	t.Helper()
	path := os.Getenv("RUVLLM_GGML_ORACLE")
	if path == "" {
		t.Skip("RUVLLM_GGML_ORACLE is not set (bench/iquant/oracle.sh builds the oracle and runs these tests)")
	}
	cmd := exec.Command(path)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o := &ggmlOracle{cmd: cmd, w: bufio.NewWriter(in), r: bufio.NewReader(out)}
	t.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	return o
}

func (o *ggmlOracle) request(cmd byte, typ Type, n, rows int, flags uint32, payload ...any) error {
	h := [5]uint32{uint32(cmd), uint32(typ), uint32(n), uint32(rows), flags}
	if err := binary.Write(o.w, binary.LittleEndian, h); err != nil {
		return err
	}
	for _, p := range payload {
		if err := binary.Write(o.w, binary.LittleEndian, p); err != nil {
			return err
		}
	}
	if err := o.w.Flush(); err != nil {
		return err
	}
	var st uint32
	if err := binary.Read(o.r, binary.LittleEndian, &st); err != nil {
		return err
	}
	if st != 0 {
		return fmt.Errorf("oracle status %d", st)
	}
	return nil
}

func (o *ggmlOracle) dequantize(typ Type, src []byte, n int) ([]float32, error) {
	if err := o.request('D', typ, n, 1, 0, src); err != nil {
		return nil, err
	}
	out := make([]float32, n)
	return out, binary.Read(o.r, binary.LittleEndian, out)
}

func (o *ggmlOracle) dot(typ Type, w []byte, n int, acts [][]float32) ([]float32, error) {
	payload := []any{w}
	for _, a := range acts {
		payload = append(payload, a)
	}
	if err := o.request('V', typ, n, len(acts), 0, payload...); err != nil {
		return nil, err
	}
	out := make([]float32, len(acts))
	return out, binary.Read(o.r, binary.LittleEndian, out)
}

func (o *ggmlOracle) quantize(typ Type, src []float32, rows, n int, imatrix []float32) ([]byte, error) {
	payload := []any{src}
	var flags uint32
	if imatrix != nil {
		payload, flags = append(payload, imatrix), 1
	}
	if err := o.request('Q', typ, n, rows, flags, payload...); err != nil {
		return nil, err
	}
	out := make([]byte, rows*must(typ.RowBytes(n)))
	_, err := io.ReadFull(o.r, out)
	return out, err
}

// iqTypes are the i-quants.
var iqTypes = []Type{IQ4_NL, IQ4_XS, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M}

// randomBlocks returns nb random blocks of typ whose f16 scales are
// finite (random bytes elsewhere: every bit pattern is a valid block).
func randomIQBlocks(r *rand.Rand, typ Type, nb int) []byte {
	bb := typ.BlockBytes()
	b := make([]byte, nb*bb)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	for i := 0; i < nb; i++ {
		x := b[i*bb : (i+1)*bb]
		h := FP32ToFP16(float32(r.NormFloat64() * 0.01))
		switch typ {
		case IQ1_M:
			// the f16 d is the top nibbles of the four scale words
			for w := 0; w < 4; w++ {
				x[48+2*w+1] = x[48+2*w+1]&0x0f | byte(h>>(4*w))<<4
			}
		default:
			le.PutUint16(x, h)
		}
	}
	return b
}

// TestGGMLOracleIQuants compares the i-quants' dequantizers and dot
// products with llama.cpp's on random blocks and activations, bit for
// bit.
func TestGGMLOracleIQuants(t *testing.T) {
	o := startOracle(t)
	r := rand.New(rand.NewPCG(7, 18))
	for _, typ := range iqTypes {
		for iter := 0; iter < 100; iter++ {
			nb := 1 + r.IntN(12)
			n := nb * typ.BlockSize()
			w := randomIQBlocks(r, typ, nb)
			want, err := o.dequantize(typ, w, n)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float32, n)
			if err := Dequantize(typ, w, got); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s dequantize: element %d of %d: %g, ggml %g", typ, i, n, got[i], want[i])
				}
			}
			acts := make([][]float32, 3)
			for k := range acts {
				acts[k] = randRow(r, n, 1+float64(k))
			}
			wantDot, err := o.dot(typ, w, n, acts)
			if err != nil {
				t.Fatal(err)
			}
			vt := VecDotType(typ)
			act, _ := QuantizeRowFor(vt)
			ab := make([]byte, must(vt.RowBytes(n)))
			for k, a := range acts {
				act(ab, a)
				got := formats[typ].dot(n, w, ab)
				if math.Float32bits(got) != math.Float32bits(wantDot[k]) {
					t.Fatalf("%s dot n=%d: %g, ggml %g", typ, n, got, wantDot[k])
				}
			}
		}
	}
}

// TestGGMLOracleQuantize compares the quantizers with llama.cpp's
// ggml_quantize_chunk (what llama-quantize runs) on random rows, with and
// without an importance matrix, byte for byte.
func TestGGMLOracleQuantize(t *testing.T) {
	o := startOracle(t)
	r := rand.New(rand.NewPCG(9, 4))
	for _, typ := range fileQuantTypes {
		for iter := 0; iter < 40; iter++ {
			n := 256 * (1 + r.IntN(4))
			rows := 1 + r.IntN(3)
			src := randRow(r, n*rows, 0.02+r.Float64())
			if iter%3 == 2 {
				for i := range src {
					if r.IntN(50) == 0 {
						src[i] *= 20 // outliers
					}
				}
			}
			if iter%5 == 0 {
				// blocks of zeros and of tiny values
				clear(src[:64])
				for i := 64; i < 96; i++ {
					src[i] *= 1e-20
				}
			}
			if iter%5 == 1 {
				// values between the types' thresholds for empty groups
				for i := 0; i < 64; i++ {
					src[i] *= 3e-8
				}
			}
			var im []float32
			if _, needs := CanQuantizeFile(typ); iter%2 == 1 || needs {
				im = make([]float32, n)
				for i := range im {
					im[i] = float32(r.ExpFloat64())
				}
			}
			want, err := o.quantize(typ, src, rows, n, im)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len(want))
			if err := QuantizeRows(typ, got, src, rows, n, im); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s n=%d rows=%d imatrix=%v: byte %d of %d differs (%#x, ggml %#x)", typ, n, rows, im != nil, i, len(got), got[i], want[i])
				}
			}
		}
	}
}

// fileQuantTypes are the types TestGGMLOracleQuantize compares.
var fileQuantTypes = []Type{IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ4_NL, IQ4_XS, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, F16, BF16, F32}

func (o *ggmlOracle) repacked(typ Type, w []byte, n, rows int, act []float32) ([]float32, error) {
	if err := o.request('R', typ, n, rows, 0, w, act); err != nil {
		return nil, err
	}
	out := make([]float32, rows)
	return out, binary.Read(o.r, binary.LittleEndian, out)
}

// TestGGMLOracleIQ4_NLRepacked compares DotIQ4_NLInterleaved with
// llama.cpp's product of repacked IQ4_NL weights (its 8-row interleaved
// layout and gemv), bit for bit.
func TestGGMLOracleIQ4_NLRepacked(t *testing.T) {
	o := startOracle(t)
	r := rand.New(rand.NewPCG(3, 30))
	for iter := 0; iter < 50; iter++ {
		nb, rows := 1+r.IntN(12), 8*(1+r.IntN(3))
		n := nb * QK
		w := randomIQBlocks(r, IQ4_NL, nb*rows)
		act := randRow(r, n, 1)
		want, err := o.repacked(IQ4_NL, w, n, rows, act)
		if err != nil {
			t.Fatal(err)
		}
		ab := make([]byte, must(Q8_0.RowBytes(n)))
		quantizeActQ8_0(ab, act)
		rb := must(IQ4_NL.RowBytes(n))
		for i := 0; i < rows; i++ {
			got := DotIQ4_NLInterleaved(n, w[i*rb:(i+1)*rb], ab)
			if math.Float32bits(got) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d row %d: %g, llama.cpp %g", n, i, got, want[i])
			}
		}
	}
}

func (o *ggmlOracle) time(typ Type, w []byte, n, iters int, act []float32) (float64, error) {
	if err := o.request('T', typ, n, iters, 0, w, act); err != nil {
		return 0, err
	}
	var ns float64
	return ns, binary.Read(o.r, binary.LittleEndian, &ns)
}

// BenchmarkDotVsGGML times the dot product of a 4096-element row of each
// i-quant (and Q4_K for scale) in ruvllm's kernel and in llama.cpp's
// vec_dot (run by the oracle in its own process on the same row; its
// ns/op includes one round trip, ggml-ns/dot is the oracle's own timing).
func BenchmarkDotVsGGML(b *testing.B) {
	path := os.Getenv("RUVLLM_GGML_ORACLE")
	if path == "" {
		b.Skip("RUVLLM_GGML_ORACLE is not set")
	}
	o := startOracle(b)
	const n = 4096
	r := rand.New(rand.NewPCG(4, 4))
	for _, typ := range append([]Type{Q4_K}, iqTypes...) {
		var w []byte
		if formats[typ].quant == nil {
			w = randomIQBlocks(r, typ, n/typ.BlockSize())
		} else {
			w = make([]byte, must(typ.RowBytes(n)))
			if err := Quantize(typ, w, randRow(r, n, 1)); err != nil {
				b.Fatal(err)
			}
		}
		act := randRow(r, n, 1)
		vt := VecDotType(typ)
		ab := make([]byte, must(vt.RowBytes(n)))
		q, _ := QuantizeRowFor(vt)
		q(ab, act)
		dot, _ := DotFor(typ)
		b.Run(typ.String()+"/ruvllm", func(b *testing.B) {
			var s float32
			for b.Loop() {
				s += dot(n, w, ab)
			}
			sink = s
		})
		b.Run(typ.String()+"/ggml", func(b *testing.B) {
			// b.N dot products in the oracle, timed there and here
			ns, err := o.time(typ, w, n, b.N, act)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(ns, "ggml-ns/dot")
		})
	}
}

// TestGGMLOracleDotHalfFP16 compares DotHalfFP16 with ggml_vec_dot_f16 of
// the oracle's libggml when that library was built for AVX512-FP16
// (RUVLLM_GGML_FP16=1; bench/iquant/oracle.sh with the no-AMX build of
// this machine): F16 weight rows of several lengths, activations of
// several magnitudes, the oracle rounding them to f16 as DotHalfFP16's
// caller does.
func TestGGMLOracleDotHalfFP16(t *testing.T) {
	if os.Getenv("RUVLLM_GGML_FP16") != "1" {
		t.Skip("RUVLLM_GGML_FP16 is not 1: the oracle's libggml is not an AVX512-FP16 build")
	}
	o := startOracle(t)
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{64, 128, 192, 384, 1024} {
		for _, scale := range []float64{0.01, 1, 30} {
			w := make([]byte, 2*n)
			wh := make([]uint16, n)
			for i := range n {
				wh[i] = FP32ToFP16(float32(r.NormFloat64() * 0.05))
				binary.LittleEndian.PutUint16(w[2*i:], wh[i])
			}
			acts := make([][]float32, 8)
			for k := range acts {
				acts[k] = make([]float32, n)
				for i := range n {
					acts[k][i] = float32(r.NormFloat64() * scale)
				}
			}
			got, err := o.dot(F16, w, n, acts)
			if err != nil {
				t.Fatal(err)
			}
			for k, a := range acts {
				ah := make([]uint16, n)
				FloatToHalf(ah, a)
				if want := DotHalfFP16(wh, ah); math.Float32bits(got[k]) != math.Float32bits(want) {
					t.Errorf("n=%d scale=%g row %d: ggml %g, DotHalfFP16 %g", n, scale, k, got[k], want)
				}
			}
		}
	}
}

// matmul asks the oracle for ggml_mul_mat of rows weight rows (w) and the
// activation rows acts, as a graph computes it on one thread.
func (o *ggmlOracle) matmul(typ Type, w []byte, n, rows int, acts [][]float32) ([][]float32, error) {
	payload := []any{w}
	for _, a := range acts {
		payload = append(payload, a)
	}
	if err := o.request('M', typ, n, rows, uint32(len(acts)), payload...); err != nil {
		return nil, err
	}
	out := make([][]float32, len(acts))
	for i := range out {
		out[i] = make([]float32, rows)
		if err := binary.Read(o.r, binary.LittleEndian, out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// TestGGMLOracleF16MatMulFP16 compares the F16 products of an
// AVX512-FP16 build (RUVLLM_GGML_FP16=1) with DotHalfFP16 for one
// activation row and DotF16TinyBLAS for two or more.
func TestGGMLOracleF16MatMulFP16(t *testing.T) {
	if os.Getenv("RUVLLM_GGML_FP16") != "1" {
		t.Skip("RUVLLM_GGML_FP16 is not 1: the oracle's libggml is not an AVX512-FP16 build")
	}
	o := startOracle(t)
	r := rand.New(rand.NewPCG(9, 10))
	const rows = 32
	for _, n := range []int{64, 384, 1024} {
		for _, m := range []int{1, 2, 3, 7, 8, 11, 27} {
			w := make([]byte, 2*n*rows)
			wh := make([]uint16, n*rows)
			for i := range wh {
				wh[i] = FP32ToFP16(float32(r.NormFloat64() * 0.05))
				binary.LittleEndian.PutUint16(w[2*i:], wh[i])
			}
			acts := make([][]float32, m)
			for k := range acts {
				acts[k] = make([]float32, n)
				for i := range n {
					acts[k][i] = float32(r.NormFloat64())
				}
			}
			got, err := o.matmul(F16, w, n, rows, acts)
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for k, a := range acts {
				ah := make([]uint16, n)
				FloatToHalf(ah, a)
				for row := range rows {
					var want float32
					if m == 1 {
						want = DotHalfFP16(wh[row*n:(row+1)*n], ah)
					} else {
						want = DotF16TinyBLAS(wh[row*n:(row+1)*n], ah)
					}
					if math.Float32bits(got[k][row]) != math.Float32bits(want) {
						bad++
					}
				}
			}
			if bad > 0 {
				t.Errorf("n=%d, %d activation rows: %d of %d products differ", n, m, bad, m*rows)
			}
		}
	}
}

// TestGGMLOracleQ4_KGEMV compares DotQ4_KGEMV with llama.cpp's GEMV of
// repacked Q4_K weights (its 8-row interleaved layout), bit for bit, on
// Q4_K rows llama.cpp's quantizer made from random floats.
func TestGGMLOracleQ4_KGEMV(t *testing.T) {
	o := startOracle(t)
	r := rand.New(rand.NewPCG(4, 40))
	for iter := 0; iter < 30; iter++ {
		nb, rows := 1+r.IntN(4), 8*(1+r.IntN(3))
		n := nb * QKK
		src := randRow(r, n*rows, 1)
		w, err := o.quantize(Q4_K, src, rows, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		act := randRow(r, n, 1)
		want, err := o.repacked(Q4_K, w, n, rows, act)
		if err != nil {
			t.Fatal(err)
		}
		ab := make([]byte, must(Q8_K.RowBytes(n)))
		quantizeQ8_K(ab, act)
		rb := must(Q4_K.RowBytes(n))
		for i := 0; i < rows; i++ {
			got := DotQ4_KGEMV(n, w[i*rb:(i+1)*rb], ab)
			if math.Float32bits(got) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d row %d: %g, llama.cpp %g", n, i, got, want[i])
			}
		}
	}
}

// TestGGMLOracleQ2_KRepacked compares DotQ2_KRepacked with llama.cpp's
// GEMM (four activation rows) and GEMV (one) of repacked Q2_K weights,
// bit for bit, on Q2_K rows llama.cpp's quantizer made.
func TestGGMLOracleQ2_KRepacked(t *testing.T) {
	o := startOracle(t)
	r := rand.New(rand.NewPCG(5, 50))
	for iter := 0; iter < 20; iter++ {
		nb, rows := 1+r.IntN(4), 8*(1+r.IntN(3))
		n := nb * QKK
		w, err := o.quantize(Q2_K, randRow(r, n*rows, 1), rows, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		acts := randRow(r, 4*n, 1)
		if err := o.request('G', Q2_K, n, rows, 0, w, acts); err != nil {
			t.Fatal(err)
		}
		gemm, gemv := make([]float32, 4*rows), make([]float32, 4*rows)
		if err := binary.Read(o.r, binary.LittleEndian, gemm); err != nil {
			t.Fatal(err)
		}
		if err := binary.Read(o.r, binary.LittleEndian, gemv); err != nil {
			t.Fatal(err)
		}
		ab := make([]byte, must(Q8_K.RowBytes(n)))
		rb := must(Q2_K.RowBytes(n))
		for i := range 4 {
			quantizeQ8_K(ab, acts[i*n:(i+1)*n])
			for j := range rows {
				for _, c := range []struct {
					gemm bool
					want float32
				}{{true, gemm[i*rows+j]}, {false, gemv[i*rows+j]}} {
					if got := DotQ2_KRepacked(n, w[j*rb:(j+1)*rb], ab, c.gemm); math.Float32bits(got) != math.Float32bits(c.want) {
						t.Fatalf("n=%d act %d row %d gemm=%v: %g, llama.cpp %g", n, i, j, c.gemm, got, c.want)
					}
				}
			}
		}
	}
}
