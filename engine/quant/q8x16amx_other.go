//go:build !amd64 || noasm

package quant

// The Q8_0x16AMX layout has no kernels here.
var (
	q8x16SumKernel  PackedKernel
	q8x16AMXTile    TileKernel
	q8x16SumStreams StreamKernel
)
