package quant

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// digestWant are the SHA-256 digests (first 8 bytes) of what
// formatDigest hashes for each type, recorded on amd64. The same digests
// on arm64 (make test-arm64 runs this under qemu) show that its
// quantizers, dequantizers, activation encoders and reference dot
// products give amd64's bits: Go may fuse float32 x*y+z there, which the
// package prevents with float32() conversions. A deliberate change to any
// of these functions changes its digest; record the new one then.
var digestWant = map[Type]string{
	F32:     "d5255e70b1c90b1c",
	F16:     "852e0fb8221bb68e",
	BF16:    "8c4555bf9faa67f1",
	Q8_0:    "e734e582955941b5",
	Q8_1:    "e45d92a5a07f8894",
	Q8_K:    "c255ed9268027821",
	Q6_K:    "eab744efce064e26",
	Q5_0:    "904b37437b6405cb",
	Q5_1:    "629971abdeb41733",
	Q5_K:    "c4cee7b19a7612c6",
	Q4_0:    "89805bb5ef9e4bff",
	Q4_1:    "3c2ab360a07c09ba",
	Q4_K:    "c947b9a88d685348",
	Q3_K:    "244877f583813627",
	Q2_K:    "aa55ff21c95fe7fc",
	IQ4_NL:  "ce7a3b4b7907bd71",
	IQ4_XS:  "4b1af642ee62ccc5",
	IQ3_S:   "ad09aa65aa3d0d5b",
	IQ3_XXS: "652afe5d4c3732ff",
	IQ2_S:   "57e9db3f129eb9ef",
	IQ1_M:   "c8b14934e7fd7a73",
}

// formatDigest hashes, for one type on fixed inputs, the quantized
// bytes, their dequantized values, the activation encoding of a second
// row and the reference dot products of the two's first 256, 512, ...
// elements.
func formatDigest(t *testing.T, typ Type) string {
	t.Helper()
	f := formats[typ]
	n := 8 * QKK
	rng := rand.New(rand.NewPCG(2026, uint64(typ)))
	x := randRow(rng, n, 1)
	for i := 0; i < n; i += 97 {
		x[i] *= 30 // outliers move the scales and minimums
	}
	h := sha256.New()
	w := make([]byte, must(typ.RowBytes(n)))
	if err := Quantize(typ, w, x); err != nil {
		t.Fatal(err)
	}
	h.Write(w)
	out := make([]float32, n)
	if err := Dequantize(typ, w, out); err != nil {
		t.Fatal(err)
	}
	for _, v := range out {
		h.Write(binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)))
	}
	if f.dot != nil {
		act := activationEncoder(t, f.vecDot)
		a := make([]byte, must(f.vecDot.RowBytes(n)))
		act(a, randRow(rng, n, 2))
		h.Write(a)
		// Several lengths, as one sum can hide a difference in rounding.
		for m := QKK; m <= n; m += QKK {
			h.Write(binary.LittleEndian.AppendUint32(nil, math.Float32bits(f.dot(m, w, a))))
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil)[:8])
}

// TestFormatDigests checks every format's digest against the one
// recorded on amd64.
func TestFormatDigests(t *testing.T) {
	for _, typ := range quantTypes {
		got := formatDigest(t, typ)
		if want, ok := digestWant[typ]; !ok {
			t.Errorf("%s: no recorded digest; this one is %s", typ, got)
		} else if got != want {
			t.Errorf("%s: digest %s, recorded on amd64 %s", typ, got, want)
		}
	}
}
