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

// InterleavedTileFor returns a tile kernel of weight type t (Q4_0, Q8_0 or
// IQ4_NL) that sums in the order of llama.cpp's repacked and AMX kernels,
// or nil when this CPU has none. llama.cpp repacks a Q4_0 weight whose row
// count is a multiple of 8 and that only multiplies matrices (not the
// token embedding table) on every AVX2 machine, and on CPUs with AMX-INT8
// it computes Q4_0 and Q8_0 matrices of rows and columns in multiples of
// 32 with its AMX kernels. Both add each block's whole integer sum, times
// d_w·d_a, into one float32 per output with a fused multiply-add, block
// after block (DotQ4_0Interleaved, DotQ8_0Interleaved), not in the eight
// lanes of the vector dot product. A model that must reproduce llama.cpp's
// tokens uses this order for those weights.
func InterleavedTileFor(t Type) TileDotFunc { return interleavedTile[t] }

// InterleavedTileReference returns the pure-Go form of the interleaved
// order's tile for Q4_0, Q8_0 or IQ4_NL (nil for other types): slow, for CPUs
// without the kernel when that order is asked for.
func InterleavedTileReference(t Type) TileDotFunc {
	var dot DotFunc
	switch t {
	case Q4_0:
		dot = DotQ4_0Interleaved
	case Q8_0:
		dot = DotQ8_0Interleaved
	case IQ4_NL:
		dot = DotIQ4_NLInterleaved
	default:
		return nil
	}
	return func(n int, w []byte, wstride int, a []byte, astride, rows int, dst []float32, dstride int) {
		for i := range TileRows {
			for r := range rows {
				dst[r*dstride+i] = dot(n, w[i*wstride:], a[r*astride:])
			}
		}
	}
}

// DotQ8_0Interleaved is the reference of the interleaved order for Q8_0
// weights against Q8_0 activations (n elements).
func DotQ8_0Interleaved(n int, w, a []byte) float32 {
	var acc float32
	for b := 0; b < n/QK; b++ {
		x := w[b*q8_0Bytes : (b+1)*q8_0Bytes : (b+1)*q8_0Bytes]
		y := a[b*q8_0Bytes : (b+1)*q8_0Bytes : (b+1)*q8_0Bytes]
		var sum int32
		for i := range 32 {
			sum += int32(int8(x[2+i])) * int32(int8(y[2+i]))
		}
		acc = fma32(float32(sum), f16At(x)*f16At(y), acc)
	}
	return acc
}

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

// DotF16AMX is the order of llama.cpp's kernel for F16 matrices on CPUs
// with AMX (tinygemm_kernel_avx): F16 weights w against float32
// activations a (not rounded to f16), n values (a multiple of 16), in 16
// float32 lanes of fused multiply-adds added across at the end as
// _mm512_reduce_add_ps adds (halves of 8, of 4, then pairs).
func DotF16AMX(n int, w, a []byte) float32 {
	x, y := u16View(w)[:n], f32View(a)[:n]
	if hasFlashAVX512 && n > 0 {
		return dotF16F32x16(n, &x[0], &y[0])
	}
	var acc [16]float32
	for k := 0; k+16 <= n; k += 16 {
		for l := range 16 {
			acc[l] = fma32(y[k+l], halfTable[x[k+l]], acc[l])
		}
	}
	var t [8]float32
	for l := range 8 {
		t[l] = acc[8+l] + acc[l]
	}
	t0, t1, t2, t3 := t[4]+t[0], t[5]+t[1], t[6]+t[2], t[7]+t[3]
	return (t0 + t2) + (t1 + t3)
}

// TileF16AMX is DotF16AMX as a TileDotFunc (activation rows of float32).
// With AVX-512 and two or more activation rows, the TileRows×rows pairs
// accumulate side by side (tileF16F32x16), each pair in its own 16 lanes
// in DotF16AMX's order and reduced as it reduces, so the results are the
// same bits: one pair's chain of dependent FMAs left the FMA units
// waiting, so that a decode step of a few tokens (several sequences, or a
// speculative draft being verified) cost nearly as much per token as one
// token alone. One activation row keeps the pair at a time: its single
// stream of weights reads memory faster than four side by side.
func TileF16AMX(n int, w []byte, wstride int, a []byte, astride, rows int, dst []float32, dstride int) {
	if hasFlashAVX512 && hasTileF16 && n > 0 && n%16 == 0 && wstride%2 == 0 && astride%4 == 0 && rows >= 2 && rows <= TileRows {
		_ = w[(TileRows-1)*wstride+2*n-1]
		_ = a[(rows-1)*astride+4*n-1]
		_ = dst[(rows-1)*dstride+TileRows-1]
		tileF16F32x16(n, &u16View(w)[0], wstride/2, &f32View(a)[0], astride/4, rows, &dst[0], dstride)
		return
	}
	for i := range TileRows {
		for r := range rows {
			dst[r*dstride+i] = DotF16AMX(n, w[i*wstride:], a[r*astride:])
		}
	}
}
