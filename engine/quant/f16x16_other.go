//go:build !(amd64 || arm64) || noasm

package quant

// The F16x16 and BF16x16 layouts have no kernel here.
var f16x16Kernel, f16x16AccKernel, bf16x16Kernel, bf16x16AccKernel PackedKernel

// f16x16Decode and bf16x16Decode are never called here; half16DecodeGroups
// is their group count elsewhere.
var f16x16Decode, bf16x16Decode func(nb int, w []byte, groupBytes int, a []byte, dst []float32, accumulate bool)

const half16DecodeGroups = 4

// f16x16DecodeMulti and bf16x16DecodeMulti are never called here
// (f16x16DecodeRows and bf16x16DecodeRows are 0).
var f16x16DecodeMulti, bf16x16DecodeMulti func(nb int, w []byte, groupBytes int, a []byte, astride, rows int, dst []float32, dstride int, accumulate bool)

const f16x16DecodeRows, bf16x16DecodeRows = 0, 0

// f16x16Pair and bf16x16Pair are never called here: the F16x16 and
// BF16x16 layouts have no pair kernel.
var f16x16Pair, bf16x16Pair PairKernel
