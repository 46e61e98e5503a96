//go:build amd64 && !noasm

#include "textflag.h"

// PFD is how far ahead (bytes) the kernels prefetch each weight row: the
// first group of activation rows reads the weights from memory, and four
// interleaved rows stream slower than one unless prefetched (measured on
// Zen 5: 4×8 tokens of a 896×4864 Q4_0 matrix 1.6× faster with it).
#define PFD 256

// 4×4 tile kernels of Q4_0 and Q8_0 weights against Q8_0 activations with
// AVX-512 VNNI. A ZMM register holds one block of two weight rows (row 2p
// in bytes 0-31, row 2p+1 in 32-63), as unsigned quants (Q4_0 nibbles
// 0..15, Q8_0 quants + 128), and VPDPBUSD multiplies them with the
// activation block broadcast to both halves. The offset is taken back
// exactly: every lane starts from -off·(sum of its 4 activation quants),
// so each lane holds the same int32 sum of 4 products as the reference's,
// and is converted and fused-multiply-added with d_w·d_a into the lane
// of its (weight row, activation row) in block order, as the reference.
//
// One to four activation rows (BX); with one, the kernel is the decode
// step's: four weight rows per pass over the activations.
//
// Registers: SI weight row 0's block, R8 weight stride, R12 3·wstride;
// DX 2·wstride; DI activation row 0's block, R9, R10, R11 its rows 1-3
// offsets, R13 = 0;
// CX blocks left. Z0-Z7 accumulators (activation row r: Z(2r) weight rows
// 0|1, Z(2r+1) rows 2|3); Z8, Z9 weight quants of rows 0|1 and 2|3;
// Z10, Z11 their scales; Z28 zero; Z29 the offset in every byte; Z30
// nibble shifts; Z31 bytes 0x0f (Q4_0) or 0x80 (Q8_0).

// TILEROW adds activation row (DI)(idx*1)'s block to accumulators a01, a23.
#define TILEROW(idx, a01, a23) \
	VBROADCASTI64X4 2(DI)(idx*1), Z12 \
	VPXORD          Z13, Z13, Z13 \
	VPDPBUSD        Z12, Z29, Z13 \
	VPSUBD          Z13, Z28, Z13 \
	VPBROADCASTW    (DI)(idx*1), Y14 \
	VCVTPH2PS       Y14, Z14 \
	VMOVDQA32       Z13, Z15 \
	VMOVDQA32       Z13, Z17 \
	VPDPBUSD        Z12, Z8, Z15 \
	VPDPBUSD        Z12, Z9, Z17 \
	VCVTDQ2PS       Z15, Z15 \
	VCVTDQ2PS       Z17, Z17 \
	VMULPS          Z14, Z10, Z16 \
	VMULPS          Z14, Z11, Z18 \
	VFMADD231PS     Z16, Z15, a01 \
	VFMADD231PS     Z18, Z17, a23

// TILESCALES converts the f16 scales of the four weight rows' blocks to
// Z10 (row 0 in lanes 0-7, row 1 in 8-15) and Z11 (rows 2, 3).
#define TILESCALES \
	VPBROADCASTW (SI), X10 \
	VPBROADCASTW (SI)(R8*1), X12 \
	VINSERTI128  $1, X12, Y10, Y10 \
	VCVTPH2PS    Y10, Z10 \
	VPBROADCASTW (SI)(R8*2), X11 \
	VPBROADCASTW (SI)(R12*1), X12 \
	VINSERTI128  $1, X12, Y11, Y11 \
	VCVTPH2PS    Y11, Z11

#define TILESETUP \
	MOVQ nb+0(FP), CX \
	MOVQ w+8(FP), SI \
	MOVQ wstride+16(FP), R8 \
	MOVQ a+24(FP), DI \
	MOVQ astride+32(FP), R9 \
	MOVQ rows+40(FP), BX \
	LEAQ (R8)(R8*2), R12 \
	LEAQ (R9)(R9*1), R10 \
	LEAQ (R10)(R9*1), R11 \
	XORQ R13, R13 \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
	VPXORD Z28, Z28, Z28

// TILEROWS runs TILEROW on the first BX (1 to 4) activation rows.
#define TILEROWS(lbl) \
	TILEROW(R13, Z0, Z1) \
	CMPQ BX, $1 \
	JEQ  lbl \
	TILEROW(R9, Z2, Z3) \
	CMPQ BX, $2 \
	JEQ  lbl \
	TILEROW(R10, Z4, Z5) \
	CMPQ BX, $3 \
	JEQ  lbl \
	TILEROW(R11, Z6, Z7) \
lbl:

// HSUM2 adds the 8 lanes of each half of z in the order of hsum8
// ((x0+x4)+(x2+x6)) + ((x1+x5)+(x3+x7)), leaving the sums in lanes 0 and 8.
#define HSUM2(z) \
	VSHUFF32X4 $0xb1, z, z, Z12 \
	VADDPS     Z12, z, z \
	VPERMILPS  $0x4e, z, Z12 \
	VADDPS     Z12, z, z \
	VPERMILPS  $0xb1, z, Z12 \
	VADDPS     Z12, z, z

// TILEOUT stores activation row r's four dot products (weight rows 0-3:
// lanes 0 and 8 of z01, then of z23) at (DI) and advances DI by the
// output stride R8.
#define TILEOUT(z01, z23, x01) \
	VPERMT2PS z23, Z13, z01 \
	VMOVUPS   x01, (DI) \
	ADDQ      R8, DI

// TILESTORE finishes every accumulator like hsum8 and writes the first
// rows rows of results to dst, dstride floats apart.
#define TILESTORE(lbl) \
	HSUM2(Z0) \
	HSUM2(Z1) \
	HSUM2(Z2) \
	HSUM2(Z3) \
	HSUM2(Z4) \
	HSUM2(Z5) \
	HSUM2(Z6) \
	HSUM2(Z7) \
	VMOVDQU64 tileOut<>(SB), Z13 \
	MOVQ dst+48(FP), DI \
	MOVQ dstride+56(FP), R8 \
	SHLQ $2, R8 \
	TILEOUT(Z0, Z1, X0) \
	CMPQ BX, $1 \
	JEQ  lbl \
	TILEOUT(Z2, Z3, X2) \
	CMPQ BX, $2 \
	JEQ  lbl \
	TILEOUT(Z4, Z5, X4) \
	CMPQ BX, $3 \
	JEQ  lbl \
	TILEOUT(Z6, Z7, X6) \
lbl: \
	VZEROUPPER \
	RET

// NIBBLES2 loads the 16 quant bytes at off(base) and off(base)(idx*1) as
// 32 nibbles each (low nibbles first, as NIBBLES) into zmm.
#define NIBBLES2(off, base, i1, i2, x, y, zmm) \
	VMOVDQU      off(base)(i1*1), x \
	VINSERTI128  $1, off(base)(i2*1), y, y \
	VSHUFI64X2   $0x50, zmm, zmm, zmm \
	VPSRLVW      Z30, zmm, zmm \
	VPANDD       Z31, zmm, zmm

// func tileQ4_0AVX512VNNI(nb int, w *byte, wstride int, a *byte, astride, rows int, dst *float32, dstride int)
TEXT ·tileQ4_0AVX512VNNI(SB), NOSPLIT, $0-64
	TILESETUP
	LEAQ (R8)(R8*1), DX // 2·wstride
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVL $0x08080808, AX
	VPBROADCASTD AX, Z29
	VMOVDQU64 tileShift<>(SB), Z30

tq4loop:
	PREFETCHT0 PFD(SI)
	PREFETCHT0 PFD(SI)(R8*1)
	PREFETCHT0 PFD(SI)(R8*2)
	PREFETCHT0 PFD(SI)(R12*1)
	NIBBLES2(2, SI, R13, R8, X8, Y8, Z8)
	NIBBLES2(2, SI, DX, R12, X9, Y9, Z9)
	TILESCALES
	TILEROWS(tq4rows)
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  tq4loop
	TILESTORE(tq4out)

// func tileQ8_0AVX512VNNI(nb int, w *byte, wstride int, a *byte, astride, rows int, dst *float32, dstride int)
TEXT ·tileQ8_0AVX512VNNI(SB), NOSPLIT, $0-64
	TILESETUP
	LEAQ (R8)(R8*1), DX // 2·wstride
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z31
	VMOVDQA64 Z31, Z29

tq8loop:
	PREFETCHT0 PFD(SI)
	PREFETCHT0 PFD(SI)(R8*1)
	PREFETCHT0 PFD(SI)(R8*2)
	PREFETCHT0 PFD(SI)(R12*1)
	VMOVDQU       2(SI), Y8
	VINSERTI64X4  $1, 2(SI)(R8*1), Z8, Z8
	VPXORD        Z31, Z8, Z8
	VMOVDQU       2(SI)(DX*1), Y9
	VINSERTI64X4  $1, 2(SI)(R12*1), Z9, Z9
	VPXORD        Z31, Z9, Z9
	TILESCALES
	TILEROWS(tq8rows)
	ADDQ $34, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  tq8loop
	TILESTORE(tq8out)

// Word shifts of NIBBLES2: 128-bit lanes 1 and 3 (the high nibbles) by 4.
DATA tileShift<>+0(SB)/8, $0
DATA tileShift<>+8(SB)/8, $0
DATA tileShift<>+16(SB)/8, $0x0004000400040004
DATA tileShift<>+24(SB)/8, $0x0004000400040004
DATA tileShift<>+32(SB)/8, $0
DATA tileShift<>+40(SB)/8, $0
DATA tileShift<>+48(SB)/8, $0x0004000400040004
DATA tileShift<>+56(SB)/8, $0x0004000400040004
GLOBL tileShift<>(SB), RODATA|NOPTR, $64

// VPERMT2PS indices of TILEOUT: lanes 0 and 8 of the first table, then of
// the second.
DATA tileOut<>+0(SB)/4, $0
DATA tileOut<>+4(SB)/4, $8
DATA tileOut<>+8(SB)/4, $16
DATA tileOut<>+12(SB)/4, $24
DATA tileOut<>+16(SB)/8, $0
DATA tileOut<>+24(SB)/8, $0
DATA tileOut<>+32(SB)/8, $0
DATA tileOut<>+40(SB)/8, $0
DATA tileOut<>+48(SB)/8, $0
DATA tileOut<>+56(SB)/8, $0
GLOBL tileOut<>(SB), RODATA|NOPTR, $64

// The interleaved-order Q4_0 tile: llama.cpp repacks Q4_0 weights whose
// row count is a multiple of 8 into 8-row interleaved blocks on AVX2
// machines, and its kernels take each block's whole integer sum
// Σ(q-8)·a, convert it and fuse-multiply-add it with d_w·d_a into one
// float32 per (weight row, activation row), block after block. This
// kernel does the same: after VPDPBUSD it adds each half's 8 lanes as
// integers (exactly, so every lane of the half holds the block sum), and
// the FMA then keeps every lane of a half equal to that pair's result.

// TILESCALESI converts the f16 scales of the four weight rows' blocks to
// Z10: row r's scale in lanes 4r..4r+3.
#define TILESCALESI \
	VPBROADCASTW (SI), X10 \
	VPBROADCASTW (SI)(R8*1), X12 \
	VPUNPCKLQDQ  X12, X10, X10 \
	VPBROADCASTW (SI)(R8*2), X11 \
	VPBROADCASTW (SI)(R12*1), X12 \
	VPUNPCKLQDQ  X12, X11, X11 \
	VINSERTI128  $1, X11, Y10, Y10 \
	VCVTPH2PS    Y10, Z10

// TILEROWI adds activation row (DI)(idx*1)'s block to accumulator acc
// (weight row r in lanes 4r..4r+3). After VPDPBUSD, Z15 holds weight rows
// 0|1 and Z17 rows 2|3 as 8 int32 lanes each; the 128-bit lane shuffles
// gather each row's two quarter-rows into one 128-bit lane, and two more
// adds give every lane of it the row's block sum, exactly.
#define TILEROWI(idx, acc) \
	VBROADCASTI64X4 2(DI)(idx*1), Z12 \
	VPXORD          Z13, Z13, Z13 \
	VPDPBUSD        Z12, Z29, Z13 \
	VPSUBD          Z13, Z28, Z13 \
	VPBROADCASTW    (DI)(idx*1), Y14 \
	VCVTPH2PS       Y14, Z14 \
	VMOVDQA32       Z13, Z15 \
	VMOVDQA32       Z13, Z17 \
	VPDPBUSD        Z12, Z8, Z15 \
	VPDPBUSD        Z12, Z9, Z17 \
	VSHUFI32X4      $0x88, Z17, Z15, Z16 \
	VSHUFI32X4      $0xdd, Z17, Z15, Z18 \
	VPADDD          Z18, Z16, Z16 \
	VPSHUFD         $0x4e, Z16, Z18 \
	VPADDD          Z18, Z16, Z16 \
	VPSHUFD         $0xb1, Z16, Z18 \
	VPADDD          Z18, Z16, Z16 \
	VCVTDQ2PS       Z16, Z16 \
	VMULPS          Z14, Z10, Z18 \
	VFMADD231PS     Z18, Z16, acc

#define TILEROWSI(lbl) \
	TILEROWI(R13, Z0) \
	CMPQ BX, $1 \
	JEQ  lbl \
	TILEROWI(R9, Z2) \
	CMPQ BX, $2 \
	JEQ  lbl \
	TILEROWI(R10, Z4) \
	CMPQ BX, $3 \
	JEQ  lbl \
	TILEROWI(R11, Z6) \
lbl:

// TILEOUTI stores lanes 0, 4, 8 and 12 of acc at (DI) and advances DI by
// the output stride R8.
#define TILEOUTI(acc) \
	VPERMPS acc, Z13, Z12 \
	VMOVUPS X12, (DI) \
	ADDQ    R8, DI

#define TILESTOREI(lbl) \
	VMOVDQU64 tileOutI<>(SB), Z13 \
	MOVQ dst+48(FP), DI \
	MOVQ dstride+56(FP), R8 \
	SHLQ $2, R8 \
	TILEOUTI(Z0) \
	CMPQ BX, $1 \
	JEQ  lbl \
	TILEOUTI(Z2) \
	CMPQ BX, $2 \
	JEQ  lbl \
	TILEOUTI(Z4) \
	CMPQ BX, $3 \
	JEQ  lbl \
	TILEOUTI(Z6) \
lbl: \
	VZEROUPPER \
	RET

DATA tileOutI<>+0(SB)/4, $0
DATA tileOutI<>+4(SB)/4, $4
DATA tileOutI<>+8(SB)/4, $8
DATA tileOutI<>+12(SB)/4, $12
DATA tileOutI<>+16(SB)/8, $0
DATA tileOutI<>+24(SB)/8, $0
DATA tileOutI<>+32(SB)/8, $0
DATA tileOutI<>+40(SB)/8, $0
DATA tileOutI<>+48(SB)/8, $0
DATA tileOutI<>+56(SB)/8, $0
GLOBL tileOutI<>(SB), RODATA|NOPTR, $64

// func tileQ4_0IAVX512VNNI(nb int, w *byte, wstride int, a *byte, astride, rows int, dst *float32, dstride int)
TEXT ·tileQ4_0IAVX512VNNI(SB), NOSPLIT, $0-64
	TILESETUP
	LEAQ (R8)(R8*1), DX // 2·wstride
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVL $0x08080808, AX
	VPBROADCASTD AX, Z29
	VMOVDQU64 tileShift<>(SB), Z30

tq4iloop:
	PREFETCHT0 PFD(SI)
	PREFETCHT0 PFD(SI)(R8*1)
	PREFETCHT0 PFD(SI)(R8*2)
	PREFETCHT0 PFD(SI)(R12*1)
	NIBBLES2(2, SI, R13, R8, X8, Y8, Z8)
	NIBBLES2(2, SI, DX, R12, X9, Y9, Z9)
	TILESCALESI
	TILEROWSI(tq4irows)
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  tq4iloop
	TILESTOREI(tq4iout)

// func tileQ8_0IAVX512VNNI(nb int, w *byte, wstride int, a *byte, astride, rows int, dst *float32, dstride int)
// The per-block order for Q8_0 (llama.cpp's AMX kernels), as tileQ4_0I.
TEXT ·tileQ8_0IAVX512VNNI(SB), NOSPLIT, $0-64
	TILESETUP
	LEAQ (R8)(R8*1), DX // 2·wstride
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z31
	VMOVDQA64 Z31, Z29

tq8iloop:
	PREFETCHT0 PFD(SI)
	PREFETCHT0 PFD(SI)(R8*1)
	PREFETCHT0 PFD(SI)(R8*2)
	PREFETCHT0 PFD(SI)(R12*1)
	VMOVDQU       2(SI), Y8
	VINSERTI64X4  $1, 2(SI)(R8*1), Z8, Z8
	VPXORD        Z31, Z8, Z8
	VMOVDQU       2(SI)(DX*1), Y9
	VINSERTI64X4  $1, 2(SI)(R12*1), Z9, Z9
	VPXORD        Z31, Z9, Z9
	TILESCALESI
	TILEROWSI(tq8irows)
	ADDQ $34, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  tq8iloop
	TILESTOREI(tq8iout)

// The interleaved-order tiles for exactly four activation rows: the four
// rows' block sums are finished together. After the 128-bit lane shuffle
// of TILEROWI, C_t holds weight row r's four partial sums for activation
// row t in 128-bit lane r; two rounds of dword and qword unpacks and adds
// transpose-add C_0..C_3 into one register whose lane (r, t) = 4r+t is
// the block sum of weight row r and activation row t (integer sums, so the
// order of the adds does not matter). One conversion, one scale product
// (d_w in each 128-bit lane times d_a of the four rows) and one FMA per
// block then serve all 16 pairs.

// TILEC4 leaves activation row (DI)(idx*1)'s C_t in c.
#define TILEC4(idx, c) \
	VBROADCASTI64X4 2(DI)(idx*1), Z12 \
	VPXORD          Z13, Z13, Z13 \
	VPDPBUSD        Z12, Z29, Z13 \
	VPSUBD          Z13, Z28, Z13 \
	VMOVDQA32       Z13, Z15 \
	VMOVDQA32       Z13, Z17 \
	VPDPBUSD        Z12, Z8, Z15 \
	VPDPBUSD        Z12, Z9, Z17 \
	VSHUFI32X4      $0x88, Z17, Z15, c \
	VSHUFI32X4      $0xdd, Z17, Z15, Z16 \
	VPADDD          Z16, c, c

// TILEBLOCK4 adds one block of the four activation rows to Z0.
#define TILEBLOCK4 \
	MOVWLZX      (DI), AX \
	VMOVD        AX, X14 \
	VPINSRW      $1, (DI)(R9*1), X14, X14 \
	VPINSRW      $2, (DI)(R10*1), X14, X14 \
	VPINSRW      $3, (DI)(R11*1), X14, X14 \
	VCVTPH2PS    X14, X14 \
	VSHUFF32X4   $0, Z14, Z14, Z14 \
	TILEC4(R13, Z20) \
	TILEC4(R9, Z21) \
	TILEC4(R10, Z22) \
	TILEC4(R11, Z23) \
	VPUNPCKLDQ   Z21, Z20, Z16 \
	VPUNPCKHDQ   Z21, Z20, Z17 \
	VPADDD       Z17, Z16, Z16 \
	VPUNPCKLDQ   Z23, Z22, Z18 \
	VPUNPCKHDQ   Z23, Z22, Z19 \
	VPADDD       Z19, Z18, Z18 \
	VPUNPCKLQDQ  Z18, Z16, Z17 \
	VPUNPCKHQDQ  Z18, Z16, Z19 \
	VPADDD       Z19, Z17, Z17 \
	VCVTDQ2PS    Z17, Z17 \
	VMULPS       Z14, Z10, Z16 \
	VFMADD231PS  Z16, Z17, Z0

// TILESTORE4 transposes Z0 (lane 4r+t) to activation-row order and writes
// row t's four results at dst + t·dstride.
#define TILESTORE4 \
	VMOVDQU64     tileOutI4<>(SB), Z13 \
	VPERMPS       Z0, Z13, Z0 \
	MOVQ          dst+48(FP), DI \
	MOVQ          dstride+56(FP), R8 \
	SHLQ          $2, R8 \
	VMOVUPS       X0, (DI) \
	ADDQ          R8, DI \
	VEXTRACTF32X4 $1, Z0, (DI) \
	ADDQ          R8, DI \
	VEXTRACTF32X4 $2, Z0, (DI) \
	ADDQ          R8, DI \
	VEXTRACTF32X4 $3, Z0, (DI) \
	VZEROUPPER \
	RET

DATA tileOutI4<>+0(SB)/4, $0
DATA tileOutI4<>+4(SB)/4, $4
DATA tileOutI4<>+8(SB)/4, $8
DATA tileOutI4<>+12(SB)/4, $12
DATA tileOutI4<>+16(SB)/4, $1
DATA tileOutI4<>+20(SB)/4, $5
DATA tileOutI4<>+24(SB)/4, $9
DATA tileOutI4<>+28(SB)/4, $13
DATA tileOutI4<>+32(SB)/4, $2
DATA tileOutI4<>+36(SB)/4, $6
DATA tileOutI4<>+40(SB)/4, $10
DATA tileOutI4<>+44(SB)/4, $14
DATA tileOutI4<>+48(SB)/4, $3
DATA tileOutI4<>+52(SB)/4, $7
DATA tileOutI4<>+56(SB)/4, $11
DATA tileOutI4<>+60(SB)/4, $15
GLOBL tileOutI4<>(SB), RODATA|NOPTR, $64

// func tileQ4_0I4AVX512VNNI(nb int, w *byte, wstride int, a *byte, astride, rows int, dst *float32, dstride int)
TEXT ·tileQ4_0I4AVX512VNNI(SB), NOSPLIT, $0-64
	TILESETUP
	LEAQ (R8)(R8*1), DX // 2·wstride
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVL $0x08080808, AX
	VPBROADCASTD AX, Z29
	VMOVDQU64 tileShift<>(SB), Z30

tq4i4loop:
	PREFETCHT0 PFD(SI)
	PREFETCHT0 PFD(SI)(R8*1)
	PREFETCHT0 PFD(SI)(R8*2)
	PREFETCHT0 PFD(SI)(R12*1)
	NIBBLES2(2, SI, R13, R8, X8, Y8, Z8)
	NIBBLES2(2, SI, DX, R12, X9, Y9, Z9)
	TILESCALESI
	TILEBLOCK4
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  tq4i4loop
	TILESTORE4

// func tileQ8_0I4AVX512VNNI(nb int, w *byte, wstride int, a *byte, astride, rows int, dst *float32, dstride int)
TEXT ·tileQ8_0I4AVX512VNNI(SB), NOSPLIT, $0-64
	TILESETUP
	LEAQ (R8)(R8*1), DX // 2·wstride
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z31
	VMOVDQA64 Z31, Z29

tq8i4loop:
	PREFETCHT0 PFD(SI)
	PREFETCHT0 PFD(SI)(R8*1)
	PREFETCHT0 PFD(SI)(R8*2)
	PREFETCHT0 PFD(SI)(R12*1)
	VMOVDQU       2(SI), Y8
	VINSERTI64X4  $1, 2(SI)(R8*1), Z8, Z8
	VPXORD        Z31, Z8, Z8
	VMOVDQU       2(SI)(DX*1), Y9
	VINSERTI64X4  $1, 2(SI)(R12*1), Z9, Z9
	VPXORD        Z31, Z9, Z9
	TILESCALESI
	TILEBLOCK4
	ADDQ $34, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  tq8i4loop
	TILESTORE4
