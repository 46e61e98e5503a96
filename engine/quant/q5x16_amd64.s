//go:build amd64 && !noasm

#include "textflag.h"
#include "packed_amd64.h"

// The weights are prefetched pfd bytes ahead of the block being read
// (R14), each line just before its load (one-row stream 22.5-23.1 ->
// 28.6-28.9 GB/s against six at the top of the block), into L1 in the
// general loop and into L2 only in the one-row loop that l2 selects
// (q5x16Args in q4x16_amd64.go). One-row decode of the Qwen2.5-0.5B
// shape's Q4_K_M file (mostly Q5_0) went from 53-56 to 64-66 t/s on a
// 2-core VM when the one-row calls prefetched too.

// The Q5_0x16 kernel (see q5x16.go for the layout) with AVX-512 VNNI, for
// one or two activation rows: the Q8_0x16 kernel's lanes (q8x16_amd64.s)
// on weights unpacked per block into Z16-Z23 (quants 4j..4j+3 of each row
// in lane i of Zj, unsigned 0..31): the low nibbles of the four quant
// chunks are lanes 0-3 and the high ones lanes 4-7, and the fifth bits,
// bit j of each byte of the high-bit chunk (Z31), are shifted to bit 4
// and or-ed in (VPTERNLOGD). Z29 holds bytes 0x0f, Z30 bytes 0x10, Z27
// and Z28 are the integer temporaries.

// Q8X16LANE as in q8x16_amd64.s.
#define Q8X16LANE(act, actoff, aux, auxoff, w, d, t, acc) \
	VPBROADCASTD      auxoff(aux), t \
	VPDPBUSD.BCST     actoff(act), w, t \
	VCVTDQ2PS         t, t \
	VFMADD231PS       d, t, acc

// Q5X16ROW adds the activation block at (act), aux words at (aux), to the
// accumulators a0-a7 with scales d, the weights' lanes in Z16-Z23 (as
// Q8X16ROW, with two integer temporaries).
#define Q5X16ROW(act, aux, d, a0, a1, a2, a3, a4, a5, a6, a7) \
	Q8X16LANE(act, 2, aux, 0, Z16, d, Z27, a0) \
	Q8X16LANE(act, 6, aux, 4, Z17, d, Z28, a1) \
	Q8X16LANE(act, 10, aux, 8, Z18, d, Z27, a2) \
	Q8X16LANE(act, 14, aux, 12, Z19, d, Z28, a3) \
	Q8X16LANE(act, 18, aux, 16, Z20, d, Z27, a4) \
	Q8X16LANE(act, 22, aux, 20, Z21, d, Z28, a5) \
	Q8X16LANE(act, 26, aux, 24, Z22, d, Z27, a6) \
	Q8X16LANE(act, 30, aux, 28, Z23, d, Z28, a7)

// func q5x16AVX512VNNI(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int, pfd int, l2 bool)
TEXT ·q5x16AVX512VNNI(SB), NOSPLIT, $0-81
	MOVQ nb+0(FP), CX
	MOVQ pfd+72(FP), R14
	MOVQ w+8(FP), DI
	MOVQ a+16(FP), SI
	MOVQ astride+24(FP), AX
	LEAQ (SI)(AX*1), R8
	MOVQ aux+32(FP), R12
	MOVQ auxstride+40(FP), AX
	SHLQ $2, AX
	LEAQ (R12)(AX*1), R13
	MOVQ rows+48(FP), BX
	MOVL $0x0f0f0f0f, R9
	VPBROADCASTD R9, Z29
	MOVL $0x10101010, R9
	VPBROADCASTD R9, Z30
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

	MOVBQZX l2+80(FP), R9
	TESTQ R9, R9
	JNZ q5x16dloop

q5x16loop:
	Q5X16UNPACK(PREFETCHT0, 32)
	VMULPS.BCST 32(R12), Z24, Z25
	Q5X16ROW(SI, R12, Z25, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	CMPQ BX, $1
	JEQ  q5x16next
	VMULPS.BCST 32(R13), Z24, Z26
	Q5X16ROW(R8, R13, Z26, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)

q5x16next:
	ADDQ $352, DI
	ADDQ $34, SI
	ADDQ $34, R8
	ADDQ $36, R12
	ADDQ $36, R13
	DECQ CX
	JNZ  q5x16loop
	JMP  q5x16sums

// One activation row, each line prefetched to L2 only (q5x16Args in q4x16_amd64.go).
q5x16dloop:
	Q5X16UNPACK(PREFETCHT2, 32)
	VMULPS.BCST 32(R12), Z24, Z25
	Q5X16ROW(SI, R12, Z25, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ADDQ $352, DI
	ADDQ $34, SI
	ADDQ $36, R12
	DECQ CX
	JNZ  q5x16dloop

q5x16sums:
	MOVQ dst+56(FP), DI
	HSUM8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	VMOVUPS Z0, (DI)
	CMPQ BX, $1
	JEQ  q5x16done
	MOVQ dstride+64(FP), R8
	SHLQ $2, R8
	ADDQ R8, DI
	HSUM8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	VMOVUPS Z8, (DI)

q5x16done:
	VZEROUPPER
	RET
