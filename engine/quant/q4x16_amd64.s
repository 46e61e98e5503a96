//go:build amd64 && !noasm

#include "textflag.h"

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
// Registers: DI weights; SI, R8, R10, R11 activation rows 0-3's block;
// R12-R15 their aux words; CX blocks left, BX activation rows.
// Z8-Z11 accumulators of activation rows 0-3; Z12 the block's integer
// sums, Z13 its scales; Z20 the 16 weight scales; Z31 bytes 0x0f.

// Q4X16ROW adds the activation block at (act), aux words at (aux), to acc.
#define Q4X16ROW(act, aux, acc) \
	VPBROADCASTD      (aux), Z12 \
	VPDPBUSD.BCST     2(act), Z0, Z12 \
	VPDPBUSD.BCST     6(act), Z1, Z12 \
	VPDPBUSD.BCST     10(act), Z2, Z12 \
	VPDPBUSD.BCST     14(act), Z3, Z12 \
	VPDPBUSD.BCST     18(act), Z4, Z12 \
	VPDPBUSD.BCST     22(act), Z5, Z12 \
	VPDPBUSD.BCST     26(act), Z6, Z12 \
	VPDPBUSD.BCST     30(act), Z7, Z12 \
	VCVTDQ2PS         Z12, Z12 \
	VMULPS.BCST       4(aux), Z20, Z13 \
	VFMADD231PS       Z13, Z12, acc

// func q4x16AVX512VNNI(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int)
TEXT ·q4x16AVX512VNNI(SB), NOSPLIT, $0-72
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), DI
	MOVQ a+16(FP), SI
	MOVQ astride+24(FP), AX
	LEAQ (SI)(AX*1), R8
	LEAQ (R8)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	MOVQ aux+32(FP), R12
	MOVQ auxstride+40(FP), AX
	SHLQ $2, AX
	LEAQ (R12)(AX*1), R13
	LEAQ (R13)(AX*1), R14
	LEAQ (R14)(AX*1), R15
	MOVQ rows+48(FP), BX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11

q4x16loop:
	VCVTPH2PS 0(DI), Z20
	VMOVDQU64 32(DI), Z21
	VPANDD    Z31, Z21, Z0
	VPSRLW    $4, Z21, Z21
	VPANDD    Z31, Z21, Z4
	VMOVDQU64 96(DI), Z21
	VPANDD    Z31, Z21, Z1
	VPSRLW    $4, Z21, Z21
	VPANDD    Z31, Z21, Z5
	VMOVDQU64 160(DI), Z21
	VPANDD    Z31, Z21, Z2
	VPSRLW    $4, Z21, Z21
	VPANDD    Z31, Z21, Z6
	VMOVDQU64 224(DI), Z21
	VPANDD    Z31, Z21, Z3
	VPSRLW    $4, Z21, Z21
	VPANDD    Z31, Z21, Z7
	Q4X16ROW(SI, R12, Z8)
	CMPQ BX, $1
	JEQ  q4x16next
	Q4X16ROW(R8, R13, Z9)
	CMPQ BX, $2
	JEQ  q4x16next
	Q4X16ROW(R10, R14, Z10)
	CMPQ BX, $3
	JEQ  q4x16next
	Q4X16ROW(R11, R15, Z11)

q4x16next:
	ADDQ $288, DI
	ADDQ $34, SI
	ADDQ $34, R8
	ADDQ $34, R10
	ADDQ $34, R11
	ADDQ $8, R12
	ADDQ $8, R13
	ADDQ $8, R14
	ADDQ $8, R15
	DECQ CX
	JNZ  q4x16loop

	MOVQ dst+56(FP), DI
	MOVQ dstride+64(FP), R8
	SHLQ $2, R8
	VMOVUPS Z8, (DI)
	CMPQ BX, $1
	JEQ  q4x16done
	ADDQ R8, DI
	VMOVUPS Z9, (DI)
	CMPQ BX, $2
	JEQ  q4x16done
	ADDQ R8, DI
	VMOVUPS Z10, (DI)
	CMPQ BX, $3
	JEQ  q4x16done
	ADDQ R8, DI
	VMOVUPS Z11, (DI)

q4x16done:
	VZEROUPPER
	RET
