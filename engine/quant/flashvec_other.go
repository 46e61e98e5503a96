//go:build !amd64 || noasm

package quant

// The functions of flashvec_amd64.go have no vector paths here.

func dotHalfVector(x, y []uint16, np int) (float32, bool) { return 0, false }
func madHalfVector(y, x []uint16, v float32) int          { return 0 }
func scaleHalfVector(y []uint16, v float32) int           { return 0 }
func swigluVector(dst, g, u []float32) int                { return 0 }

// hasFlashAVX512 is false here, so FlashKeys never calls the stubs below.
const hasFlashAVX512 = false

func dotHalf64(n int, x, y *uint16) float32    { panic("quant: no vector dotHalf64") }
func madHalf16(n int, y, x *uint16, v float32) { panic("quant: no vector madHalf16") }
func scaleHalf16(n int, y *uint16, v float32)  { panic("quant: no vector scaleHalf16") }
func dotHalf64Keys(hd int, k *uint16, kstride int, q *uint16, n int, scale float32, out *float32) {
	panic("quant: no vector dotHalf64Keys")
}
func flashMad64(hd int, acc, v *uint16, vstride int, ms, vs *float32, n int) {
	panic("quant: no vector flashMad64")
}

func dotHalf64KeysHeads(hd int, k *uint16, kstride int, q *uint16, heads, n int, scale float32, out *float32) {
	panic("quant: no vector dotHalf64KeysHeads")
}
func flashMad64Heads(hd int, acc, v *uint16, vstride int, ms, vs *float32, n, heads int) {
	panic("quant: no vector flashMad64Heads")
}

func dotF16F32x16(n int, w *uint16, a *float32) float32 { panic("quant: no vector dotF16F32x16") }
