//go:build amd64 && !noasm

#include "textflag.h"

// The Q8_0x16AMX layout's kernels (see q8x16amx.go): the Q8_0x16 bytes,
// each block's 32 products of an output summed as one exact integer,
// converted and fused-multiply-added with d_w·d_a into the output.

// PFD is the one-row kernel's prefetch distance, the Q8_0x16 kernel's.
#define PFD 3456

// Q8SBLOCK adds the block of the group at (DI)(idx*sc) to acc, for the
// activation block at SI and its aux words at R8.
#define Q8SBLOCK(idx, sc, acc) \
	PREFETCHT0 PFD+0(DI)(idx*sc) \
	VCVTPH2PS   0(DI)(idx*sc), Z3 \
	VMULPS.BCST 4(R8), Z3, Z3 \
	PREFETCHT0 PFD+64(DI)(idx*sc) \
	VMOVDQU64 32(DI)(idx*sc), Z16 \
	VPBROADCASTD (R8), Z1 \
	VPDPBUSD.BCST 2(SI), Z16, Z1 \
	PREFETCHT0 PFD+128(DI)(idx*sc) \
	VMOVDQU64 96(DI)(idx*sc), Z17 \
	VPXORD Z2, Z2, Z2 \
	VPDPBUSD.BCST 6(SI), Z17, Z2 \
	PREFETCHT0 PFD+192(DI)(idx*sc) \
	VMOVDQU64 160(DI)(idx*sc), Z18 \
	VPXORD Z4, Z4, Z4 \
	VPDPBUSD.BCST 10(SI), Z18, Z4 \
	PREFETCHT0 PFD+256(DI)(idx*sc) \
	VMOVDQU64 224(DI)(idx*sc), Z19 \
	VPXORD Z5, Z5, Z5 \
	VPDPBUSD.BCST 14(SI), Z19, Z5 \
	PREFETCHT0 PFD+320(DI)(idx*sc) \
	VMOVDQU64 288(DI)(idx*sc), Z20 \
	VPXORD Z6, Z6, Z6 \
	VPDPBUSD.BCST 18(SI), Z20, Z6 \
	PREFETCHT0 PFD+384(DI)(idx*sc) \
	VMOVDQU64 352(DI)(idx*sc), Z21 \
	VPXORD Z7, Z7, Z7 \
	VPDPBUSD.BCST 22(SI), Z21, Z7 \
	PREFETCHT0 PFD+448(DI)(idx*sc) \
	VMOVDQU64 416(DI)(idx*sc), Z22 \
	VPXORD Z8, Z8, Z8 \
	VPDPBUSD.BCST 26(SI), Z22, Z8 \
	PREFETCHT0 PFD+512(DI)(idx*sc) \
	VMOVDQU64 480(DI)(idx*sc), Z23 \
	VPXORD Z9, Z9, Z9 \
	VPDPBUSD.BCST 30(SI), Z23, Z9 \
	VPADDD Z2, Z1, Z1 \
	VPADDD Z5, Z4, Z4 \
	VPADDD Z7, Z6, Z6 \
	VPADDD Z9, Z8, Z8 \
	VPADDD Z4, Z1, Z1 \
	VPADDD Z8, Z6, Z6 \
	VPADDD Z6, Z1, Z1 \
	VCVTDQ2PS   Z1, Z1 \
	VFMADD231PS Z3, Z1, acc

// func q8x16SumAVX512VNNI(nb int, w *byte, a *byte, aux *uint32, dst *float32)
//
// One activation row. Per block the eight weight chunks (quants 4j..4j+3
// of the 16 rows, stored +128) take VPDPBUSD with the row's four quants
// 4j..4j+3 broadcast, into two integer sums (even and odd j) of which one
// starts from the aux word −128·Σa; their sum is the block's exact
// integer per row, converted and fused-multiply-added with d_w·d_a into
// Z0.
TEXT ·q8x16SumAVX512VNNI(SB), NOSPLIT, $0-40
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), DI
	MOVQ a+16(FP), SI
	MOVQ aux+24(FP), R8
	XORQ R11, R11
	VPXORD Z0, Z0, Z0

q8sumloop:
	Q8SBLOCK(R11, 1, Z0)
	ADDQ $544, DI
	ADDQ $34, SI
	ADDQ $8, R8
	DECQ CX
	JNZ  q8sumloop

	MOVQ dst+32(FP), DI
	VMOVUPS Z0, (DI)
	VZEROUPPER
	RET

// func q8x16Sum4AVX512VNNI(nb int, w *byte, stride int, a *byte, aux *uint32, dst *float32, dstride int)
//
// q8x16SumAVX512VNNI over four groups stride bytes apart (four rows of 16
// outputs, dstride floats apart), a block of each in turn, with the same
// sums: four streams of weights keep more of memory's latency overlapped
// than one (see q4x16Decode4AVX512VNNI).
TEXT ·q8x16Sum4AVX512VNNI(SB), NOSPLIT, $0-56
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), DI
	MOVQ stride+16(FP), R9
	LEAQ (R9)(R9*2), R10
	XORQ R11, R11
	MOVQ a+24(FP), SI
	MOVQ aux+32(FP), R8
	VPXORD Z0, Z0, Z0
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12

q8sum4loop:
	Q8SBLOCK(R11, 1, Z0)
	Q8SBLOCK(R9, 1, Z10)
	Q8SBLOCK(R9, 2, Z11)
	Q8SBLOCK(R10, 1, Z12)
	ADDQ $544, DI
	ADDQ $34, SI
	ADDQ $8, R8
	DECQ CX
	JNZ  q8sum4loop

	MOVQ dst+40(FP), DI
	MOVQ dstride+48(FP), R9
	SHLQ $2, R9
	VMOVUPS Z0, (DI)
	VMOVUPS Z10, (DI)(R9*1)
	VMOVUPS Z11, (DI)(R9*2)
	LEAQ (R9)(R9*2), R9
	VMOVUPS Z12, (DI)(R9*1)
	VZEROUPPER
	RET

// The AMX instructions, spelled out in BYTEs (Go's assembler does not
// know them; checked against GNU as): only AX, CX, DX, BX, SI and DI, so
// that no REX bits are needed. Two sets of tiles, for two blocks in
// flight: A in tmm0/tmm3, B in tmm1/tmm4, C in tmm2/tmm5.
#define LDTILECFG_DI BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x07 // LDTILECFG (DI)
#define TILERELEASE BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0 // TILERELEASE
#define LOAD_A0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x04; BYTE $0x06 // TILELOADD tmm0, (SI)(AX*1)
#define LOAD_B0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x0c; BYTE $0x17 // TILELOADD tmm1, (DI)(DX*1)
#define ZERO_C0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd0 // TILEZERO tmm2
#define DP_C0 BYTE $0xc4; BYTE $0xe2; BYTE $0x72; BYTE $0x5e; BYTE $0xd0 // TDPBSUD tmm2, tmm0, tmm1
#define STORE_C0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x14; BYTE $0x13 // TILESTORED (BX)(DX*1), tmm2
#define LOAD_A1 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x1c; BYTE $0x06 // TILELOADD tmm3, (SI)(AX*1)
#define LOAD_B1 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x17 // TILELOADD tmm4, (DI)(DX*1)
#define ZERO_C1 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xe8 // TILEZERO tmm5
#define DP_C1 BYTE $0xc4; BYTE $0xe2; BYTE $0x5a; BYTE $0x5e; BYTE $0xeb // TDPBSUD tmm5, tmm3, tmm4
#define STORE_C1 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x2c; BYTE $0x13 // TILESTORED (BX)(DX*1), tmm5

// In the block loop, row m of a block turns activation row m's 16
// integers (scratch row m) into its outputs Zm: + the aux word −128·Σa,
// converted, times d_w · d_a, fused-multiply-added. R10 walks the rows'
// aux words of the block (R9 = auxstride in bytes).

// Q8AMX_ROW adds a block's row of integers at off(BX), with the aux words
// at aux(R10) (−128·Σa) and da(R10) (d_a), times the block's d_w (d), to
// acc, through the temporaries t and u.
#define Q8AMX_ROW(off, aux, da, d, t, u, acc) \
	VMOVDQU32   off(BX), t \
	VPADDD.BCST aux(R10), t, t \
	VCVTDQ2PS   t, t \
	VMULPS.BCST da(R10), d, u \
	VFMADD231PS u, t, acc

// PREFETCH_BLOCK prefetches the 544 bytes of a block PFD bytes ahead of
// the one whose quants DI points at.
#define PREFETCH_BLOCK \
	PREFETCHT0 PFD-32+0(DI) \
	PREFETCHT0 PFD-32+64(DI) \
	PREFETCHT0 PFD-32+128(DI) \
	PREFETCHT0 PFD-32+192(DI) \
	PREFETCHT0 PFD-32+256(DI) \
	PREFETCHT0 PFD-32+320(DI) \
	PREFETCHT0 PFD-32+384(DI) \
	PREFETCHT0 PFD-32+448(DI) \
	PREFETCHT0 PFD-32+512(DI)

// func q8x16AMXTileAsm(nb int, w *byte, groupBytes, groups int, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int, accumulate bool, cfg *[64]byte, scratch *byte)
//
// Blocks go in pairs: the second block's tiles are loaded, multiplied and
// stored (to scratch+1024) while the first's integers are being turned
// into floats, and each row takes the first block's multiply-add before
// the second's. The weights are prefetched PFD bytes ahead, as in decode:
// a verification's few rows leave the tile loads waiting on memory
// otherwise. Registers: SI the activation quants of the block (AX =
// astride), DI the weight quants of the block (DX = 64), BX the scratch,
// CX blocks left, R8 row 0's aux words of the block, R11 rows, R12 the
// group's weights, R13 its outputs (R15 = dstride in bytes), R14 groups
// left; Z0-Z15 the rows' outputs, Z16 and Z19 the blocks' d_w.
TEXT ·q8x16AMXTileAsm(SB), NOSPLIT, $0-112
	MOVQ cfg+96(FP), DI
	LDTILECFG_DI
	MOVQ scratch+104(FP), BX
	MOVQ auxstride+56(FP), R9
	MOVQ rows+64(FP), R11
	MOVQ w+8(FP), R12
	MOVQ dst+72(FP), R13
	MOVQ dstride+80(FP), R15
	MOVQ groups+24(FP), R14
	MOVQ astride+40(FP), AX
	MOVQ $64, DX

q8amxgroup:
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
	MOVBQZX accumulate+88(FP), R10
	TESTQ R10, R10
	JZ    q8amxblocks
	MOVQ  R13, R10
	VMOVUPS (R10), Z0
	CMPQ R11, $1
	JEQ  q8amxblocks
	ADDQ R15, R10
	VMOVUPS (R10), Z1
	CMPQ R11, $2
	JEQ  q8amxblocks
	ADDQ R15, R10
	VMOVUPS (R10), Z2
	CMPQ R11, $3
	JEQ  q8amxblocks
	ADDQ R15, R10
	VMOVUPS (R10), Z3
	CMPQ R11, $4
	JEQ  q8amxblocks
	ADDQ R15, R10
	VMOVUPS (R10), Z4
	CMPQ R11, $5
	JEQ  q8amxblocks
	ADDQ R15, R10
	VMOVUPS (R10), Z5
	CMPQ R11, $6
	JEQ  q8amxblocks
	ADDQ R15, R10
	VMOVUPS (R10), Z6
	CMPQ R11, $7
	JEQ  q8amxblocks
	ADDQ R15, R10
	VMOVUPS (R10), Z7
	CMPQ R11, $8
	JEQ  q8amxblocks
	ADDQ R15, R10
	VMOVUPS (R10), Z8
	CMPQ R11, $9
	JEQ  q8amxblocks
	ADDQ R15, R10
	VMOVUPS (R10), Z9
	CMPQ R11, $10
	JEQ  q8amxblocks
	ADDQ R15, R10
	VMOVUPS (R10), Z10
	CMPQ R11, $11
	JEQ  q8amxblocks
	ADDQ R15, R10
	VMOVUPS (R10), Z11
	CMPQ R11, $12
	JEQ  q8amxblocks
	ADDQ R15, R10
	VMOVUPS (R10), Z12
	CMPQ R11, $13
	JEQ  q8amxblocks
	ADDQ R15, R10
	VMOVUPS (R10), Z13
	CMPQ R11, $14
	JEQ  q8amxblocks
	ADDQ R15, R10
	VMOVUPS (R10), Z14
	CMPQ R11, $15
	JEQ  q8amxblocks
	ADDQ R15, R10
	VMOVUPS (R10), Z15

q8amxblocks:
	MOVQ nb+0(FP), CX
	MOVQ a+32(FP), SI
	ADDQ $2, SI
	LEAQ 32(R12), DI
	MOVQ aux+48(FP), R8
	CMPQ CX, $2
	JL   q8amxone

q8amxpair:
	PREFETCH_BLOCK
	LOAD_A0
	LOAD_B0
	ZERO_C0
	DP_C0
	STORE_C0
	ADDQ $34, SI
	ADDQ $544, DI
	ADDQ $1024, BX
	PREFETCH_BLOCK
	LOAD_A1
	LOAD_B1
	ZERO_C1
	DP_C1
	STORE_C1
	SUBQ $1024, BX
	VCVTPH2PS -576(DI), Z16
	VCVTPH2PS -32(DI), Z19
	MOVQ R8, R10
	Q8AMX_ROW(0, 0, 4, Z16, Z17, Z18, Z0)
	Q8AMX_ROW(1024, 8, 12, Z19, Z20, Z21, Z0)
	ADDQ        R9, R10
	CMPQ R11, $1
	JEQ  q8amxpairdone
	Q8AMX_ROW(64, 0, 4, Z16, Z17, Z18, Z1)
	Q8AMX_ROW(1088, 8, 12, Z19, Z20, Z21, Z1)
	ADDQ        R9, R10
	CMPQ R11, $2
	JEQ  q8amxpairdone
	Q8AMX_ROW(128, 0, 4, Z16, Z17, Z18, Z2)
	Q8AMX_ROW(1152, 8, 12, Z19, Z20, Z21, Z2)
	ADDQ        R9, R10
	CMPQ R11, $3
	JEQ  q8amxpairdone
	Q8AMX_ROW(192, 0, 4, Z16, Z17, Z18, Z3)
	Q8AMX_ROW(1216, 8, 12, Z19, Z20, Z21, Z3)
	ADDQ        R9, R10
	CMPQ R11, $4
	JEQ  q8amxpairdone
	Q8AMX_ROW(256, 0, 4, Z16, Z17, Z18, Z4)
	Q8AMX_ROW(1280, 8, 12, Z19, Z20, Z21, Z4)
	ADDQ        R9, R10
	CMPQ R11, $5
	JEQ  q8amxpairdone
	Q8AMX_ROW(320, 0, 4, Z16, Z17, Z18, Z5)
	Q8AMX_ROW(1344, 8, 12, Z19, Z20, Z21, Z5)
	ADDQ        R9, R10
	CMPQ R11, $6
	JEQ  q8amxpairdone
	Q8AMX_ROW(384, 0, 4, Z16, Z17, Z18, Z6)
	Q8AMX_ROW(1408, 8, 12, Z19, Z20, Z21, Z6)
	ADDQ        R9, R10
	CMPQ R11, $7
	JEQ  q8amxpairdone
	Q8AMX_ROW(448, 0, 4, Z16, Z17, Z18, Z7)
	Q8AMX_ROW(1472, 8, 12, Z19, Z20, Z21, Z7)
	ADDQ        R9, R10
	CMPQ R11, $8
	JEQ  q8amxpairdone
	Q8AMX_ROW(512, 0, 4, Z16, Z17, Z18, Z8)
	Q8AMX_ROW(1536, 8, 12, Z19, Z20, Z21, Z8)
	ADDQ        R9, R10
	CMPQ R11, $9
	JEQ  q8amxpairdone
	Q8AMX_ROW(576, 0, 4, Z16, Z17, Z18, Z9)
	Q8AMX_ROW(1600, 8, 12, Z19, Z20, Z21, Z9)
	ADDQ        R9, R10
	CMPQ R11, $10
	JEQ  q8amxpairdone
	Q8AMX_ROW(640, 0, 4, Z16, Z17, Z18, Z10)
	Q8AMX_ROW(1664, 8, 12, Z19, Z20, Z21, Z10)
	ADDQ        R9, R10
	CMPQ R11, $11
	JEQ  q8amxpairdone
	Q8AMX_ROW(704, 0, 4, Z16, Z17, Z18, Z11)
	Q8AMX_ROW(1728, 8, 12, Z19, Z20, Z21, Z11)
	ADDQ        R9, R10
	CMPQ R11, $12
	JEQ  q8amxpairdone
	Q8AMX_ROW(768, 0, 4, Z16, Z17, Z18, Z12)
	Q8AMX_ROW(1792, 8, 12, Z19, Z20, Z21, Z12)
	ADDQ        R9, R10
	CMPQ R11, $13
	JEQ  q8amxpairdone
	Q8AMX_ROW(832, 0, 4, Z16, Z17, Z18, Z13)
	Q8AMX_ROW(1856, 8, 12, Z19, Z20, Z21, Z13)
	ADDQ        R9, R10
	CMPQ R11, $14
	JEQ  q8amxpairdone
	Q8AMX_ROW(896, 0, 4, Z16, Z17, Z18, Z14)
	Q8AMX_ROW(1920, 8, 12, Z19, Z20, Z21, Z14)
	ADDQ        R9, R10
	CMPQ R11, $15
	JEQ  q8amxpairdone
	Q8AMX_ROW(960, 0, 4, Z16, Z17, Z18, Z15)
	Q8AMX_ROW(1984, 8, 12, Z19, Z20, Z21, Z15)
	ADDQ        R9, R10

q8amxpairdone:
	ADDQ $34, SI
	ADDQ $544, DI
	ADDQ $16, R8
	SUBQ $2, CX
	CMPQ CX, $2
	JGE  q8amxpair
	TESTQ CX, CX
	JZ   q8amxstore

q8amxone: // a last block alone
	LOAD_A0
	LOAD_B0
	ZERO_C0
	DP_C0
	STORE_C0
	VCVTPH2PS -32(DI), Z16
	MOVQ R8, R10
	Q8AMX_ROW(0, 0, 4, Z16, Z17, Z18, Z0)
	ADDQ        R9, R10
	CMPQ R11, $1
	JEQ  q8amxstore
	Q8AMX_ROW(64, 0, 4, Z16, Z17, Z18, Z1)
	ADDQ        R9, R10
	CMPQ R11, $2
	JEQ  q8amxstore
	Q8AMX_ROW(128, 0, 4, Z16, Z17, Z18, Z2)
	ADDQ        R9, R10
	CMPQ R11, $3
	JEQ  q8amxstore
	Q8AMX_ROW(192, 0, 4, Z16, Z17, Z18, Z3)
	ADDQ        R9, R10
	CMPQ R11, $4
	JEQ  q8amxstore
	Q8AMX_ROW(256, 0, 4, Z16, Z17, Z18, Z4)
	ADDQ        R9, R10
	CMPQ R11, $5
	JEQ  q8amxstore
	Q8AMX_ROW(320, 0, 4, Z16, Z17, Z18, Z5)
	ADDQ        R9, R10
	CMPQ R11, $6
	JEQ  q8amxstore
	Q8AMX_ROW(384, 0, 4, Z16, Z17, Z18, Z6)
	ADDQ        R9, R10
	CMPQ R11, $7
	JEQ  q8amxstore
	Q8AMX_ROW(448, 0, 4, Z16, Z17, Z18, Z7)
	ADDQ        R9, R10
	CMPQ R11, $8
	JEQ  q8amxstore
	Q8AMX_ROW(512, 0, 4, Z16, Z17, Z18, Z8)
	ADDQ        R9, R10
	CMPQ R11, $9
	JEQ  q8amxstore
	Q8AMX_ROW(576, 0, 4, Z16, Z17, Z18, Z9)
	ADDQ        R9, R10
	CMPQ R11, $10
	JEQ  q8amxstore
	Q8AMX_ROW(640, 0, 4, Z16, Z17, Z18, Z10)
	ADDQ        R9, R10
	CMPQ R11, $11
	JEQ  q8amxstore
	Q8AMX_ROW(704, 0, 4, Z16, Z17, Z18, Z11)
	ADDQ        R9, R10
	CMPQ R11, $12
	JEQ  q8amxstore
	Q8AMX_ROW(768, 0, 4, Z16, Z17, Z18, Z12)
	ADDQ        R9, R10
	CMPQ R11, $13
	JEQ  q8amxstore
	Q8AMX_ROW(832, 0, 4, Z16, Z17, Z18, Z13)
	ADDQ        R9, R10
	CMPQ R11, $14
	JEQ  q8amxstore
	Q8AMX_ROW(896, 0, 4, Z16, Z17, Z18, Z14)
	ADDQ        R9, R10
	CMPQ R11, $15
	JEQ  q8amxstore
	Q8AMX_ROW(960, 0, 4, Z16, Z17, Z18, Z15)
	ADDQ        R9, R10

q8amxstore: // the group's outputs, row after row
	MOVQ R13, R10
	VMOVUPS Z0, (R10)
	CMPQ R11, $1
	JEQ  q8amxstored
	ADDQ R15, R10
	VMOVUPS Z1, (R10)
	CMPQ R11, $2
	JEQ  q8amxstored
	ADDQ R15, R10
	VMOVUPS Z2, (R10)
	CMPQ R11, $3
	JEQ  q8amxstored
	ADDQ R15, R10
	VMOVUPS Z3, (R10)
	CMPQ R11, $4
	JEQ  q8amxstored
	ADDQ R15, R10
	VMOVUPS Z4, (R10)
	CMPQ R11, $5
	JEQ  q8amxstored
	ADDQ R15, R10
	VMOVUPS Z5, (R10)
	CMPQ R11, $6
	JEQ  q8amxstored
	ADDQ R15, R10
	VMOVUPS Z6, (R10)
	CMPQ R11, $7
	JEQ  q8amxstored
	ADDQ R15, R10
	VMOVUPS Z7, (R10)
	CMPQ R11, $8
	JEQ  q8amxstored
	ADDQ R15, R10
	VMOVUPS Z8, (R10)
	CMPQ R11, $9
	JEQ  q8amxstored
	ADDQ R15, R10
	VMOVUPS Z9, (R10)
	CMPQ R11, $10
	JEQ  q8amxstored
	ADDQ R15, R10
	VMOVUPS Z10, (R10)
	CMPQ R11, $11
	JEQ  q8amxstored
	ADDQ R15, R10
	VMOVUPS Z11, (R10)
	CMPQ R11, $12
	JEQ  q8amxstored
	ADDQ R15, R10
	VMOVUPS Z12, (R10)
	CMPQ R11, $13
	JEQ  q8amxstored
	ADDQ R15, R10
	VMOVUPS Z13, (R10)
	CMPQ R11, $14
	JEQ  q8amxstored
	ADDQ R15, R10
	VMOVUPS Z14, (R10)
	CMPQ R11, $15
	JEQ  q8amxstored
	ADDQ R15, R10
	VMOVUPS Z15, (R10)

q8amxstored:
	DECQ R14
	JZ   q8amxdone
	ADDQ groupBytes+16(FP), R12
	ADDQ $64, R13 // 16 outputs on
	JMP  q8amxgroup

q8amxdone:
	TILERELEASE
	VZEROUPPER
	RET
