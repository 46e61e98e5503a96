//go:build amd64 && !noasm

#include "textflag.h"

// The prefetches are the Q4_0x16 kernel's (see q4x16_amd64.s):
// PREFETCHT2 of each line just before its load, for any number of rows,
// pfd bytes ahead (R15; aheadFor in iq4xsx16_amd64.go). (Before,
// only calls of four rows or more prefetched, 4608 bytes ahead: decode
// streamed on the hardware prefetchers alone.)

DATA iq4nlBook<>+0(SB)/8, $0x766a5d4f3f2d1801
DATA iq4nlBook<>+8(SB)/8, $0xf1d9c5b5a6998d81
GLOBL iq4nlBook<>(SB), RODATA|NOPTR, $16

// The IQ4_NLx16 kernel (see iq4nlx16.go): the Q4_0x16 kernel with each
// nibble looked up in the IQ4 codebook shifted by +128 (VPSHUFB, Z30), so
// the weights stay unsigned for VPDPBUSD, and IQ4NLx16Aux's offset term
// −128·Σa taking the shift back: each lane ends with the block's exact
// int32 sum of v·a, converted and fused-multiply-added with d_w·d_a into
// the row's float32 accumulator, block after block, as
// DotIQ4_NLInterleaved. Registers as in iq4nlx16_amd64.s, plus Z30 the
// codebook in every 128-bit lane.

// IQ4NLROW adds the activation block at act(ai), aux words at aux(xi), to
// acc.
#define IQ4NLROW(act, ai, aux, xi, acc) \
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

// NLLOADROW loads accumulator acc from the next destination row (DI += R10)
// when the kernel has more than k activation rows.
#define NLLOADROW(k, acc) \
	CMPQ    BX, $k \
	JLE     iq4nlx16loaded \
	ADDQ    R10, DI \
	VMOVUPS (DI), acc

// NLSTOREROW stores accumulator acc to the next destination row (DI += R10)
// when the kernel has more than k activation rows.
#define NLSTOREROW(k, acc) \
	CMPQ    BX, $k \
	JLE     iq4nlx16done \
	ADDQ    R10, DI \
	VMOVUPS acc, (DI)

// func iq4nlx16AVX512VNNI(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int, accumulate bool, pfd int)
TEXT ·iq4nlx16AVX512VNNI(SB), NOSPLIT, $0-88
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
	VBROADCASTI32X4 iq4nlBook<>(SB), Z30
	MOVQ pfd+80(FP), R15 // the prefetch distance
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
	JZ    iq4nlx16loop
	// Accumulate: start from dst's values instead of zero.
	MOVQ    dst+56(FP), DI
	MOVQ    dstride+64(FP), R10
	SHLQ    $2, R10
	VMOVUPS (DI), Z8
	NLLOADROW(1, Z9)
	NLLOADROW(2, Z10)
	NLLOADROW(3, Z11)
	NLLOADROW(4, Z14)
	NLLOADROW(5, Z15)
	NLLOADROW(6, Z16)
	NLLOADROW(7, Z17)

iq4nlx16loaded:
	MOVQ w+8(FP), DI

iq4nlx16loop:
	PREFETCHT2 0(DI)(R15*1)
	VCVTPH2PS 0(DI), Z20
	PREFETCHT2 64(DI)(R15*1)
	VMOVDQU64 32(DI), Z21
	VPANDD    Z31, Z21, Z0
	VPSRLW    $4, Z21, Z21
	VPANDD    Z31, Z21, Z4
	VPSHUFB   Z0, Z30, Z0
	VPSHUFB   Z4, Z30, Z4
	PREFETCHT2 128(DI)(R15*1)
	VMOVDQU64 96(DI), Z21
	VPANDD    Z31, Z21, Z1
	VPSRLW    $4, Z21, Z21
	VPANDD    Z31, Z21, Z5
	VPSHUFB   Z1, Z30, Z1
	VPSHUFB   Z5, Z30, Z5
	PREFETCHT2 192(DI)(R15*1)
	VMOVDQU64 160(DI), Z21
	VPANDD    Z31, Z21, Z2
	VPSRLW    $4, Z21, Z21
	VPANDD    Z31, Z21, Z6
	VPSHUFB   Z2, Z30, Z2
	VPSHUFB   Z6, Z30, Z6
	PREFETCHT2 256(DI)(R15*1)
	VMOVDQU64 224(DI), Z21
	VPANDD    Z31, Z21, Z3
	VPSRLW    $4, Z21, Z21
	VPANDD    Z31, Z21, Z7
	VPSHUFB   Z3, Z30, Z3
	VPSHUFB   Z7, Z30, Z7
	IQ4NLROW(SI, R11*1, R12, R11*1, Z8)
	CMPQ BX, $1
	JEQ  iq4nlx16next
	IQ4NLROW(SI, AX*1, R12, DX*1, Z9)
	CMPQ BX, $2
	JEQ  iq4nlx16next
	IQ4NLROW(SI, AX*2, R12, DX*2, Z10)
	CMPQ BX, $3
	JEQ  iq4nlx16next
	IQ4NLROW(R8, R11*1, R13, R11*1, Z11)
	CMPQ BX, $4
	JEQ  iq4nlx16next
	IQ4NLROW(SI, AX*4, R12, DX*4, Z14)
	CMPQ BX, $5
	JEQ  iq4nlx16next
	IQ4NLROW(R8, AX*2, R13, DX*2, Z15)
	CMPQ BX, $6
	JEQ  iq4nlx16next
	IQ4NLROW(R9, R11*1, R14, R11*1, Z16)
	CMPQ BX, $7
	JEQ  iq4nlx16next
	IQ4NLROW(R8, AX*4, R13, DX*4, Z17)

iq4nlx16next:
	ADDQ $288, DI
	ADDQ $34, SI
	ADDQ $34, R8
	ADDQ $34, R9
	ADDQ $8, R12
	ADDQ $8, R13
	ADDQ $8, R14
	DECQ CX
	JNZ  iq4nlx16loop

	MOVQ dst+56(FP), DI
	MOVQ dstride+64(FP), R10
	SHLQ $2, R10
	VMOVUPS Z8, (DI)
	NLSTOREROW(1, Z9)
	NLSTOREROW(2, Z10)
	NLSTOREROW(3, Z11)
	NLSTOREROW(4, Z14)
	NLSTOREROW(5, Z15)
	NLSTOREROW(6, Z16)
	NLSTOREROW(7, Z17)

iq4nlx16done:
	VZEROUPPER
	RET
