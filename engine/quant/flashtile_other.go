//go:build !(amd64 || arm64) || noasm

package quant

// flashTileAsm and flashSoftmaxAsm are false: the tiled flash attention's
// steps run the references.
const flashTileAsm, flashSoftmaxAsm = false, false

func flashScores4(s *float32, q *float32, ldq int, kt *float32, dk, rows int) {
	panic("quant: no flashScores4 here")
}

func flashPV4(acc *float32, ldacc int, p *float32, v *float32, ldv, rows int) {
	panic("quant: no flashPV4 here")
}

func flashSoftmax64(x *float32, m float32) float64 { panic("quant: no flashSoftmax64 here") }

func flashScaleMask64(x *float32, scale float32, lo, hi int) float32 {
	panic("quant: no flashScaleMask64 here")
}

func flashLoadKT16(kt *float32, src *uint16, hd int) { panic("quant: no flashLoadKT16 here") }

func flashLoadV16(dst *float32, src *uint16, stride, n, hd int) {
	panic("quant: no flashLoadV16 here")
}
