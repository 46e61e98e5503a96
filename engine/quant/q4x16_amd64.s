//go:build amd64 && !noasm

#include "textflag.h"

// PFD is how far ahead of the block being read the kernel prefetches the
// weights, for any number of activation rows. With eight rows the kernel
// computes long enough per block that, without software prefetch, memory
// and arithmetic took turns instead of overlapping (4864-wide products
// split in ranges, 64 MiB on two cores: 3.7-3.9 ms -> 2.7-2.9 ms). With
// one row (decode) the hardware prefetchers alone read 24-25 GB/s on a
// 2-core VM whose plain read stream gets 35; prefetching 2304 bytes ahead
// reads 30, while 3456 and more read less than none (23, 20 at 4608):
// decode in huge pages, one 768 MiB stream of 2048-wide groups. The hint
// is PREFETCHT2 (to L2, not L1): the prefetches then do not hold the
// core's few L1 fill buffers, and a 1B-shape Q4_0 decode ran 2-4 % faster
// in five alternated rounds (34.6-35.0 -> 35.7-36.0 tokens/s; prefill the
// same). The other x16 kernels were no faster with it (Q4_K 1-2 % slower).
// Each prefetch goes just before the load of the same offset, not all at
// the top of the block: bunched, they waited for fill buffers together
// and held the loop up (1B decode 35.3-37.1 -> 37.9-38.3 tokens/s, three
// alternated rounds).
#define PFD 2304

// The Q4_0x16 kernel (see q4x16.go for the layout) with AVX-512 VNNI.
// Per block, the four 64-byte quant chunks are split into their low
// nibbles (Z0-Z3: elements 4m..4m+3 of each row in lane i) and high
// nibbles (Z4-Z7: elements 16+4m..), unsigned 0..15. For each activation
// row, VPDPBUSD with four of its quants broadcast to all lanes adds four
// products to every row's lane, starting from the row's Q8_0Aux offset
// term −8·Σa, so each lane ends with the block's exact int32 sum of
// (q−8)·a; it is converted and fused-multiply-added with d_w·d_a into the
// row's float32 accumulator, block after block, as DotQ4_0Interleaved.
//
// Registers: DI weights; SI, R8 = SI+3·astride and R9 = SI+6·astride
// address the blocks of activation rows 0-7 with AX = astride, and R12,
// R13, R14 their aux words likewise with DX = auxstride in bytes; R11 is
// zero, the index of rows 0, 3 and 6; CX blocks left, BX activation rows
// (1 to 8). Z8-Z11 and Z14-Z17 are the accumulators of activation rows
// 0-7; Z12 the block's integer sums, Z13 its scales; Z20 the 16 weight
// scales; Z31 bytes 0x0f. With eight rows each block's weights are
// unpacked once for all of them, and a batch of eight reads the weights
// from memory once, with enough work per byte to hide the load.

// Q4X16ROW adds the activation block at act(ai), aux words at aux(xi), to
// acc.
#define Q4X16ROW(act, ai, aux, xi, acc) \
	VPBROADCASTD      (aux)(xi), Z12 \
	VPDPBUSD.BCST     2(act)(ai), Z0, Z12 \
	VPDPBUSD.BCST     6(act)(ai), Z1, Z12 \
	VPDPBUSD.BCST     10(act)(ai), Z2, Z12 \
	VPDPBUSD.BCST     14(act)(ai), Z3, Z12 \
	VPDPBUSD.BCST     18(act)(ai), Z4, Z12 \
	VPDPBUSD.BCST     22(act)(ai), Z5, Z12 \
	VPDPBUSD.BCST     26(act)(ai), Z6, Z12 \
	VPDPBUSD.BCST     30(act)(ai), Z7, Z12 \
	VCVTDQ2PS         Z12, Z12 \
	VMULPS.BCST       4(aux)(xi), Z20, Z13 \
	VFMADD231PS       Z13, Z12, acc

// LOADROW loads accumulator acc from the next destination row (DI += R10)
// when the kernel has more than k activation rows.
#define LOADROW(k, acc) \
	CMPQ    BX, $k \
	JLE     q4x16loaded \
	ADDQ    R10, DI \
	VMOVUPS (DI), acc

// STOREROW stores accumulator acc to the next destination row (DI += R10)
// when the kernel has more than k activation rows.
#define STOREROW(k, acc) \
	CMPQ    BX, $k \
	JLE     q4x16done \
	ADDQ    R10, DI \
	VMOVUPS acc, (DI)

// func q4x16AVX512VNNI(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int, accumulate bool)
TEXT ·q4x16AVX512VNNI(SB), NOSPLIT, $0-73
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), DI
	MOVQ a+16(FP), SI
	MOVQ astride+24(FP), AX
	LEAQ (AX)(AX*2), R10
	LEAQ (SI)(R10*1), R8
	LEAQ (R8)(R10*1), R9
	MOVQ aux+32(FP), R12
	MOVQ auxstride+40(FP), DX
	SHLQ $2, DX
	LEAQ (DX)(DX*2), R10
	LEAQ (R12)(R10*1), R13
	LEAQ (R13)(R10*1), R14
	MOVQ rows+48(FP), BX
	MOVL $0x0f0f0f0f, R11
	VPBROADCASTD R11, Z31
	XORQ R11, R11 // the zero index of rows 0, 3 and 6
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	MOVBQZX accumulate+72(FP), R10
	TESTQ R10, R10
	JZ    q4x16loop
	// Accumulate: start from dst's values instead of zero.
	MOVQ    dst+56(FP), DI
	MOVQ    dstride+64(FP), R10
	SHLQ    $2, R10
	VMOVUPS (DI), Z8
	LOADROW(1, Z9)
	LOADROW(2, Z10)
	LOADROW(3, Z11)
	LOADROW(4, Z14)
	LOADROW(5, Z15)
	LOADROW(6, Z16)
	LOADROW(7, Z17)

q4x16loaded:
	MOVQ w+8(FP), DI

q4x16loop:
	PREFETCHT2 PFD+0(DI)
	VCVTPH2PS 0(DI), Z20
	PREFETCHT2 PFD+64(DI)
	VMOVDQU64 32(DI), Z21
	VPANDD    Z31, Z21, Z0
	VPSRLW    $4, Z21, Z21
	VPANDD    Z31, Z21, Z4
	PREFETCHT2 PFD+128(DI)
	VMOVDQU64 96(DI), Z21
	VPANDD    Z31, Z21, Z1
	VPSRLW    $4, Z21, Z21
	VPANDD    Z31, Z21, Z5
	PREFETCHT2 PFD+192(DI)
	VMOVDQU64 160(DI), Z21
	VPANDD    Z31, Z21, Z2
	VPSRLW    $4, Z21, Z21
	VPANDD    Z31, Z21, Z6
	PREFETCHT2 PFD+256(DI)
	VMOVDQU64 224(DI), Z21
	VPANDD    Z31, Z21, Z3
	VPSRLW    $4, Z21, Z21
	VPANDD    Z31, Z21, Z7
	Q4X16ROW(SI, R11*1, R12, R11*1, Z8)
	CMPQ BX, $1
	JEQ  q4x16next
	Q4X16ROW(SI, AX*1, R12, DX*1, Z9)
	CMPQ BX, $2
	JEQ  q4x16next
	Q4X16ROW(SI, AX*2, R12, DX*2, Z10)
	CMPQ BX, $3
	JEQ  q4x16next
	Q4X16ROW(R8, R11*1, R13, R11*1, Z11)
	CMPQ BX, $4
	JEQ  q4x16next
	Q4X16ROW(SI, AX*4, R12, DX*4, Z14)
	CMPQ BX, $5
	JEQ  q4x16next
	Q4X16ROW(R8, AX*2, R13, DX*2, Z15)
	CMPQ BX, $6
	JEQ  q4x16next
	Q4X16ROW(R9, R11*1, R14, R11*1, Z16)
	CMPQ BX, $7
	JEQ  q4x16next
	Q4X16ROW(R8, AX*4, R13, DX*4, Z17)

q4x16next:
	ADDQ $288, DI
	ADDQ $34, SI
	ADDQ $34, R8
	ADDQ $34, R9
	ADDQ $8, R12
	ADDQ $8, R13
	ADDQ $8, R14
	DECQ CX
	JNZ  q4x16loop

	MOVQ dst+56(FP), DI
	MOVQ dstride+64(FP), R10
	SHLQ $2, R10
	VMOVUPS Z8, (DI)
	STOREROW(1, Z9)
	STOREROW(2, Z10)
	STOREROW(3, Z11)
	STOREROW(4, Z14)
	STOREROW(5, Z15)
	STOREROW(6, Z16)
	STOREROW(7, Z17)

q4x16done:
	VZEROUPPER
	RET

// Q4DBLOCK adds one block to Z8 for the activation row at SI and its aux
// words at R12: Z0-Z3 hold the block's low nibbles, Z4-Z7 its high ones,
// Z20 its 16 weight scales.
#define Q4DBLOCK(ablk, xblk) \
	VPBROADCASTD      xblk(R12), Z12 \
	VPDPBUSD.BCST     ablk+2(SI), Z0, Z12 \
	VPDPBUSD.BCST     ablk+6(SI), Z1, Z12 \
	VPDPBUSD.BCST     ablk+10(SI), Z2, Z12 \
	VPDPBUSD.BCST     ablk+14(SI), Z3, Z12 \
	VPDPBUSD.BCST     ablk+18(SI), Z4, Z12 \
	VPDPBUSD.BCST     ablk+22(SI), Z5, Z12 \
	VPDPBUSD.BCST     ablk+26(SI), Z6, Z12 \
	VPDPBUSD.BCST     ablk+30(SI), Z7, Z12 \
	VCVTDQ2PS         Z12, Z12 \
	VMULPS.BCST       xblk+4(R12), Z20, Z13 \
	VFMADD231PS       Z13, Z12, Z8

// Q4DSPLIT splits the 64 quant bytes in src into low nibbles (lo) and
// high nibbles (hi); src is clobbered.
#define Q4DSPLIT(src, lo, hi) \
	VPANDD Z31, src, lo \
	VPSRLW $4, src, src \
	VPANDD Z31, src, hi

// func q4x16DecodeAVX512VNNI(nb int, w *byte, a *byte, aux *uint32, dst *float32, accumulate bool, pfd int)
//
// The Q4_0x16 kernel for one activation row (decode), with the same sums
// as q4x16AVX512VNNI. A block is 288 bytes, four and a half cache lines,
// so every other block's quant chunks straddle two lines, and a load of
// each is two line reads. This kernel takes blocks in pairs from a
// 64-byte-aligned w: the pair's nine lines are each loaded once, aligned,
// and the first block's chunks are put together from neighbouring lines
// with VALIGNQ. An odd last block is read as q4x16AVX512VNNI reads it.
// Each line is prefetched to L2 pfd bytes ahead (R13; q4x16DecodeAhead).
TEXT ·q4x16DecodeAVX512VNNI(SB), NOSPLIT, $0-56
	MOVQ nb+0(FP), CX
	MOVQ pfd+48(FP), R13
	MOVQ w+8(FP), DI
	MOVQ a+16(FP), SI
	MOVQ aux+24(FP), R12
	MOVL $0x0f0f0f0f, R11
	VPBROADCASTD R11, Z31
	VPXORD Z8, Z8, Z8
	MOVQ dst+32(FP), R10
	MOVBQZX accumulate+40(FP), R11
	TESTQ R11, R11
	JZ    q4dstart
	VMOVUPS (R10), Z8

q4dstart:
	MOVQ CX, BX
	SHRQ $1, BX // pairs
	JZ   q4dtail

q4dpair:
	// First block: scales in line 0's low half, chunks across lines 0-4.
	PREFETCHT2 0(DI)(R13*1)
	VMOVDQU64  0(DI), Z21
	VCVTPH2PS  Y21, Z20
	PREFETCHT2 64(DI)(R13*1)
	VMOVDQU64  64(DI), Z22
	VALIGNQ    $4, Z21, Z22, Z21
	Q4DSPLIT(Z21, Z0, Z4)
	PREFETCHT2 128(DI)(R13*1)
	VMOVDQU64  128(DI), Z23
	VALIGNQ    $4, Z22, Z23, Z22
	Q4DSPLIT(Z22, Z1, Z5)
	PREFETCHT2 192(DI)(R13*1)
	VMOVDQU64  192(DI), Z24
	VALIGNQ    $4, Z23, Z24, Z23
	Q4DSPLIT(Z23, Z2, Z6)
	PREFETCHT2 256(DI)(R13*1)
	VMOVDQU64  256(DI), Z25
	VALIGNQ    $4, Z24, Z25, Z24
	Q4DSPLIT(Z24, Z3, Z7)
	Q4DBLOCK(0, 0)

	// Second block: scales in line 4's high half, chunks in lines 5-8.
	VCVTPH2PS  288(DI), Z20
	PREFETCHT2 320(DI)(R13*1)
	VMOVDQU64  320(DI), Z21
	Q4DSPLIT(Z21, Z0, Z4)
	PREFETCHT2 384(DI)(R13*1)
	VMOVDQU64  384(DI), Z22
	Q4DSPLIT(Z22, Z1, Z5)
	PREFETCHT2 448(DI)(R13*1)
	VMOVDQU64  448(DI), Z23
	Q4DSPLIT(Z23, Z2, Z6)
	PREFETCHT2 512(DI)(R13*1)
	VMOVDQU64  512(DI), Z24
	Q4DSPLIT(Z24, Z3, Z7)
	Q4DBLOCK(34, 8)

	ADDQ $576, DI
	ADDQ $68, SI
	ADDQ $16, R12
	DECQ BX
	JNZ  q4dpair

q4dtail:
	TESTQ $1, CX
	JZ    q4ddone
	VCVTPH2PS 0(DI), Z20
	VMOVDQU64 32(DI), Z21
	Q4DSPLIT(Z21, Z0, Z4)
	VMOVDQU64 96(DI), Z22
	Q4DSPLIT(Z22, Z1, Z5)
	VMOVDQU64 160(DI), Z23
	Q4DSPLIT(Z23, Z2, Z6)
	VMOVDQU64 224(DI), Z24
	Q4DSPLIT(Z24, Z3, Z7)
	Q4DBLOCK(0, 0)

q4ddone:
	VMOVUPS Z8, (R10)
	VZEROUPPER
	RET

// Q4SBLOCK adds block DI's of the group at (DI)(idx*sc) to acc, for the
// activation block at SI and its aux words at R12: prefetch, unpack and
// Q4DBLOCK's sums, as q4x16AVX512VNNI computes them.
#define Q4SBLOCK(idx, sc, acc) \
	PREFETCHT2        PFD+0(DI)(idx*sc) \
	VCVTPH2PS         0(DI)(idx*sc), Z20 \
	PREFETCHT2        PFD+64(DI)(idx*sc) \
	VMOVDQU64         32(DI)(idx*sc), Z21 \
	Q4DSPLIT(Z21, Z0, Z4) \
	PREFETCHT2        PFD+128(DI)(idx*sc) \
	VMOVDQU64         96(DI)(idx*sc), Z22 \
	Q4DSPLIT(Z22, Z1, Z5) \
	PREFETCHT2        PFD+192(DI)(idx*sc) \
	VMOVDQU64         160(DI)(idx*sc), Z23 \
	Q4DSPLIT(Z23, Z2, Z6) \
	PREFETCHT2        PFD+256(DI)(idx*sc) \
	VMOVDQU64         224(DI)(idx*sc), Z24 \
	Q4DSPLIT(Z24, Z3, Z7) \
	VPBROADCASTD      (R12), Z12 \
	VPDPBUSD.BCST     2(SI), Z0, Z12 \
	VPDPBUSD.BCST     6(SI), Z1, Z12 \
	VPDPBUSD.BCST     10(SI), Z2, Z12 \
	VPDPBUSD.BCST     14(SI), Z3, Z12 \
	VPDPBUSD.BCST     18(SI), Z4, Z12 \
	VPDPBUSD.BCST     22(SI), Z5, Z12 \
	VPDPBUSD.BCST     26(SI), Z6, Z12 \
	VPDPBUSD.BCST     30(SI), Z7, Z12 \
	VCVTDQ2PS         Z12, Z12 \
	VMULPS.BCST       4(R12), Z20, Z13 \
	VFMADD231PS       Z13, Z12, acc

// func q4x16Decode4AVX512VNNI(nb int, w *byte, stride int, a *byte, aux *uint32, dst *float32, dstride int)
//
// The Q4_0x16 kernel for one activation row over four groups stride bytes
// apart (four rows of 16 outputs, dstride floats apart), block by block
// in turn, with the same sums as q4x16AVX512VNNI. One stream of weights
// a core read about 35 GB/s on two cores of a VM whose plain read gets 37;
// four streams far enough apart (from 64 KiB) read what the plain read
// does: the hardware prefetchers follow each stream, and a core has
// misses of four streams in flight where one stream's prefetches queue
// behind each other.
TEXT ·q4x16Decode4AVX512VNNI(SB), NOSPLIT, $0-56
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), DI
	MOVQ stride+16(FP), R8
	LEAQ (R8)(R8*2), R9
	MOVQ a+24(FP), SI
	MOVQ aux+32(FP), R12
	XORQ R11, R11
	MOVL $0x0f0f0f0f, R10
	VPBROADCASTD R10, Z31
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11

q4sloop:
	Q4SBLOCK(R11, 1, Z8)
	Q4SBLOCK(R8, 1, Z9)
	Q4SBLOCK(R8, 2, Z10)
	Q4SBLOCK(R9, 1, Z11)
	ADDQ $288, DI
	ADDQ $34, SI
	ADDQ $8, R12
	DECQ CX
	JNZ  q4sloop

	MOVQ dst+40(FP), DI
	MOVQ dstride+48(FP), R10
	SHLQ $2, R10
	VMOVUPS Z8, (DI)
	VMOVUPS Z9, (DI)(R10*1)
	VMOVUPS Z10, (DI)(R10*2)
	LEAQ (R10)(R10*2), R10
	VMOVUPS Z11, (DI)(R10*1)
	VZEROUPPER
	RET
