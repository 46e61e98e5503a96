//go:build amd64 && !noasm

#include "textflag.h"

// AVX2 kernels of the K-quants against Q8_K activations, one to four
// activation rows per weight super-block. For each super-block and row
// they form the 8 int32 lanes of the reference (kLanes: lane u holds the
// scaled products of elements 32c+4u..32c+4u+3 of every 32-element chunk
// c) exactly, with VPMADDUBSW (unsigned weight quants × activation quants,
// which cannot saturate for these widths) and VPMADDWD by the group
// scales, then fused-multiply-add them with d8·d into the row's float
// lanes in acc, which stay in memory: once per 256 elements.
//
// Registers shared by all the kernels: SI weight super-block, DI activation
// super-block of row 0, R10 = 0, R8 = stride, R11 = 2·stride,
// R9 = 3·stride (row r at (DI)(Rr*1)), CX super-blocks left, DX rows,
// Y8-Y11 the rows' integer lanes, Y5 the byte mask 0x0f.

#define SETUPK \
	MOVQ nb+0(FP), CX \
	MOVQ w+8(FP), SI \
	MOVQ a+16(FP), DI \
	MOVQ stride+24(FP), R8 \
	MOVQ rows+32(FP), DX \
	XORQ R10, R10 \
	LEAQ (R8)(R8*1), R11 \
	LEAQ (R11)(R8*1), R9 \
	MOVL $0x0f0f0f0f, AX \
	VMOVD AX, X5 \
	VPBROADCASTD X5, Y5

#define ZEROI \
	VPXOR Y8, Y8, Y8 \
	VPXOR Y9, Y9, Y9 \
	VPXOR Y10, Y10, Y10 \
	VPXOR Y11, Y11, Y11

// Q6_K, Q3_K and Q2_K: their 16 groups of 16 give chunk c (32 elements) the scales of groups
// 2c and 2c+1, which one VPSHUFB takes from a register holding 8 int16
// scales in both lanes (groups 0-7 for chunks 0-3, 8-15 for 4-7): the
// control of chunk c%4 at scaleShuf<>+32(c%4) repeats word 2(c%4) in the
// low lane and word 2(c%4)+1 in the high lane.
DATA scaleShuf<>+0(SB)/8, $0x0100010001000100
DATA scaleShuf<>+8(SB)/8, $0x0100010001000100
DATA scaleShuf<>+16(SB)/8, $0x0302030203020302
DATA scaleShuf<>+24(SB)/8, $0x0302030203020302
DATA scaleShuf<>+32(SB)/8, $0x0504050405040504
DATA scaleShuf<>+40(SB)/8, $0x0504050405040504
DATA scaleShuf<>+48(SB)/8, $0x0706070607060706
DATA scaleShuf<>+56(SB)/8, $0x0706070607060706
DATA scaleShuf<>+64(SB)/8, $0x0908090809080908
DATA scaleShuf<>+72(SB)/8, $0x0908090809080908
DATA scaleShuf<>+80(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA scaleShuf<>+88(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA scaleShuf<>+96(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA scaleShuf<>+104(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA scaleShuf<>+112(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA scaleShuf<>+120(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL scaleShuf<>(SB), RODATA|NOPTR, $128

// SCALEHALVES puts the int16 scales of groups 0-7 (src's low lane) into
// both lanes of Y14, those of groups 8-15 into both lanes of Y15.
#define SCALEHALVES(src) \
	VPERM2I128 $0x00, src, src, Y14 \
	VPERM2I128 $0x11, src, src, Y15

// FMAD adds d8·d (d an f16 at off(SI)) times the float of the integer
// lanes iacc to the 8 float lanes at aoff(BX), for the row at (DI)(idx*1).
#define FMAD(idx, iacc, off, aoff) \
	VCVTDQ2PS   iacc, Y12 \
	VMOVSS      (DI)(idx*1), X13 \
	MOVWLZX     off(SI), AX \
	VMOVD       AX, X14 \
	VCVTPH2PS   X14, X14 \
	VMULSS      X14, X13, X14 \
	VBROADCASTSS X14, Y14 \
	VMOVUPS     aoff(BX), Y15 \
	VFMADD231PS Y14, Y12, Y15 \
	VMOVUPS     Y15, aoff(BX)

// ---- Q4_K ----
// Block: d, dmin (f16), 12 bytes of packed 6-bit scales and minimums,
// 128 bytes of nibbles. Frame: 16-31 the scales as int16. Y6 int16 ones,
// Y7 the minimums as int32.

// Q4KROW adds one row's products of the nibbles of a 32-byte chunk pair
// (low nibbles Y1 against lo, high nibbles Y0 against hi, scales Y2, Y3).
#define Q4KROW(idx, lo, hi, iacc) \
	VPMADDUBSW lo(DI)(idx*1), Y1, Y4 \
	VPMADDWD   Y2, Y4, Y4 \
	VPADDD     Y4, iacc, iacc \
	VPMADDUBSW hi(DI)(idx*1), Y0, Y4 \
	VPMADDWD   Y3, Y4, Y4 \
	VPADDD     Y4, iacc, iacc

#define Q4KJ(q, s0, s1, lo, hi, L) \
	VMOVDQU      q(SI), Y0 \
	VPAND        Y5, Y0, Y1 \
	VPSRLW       $4, Y0, Y0 \
	VPAND        Y5, Y0, Y0 \
	VPBROADCASTW s0(SP), Y2 \
	VPBROADCASTW s1(SP), Y3 \
	Q4KROW(R10, lo, hi, Y8) \
	CMPQ DX, $1 \
	JEQ  L \
	Q4KROW(R8, lo, hi, Y9) \
	CMPQ DX, $2 \
	JEQ  L \
	Q4KROW(R11, lo, hi, Y10) \
	CMPQ DX, $3 \
	JEQ  L \
	Q4KROW(R9, lo, hi, Y11) \
L:

// Q4KFIN finishes one row: the main lanes, then the minimum term
// Σ m[g]·(bsums[2g]+bsums[2g+1]) added pairwise into 4 lanes and
// fused-multiply-subtracted with d8·dmin.
#define Q4KFIN(idx, iacc, aoff, moff) \
	FMAD(idx, iacc, 0, aoff) \
	VMOVDQU      260(DI)(idx*1), Y12 \
	VPMADDWD     Y6, Y12, Y12 \
	VPMULLD      Y7, Y12, Y12 \
	VEXTRACTI128 $1, Y12, X13 \
	VPHADDD      X13, X12, X12 \
	VCVTDQ2PS    X12, X12 \
	VMOVSS       (DI)(idx*1), X13 \
	MOVWLZX      2(SI), AX \
	VMOVD        AX, X14 \
	VCVTPH2PS    X14, X14 \
	VMULSS       X14, X13, X14 \
	VBROADCASTSS X14, X14 \
	VMOVUPS      moff(BX), X15 \
	VFNMADD231PS X14, X12, X15 \
	VMOVUPS      X15, moff(BX)

// Q4KSCALES unpacks the scales and minimums at 4(SI) as llama.cpp does
// with 32-bit words (built in X12: bytes 0-7 the scales of the 8 groups,
// 8-15 their minimums, never through memory, whose narrow stores a wide
// load cannot forward from): frame bytes 16-31 the scales as int16, Y7
// the minimums as int32.
#define Q4KSCALES \
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
	VMOVD     AX, X12 \
	VPINSRD   $1, R12, X12, X12 \
	VPINSRD   $2, BX, X12, X12 \
	VPINSRD   $3, R13, X12, X12 \
	VPMOVZXBW X12, X13 \
	VMOVDQU   X13, 16(SP) \
	VPSRLDQ   $8, X12, X12 \
	VPMOVZXBD X12, Y7

// func kernQ4_KAVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernQ4_KAVX2(SB), NOSPLIT, $32-48
	SETUPK
	VPCMPEQW Y6, Y6, Y6
	VPSRLW   $15, Y6, Y6
q4kloop:
	Q4KSCALES
	ZEROI
	Q4KJ(16, 16, 18, 4, 36, q4kj0)
	Q4KJ(48, 20, 22, 68, 100, q4kj1)
	Q4KJ(80, 24, 26, 132, 164, q4kj2)
	Q4KJ(112, 28, 30, 196, 228, q4kj3)
	MOVQ acc+40(FP), BX
	Q4KFIN(R10, Y8, 0, 32)
	CMPQ DX, $1
	JEQ  q4knext
	Q4KFIN(R8, Y9, 64, 96)
	CMPQ DX, $2
	JEQ  q4knext
	Q4KFIN(R11, Y10, 128, 160)
	CMPQ DX, $3
	JEQ  q4knext
	Q4KFIN(R9, Y11, 192, 224)
q4knext:
	ADDQ $144, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q4kloop
	VZEROUPPER
	RET

// ---- Q6_K ----
// Block: ql (128 bytes), qh (64), int8 scales (16), d (f16). Y7 the 16
// scales as int16 (and Y14, Y15 by SCALEHALVES), Y6 the byte mask 0x30,
// Y0/Y1 the two 32-byte halves of ql of a 128-element half, Y2 its qh,
// Y3 the unsigned 6-bit quants of one chunk, Y12 its scales.

#define Q6ROW(idx, yoff, iacc) \
	VPMADDUBSW yoff(DI)(idx*1), Y3, Y4 \
	VPMADDWD   Y12, Y4, Y4 \
	VPADDD     Y4, iacc, iacc

// Q6C multiplies chunk quants Y3 with their scales (shuffle control shuf
// of sc, as SCALEHALVES) by every row's activations at yoff.
#define Q6C(shuf, sc, yoff, L) \
	VPSHUFB scaleShuf<>+shuf(SB), sc, Y12 \
	Q6ROW(R10, yoff, Y8) \
	CMPQ DX, $1 \
	JEQ  L \
	Q6ROW(R8, yoff, Y9) \
	CMPQ DX, $2 \
	JEQ  L \
	Q6ROW(R11, yoff, Y10) \
	CMPQ DX, $3 \
	JEQ  L \
	Q6ROW(R9, yoff, Y11) \
L:

// Q6H processes the 128-element half at ql offset ql, qh offset qh, with
// the scales of its groups in sc and activations from yoff.
#define Q6H(ql, qh, sc, y0, y1, y2, y3, L0, L1, L2, L3) \
	VMOVDQU ql(SI), Y0 \
	VMOVDQU ql+32(SI), Y1 \
	VMOVDQU qh(SI), Y2 \
	VPAND   Y5, Y0, Y3 \
	VPSLLW  $4, Y2, Y4 \
	VPAND   Y6, Y4, Y4 \
	VPOR    Y4, Y3, Y3 \
	Q6C(0, sc, y0, L0) \
	VPAND   Y5, Y1, Y3 \
	VPSLLW  $2, Y2, Y4 \
	VPAND   Y6, Y4, Y4 \
	VPOR    Y4, Y3, Y3 \
	Q6C(32, sc, y1, L1) \
	VPSRLW  $4, Y0, Y3 \
	VPAND   Y5, Y3, Y3 \
	VPAND   Y6, Y2, Y4 \
	VPOR    Y4, Y3, Y3 \
	Q6C(64, sc, y2, L2) \
	VPSRLW  $4, Y1, Y3 \
	VPAND   Y5, Y3, Y3 \
	VPSRLW  $2, Y2, Y4 \
	VPAND   Y6, Y4, Y4 \
	VPOR    Y4, Y3, Y3 \
	Q6C(96, sc, y3, L3)

// Q6FIN finishes one row: subtract 32·(bsums·scales) pairwise per lane,
// which undoes the +32 offset of the unsigned quants, then FMAD.
#define Q6FIN(idx, iacc, aoff) \
	VMOVDQU  260(DI)(idx*1), Y12 \
	VPMADDWD Y7, Y12, Y12 \
	VPSLLD   $5, Y12, Y12 \
	VPSUBD   Y12, iacc, iacc \
	FMAD(idx, iacc, 208, aoff)

// func kernQ6_KAVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernQ6_KAVX2(SB), NOSPLIT, $0-48
	SETUPK
	MOVL $0x30303030, AX
	VMOVD AX, X6
	VPBROADCASTD X6, Y6
	MOVQ acc+40(FP), BX
q6kloop:
	VPMOVSXBW 192(SI), Y7
	SCALEHALVES(Y7)
	ZEROI
	Q6H(0, 128, Y14, 4, 36, 68, 100, q6kc0, q6kc1, q6kc2, q6kc3)
	Q6H(64, 160, Y15, 132, 164, 196, 228, q6kc4, q6kc5, q6kc6, q6kc7)
	Q6FIN(R10, Y8, 0)
	CMPQ DX, $1
	JEQ  q6knext
	Q6FIN(R8, Y9, 64)
	CMPQ DX, $2
	JEQ  q6knext
	Q6FIN(R11, Y10, 128)
	CMPQ DX, $3
	JEQ  q6knext
	Q6FIN(R9, Y11, 192)
q6knext:
	ADDQ $210, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q6kloop
	VZEROUPPER
	RET

// ---- Q5_K ----
// Block: d, dmin (f16), 12 bytes of scales and minimums as Q4_K, qh (32),
// qs (128). As Q4_K, with the fifth bits from qh in Y12: chunk pair j's
// low nibbles take bit 2j of qh[i], its high nibbles bit 2j+1. The minimum
// term is one scalar per row, in acc[r][8].

DATA mask10<>+0(SB)/8, $0x1010101010101010
DATA mask10<>+8(SB)/8, $0x1010101010101010
DATA mask10<>+16(SB)/8, $0x1010101010101010
DATA mask10<>+24(SB)/8, $0x1010101010101010
GLOBL mask10<>(SB), RODATA|NOPTR, $32

// Q5KJ is Q4KJ with the fifth bits Y13 (low nibbles) and Y14 (high) added.
#define Q5KJ(q, s0, s1, lo, hi, L) \
	VPAND        mask10<>(SB), Y13, Y13 \
	VPAND        mask10<>(SB), Y14, Y14 \
	VMOVDQU      q(SI), Y0 \
	VPAND        Y5, Y0, Y1 \
	VPOR         Y13, Y1, Y1 \
	VPSRLW       $4, Y0, Y0 \
	VPAND        Y5, Y0, Y0 \
	VPOR         Y14, Y0, Y0 \
	VPBROADCASTW s0(SP), Y2 \
	VPBROADCASTW s1(SP), Y3 \
	Q4KROW(R10, lo, hi, Y8) \
	CMPQ DX, $1 \
	JEQ  L \
	Q4KROW(R8, lo, hi, Y9) \
	CMPQ DX, $2 \
	JEQ  L \
	Q4KROW(R11, lo, hi, Y10) \
	CMPQ DX, $3 \
	JEQ  L \
	Q4KROW(R9, lo, hi, Y11) \
L:

// Q5KFIN finishes one row: the main lanes, then Σ m[g]·(bsums[2g] +
// bsums[2g+1]) over all groups, fused-multiply-subtracted with d8·dmin
// into the scalar at moff(BX).
#define Q5KFIN(idx, iacc, aoff, moff) \
	FMAD(idx, iacc, 0, aoff) \
	VMOVDQU      260(DI)(idx*1), Y12 \
	VPMADDWD     Y6, Y12, Y12 \
	VPMULLD      Y7, Y12, Y12 \
	VEXTRACTI128 $1, Y12, X13 \
	VPADDD       X13, X12, X12 \
	VPSHUFD      $0x4e, X12, X13 \
	VPADDD       X13, X12, X12 \
	VPSHUFD      $0xb1, X12, X13 \
	VPADDD       X13, X12, X12 \
	VCVTDQ2PS    X12, X12 \
	VMOVSS       (DI)(idx*1), X13 \
	MOVWLZX      2(SI), AX \
	VMOVD        AX, X14 \
	VCVTPH2PS    X14, X14 \
	VMULSS       X14, X13, X14 \
	VMOVSS       moff(BX), X15 \
	VFNMADD231SS X14, X12, X15 \
	VMOVSS       X15, moff(BX)

// func kernQ5_KAVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernQ5_KAVX2(SB), NOSPLIT, $32-48
	SETUPK
	VPCMPEQW Y6, Y6, Y6
	VPSRLW   $15, Y6, Y6
q5kloop:
	Q4KSCALES
	ZEROI
	VMOVDQU 16(SI), Y12
	VPSLLW  $4, Y12, Y13
	VPSLLW  $3, Y12, Y14
	Q5KJ(48, 16, 18, 4, 36, q5kj0)
	VPSLLW  $2, Y12, Y13
	VPSLLW  $1, Y12, Y14
	Q5KJ(80, 20, 22, 68, 100, q5kj1)
	VMOVDQA Y12, Y13
	VPSRLW  $1, Y12, Y14
	Q5KJ(112, 24, 26, 132, 164, q5kj2)
	VPSRLW  $2, Y12, Y13
	VPSRLW  $3, Y12, Y14
	Q5KJ(144, 28, 30, 196, 228, q5kj3)
	MOVQ acc+40(FP), BX
	Q5KFIN(R10, Y8, 0, 32)
	CMPQ DX, $1
	JEQ  q5knext
	Q5KFIN(R8, Y9, 64, 96)
	CMPQ DX, $2
	JEQ  q5knext
	Q5KFIN(R11, Y10, 128, 160)
	CMPQ DX, $3
	JEQ  q5knext
	Q5KFIN(R9, Y11, 192, 224)
q5knext:
	ADDQ $176, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q5kloop
	VZEROUPPER
	RET

// ---- Q3_K ----
// Block: hmask (32), qs (64), 12 bytes of packed 6-bit signed scales,
// d (f16). Element 32c+i (chunk c, i < 32) has its low 2 bits at bits
// 2(c%4) of qs[32(c/4)+i] and its high bit at bit c of hmask[i]; its
// quant is low - 4 when that bit is clear. As llama.cpp, each row takes
// maddubs(low, y) - maddubs(4·!high, y) (exact int16), then VPMADDWD by
// the groups' scales: chunk c's first 16 elements have group 2c, the
// rest 2c+1. Y5 the byte mask 0x03, Y7
// 0x04, Y6 hmask, Y0 the qs half of the chunk, Y1/Y2 its low and high
// parts, Y3 its scales, Y14 and Y15 the scales (SCALEHALVES).

#define Q3KROW(idx, yoff, iacc) \
	VPMADDUBSW yoff(DI)(idx*1), Y1, Y4 \
	VPMADDUBSW yoff(DI)(idx*1), Y2, Y13 \
	VPSUBW     Y13, Y4, Y4 \
	VPMADDWD   Y3, Y4, Y4 \
	VPADDD     Y4, iacc, iacc

// Q3KC processes chunk c: the low bits are Y0 >> lsh, hbit shifted by
// hop $hn onto bit 2, the scales from shuffle control shuf of sc (Y14
// or Y15), the activations at yoff.
#define Q3KC(lsh, hop, hn, shuf, sc, yoff, L) \
	VPSRLW       $lsh, Y0, Y1 \
	VPAND        Y5, Y1, Y1 \
	hop          $hn, Y6, Y2 \
	VPANDN       Y7, Y2, Y2 \
	VPSHUFB      scaleShuf<>+shuf(SB), sc, Y3 \
	Q3KROW(R10, yoff, Y8) \
	CMPQ DX, $1 \
	JEQ  L \
	Q3KROW(R8, yoff, Y9) \
	CMPQ DX, $2 \
	JEQ  L \
	Q3KROW(R11, yoff, Y10) \
	CMPQ DX, $3 \
	JEQ  L \
	Q3KROW(R9, yoff, Y11) \
L:

// Q3KSCALES unpacks the 16 scales at 96(SI) with llama.cpp's 32-bit word
// operations into bytes (scale+32), then into int16 in SCALEHALVES.
#define Q3KSCALES \
	MOVL  96(SI), AX \
	MOVL  100(SI), R12 \
	MOVL  104(SI), R13 \
	MOVL  AX, R15 \
	SHRL  $4, R15 \
	ANDL  $0x0f0f0f0f, R15 \
	MOVL  R13, BX \
	SHRL  $4, BX \
	ANDL  $0x03030303, BX \
	SHLL  $4, BX \
	ORL   BX, R15 \
	VMOVD R15, X13 \
	MOVL  R12, R15 \
	SHRL  $4, R15 \
	ANDL  $0x0f0f0f0f, R15 \
	MOVL  R13, BX \
	SHRL  $6, BX \
	ANDL  $0x03030303, BX \
	SHLL  $4, BX \
	ORL   BX, R15 \
	VPINSRD $1, R15, X13, X13 \
	ANDL  $0x0f0f0f0f, AX \
	MOVL  R13, BX \
	ANDL  $0x03030303, BX \
	SHLL  $4, BX \
	ORL   BX, AX \
	VMOVD AX, X12 \
	ANDL  $0x0f0f0f0f, R12 \
	MOVL  R13, BX \
	SHRL  $2, BX \
	ANDL  $0x03030303, BX \
	SHLL  $4, BX \
	ORL   BX, R12 \
	VPINSRD $1, R12, X12, X12 \
	VPUNPCKLQDQ X13, X12, X12 \
	VPMOVZXBW X12, Y12 \
	MOVL      $0x00200020, AX \
	VMOVD     AX, X13 \
	VPBROADCASTD X13, Y13 \
	VPSUBW    Y13, Y12, Y12 \
	SCALEHALVES(Y12)

// func kernQ3_KAVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernQ3_KAVX2(SB), NOSPLIT, $0-48
	SETUPK
	MOVL $0x03030303, AX
	VMOVD AX, X5
	VPBROADCASTD X5, Y5
	MOVL $0x04040404, AX
	VMOVD AX, X7
	VPBROADCASTD X7, Y7
q3kloop:
	Q3KSCALES
	ZEROI
	VMOVDQU 0(SI), Y6
	VMOVDQU 32(SI), Y0
	Q3KC(0, VPSLLW, 2, 0, Y14, 4, q3kc0)
	Q3KC(2, VPSLLW, 1, 32, Y14, 36, q3kc1)
	Q3KC(4, VPSRLW, 0, 64, Y14, 68, q3kc2)
	Q3KC(6, VPSRLW, 1, 96, Y14, 100, q3kc3)
	VMOVDQU 64(SI), Y0
	Q3KC(0, VPSRLW, 2, 0, Y15, 132, q3kc4)
	Q3KC(2, VPSRLW, 3, 32, Y15, 164, q3kc5)
	Q3KC(4, VPSRLW, 4, 64, Y15, 196, q3kc6)
	Q3KC(6, VPSRLW, 5, 96, Y15, 228, q3kc7)
	MOVQ acc+40(FP), BX
	FMAD(R10, Y8, 108, 0)
	CMPQ DX, $1
	JEQ  q3knext
	FMAD(R8, Y9, 108, 64)
	CMPQ DX, $2
	JEQ  q3knext
	FMAD(R11, Y10, 108, 128)
	CMPQ DX, $3
	JEQ  q3knext
	FMAD(R9, Y11, 108, 192)
q3knext:
	ADDQ $110, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q3kloop
	VZEROUPPER
	RET

// ---- Q2_K ----
// Block: 16 bytes of 4-bit scales (low nibble) and minimums (high), qs
// (64), d, dmin (f16). Element 32c+i has bits 2(c%4) of qs[32(c/4)+i];
// chunk c's groups are 2c and 2c+1 as in Q3_K. Per super-block and row,
// lane u first takes m[2u]·bsums[2u] + m[2u+1]·bsums[2u+1] fused-
// multiply-subtracted with d8·dmin, then the quant lanes with d8·d.
// Y5 the byte mask 0x0f, Y6 0x03, Y7 the minimums as int16, Y0 the qs
// half, Y1 the chunk's quants, Y3 its scales, Y14 and Y15 the scales
// (SCALEHALVES).

#define Q2KROW(idx, yoff, iacc) \
	VPMADDUBSW yoff(DI)(idx*1), Y1, Y4 \
	VPMADDWD   Y3, Y4, Y4 \
	VPADDD     Y4, iacc, iacc

#define Q2KC(lsh, shuf, sc, yoff, L) \
	VPSRLW       $lsh, Y0, Y1 \
	VPAND        Y6, Y1, Y1 \
	VPSHUFB      scaleShuf<>+shuf(SB), sc, Y3 \
	Q2KROW(R10, yoff, Y8) \
	CMPQ DX, $1 \
	JEQ  L \
	Q2KROW(R8, yoff, Y9) \
	CMPQ DX, $2 \
	JEQ  L \
	Q2KROW(R11, yoff, Y10) \
	CMPQ DX, $3 \
	JEQ  L \
	Q2KROW(R9, yoff, Y11) \
L:

// Q2KFIN finishes one row: the minimum lanes first (with d8·dmin), then
// the quant lanes (with d8·d), in one read-modify-write of the row's
// float lanes.
#define Q2KFIN(idx, iacc, aoff) \
	VMOVDQU      260(DI)(idx*1), Y12 \
	VPMADDWD     Y7, Y12, Y12 \
	VCVTDQ2PS    Y12, Y12 \
	VBROADCASTSS (DI)(idx*1), Y13 \
	VMULPS       Y1, Y13, Y14 \
	VMOVUPS      aoff(BX), Y15 \
	VFNMADD231PS Y14, Y12, Y15 \
	VCVTDQ2PS    iacc, Y12 \
	VMULPS       Y0, Y13, Y14 \
	VFMADD231PS  Y14, Y12, Y15 \
	VMOVUPS      Y15, aoff(BX)

// func kernQ2_KAVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernQ2_KAVX2(SB), NOSPLIT, $0-48
	SETUPK
	MOVL $0x03030303, AX
	VMOVD AX, X6
	VPBROADCASTD X6, Y6
	MOVQ acc+40(FP), BX
q2kloop:
	VMOVDQU   0(SI), X12
	VPSRLW    $4, X12, X13
	VPAND     X5, X12, X12
	VPAND     X5, X13, X13
	VPMOVZXBW X12, Y12
	SCALEHALVES(Y12)
	VPMOVZXBW X13, Y7
	ZEROI
	VMOVDQU 16(SI), Y0
	Q2KC(0, 0, Y14, 4, q2kc0)
	Q2KC(2, 32, Y14, 36, q2kc1)
	Q2KC(4, 64, Y14, 68, q2kc2)
	Q2KC(6, 96, Y14, 100, q2kc3)
	VMOVDQU 48(SI), Y0
	Q2KC(0, 0, Y15, 132, q2kc4)
	Q2KC(2, 32, Y15, 164, q2kc5)
	Q2KC(4, 64, Y15, 196, q2kc6)
	Q2KC(6, 96, Y15, 228, q2kc7)
	VPBROADCASTW 80(SI), X0
	VCVTPH2PS    X0, Y0
	VPBROADCASTW 82(SI), X1
	VCVTPH2PS    X1, Y1
	Q2KFIN(R10, Y8, 0)
	CMPQ DX, $1
	JEQ  q2knext
	Q2KFIN(R8, Y9, 64)
	CMPQ DX, $2
	JEQ  q2knext
	Q2KFIN(R11, Y10, 128)
	CMPQ DX, $3
	JEQ  q2knext
	Q2KFIN(R9, Y11, 192)
q2knext:
	ADDQ $84, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q2kloop
	VZEROUPPER
	RET
