//go:build amd64 && !noasm

#include "textflag.h"

// Q4_K against Q8_K with AVX-512 (BW, VNNI), one to four activation rows.
// A ZMM register holds a whole 64-element chunk pair of the weights: the
// low nibbles of its 32 quant bytes (elements 64j..64j+31) in bytes 0-31,
// the high nibbles (64j+32..64j+63) in 32-63, so one 64-byte load of the
// activations lines up with it. VPMADDUBSW forms the pair products and
// VPDPWSSD multiplies them by the group scale of each half (a word
// vector built with VPERMW) into int32 lanes; the two halves' lanes are
// added at the end of the super-block. Integer sums are exact, so lane u
// holds the reference's kLanes value; the float steps (d8·d times the
// lanes, fused-multiply-added once per super-block; the minimum terms
// paired as VPHADDD does and fused-multiply-subtracted with d8·dmin) are
// those of the AVX2 kernel, so results are bit-identical to the reference.
//
// Registers: SI weight super-block, DI activation super-block of row 0,
// R10 = 0, R8 = stride, R11 = 2·stride, R9 = 3·stride, CX super-blocks
// left, DX rows. Y0-Y3 the rows' float lanes, X4-X7 their minimum terms,
// Z8-Z11 their integer lanes; Z12 weight nibbles, Z13 products, Z14 the
// chunk's scales; Z15 bytes 0x0f, Z16 the nibble shifts, Z17-Z20 the
// VPERMW indices of chunks 0-3; Z21 the super-block's 8 scales as words,
// Y22 its 8 minimums as doubled words, Y23 d, X24 dmin.

// K4SCALES unpacks the 12 scale bytes at 4(SI) (6-bit scales and minimums
// of the 8 groups) into X12: bytes 0-7 the scales, 8-15 the minimums.
#define K4SCALES \
	MOVL 4(SI), AX \
	MOVL 8(SI), BX \
	MOVL 12(SI), R12 \
	MOVL R12, R13 \
	SHRL $4, R13 \
	ANDL $0x0f0f0f0f, R13 \
	MOVL BX, R15 \
	SHRL $6, R15 \
	ANDL $0x03030303, R15 \
	SHLL $4, R15 \
	ORL  R15, R13 \
	ANDL $0x3f3f3f3f, BX \
	ANDL $0x0f0f0f0f, R12 \
	MOVL AX, R15 \
	SHRL $6, R15 \
	ANDL $0x03030303, R15 \
	SHLL $4, R15 \
	ORL  R15, R12 \
	ANDL $0x3f3f3f3f, AX \
	VMOVD   AX, X12 \
	VPINSRD $1, R12, X12, X12 \
	VPINSRD $2, BX, X12, X12 \
	VPINSRD $3, R13, X12, X12

// K4ROW adds row (DI)(idx*1)'s chunk products at yoff to its lanes.
#define K4ROW(idx, yoff, isum) \
	VPMADDUBSW yoff(DI)(idx*1), Z12, Z13 \
	VPDPWSSD   Z14, Z13, isum

// K4CHUNK processes chunk pair j: weights at qoff, activations at yoff.
#define K4CHUNK(qoff, yoff, perm, L) \
	VBROADCASTI64X4 qoff(SI), Z12 \
	VPSRLVW Z16, Z12, Z12 \
	VPANDD  Z15, Z12, Z12 \
	VPERMW  Z21, perm, Z14 \
	K4ROW(R10, yoff, Z8) \
	CMPQ DX, $1 \
	JEQ  L \
	K4ROW(R8, yoff, Z9) \
	CMPQ DX, $2 \
	JEQ  L \
	K4ROW(R11, yoff, Z10) \
	CMPQ DX, $3 \
	JEQ  L \
	K4ROW(R9, yoff, Z11) \
L:

// K4FIN finishes row (DI)(idx*1)'s super-block into acc (Y) and macc (X).
#define K4FIN(idx, isum, isumy, acc, macc) \
	VEXTRACTI64X4 $1, isum, Y12 \
	VPADDD        Y12, isumy, Y12 \
	VCVTDQ2PS     Y12, Y12 \
	VMULPS.BCST   (DI)(idx*1), Y23, Y13 \
	VFMADD231PS   Y13, Y12, acc \
	VPMADDWD      260(DI)(idx*1), Y22, Y12 \
	VEXTRACTI128  $1, Y12, X13 \
	VPHADDD       X13, X12, X12 \
	VCVTDQ2PS     X12, X12 \
	VMULPS.BCST   (DI)(idx*1), X24, X13 \
	VFNMADD231PS  X13, X12, macc

// K4CONST loads the constants and clears the float accumulators.
#define K4CONST \
	XORQ R10, R10 \
	LEAQ (R8)(R8*1), R11 \
	LEAQ (R11)(R8*1), R9 \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z15 \
	VMOVDQU64 k4Shift<>(SB), Z16 \
	VMOVDQU64 k4Perm<>+0(SB), Z17 \
	VMOVDQU64 k4Perm<>+64(SB), Z18 \
	VMOVDQU64 k4Perm<>+128(SB), Z19 \
	VMOVDQU64 k4Perm<>+192(SB), Z20

#define K4CLEAR \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7

// K4LOOP runs CX super-blocks of the weight row at SI against the rows at
// DI (labels: loop, chunks 0-3, next).
#define K4LOOP(lp, c0, c1, c2, c3, nx) \
lp: \
	K4SCALES \
	VPMOVZXBW    X12, Y21 \
	VPSRLDQ      $8, X12, X13 \
	VPUNPCKLBW   X13, X13, X13 \
	VPMOVZXBW    X13, Y22 \
	VPBROADCASTW (SI), X13 \
	VCVTPH2PS    X13, Y23 \
	VPBROADCASTW 2(SI), X13 \
	VCVTPH2PS    X13, X24 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
	K4CHUNK(16, 4, Z17, c0) \
	K4CHUNK(48, 68, Z18, c1) \
	K4CHUNK(80, 132, Z19, c2) \
	K4CHUNK(112, 196, Z20, c3) \
	K4FIN(R10, Z8, Y8, Y0, X4) \
	CMPQ DX, $1 \
	JEQ  nx \
	K4FIN(R8, Z9, Y9, Y1, X5) \
	CMPQ DX, $2 \
	JEQ  nx \
	K4FIN(R11, Z10, Y10, Y2, X6) \
	CMPQ DX, $3 \
	JEQ  nx \
	K4FIN(R9, Z11, Y11, Y3, X7) \
nx: \
	ADDQ $144, SI \
	ADDQ $292, DI \
	DECQ CX \
	JNZ  lp

// func kernQ4_KAVX512(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernQ4_KAVX512(SB), NOSPLIT, $0-48
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ a+16(FP), DI
	MOVQ stride+24(FP), R8
	MOVQ rows+32(FP), DX
	K4CONST
	K4CLEAR
	K4LOOP(k4loop, k4c0, k4c1, k4c2, k4c3, k4next)
	MOVQ acc+40(FP), BX
	VMOVUPS Y0, 0(BX)
	VMOVUPS Y1, 64(BX)
	VMOVUPS Y2, 128(BX)
	VMOVUPS Y3, 192(BX)
	VMOVUPS X4, 32(BX)
	VMOVUPS X5, 96(BX)
	VMOVUPS X6, 160(BX)
	VMOVUPS X7, 224(BX)
	VZEROUPPER
	RET

// K4OUT finishes one (weight row, activation row) pair like finishMin:
// hsum8 of the float lanes acc plus (m0+m2)+(m1+m3) of the minimum terms
// macc, stored at (BX).
#define K4OUT(acc, accx, macc) \
	VEXTRACTF128 $1, acc, X12 \
	VADDPS       X12, accx, X12 \
	VPERMILPS    $0x4e, X12, X13 \
	VADDPS       X13, X12, X12 \
	VMOVSHDUP    X12, X13 \
	VADDSS       X13, X12, X12 \
	VPERMILPS    $0x4e, macc, X13 \
	VADDPS       X13, macc, X13 \
	VMOVSHDUP    X13, X14 \
	VADDSS       X14, X13, X13 \
	VADDSS       X13, X12, X12 \
	VMOVSS       X12, (BX)

// func tileQ4_KAVX512(nb int, w *byte, wstride int, a *byte, astride, rows int, dst *float32, dstride int)
//
// Four weight rows, one after another, each against the 1 to 4
// activation rows; the frame holds the weight row index.
TEXT ·tileQ4_KAVX512(SB), NOSPLIT, $8-64
	MOVQ astride+32(FP), R8
	MOVQ rows+40(FP), DX
	K4CONST
	MOVQ $0, 0(SP)

t4row:
	MOVQ nb+0(FP), CX
	MOVQ 0(SP), AX
	IMULQ wstride+16(FP), AX
	MOVQ w+8(FP), SI
	ADDQ AX, SI
	MOVQ a+24(FP), DI
	K4CLEAR
	K4LOOP(t4loop, t4c0, t4c1, t4c2, t4c3, t4next)
	MOVQ 0(SP), AX
	MOVQ dst+48(FP), BX
	LEAQ (BX)(AX*4), BX
	MOVQ dstride+56(FP), R12
	SHLQ $2, R12
	K4OUT(Y0, X0, X4)
	CMPQ DX, $1
	JEQ  t4done
	ADDQ R12, BX
	K4OUT(Y1, X1, X5)
	CMPQ DX, $2
	JEQ  t4done
	ADDQ R12, BX
	K4OUT(Y2, X2, X6)
	CMPQ DX, $3
	JEQ  t4done
	ADDQ R12, BX
	K4OUT(Y3, X3, X7)

t4done:
	INCQ 0(SP)
	CMPQ 0(SP), $4
	JLT  t4row
	VZEROUPPER
	RET

// Word shifts: the upper 32 bytes (high nibbles) by 4.
DATA k4Shift<>+0(SB)/8, $0
DATA k4Shift<>+8(SB)/8, $0
DATA k4Shift<>+16(SB)/8, $0
DATA k4Shift<>+24(SB)/8, $0
DATA k4Shift<>+32(SB)/8, $0x0004000400040004
DATA k4Shift<>+40(SB)/8, $0x0004000400040004
DATA k4Shift<>+48(SB)/8, $0x0004000400040004
DATA k4Shift<>+56(SB)/8, $0x0004000400040004
GLOBL k4Shift<>(SB), RODATA|NOPTR, $64

// VPERMW indices of chunk pair j: word 2j (group 2j's scale) in the lower
// 16 words, word 2j+1 in the upper 16.
DATA k4Perm<>+0(SB)/8, $0x0000000000000000
DATA k4Perm<>+8(SB)/8, $0x0000000000000000
DATA k4Perm<>+16(SB)/8, $0x0000000000000000
DATA k4Perm<>+24(SB)/8, $0x0000000000000000
DATA k4Perm<>+32(SB)/8, $0x0001000100010001
DATA k4Perm<>+40(SB)/8, $0x0001000100010001
DATA k4Perm<>+48(SB)/8, $0x0001000100010001
DATA k4Perm<>+56(SB)/8, $0x0001000100010001
DATA k4Perm<>+64(SB)/8, $0x0002000200020002
DATA k4Perm<>+72(SB)/8, $0x0002000200020002
DATA k4Perm<>+80(SB)/8, $0x0002000200020002
DATA k4Perm<>+88(SB)/8, $0x0002000200020002
DATA k4Perm<>+96(SB)/8, $0x0003000300030003
DATA k4Perm<>+104(SB)/8, $0x0003000300030003
DATA k4Perm<>+112(SB)/8, $0x0003000300030003
DATA k4Perm<>+120(SB)/8, $0x0003000300030003
DATA k4Perm<>+128(SB)/8, $0x0004000400040004
DATA k4Perm<>+136(SB)/8, $0x0004000400040004
DATA k4Perm<>+144(SB)/8, $0x0004000400040004
DATA k4Perm<>+152(SB)/8, $0x0004000400040004
DATA k4Perm<>+160(SB)/8, $0x0005000500050005
DATA k4Perm<>+168(SB)/8, $0x0005000500050005
DATA k4Perm<>+176(SB)/8, $0x0005000500050005
DATA k4Perm<>+184(SB)/8, $0x0005000500050005
DATA k4Perm<>+192(SB)/8, $0x0006000600060006
DATA k4Perm<>+200(SB)/8, $0x0006000600060006
DATA k4Perm<>+208(SB)/8, $0x0006000600060006
DATA k4Perm<>+216(SB)/8, $0x0006000600060006
DATA k4Perm<>+224(SB)/8, $0x0007000700070007
DATA k4Perm<>+232(SB)/8, $0x0007000700070007
DATA k4Perm<>+240(SB)/8, $0x0007000700070007
DATA k4Perm<>+248(SB)/8, $0x0007000700070007
GLOBL k4Perm<>(SB), RODATA|NOPTR, $256
