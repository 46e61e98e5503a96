package quant

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

// Known-answer tests: blocks built byte by byte from the GGUF layouts and
// the values they must decode to, worked out by hand in the comments.

func h16(f float32) []byte { return binary.LittleEndian.AppendUint16(nil, FP32ToFP16(f)) }

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func fill(n int, v byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = v
	}
	return b
}

type katCase struct {
	typ   Type
	block []byte
	want  []float32
}

func katCases() []katCase {
	var cs []katCase

	// Q4_1: d = 0.5, m = -1, qs[i] = i | (15-i)<<4: element i is i·0.5-1,
	// element i+16 is (15-i)·0.5-1.
	{
		qs := make([]byte, 16)
		want := make([]float32, 32)
		for i := range qs {
			qs[i] = byte(i) | byte(15-i)<<4
			want[i] = float32(i)*0.5 - 1
			want[i+16] = float32(15-i)*0.5 - 1
		}
		cs = append(cs, katCase{Q4_1, cat(h16(0.5), h16(-1), qs), want})
	}
	// Q5_0: d = 0.25, qh = 0xAAAA5555 (fifth bit set on even elements below
	// 16 and odd ones from 16), qs[i] = i | i<<4. Element 0: (0|16-16)·¼ = 0;
	// 1: (1-16)·¼ = -3.75; 16: (0-16)·¼ = -4; 17: (1|16-16)·¼ = 0.25.
	{
		qs := make([]byte, 16)
		want := make([]float32, 32)
		for i := range qs {
			qs[i] = byte(i) | byte(i)<<4
			hi := float32(16 * ((i + 1) % 2))
			want[i] = (float32(i) + hi - 16) * 0.25
			want[i+16] = (float32(i) + 16 - hi - 16) * 0.25
		}
		cs = append(cs, katCase{Q5_0, cat(h16(0.25), []byte{0x55, 0x55, 0xaa, 0xaa}, qs), want})
		// Q5_1 with d = 1, m = 0.5 and the same bits: q + 0.5.
		want1 := make([]float32, 32)
		for i := range want1 {
			want1[i] = want[i]*4 + 16 + 0.5
		}
		cs = append(cs, katCase{Q5_1, cat(h16(1), h16(0.5), []byte{0x55, 0x55, 0xaa, 0xaa}, qs), want1})
	}
	// Q8_1: d = 0.5 (s is not used to decode), qs[i] = i-16.
	{
		qs := make([]byte, 32)
		want := make([]float32, 32)
		for i := range qs {
			qs[i] = byte(int8(i - 16))
			want[i] = float32(i-16) * 0.5
		}
		cs = append(cs, katCase{Q8_1, cat(h16(0.5), h16(-8), qs), want})
	}
	// Q8_K: float32 d = 0.25, qs[i] = i-128, bsums ignored.
	{
		qs := make([]byte, 256)
		want := make([]float32, 256)
		for i := range qs {
			qs[i] = byte(int8(i - 128))
			want[i] = float32(i-128) / 4
		}
		d := binary.LittleEndian.AppendUint32(nil, math.Float32bits(0.25))
		cs = append(cs, katCase{Q8_K, cat(d, qs, make([]byte, 32)), want})
	}
	// Q2_K: d = 1, dmin = 0.25; group g has scale g%8+1 and minimum g%3.
	// All quants 0 (x = -0.25·(g%3)) except byte qs[33] = 0b10_01_11_00,
	// which holds elements 129 (q 0), 161 (q 3), 193 (q 1), 225 (q 2):
	// 161 is group 10: 3·3-0.25 = 8.75; 193 group 12: 5·1 = 5; 225 group
	// 14: 7·2-0.5 = 13.5.
	{
		sc := make([]byte, 16)
		want := make([]float32, 256)
		for g := range sc {
			sc[g] = byte(g%8+1) | byte(g%3)<<4
		}
		for e := range want {
			want[e] = -0.25 * float32(e/16%3)
		}
		want[161], want[193], want[225] = 8.75, 5, 13.5
		qs := make([]byte, 64)
		qs[33] = 0b10_01_11_00
		cs = append(cs, katCase{Q2_K, cat(sc, qs, h16(1), h16(0.25)), want})
	}
	// Q3_K: d = 0.5; 6-bit scale codes 24+g (scale g-8), packed by hand:
	// low nibbles of codes g and g+8 in byte g%8, top bits in bytes 8-11
	// (all 0b10_10_01_01). hmask all set (no -4) except bit 0 of hmask[5]
	// (element 5: q = 0-4, 0.5·(-8)·(-4) = 16) and bit 7 of hmask[0]
	// (element 224: group 14, 0.5·6·(-4) = -12). qs[37] = 0b11_10_01_00
	// holds elements 133 (q 0), 165 (q 1, group 10: 0.5·2·1 = 1), 197 (q 2,
	// group 12: 0.5·4·2 = 4), 229 (q 3, group 14: 0.5·6·3 = 9).
	{
		hmask := fill(32, 0xff)
		hmask[5], hmask[0] = 0xfe, 0x7f
		qs := make([]byte, 64)
		qs[37] = 0b11_10_01_00
		scales := []byte{0x08, 0x19, 0x2a, 0x3b, 0x4c, 0x5d, 0x6e, 0x7f, 0xa5, 0xa5, 0xa5, 0xa5}
		want := make([]float32, 256)
		want[5], want[224], want[165], want[197], want[229] = 16, -12, 1, 4, 9
		cs = append(cs, katCase{Q3_K, cat(hmask, qs, scales, h16(0.5)), want})
	}
	// Q4_K and Q5_K: d = 1, dmin = 0.5; group j has scale j+1 and minimum
	// 2j for j < 4, scale 40+j and minimum 50+j for j >= 4, packed by hand
	// (bytes 0-3: scale | (scale_{j+4}>>4)<<6 = 0x81..0x84; 4-7: min |
	// (min_{j+4}>>4)<<6 = 0xc0, 0xc2, 0xc4, 0xc6; 8-11: low nibbles of the
	// upper groups' scale and min). All quants 0 (x = -0.5·min) except
	// qs[35] = 0xa5 (element 67: group 2, 3·5-2 = 13; element 99: group 3,
	// 4·10-3 = 37) and qs[127] = 0x1f (element 223: group 6, 46·15-28 =
	// 662; element 255: group 7, 47·1-28.5 = 18.5).
	{
		scales := []byte{0x81, 0x82, 0x83, 0x84, 0xc0, 0xc2, 0xc4, 0xc6, 0x6c, 0x7d, 0x8e, 0x9f}
		mins := []float32{0, 2, 4, 6, 54, 55, 56, 57}
		qs := make([]byte, 128)
		qs[35], qs[127] = 0xa5, 0x1f
		want := make([]float32, 256)
		for e := range want {
			want[e] = -0.5 * mins[e/32]
		}
		want[67], want[99], want[223], want[255] = 13, 37, 662, 18.5
		cs = append(cs, katCase{Q4_K, cat(h16(1), h16(0.5), scales, qs), want})
		// Q5_K adds qh[3] = 0b0010_0100: bit 2 (pair 1, low half) sets the
		// fifth bit of element 67 (3·21-2 = 61), bit 5 (pair 2, high half)
		// that of element 163 (group 5: 45·16-27.5 = 692.5).
		qh := make([]byte, 32)
		qh[3] = 0b0010_0100
		want5 := append([]float32(nil), want...)
		want5[67], want5[163] = 61, 692.5
		cs = append(cs, katCase{Q5_K, cat(h16(1), h16(0.5), scales, qh, qs), want5})
	}
	// Q6_K: d = 0.5, group scales 2g-15. qh = 0xaa everywhere (top bits 2,
	// so q = 0) except qh[0] = 0b11_10_01_00; ql = 0 except ql[32] = 0x0f and
	// ql[71] = 0x3c. Element 0: q = 0|0<<4-32 = -32, group 0: 0.5·(-15)·(-32)
	// = 240; 32: q = 15|1<<4-32 = -1, group 2: 0.5·(-11)·(-1) = 5.5; 64: q =
	// 0; 96: q = 0|3<<4-32 = 16, group 6: 0.5·(-3)·16 = -24; 135: q =
	// 12|2<<4-32 = 12, group 8: 0.5·1·12 = 6; 199: q = 3, group 12:
	// 0.5·9·3 = 13.5.
	{
		ql := make([]byte, 128)
		ql[32], ql[71] = 0x0f, 0x3c
		qh := fill(64, 0xaa)
		qh[0] = 0b11_10_01_00
		sc := make([]byte, 16)
		for g := range sc {
			sc[g] = byte(int8(2*g - 15))
		}
		want := make([]float32, 256)
		want[0], want[32], want[96], want[135], want[199] = 240, 5.5, -24, 6, 13.5
		cs = append(cs, katCase{Q6_K, cat(ql, qh, sc, h16(0.5)), want})
	}
	return cs
}

func TestDequantizeKnownAnswers(t *testing.T) {
	for _, c := range katCases() {
		if len(c.block) != c.typ.BlockBytes() || len(c.want) != c.typ.BlockSize() {
			t.Fatalf("%s: test block has %d bytes and %d values", c.typ, len(c.block), len(c.want))
		}
		// Two blocks: the second a copy, so that block offsets are exercised.
		src := append(append([]byte(nil), c.block...), c.block...)
		got := make([]float32, 2*len(c.want))
		if err := Dequantize(c.typ, src, got); err != nil {
			t.Fatalf("%s: %v", c.typ, err)
		}
		for i, v := range got {
			if w := c.want[i%len(c.want)]; v != w {
				t.Errorf("%s: element %d = %g, want %g", c.typ, i, v, w)
			}
		}
	}
}

// TestQuantizeExactGrid re-encodes the known-answer blocks of the
// 32-element formats, whose values lie exactly on the grid the reference
// quantizer picks (their range or largest magnitude fixes d and m), so
// the bytes must come back identical.
func TestQuantizeExactGrid(t *testing.T) {
	for _, c := range katCases() {
		switch c.typ {
		case Q4_1, Q5_0, Q5_1:
		default:
			continue
		}
		b := make([]byte, c.typ.BlockBytes())
		if err := Quantize(c.typ, b, c.want); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, c.block) {
			t.Errorf("%s: quantized to % x, want % x", c.typ, b, c.block)
		}
	}
}
