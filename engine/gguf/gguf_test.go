package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// sampleWriter builds a small file exercising every value type, nested
// arrays, several tensor types and a streamed tensor.
func sampleWriter(t testing.TB) (*Writer, map[string][]byte) {
	t.Helper()
	w := NewWriter()
	inner1, _ := NewValue([]int32{1, -2, 3})
	inner2, _ := NewValue([]string{"a", "bc"})
	deep, err := ArrayOf(inner1, inner2)
	if err != nil {
		t.Fatal(err)
	}
	nested, err := ArrayOf(deep, inner1)
	if err != nil {
		t.Fatal(err)
	}
	kvs := []struct {
		k string
		v any
	}{
		{"general.architecture", "llama"},
		{"u8", uint8(200)}, {"i8", int8(-100)}, {"u16", uint16(60000)}, {"i16", int16(-30000)},
		{"u32", uint32(4000000000)}, {"i32", int32(-2000000000)}, {"f32", float32(1.5)},
		{"bool", true}, {"str", "héllo\x00world"}, {"empty", ""},
		{"u64", uint64(math.MaxUint64)}, {"i64", int64(math.MinInt64)}, {"f64", math.Pi},
		{"llama.block_count", uint32(2)}, {"llama.rope.freq_base", float32(10000)},
		{"a.strings", []string{"x", "", "yz"}}, {"a.i32", []int32{-1, 0, 7}}, {"a.u32", []uint32{1, 2}},
		{"a.f32", []float32{0.25, -1}}, {"a.i64", []int64{-5}}, {"a.u64", []uint64{9}},
		{"a.f64", []float64{2.5}}, {"a.bool", []bool{true, false}}, {"a.u8", []uint8{1, 2, 3}},
		{"a.i8", []int8{-1}}, {"a.u16", []uint16{65535}}, {"a.i16", []int16{-7}},
		{"a.nested", nested},
	}
	for _, kv := range kvs {
		if err := w.AddKV(kv.k, kv.v); err != nil {
			t.Fatal(err)
		}
	}
	data := map[string][]byte{}
	add := func(name string, typ quant.Type, shape []uint64, stream bool) {
		size, err := TensorSize(typ, shape)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(i*7 + len(name))
		}
		data[name] = b
		if stream {
			err = w.AddTensorFunc(name, typ, shape, func(out io.Writer) error {
				// Write in odd-sized pieces to exercise the limit writer.
				for p := b; len(p) > 0; {
					n := min(len(p), 1000)
					if _, err := out.Write(p[:n]); err != nil {
						return err
					}
					p = p[n:]
				}
				return nil
			})
		} else {
			err = w.AddTensor(name, typ, shape, b)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	add("token_embd.weight", quant.F16, []uint64{64, 10}, false)
	add("blk.0.attn_norm.weight", quant.F32, []uint64{64}, false)
	add("blk.0.attn_q.weight", quant.Q4_0, []uint64{64, 64}, true)
	add("blk.0.ffn_up.weight", quant.Q4_K, []uint64{256, 3}, false)
	add("blk.0.ffn_down.weight", quant.Q8_0, []uint64{32, 1, 2, 3}, true)
	return w, data
}

func encode(t testing.TB, w *Writer) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := w.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo returned %d, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	w, data := sampleWriter(t)
	b := encode(t, w)
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || f.Alignment != 32 || f.DataOffset%32 != 0 || f.Size != int64(len(b)) {
		t.Fatalf("header: %+v", f)
	}
	if len(f.KV) != len(w.kv) {
		t.Fatalf("%d kvs, want %d", len(f.KV), len(w.kv))
	}
	for i, kv := range w.kv {
		got := f.KV[i]
		if got.Key != kv.Key || got.Value.Type() != kv.Value.Type() || got.Value.ElemType() != kv.Value.ElemType() {
			t.Errorf("kv %d: %s %s/%s, want %s %s/%s", i, got.Key, got.Value.Type(), got.Value.ElemType(), kv.Key, kv.Value.Type(), kv.Value.ElemType())
		}
		if !reflect.DeepEqual(got.Value.Interface(), kv.Value.Interface()) {
			t.Errorf("kv %s: %v, want %v", kv.Key, got.Value, kv.Value)
		}
	}
	wantInfos := w.Tensors()
	if !reflect.DeepEqual(f.Tensors, wantInfos) {
		t.Fatalf("tensors:\n%+v\nwant\n%+v", f.Tensors, wantInfos)
	}
	for name, want := range data {
		got, err := f.TensorData(name)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("tensor %s: %v, equal=%v", name, err, bytes.Equal(got, want))
		}
		if cap(got) != len(got) {
			t.Errorf("tensor %s: view capacity %d exceeds its length %d", name, cap(got), len(got))
		}
	}
	if _, err := f.TensorData("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing tensor: %v", err)
	}
}

func TestAccessors(t *testing.T) {
	w, _ := sampleWriter(t)
	f, err := Parse(encode(t, w))
	if err != nil {
		t.Fatal(err)
	}
	if f.Architecture() != "llama" {
		t.Errorf("arch %q", f.Architecture())
	}
	if n, ok := f.ArchUint("block_count"); !ok || n != 2 {
		t.Errorf("ArchUint: %d %v", n, ok)
	}
	if x, ok := f.ArchFloat("rope.freq_base"); !ok || x != 10000 {
		t.Errorf("ArchFloat: %v %v", x, ok)
	}
	if _, ok := f.ArchString("block_count"); ok {
		t.Error("ArchString accepted an integer")
	}
	uintCases := []struct {
		key  string
		want uint64
		ok   bool
	}{
		{"u8", 200, true}, {"u16", 60000, true}, {"u32", 4000000000, true}, {"u64", math.MaxUint64, true},
		{"i8", 0, false}, {"i64", 0, false}, {"f32", 0, false}, {"str", 0, false}, {"missing", 0, false},
	}
	for _, c := range uintCases {
		got, ok := f.Uint(c.key)
		if got != c.want || ok != c.ok {
			t.Errorf("Uint(%s) = %d,%v want %d,%v", c.key, got, ok, c.want, c.ok)
		}
	}
	intCases := []struct {
		key  string
		want int64
		ok   bool
	}{
		{"i8", -100, true}, {"i16", -30000, true}, {"i32", -2000000000, true}, {"i64", math.MinInt64, true},
		{"u32", 4000000000, true}, {"u64", 0, false}, {"bool", 0, false},
	}
	for _, c := range intCases {
		got, ok := f.Int(c.key)
		if got != c.want || ok != c.ok {
			t.Errorf("Int(%s) = %d,%v want %d,%v", c.key, got, ok, c.want, c.ok)
		}
	}
	if x, ok := f.Float("f64"); !ok || x != math.Pi {
		t.Errorf("Float(f64) = %v", x)
	}
	if x, ok := f.Float("f32"); !ok || x != 1.5 {
		t.Errorf("Float(f32) = %v", x)
	}
	if b, ok := f.Bool("bool"); !ok || !b {
		t.Errorf("Bool = %v %v", b, ok)
	}
	if s, ok := f.String("str"); !ok || s != "héllo\x00world" {
		t.Errorf("String = %q", s)
	}
	if s, ok := f.Strings("a.strings"); !ok || !reflect.DeepEqual(s, []string{"x", "", "yz"}) {
		t.Errorf("Strings = %q", s)
	}
	if s, ok := f.Float32s("a.f32"); !ok || !reflect.DeepEqual(s, []float32{0.25, -1}) {
		t.Errorf("Float32s = %v", s)
	}
	int32Cases := []struct {
		key  string
		want []int32
		ok   bool
	}{
		{"a.i32", []int32{-1, 0, 7}, true}, {"a.u32", []int32{1, 2}, true}, {"a.i64", []int32{-5}, true},
		{"a.u8", []int32{1, 2, 3}, true}, {"a.u16", []int32{65535}, true}, {"a.f32", nil, false},
		{"a.strings", nil, false}, {"u32", nil, false},
	}
	for _, c := range int32Cases {
		got, ok := f.Int32s(c.key)
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Int32s(%s) = %v,%v want %v,%v", c.key, got, ok, c.want, c.ok)
		}
	}
	nested, _ := f.Get("a.nested")
	if nested.ElemType() != TypeArray || nested.Len() != 2 {
		t.Fatalf("nested: %v", nested)
	}
	e0, _ := nested.Index(0)
	e00, _ := e0.Index(1)
	if s, _ := e00.Strings(); !reflect.DeepEqual(s, []string{"a", "bc"}) {
		t.Errorf("nested[0][1] = %v", e00)
	}
	if got := nested.String(); got != `[array × 2] [[array × 2] [[int32 × 3] [1, -2, 3], [string × 2] ["a", "bc"]], [int32 × 3] [1, -2, 3]]` {
		t.Errorf("String() = %s", got)
	}
}

func TestWriterAlignmentAndErrors(t *testing.T) {
	w := NewWriter()
	if err := w.AddKV("general.alignment", uint32(64)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []any{uint32(3), uint32(0), uint64(64)} {
		w2 := NewWriter()
		if err := w2.AddKV("general.alignment", bad); err == nil {
			t.Errorf("alignment %v accepted", bad)
		}
	}
	if err := w.AddKV("general.alignment", uint32(64)); err == nil {
		t.Error("duplicate key accepted")
	}
	if err := w.AddKV("x", struct{}{}); err == nil {
		t.Error("struct value accepted")
	}
	if err := w.AddTensor("a", quant.F32, []uint64{3}, make([]byte, 12)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("b", quant.Q4_0, []uint64{32, 2}, make([]byte, 36)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("a", quant.F32, []uint64{3}, make([]byte, 12)); err == nil {
		t.Error("duplicate tensor accepted")
	}
	if err := w.AddTensor("c", quant.F32, []uint64{3}, make([]byte, 11)); err == nil {
		t.Error("wrong data size accepted")
	}
	if err := w.AddTensor("d", quant.Q4_0, []uint64{31}, make([]byte, 18)); err == nil {
		t.Error("partial block accepted")
	}
	if err := w.AddTensor("e", quant.F32, []uint64{1, 1, 1, 1, 1}, make([]byte, 4)); err == nil {
		t.Error("5 dims accepted")
	}
	f, err := Parse(encode(t, w))
	if err != nil {
		t.Fatal(err)
	}
	if f.Alignment != 64 || f.DataOffset%64 != 0 || f.Tensors[1].Offset != 64 {
		t.Errorf("alignment %d, data offset %d, tensor b offset %d", f.Alignment, f.DataOffset, f.Tensors[1].Offset)
	}

	short := NewWriter()
	_ = short.AddTensorFunc("s", quant.F32, []uint64{4}, func(w io.Writer) error { _, err := w.Write(make([]byte, 8)); return err })
	if _, err := short.WriteTo(io.Discard); err == nil || !strings.Contains(err.Error(), "8 of 16") {
		t.Errorf("short stream: %v", err)
	}
	long := NewWriter()
	_ = long.AddTensorFunc("l", quant.F32, []uint64{1}, func(w io.Writer) error { _, err := w.Write(make([]byte, 8)); return err })
	if _, err := long.WriteTo(io.Discard); err == nil {
		t.Error("long stream accepted")
	}
}

func TestWriteFileOpen(t *testing.T) {
	w, data := sampleWriter(t)
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temp files left behind: %v", entries)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := f.TensorData("blk.0.attn_q.weight")
	if err != nil || !bytes.Equal(got, data["blk.0.attn_q.weight"]) {
		t.Fatalf("mapped tensor differs: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.gguf")); err == nil {
		t.Error("opened a missing file")
	}
}

// TestReleaseDataKeepsContents releases a tensor's pages of a mapped file
// and of a file parsed from memory (where releasing must not touch the
// caller's bytes) and reads the tensor again: the contents are unchanged.
func TestReleaseDataKeepsContents(t *testing.T) {
	w := NewWriter()
	big := make([]byte, 3*os.Getpagesize()+100) // spans whole pages wherever it starts
	for i := range big {
		big[i] = byte(i*7 + 1)
	}
	w.AddTensor("big", quant.F32, []uint64{uint64(len(big) / 4)}, big)
	path := filepath.Join(t.TempDir(), "r.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	mapped, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer mapped.Close()
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	inMemory, err := Parse(file)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]*File{"mapped": mapped, "in memory": inMemory} {
		data, err := f.TensorData("big")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.ReleaseData(data); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := f.ReleaseData(big); err != nil { // not the file's memory: ignored
			t.Fatalf("%s, foreign slice: %v", name, err)
		}
		if again, _ := f.TensorData("big"); !bytes.Equal(again, big) {
			t.Fatalf("%s: tensor changed after ReleaseData", name)
		}
	}
}

// raw builds hand-made headers for malformed-input tests.
type raw struct{ bytes.Buffer }

func (r *raw) u32(v uint32) *raw { _ = binary.Write(r, binary.LittleEndian, v); return r }
func (r *raw) u8(v uint8) *raw   { r.WriteByte(v); return r }
func (r *raw) u64(v uint64) *raw { _ = binary.Write(r, binary.LittleEndian, v); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.WriteString(s); return r }
func hdr(nt, nkv uint64) *raw {
	r := &raw{}
	r.WriteString("GGUF")
	return r.u32(3).u64(nt).u64(nkv)
}

// tensor appends a tensor info.
func (r *raw) tensor(name string, typ quant.Type, off uint64, shape ...uint64) *raw {
	r.str(name).u32(uint32(len(shape)))
	for _, d := range shape {
		r.u64(d)
	}
	return r.u32(uint32(typ)).u64(off)
}

// data pads to 32 and appends n bytes of tensor data.
func (r *raw) data(n int) []byte {
	for r.Len()%32 != 0 {
		r.WriteByte(0)
	}
	r.Write(make([]byte, n))
	return r.Bytes()
}

func TestMalformed(t *testing.T) {
	bigEndian := []byte{'G', 'G', 'U', 'F', 0, 0, 0, 3}
	tests := []struct {
		name string
		in   []byte
		want error
		msg  string
	}{
		{"empty", nil, ErrNotGGUF, ""},
		{"bad magic", []byte("GGML\x03\x00\x00\x00"), ErrNotGGUF, ""},
		{"v1", append([]byte("GGUF"), 1, 0, 0, 0), ErrVersion, ""},
		{"v4", append([]byte("GGUF"), 4, 0, 0, 0), ErrVersion, ""},
		{"big endian", append(bigEndian, make([]byte, 16)...), ErrBigEndian, ""},
		{"no counts", append([]byte("GGUF"), 3, 0, 0, 0), ErrMalformed, "tensor count"},
		{"lying kv count", hdr(0, 1<<40).Bytes(), ErrMalformed, "kv count"},
		{"lying tensor count", hdr(1<<40, 0).Bytes(), ErrMalformed, "tensor count"},
		{"huge key length", hdr(0, 1).u64(1 << 62).u64(0).u64(0).Bytes(), ErrMalformed, "kv 0 key"},
		{"unknown value type", hdr(0, 1).str("k").u32(13).u64(0).Bytes(), ErrMalformed, "unknown value type"},
		{"truncated u32", hdr(0, 1).str("k").u32(uint32(TypeUint32)).Bytes(), ErrMalformed, "(k)"},
		{"bad bool", hdr(0, 1).str("k").u32(uint32(TypeBool)).u32(2).Bytes(), ErrMalformed, "bool"},
		{"huge string", hdr(0, 1).str("k").u32(uint32(TypeString)).u64(1 << 60).Bytes(), ErrMalformed, "(k)"},
		{"huge array", hdr(0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeUint64)).u64(1 << 61).Bytes(), ErrMalformed, "array of"},
		{"huge string array", hdr(0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeString)).u64(1 << 62).u64(0).Bytes(), ErrMalformed, "array of"},
		{"string element too long", hdr(0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeString)).u64(2).u64(0).u64(99).Bytes(), ErrMalformed, "k[1]"},
		{"bad element type", hdr(0, 1).str("k").u32(uint32(TypeArray)).u32(77).u64(0).Bytes(), ErrMalformed, "element type"},
		{"too deep", func() []byte {
			r := hdr(0, 1).str("k").u32(uint32(TypeArray))
			for i := 0; i < 20; i++ {
				r.u32(uint32(TypeArray)).u64(1)
			}
			return r.u32(uint32(TypeUint8)).u64(0).Bytes()
		}(), ErrMalformed, "nested deeper"},
		{"duplicate key", hdr(0, 2).str("k").u32(uint32(TypeUint8)).u8(1).str("k").u32(uint32(TypeUint8)).u8(1).Bytes(), ErrMalformed, "duplicate key"},
		{"alignment not pow2", hdr(0, 1).str("general.alignment").u32(uint32(TypeUint32)).u32(48).Bytes(), ErrMalformed, "general.alignment"},
		{"alignment zero", hdr(0, 1).str("general.alignment").u32(uint32(TypeUint32)).u32(0).Bytes(), ErrMalformed, "general.alignment"},
		{"alignment string", hdr(0, 1).str("general.alignment").u32(uint32(TypeString)).str("32").Bytes(), ErrMalformed, "general.alignment"},
		{"5 dims", hdr(1, 0).tensor("t", quant.F32, 0, 1, 1, 1, 1, 1).data(4), ErrMalformed, "n_dims"},
		{"unknown tensor type", hdr(1, 0).tensor("t", quant.Type(99), 0, 4).data(16), ErrMalformed, "unknown tensor type"},
		{"partial block", hdr(1, 0).tensor("t", quant.Q4_0, 0, 33).data(64), ErrMalformed, "block size"},
		{"element overflow", hdr(1, 0).tensor("t", quant.F32, 0, 1<<32, 1<<32).data(4), ErrMalformed, "overflows"},
		{"negative dim", hdr(1, 0).tensor("t", quant.F32, 0, 1<<63).data(4), ErrMalformed, "negative"},
		{"size overflow", hdr(1, 0).tensor("t", quant.F64, 0, 1<<61, 2).data(4), ErrMalformed, "overflows"},
		{"misaligned offset", hdr(1, 0).tensor("t", quant.F32, 4, 1).data(64), ErrMalformed, "not aligned"},
		{"offset past end", hdr(1, 0).tensor("t", quant.F32, 1<<40, 1).data(64), ErrMalformed, "past"},
		{"data past end", hdr(1, 0).tensor("t", quant.F32, 0, 17).data(64), ErrMalformed, "past"},
		{"offset wraps", hdr(1, 0).tensor("t", quant.F32, math.MaxUint64-31, 16).data(64), ErrMalformed, ""},
		{"overlap", hdr(2, 0).tensor("a", quant.F32, 0, 16).tensor("b", quant.F32, 32, 16).data(128), ErrMalformed, "overlap"},
		{"duplicate tensor", hdr(2, 0).tensor("a", quant.F32, 0, 8).tensor("a", quant.F32, 32, 8).data(128), ErrMalformed, "duplicate name"},
		{"data section missing", hdr(1, 0).tensor("a", quant.F32, 0, 8).Bytes(), ErrMalformed, "past"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("parsed: %+v", f)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not mention %q", err, tc.msg)
			}
		})
	}
}

func TestValidEdgeCases(t *testing.T) {
	// v2 files share the v3 layout for little-endian files.
	b := hdr(1, 1).str("general.alignment").u32(uint32(TypeUint32)).u32(16).tensor("t", quant.F32, 0, 4).data(16)
	binary.LittleEndian.PutUint32(b[4:], 2)
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 2 || f.Alignment != 16 || len(f.Tensors) != 1 || f.Tensors[0].Elements() != 4 {
		t.Errorf("%+v", f)
	}
	// A metadata-only file needs no data section.
	if _, err := Parse(hdr(0, 1).str("k").u32(uint32(TypeUint8)).Bytes()[:]); err == nil {
		t.Error("truncated u8 accepted")
	}
	f, err = Parse(append(hdr(0, 1).str("k").u32(uint32(TypeUint8)).Bytes(), 5))
	if err != nil || len(f.KV) != 1 {
		t.Fatalf("metadata-only file: %v", err)
	}
}

// Every proper prefix of a valid file is an error, never a panic.
func TestTruncations(t *testing.T) {
	w, _ := sampleWriter(t)
	b := encode(t, w)
	for n := 0; n < len(b); n++ {
		if _, err := Parse(b[:n]); err == nil {
			t.Fatalf("prefix of %d/%d bytes parsed", n, len(b))
		}
	}
}

func FuzzParse(f *testing.F) {
	w, _ := sampleWriter(f)
	b := encode(f, w)
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Add(hdr(1, 0).tensor("t", quant.Q4_0, 0, 32).data(18))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			return
		}
		// Whatever parses must be internally consistent.
		for _, ti := range file.Tensors {
			d, err := file.TensorData(ti.Name)
			if err != nil || int64(len(d)) != ti.Size {
				t.Fatalf("tensor %s: %d bytes, %v", ti.Name, len(d), err)
			}
		}
		for _, kv := range file.KV {
			_ = kv.Value.String()
			_, _ = kv.Value.Int32s()
		}
	})
}

// TestSeedCorpus keeps testdata/fuzz/FuzzParse in sync with the writer:
// run with GGUF_UPDATE_CORPUS=1 to regenerate it; otherwise it checks that
// every seed file is present and that the valid ones parse.
func TestSeedCorpus(t *testing.T) {
	w, _ := sampleWriter(t)
	full := encode(t, w)
	small := NewWriter()
	_ = small.AddKV("general.architecture", "llama")
	_ = small.AddKV("tokenizer.ggml.tokens", []string{"<s>", "a", "b"})
	_ = small.AddTensor("t", quant.Q8_0, []uint64{32}, make([]byte, 34))
	smallB := encode(t, small)
	seeds := map[string]struct {
		data  []byte
		valid bool
	}{
		"valid_sample":    {full, true},
		"valid_small":     {smallB, true},
		"trunc_header":    {full[:40], false},
		"trunc_metadata":  {full[:len(full)/4], false},
		"trunc_data":      {full[:len(full)-7], false},
		"trunc_small_kv":  {smallB[:60], false},
		"small_no_tensor": {smallB[:len(smallB)-34], false},
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	update := os.Getenv("GGUF_UPDATE_CORPUS") == "1"
	if update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, s := range seeds {
		path := filepath.Join(dir, name)
		content := "go test fuzz v1\n[]byte(" + strconv.Quote(string(s.data)) + ")\n"
		if update {
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("seed %s missing (run with GGUF_UPDATE_CORPUS=1): %v", name, err)
		}
		if string(got) != content {
			t.Errorf("seed %s is stale (run with GGUF_UPDATE_CORPUS=1)", name)
		}
		if _, err := Parse(s.data); (err == nil) != s.valid {
			t.Errorf("seed %s: parse error %v, valid=%v", name, err, s.valid)
		}
	}
}

// TestOpenErrorNamesPathOnce: a file that cannot be opened is named once,
// in the operating system's words, never as "open: open PATH".
func TestOpenErrorNamesPathOnce(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{filepath.Join(dir, "nope.gguf"), dir} {
		_, err := Open(path)
		if err == nil {
			t.Fatalf("Open(%s): no error", path)
		}
		msg := err.Error()
		if strings.Contains(msg, "open: open") || strings.Count(msg, path) != 1 {
			t.Errorf("Open(%s) = %q: want the path named once", path, msg)
		}
	}
}

// TestVector reads 1-D tensors of several types as float32 and refuses
// a missing tensor, a matrix and a vector of another length.
func TestVector(t *testing.T) {
	w := NewWriter()
	want := []float32{0.5, -1.25, 3, 0, 7.5, -0.125, 2, 1024}
	f32 := make([]byte, 4*len(want))
	f16 := make([]byte, 2*len(want))
	for i, v := range want {
		binary.LittleEndian.PutUint32(f32[4*i:], math.Float32bits(v))
		binary.LittleEndian.PutUint16(f16[2*i:], quant.FP32ToFP16(v))
	}
	for _, err := range []error{
		w.AddTensor("v.f32", quant.F32, []uint64{8}, f32),
		w.AddTensor("v.f16", quant.F16, []uint64{8}, f16),
		w.AddTensor("m.f32", quant.F32, []uint64{4, 2}, f32),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"v.f32", "v.f16"} {
		got, err := f.Vector(name, len(want))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	for _, tc := range []struct {
		name string
		n    int
		want string
	}{
		{"missing", 8, "not found"},
		{"m.f32", 8, "shape [4 2]"},
		{"v.f32", 7, "want [7]"},
	} {
		if _, err := f.Vector(tc.name, tc.n); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Vector(%q, %d): %v, want an error naming %q", tc.name, tc.n, err, tc.want)
		}
	}
}
