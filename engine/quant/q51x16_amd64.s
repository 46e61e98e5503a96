//go:build amd64 && !noasm

#include "textflag.h"
#include "packed_amd64.h"

// The weights are prefetched as in q5x16_amd64.s: pfd bytes ahead (R14),
// each line just before its load, into L1 in the general loop and into L2
// only in the one-row loop that l2 selects. A one-row stream read 20.6
// GB/s without prefetch on a 2-core VM, 29.4 with it.

// The Q5_1x16 kernel (see q5_1x16.go for the layout) with AVX-512 VNNI,
// for one or two activation rows, as the Q5_0x16 one (q51x16_amd64.s)
// without the offset (the quants are unsigned in Q5_1) and with the
// minimum term m_w·s_a fused-multiply-added block after block into a
// float kept in the row's destination until the end, where the lanes'
// hsum_float_8 is added to it (dotQ5_1Q8_1). The activation blocks are
// Q8_1 (quants at 4); their d and s come as float32 aux words. As in
// Q5_0x16: the Q8_0x16 kernel's lanes (q8x16_amd64.s)
// on weights unpacked per block into Z16-Z23 (quants 4j..4j+3 of each row
// in lane i of Zj, unsigned 0..31): the low nibbles of the four quant
// chunks are lanes 0-3 and the high ones lanes 4-7, and the fifth bits,
// bit j of each byte of the high-bit chunk (Z31), are shifted to bit 4
// and or-ed in (VPTERNLOGD). Z29 holds bytes 0x0f, Z30 bytes 0x10, Z27
// and Z28 are the integer temporaries.

// Q8X16LANE is q8x16_amd64.s's from a zero sum: Q5_1 has no offset.
#define Q8X16LANE(act, actoff, aux, auxoff, w, d, t, acc) \
	VPXORD            t, t, t \
	VPDPBUSD.BCST     actoff(act), w, t \
	VCVTDQ2PS         t, t \
	VFMADD231PS       d, t, acc

// Q51ROW adds the activation block at (act), aux words at (aux), to the
// accumulators a0-a7 with scales d, the weights' lanes in Z16-Z23 (as
// Q8X16ROW, with two integer temporaries).
#define Q51ROW(act, aux, d, a0, a1, a2, a3, a4, a5, a6, a7) \
	Q8X16LANE(act, 4, aux, 0, Z16, d, Z27, a0) \
	Q8X16LANE(act, 8, aux, 4, Z17, d, Z28, a1) \
	Q8X16LANE(act, 12, aux, 8, Z18, d, Z27, a2) \
	Q8X16LANE(act, 16, aux, 12, Z19, d, Z28, a3) \
	Q8X16LANE(act, 20, aux, 16, Z20, d, Z27, a4) \
	Q8X16LANE(act, 24, aux, 20, Z21, d, Z28, a5) \
	Q8X16LANE(act, 28, aux, 24, Z22, d, Z27, a6) \
	Q8X16LANE(act, 32, aux, 28, Z23, d, Z28, a7)

// func q51x16AVX512VNNI(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int, pfd int, l2 bool)
TEXT ·q51x16AVX512VNNI(SB), NOSPLIT, $0-81
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
	// The minimum terms start at zero in dst: R10 row 0, R11 the stride.
	MOVQ dst+56(FP), R10
	MOVQ dstride+64(FP), R11
	SHLQ $2, R11
	VPXORD Z27, Z27, Z27
	VMOVUPS Z27, (R10)
	CMPQ BX, $1
	JEQ  q51x16zeroed
	VMOVUPS Z27, (R10)(R11*1)
q51x16zeroed:
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
	JNZ q51x16dloop

q51x16loop:
	Q5X16UNPACK(PREFETCHT0, 64)
	VCVTPH2PS 32(DI), Z31 // m_w
	VMULPS.BCST (R12), Z24, Z25
	Q51ROW(SI, R12, Z25, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	VMOVUPS (R10), Z27
	VFMADD231PS.BCST 4(R12), Z31, Z27
	VMOVUPS Z27, (R10)
	CMPQ BX, $1
	JEQ  q51x16next
	VMULPS.BCST (R13), Z24, Z26
	Q51ROW(R8, R13, Z26, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	VMOVUPS (R10)(R11*1), Z27
	VFMADD231PS.BCST 4(R13), Z31, Z27
	VMOVUPS Z27, (R10)(R11*1)

q51x16next:
	ADDQ $384, DI
	ADDQ $36, SI
	ADDQ $36, R8
	ADDQ $8, R12
	ADDQ $8, R13
	DECQ CX
	JNZ  q51x16loop
	JMP  q51x16sums

// One activation row, each line prefetched to L2 only (q5x16Args in q4x16_amd64.go).
q51x16dloop:
	Q5X16UNPACK(PREFETCHT2, 64)
	VCVTPH2PS 32(DI), Z31 // m_w
	VMULPS.BCST (R12), Z24, Z25
	Q51ROW(SI, R12, Z25, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	VMOVUPS (R10), Z27
	VFMADD231PS.BCST 4(R12), Z31, Z27
	VMOVUPS Z27, (R10)
	ADDQ $384, DI
	ADDQ $36, SI
	ADDQ $8, R12
	DECQ CX
	JNZ  q51x16dloop

q51x16sums:
	MOVQ dst+56(FP), DI
	HSUM8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	VADDPS  (DI), Z0, Z0
	VMOVUPS Z0, (DI)
	CMPQ BX, $1
	JEQ  q51x16done
	MOVQ dstride+64(FP), R8
	SHLQ $2, R8
	ADDQ R8, DI
	HSUM8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	VADDPS  (DI), Z8, Z8
	VMOVUPS Z8, (DI)

q51x16done:
	VZEROUPPER
	RET
