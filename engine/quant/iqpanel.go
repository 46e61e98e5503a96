package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"unsafe"
)

// The grid i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S) cost most
// of their time decoding: a weight is a grid point looked up by index,
// signed bit by bit and scaled per 16. Their vector dot products decode a
// weight block once for up to four activation rows, which leaves prompts
// at a third of llama.cpp's speed (it decodes weights into int8 panels
// for batches of eight tokens or more: ggml-cpu/iqp.cpp). IQGridPacked is
// the same idea in the vector products' own order: the layout is the GGUF
// layout itself (no copy: a group of 16 rows is contiguous there), a
// prompt's tile kernel decodes each group of 16 rows once per call into
// an int8 panel (IQGridPanelBlockBytes a super-block) and multiplies it
// with every activation row of the call, and fewer rows take the vector
// kernels. Both compute every output exactly as the vector dot product
// does — eight float32 lanes (lane u: the elements 4u..4u+3 of each run of
// 32), the exact integer Σ scale·q·a of each lane fused-multiply-added
// with d_w·d_a per super-block, the lanes added as hsum8 and multiplied by
// the type's factor — so every batch size gives the same bits, in both
// modes.

// IQGridPanelBlockBytes is the size of one super-block of 16 rows in the
// decoded panel:
//
//	bytes     0..63     the rows' d as float32
//	bytes    64..1087   16 scale vectors: vector g holds group g's
//	                    integer scale of row i in word 2i (word 2i+1 zero)
//	bytes  1088..5183   64 weight chunks: chunk 8c+u holds row i's
//	                    quants 32c+4u..32c+4u+3 (int8) at 4i..4i+3
//	bytes  5184..9279   64 correction vectors: vector 8c+u holds −128 ×
//	                    the sum of those four quants of row i (int32)
//
// The kernel multiplies the activation quants + 128 (unsigned, from the
// aux words) by the signed quants with VPDPBUSD, starting from the
// correction, which leaves Σ q·a.
const IQGridPanelBlockBytes = 64 + 16*64 + 64*64 + 64*64

// IQGridPanelAuxWords is the number of uint32 words IQGridPanelAux writes
// per block: the block's 256 activation quants + 128, as bytes.
const IQGridPanelAuxWords = 64

// iqGridPanelTileRows is the most activation rows one call of the panel's
// tile kernel takes: a prompt pass (256 tokens by default) decodes each
// group's panel once.
const iqGridPanelTileRows = 512

// iqGridPanelFrom is the fewest activation rows that take the panel: below
// it the decode of a panel costs more than the vector kernels' own.
const iqGridPanelFrom = 16

// decodeIQ3_SPanel is the panel's IQ3_S block decoder: decodeIQ3_S, or
// one with the same results in vector instructions (useIQPanel). (The
// same for IQ3_XXS, whose signs come from 7-bit codes, decoded its blocks
// 28 % faster in BenchmarkIQGridPanel and its prompts no faster: not kept.)
var decodeIQ3_SPanel = decodeIQ3_S

// iqGridType is what the panel needs of a grid type.
type iqGridType struct {
	bytes  int     // GGUF block bytes
	factor float32 // the vector dot product's final factor
	decode func(x []byte, b *iqBlock) float32
}

// iqGridTypeOf returns what the panel needs of t, and whether t is a grid
// type it holds.
func iqGridTypeOf(t Type) (iqGridType, bool) {
	switch t {
	case IQ2_XXS:
		return iqGridType{iq2_XXSBytes, 0.125, decodeIQ2_XXS}, true
	case IQ2_XS:
		return iqGridType{iq2_XSBytes, 0.125, decodeIQ2_XS}, true
	case IQ2_S:
		return iqGridType{iq2_SBytes, 0.125, decodeIQ2_S}, true
	case IQ3_XXS:
		return iqGridType{iq3_XXSBytes, 0.25, decodeIQ3_XXS}, true
	case IQ3_S:
		return iqGridType{iq3_SBytes, 1, decodeIQ3_SPanel}, true
	}
	return iqGridType{}, false
}

// IQGridPacked returns the panel layout of grid i-quant t where this CPU
// has its kernel, or nil.
func IQGridPacked(t Type) *Packed {
	g, ok := iqGridTypeOf(t)
	if !ok || iqPanelKernel == nil {
		return nil
	}
	multi, err := MultiDotFor(t)
	if err != nil {
		return nil
	}
	bb := Q4x16Rows * g.bytes
	vec := func(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
		iqGridVecRows(multi, g, nb, w, a, astride, rows, dst, dstride)
	}
	tile := func(nb int, w []byte, groupBytes, groups int, a []byte, astride int, aux []uint32, auxstride, rows int, dst []float32, dstride int, accumulate bool) {
		if accumulate {
			panic("quant: the i-quant panel does not accumulate")
		}
		iqGridPanelTile(g, nb, w, groupBytes, groups, a, astride, aux, auxstride, rows, dst, dstride)
	}
	return &Packed{Name: t.String() + "x16", Act: Q8_K, BlockSize: QKK, BlockBytes: bb, AuxWords: IQGridPanelAuxWords,
		Aux: IQGridPanelAux, Kernel: vec, Tile: tile, TileRows: iqGridPanelTileRows, TileFrom: iqGridPanelFrom}
}

// iqGridVecRows is the layout's kernel for few activation rows: the vector
// dot product of each of the group's 16 rows (GGUF layout, nb blocks each).
func iqGridVecRows(multi MultiDotFunc, g iqGridType, nb int, w []byte, a []byte, astride int, rows int, dst []float32, dstride int) {
	rb := nb * g.bytes
	_ = w[Q4x16Rows*rb-1]
	_ = a[(rows-1)*astride+nb*q8_KBytes-1]
	_ = dst[(rows-1)*dstride+Q4x16Rows-1]
	var out [MaxMultiRows]float32
	for r0 := 0; r0 < rows; r0 += MaxMultiRows {
		m := min(MaxMultiRows, rows-r0)
		for i := range Q4x16Rows {
			multi(nb*QKK, w[i*rb:(i+1)*rb], a[r0*astride:], astride, out[:m])
			for r := range m {
				dst[(r0+r)*dstride+i] = out[r]
			}
		}
	}
}

// IQGridPanelAux writes, for each block of the Q8_K activation row a, its
// 256 quants + 128 (bytes, four to a word): the unsigned operand of the
// panel kernel's VPDPBUSD.
func IQGridPanelAux(aux []uint32, a []byte) {
	nb := len(a) / q8_KBytes
	aux = aux[:IQGridPanelAuxWords*nb]
	for b := range nb {
		q := a[b*q8_KBytes+4:][:QKK]
		for k := range 64 {
			aux[IQGridPanelAuxWords*b+k] = binary.LittleEndian.Uint32(q[4*k:]) ^ 0x80808080
		}
	}
}

// decodeIQGridPanel decodes the 16 rows of nb blocks at w (GGUF layout,
// rows one after the other) into panel.
func decodeIQGridPanel(g iqGridType, nb int, w []byte, panel []byte) {
	rb := nb * g.bytes
	var blks [Q4x16Rows]iqBlock
	q := unsafe.Slice((*byte)(unsafe.Pointer(&blks[0].q[0])), unsafe.Sizeof(blks))
	stride := int(unsafe.Sizeof(blks[0]))
	for b := range nb {
		p := panel[b*IQGridPanelBlockBytes:][:IQGridPanelBlockBytes]
		for i := range Q4x16Rows {
			row := w[i*rb+b*g.bytes:][:g.bytes]
			d := g.decode(row, &blks[i])
			binary.LittleEndian.PutUint32(p[4*i:], math.Float32bits(d))
			for s := range 16 {
				binary.LittleEndian.PutUint32(p[64+64*s+4*i:], uint32(blks[i].sc[s]))
			}
		}
		if iqPanelKernel != nil {
			iqPanelTranspose(q, stride, p)
		} else {
			panelTransposeGo(q, stride, p)
		}
	}
}

// panelTransposeGo is iqPanelTranspose in Go.
func panelTransposeGo(q []byte, stride int, p []byte) {
	for i := range Q4x16Rows {
		for k := range 64 {
			v := binary.LittleEndian.Uint32(q[i*stride+4*k:])
			binary.LittleEndian.PutUint32(p[1088+64*k+4*i:], v)
			x := v ^ 0x80808080 // each byte + 128: the sum of the signed bytes + 512
			sum := int32(x&0xff+x>>8&0xff+x>>16&0xff+x>>24) - 512
			binary.LittleEndian.PutUint32(p[5184+64*k+4*i:], uint32(-128*sum))
		}
	}
}

// iqGridPanels holds the workers' panel buffers (scratch only: a tile
// call takes one, decodes into it and gives it back).
var iqGridPanels sync.Pool

// iqGridPanelTile is the layout's tile kernel: for each of groups groups
// (groupBytes apart), the group's panel, then its products with rows
// activation rows, four at a time.
func iqGridPanelTile(g iqGridType, nb int, w []byte, groupBytes, groups int, a []byte, astride int, aux []uint32, auxstride, rows int, dst []float32, dstride int) {
	if rows < 1 || groups < 1 || nb < 1 {
		panic(fmt.Sprintf("quant: i-quant panel of %d groups × %d blocks × %d activation rows", groups, nb, rows))
	}
	_ = w[(groups-1)*groupBytes+Q4x16Rows*nb*g.bytes-1]
	_ = a[(rows-1)*astride+nb*q8_KBytes-1]
	_ = aux[(rows-1)*auxstride+IQGridPanelAuxWords*nb-1]
	_ = dst[(rows-1)*dstride+groups*Q4x16Rows-1]
	need := nb * IQGridPanelBlockBytes
	bp, _ := iqGridPanels.Get().(*[]byte)
	if bp == nil || cap(*bp) < need {
		b := make([]byte, need)
		bp = &b
	}
	panel := (*bp)[:need]
	for k := range groups {
		decodeIQGridPanel(g, nb, w[k*groupBytes:], panel)
		iqPanelKernel(nb, panel, a, astride, aux, auxstride, rows, dst[k*Q4x16Rows:], dstride, g.factor)
	}
	iqGridPanels.Put(bp)
}

// IQGridPanelReference is the pure-Go form of the panel kernel: the
// products of the panel (nb blocks) with rows activation rows, in the
// vector dot product's order.
func IQGridPanelReference(nb int, panel []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int, factor float32) {
	for r := range rows {
		var acc [Q4x16Rows][8]float32
		for b := range nb {
			p := panel[b*IQGridPanelBlockBytes:][:IQGridPanelBlockBytes]
			y := a[r*astride+b*q8_KBytes:][:q8_KBytes]
			da := f32At(y)
			for i := range Q4x16Rows {
				d := math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:])) * da
				for u := range 8 {
					var l int32
					for c := range 8 {
						k := 8*c + u
						t := int32(binary.LittleEndian.Uint32(p[5184+64*k+4*i:]))
						ya := aux[r*auxstride+IQGridPanelAuxWords*b+k]
						for e := range 4 {
							t += int32(int8(p[1088+64*k+4*i+e])) * int32(uint8(ya>>(8*e)))
						}
						l += int32(binary.LittleEndian.Uint32(p[64+64*(2*c+u/4)+4*i:])) * t
					}
					acc[i][u] = fma32(d, float32(l), acc[i][u])
				}
			}
		}
		for i := range Q4x16Rows {
			dst[r*dstride+i] = factor * hsum8(&acc[i])
		}
	}
}
