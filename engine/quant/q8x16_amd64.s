//go:build amd64 && !noasm

#include "textflag.h"
#include "packed_amd64.h"

// PFD is how far ahead of the block being read the weights are
// prefetched, for one or two rows (see q4x16_amd64.s): one-row decode read
// 23 GB/s without it on a 2-core VM, 29-31 with it at 1152-3456 bytes;
// in decode of a 1B model, 3456 bytes beat 1152, 2304, 4608 and 5760.
// Each prefetch goes just before the load of the same offset: nine at the
// top of the block waited for fill buffers together (1B decode 22.2-22.6
// -> 22.7-23.0 tokens/s; the one-row Q8_0x16AMX kernel, whose loop is
// shorter, lost 9 % with them bunched).
#define PFD 3456

// The Q8_0x16 kernel (see q8x16.go for the layout) with AVX-512 VNNI, for
// one or two activation rows. Per block, the eight 64-byte quant chunks
// (Z16-Z23: quants 4j..4j+3 of each row in lane i, plus 128) are loaded
// once. For each activation row and group j, VPDPBUSD with the row's four
// quants 4j..4j+3 broadcast to every lane adds four products to each
// weight row's lane, starting from the aux word −128·Σ of those quants,
// so each lane ends with the exact int32 that ggml_vec_dot_q8_0_q8_0 puts
// in its float lane j; it is converted and fused-multiply-added with
// d_w·d_a into accumulator j, as dotQ8_0Q8_0 does. At the end the eight
// accumulators of a row are added in the order of hsum_float_8.
//
// Registers: DI weights; SI, R8 activation rows 0-1's block; R12, R13
// their aux words; CX blocks left, BX activation rows (1 or 2).
// Z0-Z7 the accumulators of activation row 0 (lane j in Zj), Z8-Z15 of
// row 1; Z24 the 16 weight scales; Z25, Z26 d_w·d_a of rows 0 and 1;
// Z27-Z30 the integer sums.

// Q8X16LANE adds one group of four activation quants at actoff(act),
// whose aux word is at auxoff(aux), to acc, with weight chunk w and
// scales d, through the integer sum t.
#define Q8X16LANE(act, actoff, aux, auxoff, w, d, t, acc) \
	VPBROADCASTD      auxoff(aux), t \
	VPDPBUSD.BCST     actoff(act), w, t \
	VCVTDQ2PS         t, t \
	VFMADD231PS       d, t, acc

// Q8X16ROW adds the activation block at (act), aux words at (aux), to the
// accumulators a0-a7 with scales d.
#define Q8X16ROW(act, aux, d, a0, a1, a2, a3, a4, a5, a6, a7) \
	Q8X16LANE(act, 2, aux, 0, Z16, d, Z27, a0) \
	Q8X16LANE(act, 6, aux, 4, Z17, d, Z28, a1) \
	Q8X16LANE(act, 10, aux, 8, Z18, d, Z29, a2) \
	Q8X16LANE(act, 14, aux, 12, Z19, d, Z30, a3) \
	Q8X16LANE(act, 18, aux, 16, Z20, d, Z27, a4) \
	Q8X16LANE(act, 22, aux, 20, Z21, d, Z28, a5) \
	Q8X16LANE(act, 26, aux, 24, Z22, d, Z29, a6) \
	Q8X16LANE(act, 30, aux, 28, Z23, d, Z30, a7)

// func q8x16AVX512VNNI(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int)
TEXT ·q8x16AVX512VNNI(SB), NOSPLIT, $0-72
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), DI
	MOVQ a+16(FP), SI
	MOVQ astride+24(FP), AX
	LEAQ (SI)(AX*1), R8
	MOVQ aux+32(FP), R12
	MOVQ auxstride+40(FP), AX
	SHLQ $2, AX
	LEAQ (R12)(AX*1), R13
	MOVQ rows+48(FP), BX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

q8x16loop:
	PREFETCHT0 PFD+0(DI)
	VCVTPH2PS 0(DI), Z24
	PREFETCHT0 PFD+64(DI)
	VMOVDQU64 32(DI), Z16
	PREFETCHT0 PFD+128(DI)
	VMOVDQU64 96(DI), Z17
	PREFETCHT0 PFD+192(DI)
	VMOVDQU64 160(DI), Z18
	PREFETCHT0 PFD+256(DI)
	VMOVDQU64 224(DI), Z19
	PREFETCHT0 PFD+320(DI)
	VMOVDQU64 288(DI), Z20
	PREFETCHT0 PFD+384(DI)
	VMOVDQU64 352(DI), Z21
	PREFETCHT0 PFD+448(DI)
	VMOVDQU64 416(DI), Z22
	PREFETCHT0 PFD+512(DI)
	VMOVDQU64 480(DI), Z23
	VMULPS.BCST 32(R12), Z24, Z25
	Q8X16ROW(SI, R12, Z25, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	CMPQ BX, $1
	JEQ  q8x16next
	VMULPS.BCST 32(R13), Z24, Z26
	Q8X16ROW(R8, R13, Z26, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)

q8x16next:
	ADDQ $544, DI
	ADDQ $34, SI
	ADDQ $34, R8
	ADDQ $36, R12
	ADDQ $36, R13
	DECQ CX
	JNZ  q8x16loop

	MOVQ dst+56(FP), DI
	HSUM8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	VMOVUPS Z0, (DI)
	CMPQ BX, $1
	JEQ  q8x16done
	MOVQ dstride+64(FP), R8
	SHLQ $2, R8
	ADDQ R8, DI
	HSUM8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	VMOVUPS Z8, (DI)

q8x16done:
	VZEROUPPER
	RET
