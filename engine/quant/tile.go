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
