//go:build amd64 && !noasm

package quant

import (
	"math/rand/v2"
	"testing"
)

// TestDecodeIQ3_SAVX512 checks the panel's vector decoder of IQ3_S blocks
// against decodeIQ3_S on random bytes (every index, qh and sign pattern
// occurs), a block of all ones and one of all zeros: quants and scales
// alike.
func TestDecodeIQ3_SAVX512(t *testing.T) {
	if iqPanelKernel == nil {
		t.Skip("no i-quant panel kernel on this CPU")
	}
	rng := rand.New(rand.NewPCG(5, 8))
	blocks := [][]byte{make([]byte, iq3_SBytes), make([]byte, iq3_SBytes)}
	for i := range blocks[1] {
		blocks[1][i] = 0xff
	}
	for range 2000 {
		x := make([]byte, iq3_SBytes)
		for i := range x {
			x[i] = byte(rng.Uint32())
		}
		blocks = append(blocks, x)
	}
	for n, x := range blocks {
		var want, got iqBlock
		dw, dg := decodeIQ3_S(x, &want), decodeIQ3_SAVX512(x, &got)
		if want.q != got.q {
			for e := range want.q {
				if want.q[e] != got.q[e] {
					t.Fatalf("block %d: quant %d is %d, want %d", n, e, got.q[e], want.q[e])
				}
			}
		}
		if want.sc != got.sc || dw != dg && dw == dw {
			t.Fatalf("block %d: scales %v (d %v), want %v (d %v)", n, got.sc, dg, want.sc, dw)
		}
	}
}
