//go:build amd64 && !noasm

#include "textflag.h"

// EXPCONSTS loads the constants of EXP8 into Z14-Z31: log2 e (Z16), ln 2 in a
// high and a low part (Z17, Z18), the clamp −1000 and 1000 (Z19, Z20), 1/13!
// to 1/2! (Z21-Z31, Z15) and 1 (Z14).
#define EXPCONSTS \
	VBROADCASTSD expC<>+0(SB), Z16 \
	VBROADCASTSD expC<>+8(SB), Z17 \
	VBROADCASTSD expC<>+16(SB), Z18 \
	VBROADCASTSD expC<>+24(SB), Z19 \
	VBROADCASTSD expC<>+32(SB), Z20 \
	VBROADCASTSD expC<>+40(SB), Z21 \
	VBROADCASTSD expC<>+48(SB), Z22 \
	VBROADCASTSD expC<>+56(SB), Z23 \
	VBROADCASTSD expC<>+64(SB), Z24 \
	VBROADCASTSD expC<>+72(SB), Z25 \
	VBROADCASTSD expC<>+80(SB), Z26 \
	VBROADCASTSD expC<>+88(SB), Z27 \
	VBROADCASTSD expC<>+96(SB), Z28 \
	VBROADCASTSD expC<>+104(SB), Z29 \
	VBROADCASTSD expC<>+112(SB), Z30 \
	VBROADCASTSD expC<>+120(SB), Z31 \
	VBROADCASTSD expC<>+128(SB), Z15 \
	VBROADCASTSD expC<>+136(SB), Z14

// EXP8 computes Y5 = float32(e^Z0) for the eight float64 in Z0, as
// described at expAVX512; it clobbers Z0 and Z2-Z5.
#define EXP8 \
	VMAXPD      Z0, Z19, Z0 \
	VMINPD      Z0, Z20, Z0 \
	VMULPD      Z16, Z0, Z2 \
	VRNDSCALEPD $0, Z2, Z2 \
	VMOVAPD     Z0, Z3 \
	VFNMADD231PD Z17, Z2, Z3 \
	VFNMADD231PD Z18, Z2, Z3 \
	VMOVAPD     Z21, Z4 \
	VFMADD213PD Z22, Z3, Z4 \
	VFMADD213PD Z23, Z3, Z4 \
	VFMADD213PD Z24, Z3, Z4 \
	VFMADD213PD Z25, Z3, Z4 \
	VFMADD213PD Z26, Z3, Z4 \
	VFMADD213PD Z27, Z3, Z4 \
	VFMADD213PD Z28, Z3, Z4 \
	VFMADD213PD Z29, Z3, Z4 \
	VFMADD213PD Z30, Z3, Z4 \
	VFMADD213PD Z31, Z3, Z4 \
	VFMADD213PD Z15, Z3, Z4 \
	VFMADD213PD Z14, Z3, Z4 \
	VFMADD213PD Z14, Z3, Z4 \
	VSCALEFPD   Z2, Z4, Z4 \
	VCVTPD2PS   Z4, Y5

// func expAVX512(dst, src *float32, n int)
//
// Per 8 floats, in float64: x clamped to [-1000, 1000] (NaN passes
// through); k = round(x·log2 e); r = x - k·ln2 (ln 2 split in a high part
// exact in any k·ln2hi, and a low part); exp(r) = Σ r^i/i! for i ≤ 13 by
// Horner (|r| ≤ 0.35: truncation below 1e-17); times 2^k with VSCALEFPD
// (overflow to +Inf, underflow to 0); rounded to float32.
TEXT ·expAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	EXPCONSTS

loop:
	VCVTPS2PD   (SI), Z0
	EXP8
	VMOVUPS     Y5, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  loop
	VZEROUPPER
	RET

// func expShiftAVX512(dst, src *float32, n int, scale, m float32, lanes *[8]float64)
//
// expAVX512 of float32(src·scale) − m (VMULPS, then VSUBPS: two
// roundings), and the float32 results, widened, added to lanes (lane k the
// elements of index k mod 8). n a positive multiple of 8.
TEXT ·expShiftAVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	VBROADCASTSS scale+24(FP), Y6
	VBROADCASTSS m+28(FP), Y7
	MOVQ lanes+32(FP), DX
	VMOVUPD (DX), Z8
	EXPCONSTS

shiftloop:
	VMULPS      (SI), Y6, Y0
	VSUBPS      Y7, Y0, Y0
	VCVTPS2PD   Y0, Z0
	EXP8
	VMOVUPS     Y5, (DI)
	VCVTPS2PD   Y5, Z5
	VADDPD      Z5, Z8, Z8
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  shiftloop
	VMOVUPD Z8, (DX)
	VZEROUPPER
	RET

DATA expC<>+0(SB)/8, $0x3ff71547652b82fe
DATA expC<>+8(SB)/8, $0x3fe62e42fee00000
DATA expC<>+16(SB)/8, $0x3dea39ef35793c76
DATA expC<>+24(SB)/8, $0xc08f400000000000
DATA expC<>+32(SB)/8, $0x408f400000000000
DATA expC<>+40(SB)/8, $0x3de6124613a86d09
DATA expC<>+48(SB)/8, $0x3e21eed8eff8d898
DATA expC<>+56(SB)/8, $0x3e5ae64567f544e4
DATA expC<>+64(SB)/8, $0x3e927e4fb7789f5c
DATA expC<>+72(SB)/8, $0x3ec71de3a556c734
DATA expC<>+80(SB)/8, $0x3efa01a01a01a01a
DATA expC<>+88(SB)/8, $0x3f2a01a01a01a01a
DATA expC<>+96(SB)/8, $0x3f56c16c16c16c17
DATA expC<>+104(SB)/8, $0x3f81111111111111
DATA expC<>+112(SB)/8, $0x3fa5555555555555
DATA expC<>+120(SB)/8, $0x3fc5555555555555
DATA expC<>+128(SB)/8, $0x3fe0000000000000
DATA expC<>+136(SB)/8, $0x3ff0000000000000
GLOBL expC<>(SB), RODATA|NOPTR, $144
