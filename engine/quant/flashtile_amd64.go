//go:build amd64 && !noasm

package quant

// flashTileAsm selects the AVX-512 forms of the tiled flash attention's
// steps, flashSoftmaxAsm that of FlashSoftmax.
var flashTileAsm, flashSoftmaxAsm = hasFlashAVX512, hasFlashAVX512

//go:noescape
func flashScores4(s *float32, q *float32, ldq int, kt *float32, dk, rows int)

//go:noescape
func flashPV4(acc *float32, ldacc int, p *float32, v *float32, ldv, rows int)

//go:noescape
func flashSoftmax64(x *float32, m float32) float64

//go:noescape
func flashScaleMask64(x *float32, scale float32, lo, hi int) float32

//go:noescape
func flashLoadKT16(kt *float32, src *uint16, hd int)

//go:noescape
func flashLoadV16(dst *float32, src *uint16, stride, n, hd int)
