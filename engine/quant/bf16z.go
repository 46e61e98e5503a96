package quant

import (
	"errors"
	"fmt"
)

// BF16x16Z is a lossless compressed form of the BF16x16 layout, for the
// default mode's decode, which reads every weight once a token and is
// bound by memory: 12 bits a weight instead of 16 (3136 bytes for 2048
// weights, 0.766 of BF16x16), expanded in registers by its decode kernels
// (one to eight activation rows) and into BF16x16 blocks in L1 or L2 for
// the BF16x16 kernels otherwise. Expanding gives back the BF16x16 bytes
// exactly, and every product takes them in the BF16x16 kernels' order:
// the results are BF16x16's, bit for bit, whatever the batch.
//
// A bf16 value is a sign, an 8-bit exponent e and 7 mantissa bits; its low
// byte holds e's lowest bit and the mantissa, its high byte the sign and
// e>>1 (here "the exponent pair", 0..127). Within 512 weights (16 rows ×
// 32 columns) a trained model's weights use few exponent pairs: on the
// shared 19M llama 99.7 % of such sub-blocks hold at most eight, and no
// 128-column block has more than two weights outside its sub-blocks' eight
// most common pairs. So each weight keeps its low byte as it is and
// replaces its high byte by a 4-bit code, the sign and an index into its
// sub-block's table of eight exponent pairs; the few weights whose pair is
// not in the table are patched afterwards from a list of exact values.
//
// A matrix of rows (a multiple of 16) × cols (a multiple of 128) values is
// rows/16 groups; group g is cols/128 blocks of BF16x16ZBlockBytes, block
// b expanding to the four BF16x16 blocks of columns 128b..128b+127:
//
//	bytes 0..31    the exponent-pair tables of sub-blocks 0..3, 8 bytes each
//	byte 32        the number of patches, 0..7
//	bytes 36..63   7 patches of 4 bytes: the word's index in the expanded
//	               4096 bytes (uint16), then its bf16 value (uint16)
//	bytes 64+768s  sub-block s (the BF16x16 block of columns 128b+32s..+31),
//	               four runs of 192 bytes, run j expanding to the 256 bytes
//	               256j..256j+255 of that BF16x16 block: 64 low bytes L0,
//	               64 low bytes L1, and 64 bytes N of codes (low nibbles for
//	               the words of L0, high nibbles for those of L1)
//
// Within a run, in each 16-byte lane k (0..3) of L0 and N, bytes 16k+i for
// i < 8 stand for the 16-bit word 8k+i of the run's first 64 bytes and
// bytes 16k+8+i for that of its second 64 (the order of AVX-512's byte
// unpacks); L1 and N's high nibbles likewise for its third and fourth 64. A code c (0..15) stands
// for the high byte (c&8)<<4 | table[c&7].
const (
	BF16x16ZBlockSize  = 4 * QK
	BF16x16ZBlockBytes = bf16zHeaderBytes + 4*bf16zSubBytes

	bf16zHeaderBytes = 64
	bf16zSubBytes    = 768
	bf16zRunBytes    = 192
	bf16zMaxPatches  = 7
	bf16zPatchCount  = 32 // header offset of the patch count
	bf16zPatches     = 36 // header offset of the first patch
	bf16zExpanded    = 4 * F16x16BlockBytes
)

// ErrIncompressible is returned by RepackBF16x16Z for a matrix with a
// 128-column block that has more than 7 weights outside its sub-blocks'
// exponent tables: such a matrix stays BF16x16.
var ErrIncompressible = errors.New("quant: BF16 weights too spread in exponent for BF16x16Z")

// BF16x16ZBytes is the size of a rows × cols matrix in the BF16x16Z
// layout.
func BF16x16ZBytes(rows, cols int) int {
	return rows / Q4x16Rows * (cols / BF16x16ZBlockSize) * BF16x16ZBlockBytes
}

// RepackBF16x16Z writes the BF16 matrix src (rows × cols, GGUF layout)
// into dst in the BF16x16Z layout. rows must be a multiple of 16 and cols
// of 128; a matrix the layout cannot hold exactly returns
// ErrIncompressible.
func RepackBF16x16Z(dst, src []byte, rows, cols int) error {
	if rows%Q4x16Rows != 0 || cols%BF16x16ZBlockSize != 0 || rows <= 0 || cols <= 0 {
		return fmt.Errorf("quant: BF16x16Z repack of %d×%d: rows must be a multiple of %d and columns of %d", rows, cols, Q4x16Rows, BF16x16ZBlockSize)
	}
	if len(src) != rows*cols*2 || len(dst) != BF16x16ZBytes(rows, cols) {
		return fmt.Errorf("quant: BF16x16Z repack of %d×%d: have %d and %d bytes, want %d and %d", rows, cols, len(src), len(dst), rows*cols*2, BF16x16ZBytes(rows, cols))
	}
	var words [4][F16x16BlockBytes / 2]uint16 // a block's four sub-blocks in BF16x16 word order
	nb := cols / BF16x16ZBlockSize
	for g := range rows / Q4x16Rows {
		for b := range nb {
			for i := range Q4x16Rows {
				in := src[((g*Q4x16Rows+i)*cols+b*BF16x16ZBlockSize)*2:][:2*BF16x16ZBlockSize]
				for s := range 4 {
					ws := &words[s]
					for p := range QK / 2 { // columns 2p and 2p+1 of row i: BF16x16 words 32p+2i, 32p+2i+1
						v := le.Uint32(in[4*(QK/2*s+p):])
						ws[32*p+2*i], ws[32*p+2*i+1] = uint16(v), uint16(v>>16)
					}
				}
			}
			if err := encodeBF16zBlock(dst[(g*nb+b)*BF16x16ZBlockBytes:][:BF16x16ZBlockBytes], &words); err != nil {
				return fmt.Errorf("%w (rows %d–%d, columns %d–%d)", err, g*Q4x16Rows, g*Q4x16Rows+15, b*BF16x16ZBlockSize, b*BF16x16ZBlockSize+BF16x16ZBlockSize-1)
			}
		}
	}
	return nil
}

// bf16zWord returns, for word w (0..511) of a BF16x16 block, the run and
// the byte of the run's L0/L1/N it is stored at, and whether it is in L1
// (and the high nibble of N).
func bf16zWord(w int) (run, pos int, hi bool) {
	run, w = w/128, w%128
	z, w := w/32, w%32 // which 64 bytes of the run's 256
	k, i := w/8, w%8
	return run, 16*k + 8*(z%2) + i, z >= 2
}

// encodeBF16zBlock writes the BF16x16Z block of the four BF16x16 blocks
// whose words are in words.
func encodeBF16zBlock(out []byte, words *[4][F16x16BlockBytes / 2]uint16) error {
	patches := 0
	for s := range 4 {
		blk := &words[s]
		// Four histograms, so that runs of one exponent do not wait on
		// each other's increments.
		var counts [4][128]int32
		for w := 0; w < len(blk); w += 4 {
			counts[0][blk[w]>>8&0x7f]++
			counts[1][blk[w+1]>>8&0x7f]++
			counts[2][blk[w+2]>>8&0x7f]++
			counts[3][blk[w+3]>>8&0x7f]++
		}
		var count [128]int32
		for e := range count {
			count[e] = counts[0][e] + counts[1][e] + counts[2][e] + counts[3][e]
		}
		// The table: the eight most common exponent pairs (ties broken by
		// a fixed rule), slots for pairs not in the sub-block left 0.
		var seen [128]uint8
		n := 0
		for e, c := range count {
			if c > 0 {
				seen[n] = uint8(e)
				n++
			}
		}
		var slot [128]int8
		for i := range slot {
			slot[i] = -1
		}
		table := out[8*s:][:8]
		clear(table)
		for t := range min(n, len(table)) {
			best := t
			for j := t + 1; j < n; j++ {
				if count[seen[j]] > count[seen[best]] {
					best = j
				}
			}
			seen[t], seen[best] = seen[best], seen[t]
			table[t], slot[seen[t]] = seen[t], int8(t)
		}
		sub := out[bf16zHeaderBytes+s*bf16zSubBytes:][:bf16zSubBytes]
		if n <= len(table) {
			// Every pair is in the table: no patches.
			var codes [128]byte
			for i := range codes {
				codes[i] = 0x80
			}
			for t, e := range table[:n] {
				codes[e] = byte(t)
			}
			if bf16zEncodeFast(blk, &codes, sub) {
				continue
			}
		}
		// Each step writes the four words of lane position (run, k, i):
		// words 128·run + 32z + 8k + i for z = 0..3.
		for run := range 4 {
			r := sub[run*bf16zRunBytes:][:bf16zRunBytes]
			for k := range 4 {
				for i := range 8 {
					w := 128*run + 8*k + i
					var c [4]byte
					for z := range 4 {
						v := blk[w+32*z]
						t := slot[v>>8&0x7f]
						if t < 0 {
							if patches == bf16zMaxPatches {
								return ErrIncompressible
							}
							p := out[bf16zPatches+4*patches:]
							le.PutUint16(p, uint16(s*F16x16BlockBytes/2+w+32*z))
							le.PutUint16(p[2:], v)
							patches++
							t = 0
						}
						c[z] = byte(v>>15)<<3 | byte(t)
					}
					pos := 16*k + i
					r[pos], r[pos+8] = byte(blk[w]), byte(blk[w+32])
					r[64+pos], r[64+pos+8] = byte(blk[w+64]), byte(blk[w+96])
					r[128+pos], r[128+pos+8] = c[0]|c[2]<<4, c[1]|c[3]<<4
				}
			}
		}
	}
	out[bf16zPatchCount] = byte(patches)
	clear(out[bf16zPatchCount+1 : bf16zPatches])
	clear(out[bf16zPatches+4*patches : bf16zHeaderBytes])
	return nil
}

// ExpandBF16x16Z writes the BF16x16 bytes of nb consecutive BF16x16Z
// blocks of one group (src) to dst (nb·4096 bytes): the pure-Go form of
// the expansion the kernels run, and the oracle of their tests. A block
// whose patch count or positions are out of range (not a repack's output)
// panics.
func ExpandBF16x16Z(dst, src []byte, nb int) {
	_ = src[nb*BF16x16ZBlockBytes-1]
	_ = dst[nb*bf16zExpanded-1]
	for b := range nb {
		in := src[b*BF16x16ZBlockBytes:][:BF16x16ZBlockBytes]
		out := dst[b*bf16zExpanded:][:bf16zExpanded]
		for s := range 4 {
			table := in[8*s:][:8]
			sub := in[bf16zHeaderBytes+s*bf16zSubBytes:][:bf16zSubBytes]
			for w := range F16x16BlockBytes / 2 {
				run, pos, hi := bf16zWord(w)
				r := sub[run*bf16zRunBytes:][:bf16zRunBytes]
				lo, code := r[pos], r[128+pos]&0x0f
				if hi {
					lo, code = r[64+pos], r[128+pos]>>4
				}
				o := s*F16x16BlockBytes + 2*w
				out[o], out[o+1] = lo, code&8<<4|table[code&7]
			}
		}
		n := int(in[bf16zPatchCount])
		if n > bf16zMaxPatches {
			panic(fmt.Sprintf("quant: BF16x16Z block with %d patches", n))
		}
		for p := range n {
			e := in[bf16zPatches+4*p:]
			le.PutUint16(out[2*int(le.Uint16(e)):], le.Uint16(e[2:]))
		}
	}
}
