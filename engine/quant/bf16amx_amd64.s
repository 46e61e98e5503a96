//go:build amd64 && !noasm

#include "textflag.h"

// The BF16x16 layout's AMX kernel (see bf16amx_amd64.go). A block of the
// layout (32 columns of 16 weight rows, column pairs of all rows in 64
// bytes) is an AMX-BF16 B tile as it lies: 16 rows of 64 bytes. The
// groups are taken in pairs (B0 in tmm6, B1 in tmm7, groupBytes apart; a
// last odd group alone), each pair multiplied by up to 32 activation rows
// of bf16 (A0 = rows 0-15 in tmm4, A1 = rows 16-31 in tmm5, astride bytes
// apart), block after block, into the float32 tiles C00 (tmm0: rows 0-15
// × group 0), C01 (tmm1: × group 1), C10 (tmm2: rows 16-31 × group 0) and
// C11 (tmm3), which are then stored. The caller's tile configuration,
// loaded once per call, gives the tiles their rows. Go's assembler does not know
// the AMX instructions; their VEX encodings are spelled out in BYTEs, with
// the instruction in a comment, and use only the registers AX, CX, DX,
// BX, SI and DI so that no REX bits are needed.
//
// Registers in the block loop: SI and BX the A0 and A1 blocks with AX =
// astride; DI and CX the B0 and B1 blocks with DX = 64; R8 blocks left.
// Around it, SI, BX, DI and CX address C00, C01, C10 and C11 in dst with
// AX = dstride in bytes. Across pairs: R9 activation rows, R10 groups
// left, R11 accumulate, R12 the pair's weights, R13 its outputs.

#define LDTILECFG_DI BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x07 // LDTILECFG (DI)
#define TILERELEASE BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0 // TILERELEASE
#define TILEZERO_0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0 // TILEZERO tmm0
#define TILEZERO_1 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc8 // TILEZERO tmm1
#define TILEZERO_2 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd0 // TILEZERO tmm2
#define TILEZERO_3 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd8 // TILEZERO tmm3

// C tiles from and to dst: tmm0 at (SI)(AX*1), tmm1 at (BX)(AX*1), tmm2 at
// (DI)(AX*1), tmm3 at (CX)(AX*1).
#define LOAD_C00 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x04; BYTE $0x06 // TILELOADD tmm0, (SI)(AX*1)
#define LOAD_C01 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x0c; BYTE $0x03 // TILELOADD tmm1, (BX)(AX*1)
#define LOAD_C10 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x14; BYTE $0x07 // TILELOADD tmm2, (DI)(AX*1)
#define LOAD_C11 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x1c; BYTE $0x01 // TILELOADD tmm3, (CX)(AX*1)
#define STORE_C00 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x06 // TILESTORED (SI)(AX*1), tmm0
#define STORE_C01 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x0c; BYTE $0x03 // TILESTORED (BX)(AX*1), tmm1
#define STORE_C10 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x14; BYTE $0x07 // TILESTORED (DI)(AX*1), tmm2
#define STORE_C11 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x1c; BYTE $0x01 // TILESTORED (CX)(AX*1), tmm3

// Operand tiles of one block.
#define LOAD_A0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x06 // TILELOADD tmm4, (SI)(AX*1)
#define LOAD_A1 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x2c; BYTE $0x03 // TILELOADD tmm5, (BX)(AX*1)
#define LOAD_B0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x34; BYTE $0x17 // TILELOADD tmm6, (DI)(DX*1)
#define LOAD_B1 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x3c; BYTE $0x11 // TILELOADD tmm7, (CX)(DX*1)
#define DP_C00 BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xc4 // TDPBF16PS tmm0, tmm4, tmm6
#define DP_C01 BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xcc // TDPBF16PS tmm1, tmm4, tmm7
#define DP_C10 BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xd5 // TDPBF16PS tmm2, tmm5, tmm6
#define DP_C11 BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xdd // TDPBF16PS tmm3, tmm5, tmm7

// CADDRS points SI, BX, DI and CX at the pair's C00, C01, C10 and C11 in
// dst (R13) and sets AX to dstride in bytes.
#define CADDRS \
	MOVQ R13, SI \
	MOVQ dstride+64(FP), AX \
	LEAQ 64(SI), BX \
	MOVQ AX, DI \
	SHLQ $4, DI \
	ADDQ SI, DI \
	LEAQ 64(DI), CX

// NEXT advances the operand addresses by one block and loops to label.
#define NEXT(label) \
	ADDQ $64, SI \
	ADDQ $64, BX \
	ADDQ $1024, DI \
	ADDQ $1024, CX \
	DECQ R8 \
	JNZ  label

// func bf16x16AMXTile(nb int, w *byte, groupBytes, groups int, a *byte, astride, rows int, dst *float32, dstride int, accumulate bool, cfg *[64]byte)
TEXT ·bf16x16AMXTile(SB), NOSPLIT, $0-88
	MOVQ cfg+80(FP), DI
	LDTILECFG_DI
	MOVQ rows+48(FP), R9    // > 16: the A1 row tiles
	MOVQ groups+24(FP), R10 // >= 2: a pair, the B1 group tiles
	MOVBQZX accumulate+72(FP), R11
	MOVQ w+8(FP), R12
	MOVQ dst+56(FP), R13

pair:
	// C tiles: from dst, or zero.
	CADDRS
	TESTQ R11, R11
	JZ   zero
	LOAD_C00
	CMPQ R10, $2
	JL   load1
	LOAD_C01
load1:
	CMPQ R9, $16
	JLE  operands
	LOAD_C10
	CMPQ R10, $2
	JL   operands
	LOAD_C11
	JMP  operands
zero: // only the tiles this pair uses
	TILEZERO_0
	CMPQ R10, $2
	JL   zero1
	TILEZERO_1
zero1:
	CMPQ R9, $16
	JLE  operands
	TILEZERO_2
	CMPQ R10, $2
	JL   operands
	TILEZERO_3

operands:
	MOVQ nb+0(FP), R8
	MOVQ a+32(FP), SI
	MOVQ astride+40(FP), AX
	MOVQ AX, BX
	SHLQ $4, BX
	ADDQ SI, BX
	MOVQ R12, DI
	MOVQ groupBytes+16(FP), CX
	ADDQ DI, CX
	MOVQ $64, DX
	CMPQ R9, $16
	JG   rows32
	CMPQ R10, $2
	JGE  loop1x2

loop1x1:
	LOAD_A0
	LOAD_B0
	DP_C00
	NEXT(loop1x1)
	JMP  store

loop1x2:
	LOAD_A0
	LOAD_B0
	LOAD_B1
	DP_C00
	DP_C01
	NEXT(loop1x2)
	JMP  store

rows32:
	CMPQ R10, $2
	JGE  loop2x2

loop2x1:
	LOAD_A0
	LOAD_A1
	LOAD_B0
	DP_C00
	DP_C10
	NEXT(loop2x1)
	JMP  store

loop2x2:
	LOAD_A0
	LOAD_A1
	LOAD_B0
	LOAD_B1
	DP_C00
	DP_C01
	DP_C10
	DP_C11
	NEXT(loop2x2)

store:
	CADDRS
	STORE_C00
	CMPQ R9, $16
	JLE  store1
	STORE_C10
store1:
	CMPQ R10, $2
	JL   done // the last group, alone
	STORE_C01
	CMPQ R9, $16
	JLE  nextpair
	STORE_C11

nextpair:
	SUBQ $2, R10
	JLE  done
	MOVQ groupBytes+16(FP), AX
	LEAQ (R12)(AX*2), R12
	ADDQ $128, R13 // 32 outputs on
	JMP  pair

done:
	TILERELEASE
	RET
