package safetensors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func header(h string, data int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	b = append(b, h...)
	return append(b, make([]byte, data)...)
}

func TestRoundTrip(t *testing.T) {
	b, err := Encode([]string{"a", "b"}, [][]uint64{{2, 3}, {4}},
		[][]float32{{1, 2, 3, 4, 5, 6}, {-1, 0.5, 7, 8}}, map[string]string{"format": "pt"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["format"] != "pt" || len(f.Tensors) != 2 {
		t.Fatalf("metadata %v, %d tensors", f.Metadata, len(f.Tensors))
	}
	a, err := f.Floats("a")
	if err != nil {
		t.Fatal(err)
	}
	if ta, _ := f.Tensor("a"); len(ta.Shape) != 2 || ta.Shape[0] != 2 || ta.Shape[1] != 3 || a[5] != 6 {
		t.Fatalf("a = %v %v", ta, a)
	}
	bv, _ := f.Floats("b")
	if bv[1] != 0.5 || bv[3] != 8 {
		t.Fatalf("b = %v", bv)
	}
	if _, err := f.Floats("c"); err == nil {
		t.Fatal("missing tensor: no error")
	}
}

func TestHalfTypes(t *testing.T) {
	// 1.0 in F16 is 0x3c00, in BF16 0x3f80.
	b := header(`{"h":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},"g":{"dtype":"BF16","shape":[1],"data_offsets":[2,4]}}`, 0)
	b = append(b, 0x00, 0x3c, 0x80, 0x3f)
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"h", "g"} {
		v, err := f.Floats(n)
		if err != nil || v[0] != 1 {
			t.Fatalf("%s = %v, %v", n, v, err)
		}
	}
}

func TestMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"short", []byte{1, 2, 3}},
		{"header too long", binary.LittleEndian.AppendUint64(nil, 1000)},
		{"huge header", binary.LittleEndian.AppendUint64(nil, 1<<62)},
		{"not json", header(`{nope`, 0)},
		{"unknown dtype", header(`{"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}}`, 1)},
		{"offsets past end", header(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 4)},
		{"size mismatch", header(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, 8)},
		{"reversed offsets", header(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}`, 8)},
		{"overflowing shape", header(`{"a":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,0]}}`, 0)},
		{"overlap", header(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8)},
		{"one offset", header(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}}`, 4)},
		{"negative shape", header(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4)},
		{"not an object", header(`["a"]`, 0)},
		{"twice", header(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}`, 0)},
		{"data after the object", header(`{} {}`, 0)},
		{"too many tensors", header(manyTensors(MaxTensors+1), 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse(tc.b); !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
}

// manyTensors is a header of n empty tensors.
func manyTensors(n int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"t%d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}`, i)
	}
	b.WriteByte('}')
	return b.String()
}

// TestHeaderPadding: a header padded with spaces (as writers align the
// data) and of MaxTensors entries parses.
func TestHeaderPadding(t *testing.T) {
	f, err := Parse(header(manyTensors(MaxTensors)+"       ", 0))
	if err != nil || len(f.Tensors) != MaxTensors {
		t.Fatalf("err %v", err)
	}
}

func FuzzParse(f *testing.F) {
	good, _ := Encode([]string{"x"}, [][]uint64{{2, 2}}, [][]float32{{1, 2, 3, 4}}, map[string]string{"a": "b"})
	f.Add(good)
	f.Add(header(`{"h":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}}`, 2))
	f.Add(header(`{}`, 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error not wrapping ErrMalformed: %v", err)
			}
			return
		}
		for _, tn := range file.Tensors {
			d, err := file.Data(tn.Name)
			if err != nil || uint64(len(d)) != tn.End-tn.Begin {
				t.Fatalf("tensor %s: %d bytes, %v", tn.Name, len(d), err)
			}
			_, _ = file.Floats(tn.Name)
		}
	})
}
