package quant

// TileDotFunc computes a tile of dot products: dst[r·dstride+i] =
// dot(n, w[i·wstride:], a[r·astride:]) for four weight rows i and rows
// (1 to 4) activation rows r (in the weight type's dot-product format),
// so that dst can be a row-major output matrix. Loading each activation
// block once for four weight rows and each weight block once for four
// activation rows is what makes prefill and batched decode
// compute-bound. Results must equal the single-row DotFunc bit for bit.
type TileDotFunc func(n int, w []byte, wstride int, a []byte, astride, rows int, dst []float32, dstride int)

// TileRows is the number of weight rows and of activation rows in a tile.
const TileRows = 4

// acceleratedTile holds the tile kernels chosen at start-up, like
// accelerated; most types have none.
var acceleratedTile = map[Type]TileDotFunc{}

// TileDotFor returns the tile kernel of weight type t, or nil when this
// CPU has none for it (MultiDotFor is then the fastest form).
func TileDotFor(t Type) TileDotFunc { return acceleratedTile[t] }

// interleavedTile holds the tile kernels of InterleavedTileFor.
var interleavedTile = map[Type]TileDotFunc{}

// InterleavedTileFor returns a tile kernel of weight type t that sums in
// the order of llama.cpp's repacked ("interleaved") x86 kernels, or nil
// when this CPU has none. llama.cpp repacks a Q4_0 weight whose row count
// is a multiple of 8 and that only multiplies matrices (not the token
// embedding table) on every AVX2 machine; its kernels then add each
// block's whole integer sum, times d_w·d_a, into one float32 per output
// with a fused multiply-add, block after block (DotQ4_0Interleaved), and
// not in the eight lanes of its vector dot product. A model that must
// reproduce llama.cpp's tokens uses this order for those weights.
func InterleavedTileFor(t Type) TileDotFunc { return interleavedTile[t] }

// DotQ4_0Interleaved is the reference of the interleaved order: the dot
// product of Q4_0 weights w with Q8_0 activations a (n elements).
func DotQ4_0Interleaved(n int, w, a []byte) float32 {
	var acc float32
	for b := 0; b < n/QK; b++ {
		x := w[b*q4_0Bytes : (b+1)*q4_0Bytes : (b+1)*q4_0Bytes]
		y := a[b*q8_0Bytes : (b+1)*q8_0Bytes : (b+1)*q8_0Bytes]
		var sum int32
		for i := range 16 {
			sum += (int32(x[2+i]&0xf)-8)*int32(int8(y[2+i])) + (int32(x[2+i]>>4)-8)*int32(int8(y[18+i]))
		}
		acc = fma32(float32(sum), f16At(x)*f16At(y), acc)
	}
	return acc
}
