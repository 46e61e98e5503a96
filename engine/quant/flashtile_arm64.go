//go:build arm64 && !noasm

package quant

import "golang.org/x/sys/cpu"

// flashTileAsm selects the NEON forms of FlashScores, FlashPV, FlashLoadKT
// and FlashLoadV (f16x16_arm64.s); FlashSoftmax and FlashScaleMask run
// their Go forms here.
var flashTileAsm = cpu.ARM64.HasASIMD

const flashSoftmaxAsm = false

//go:noescape
func flashScores4(s *float32, q *float32, ldq int, kt *float32, dk, rows int)

//go:noescape
func flashPV4(acc *float32, ldacc int, p *float32, v *float32, ldv, rows int)

//go:noescape
func flashLoadKT16(kt *float32, src *uint16, hd int)

//go:noescape
func flashLoadV16(dst *float32, src *uint16, stride, n, hd int)

func flashSoftmax64(x *float32, m float32) float64 { panic("quant: no flashSoftmax64 here") }

func flashScaleMask64(x *float32, scale float32, lo, hi int) float32 {
	panic("quant: no flashScaleMask64 here")
}
