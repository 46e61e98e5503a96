//go:build !amd64 || noasm

package quant

// The BF16x16 layout has no AMX kernel here.
var bf16x16AMX TileKernel

// amxTiles is false: there are no AMX tiles here.
func amxTiles() bool { return false }
