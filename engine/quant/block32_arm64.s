//go:build arm64 && !noasm

#include "textflag.h"
#include "neon_arm64.h"

// Dot products of the 32-element formats (Q8_0, Q4_0, Q5_0 with Q8_0
// activations; Q4_1, Q5_1 with Q8_1) in the reduction order of the
// references (dot32): per block, the 8 sums of 4 consecutive int8 products
// (SUM4 on elements 0-15 and 16-31) are converted to float and
// fused-multiply-added with d_w·d_a into 8 float lanes, V10-V11 for row 0.
// The _1 formats add m_w·s_a into lane 0 of a third accumulator. The Go
// wrappers add the lanes up in the references' order.
//
// Registers: R0 blocks left, R1 weights, R2 R5 R6 R7 activation rows,
// R3 output; F0 d_w, V9 m_w in every lane, V3-V4 weight quants as int8
// (elements 0-15, 16-31); V26-V29 constants; V30-V31 SUM4_NEON scratch.

#define CONSTS \
	VMOVI $16, V26.B16; \
	VMOVQ $0x8040201008040201, $0x8040201008040201, V27; \
	VMOVI $15, V28.B16; \
	VMOVI $8, V29.B16

// HALF loads the f16 at (R) into S register FR (number f), converted to
// float32, and advances R.
#define HALF(R, FR, f) \
	MOVHU.P 2(R), R9; \
	FMOVS R9, FR; \
	FCVTSH(f, f)

// Weight loaders: d_w into F0 (and m_w into every lane of V9), the 32
// quants as int8 into V3 (elements 0-15) and V4 (16-31).
#define LOADW_Q8_0 \
	HALF(R1, F0, 0); \
	VLD1.P 32(R1), [V3.B16, V4.B16]

#define NIBBLES \
	VLD1.P 16(R1), [V3.B16]; \
	VUSHR $4, V3.B16, V4.B16; \
	VAND V28.B16, V3.B16, V3.B16

#define LOADW_Q4_0 \
	HALF(R1, F0, 0); \
	NIBBLES; \
	VSUB V29.B16, V3.B16, V3.B16; \
	VSUB V29.B16, V4.B16, V4.B16

#define LOADW_Q4_1 \
	HALF(R1, F0, 0); \
	HALF(R1, F9, 9); \
	VDUP V9.S[0], V9.S4; \
	NIBBLES

// QH5 expands the 32 fifth bits at (R1) to bytes of 0 or 16: V7 for
// elements 0-15, V8 for 16-31. Zipping a register with itself three times
// repeats each of the 4 bytes 8 times; CMTST against 1,2,4,...,128 picks
// each element's bit.
#define QH5 \
	MOVWU.P 4(R1), R9; \
	VMOV R9, V7.S[0]; \
	VZIP1 V7.B16, V7.B16, V7.B16; \
	VZIP1 V7.B16, V7.B16, V7.B16; \
	VZIP2 V7.B16, V7.B16, V8.B16; \
	VZIP1 V7.B16, V7.B16, V7.B16; \
	VCMTST V27.B16, V7.B16, V7.B16; \
	VCMTST V27.B16, V8.B16, V8.B16; \
	VAND V26.B16, V7.B16, V7.B16; \
	VAND V26.B16, V8.B16, V8.B16

#define LOADW_Q5_0 \
	HALF(R1, F0, 0); \
	QH5; \
	NIBBLES; \
	VORR V7.B16, V3.B16, V3.B16; \
	VORR V8.B16, V4.B16, V4.B16; \
	VSUB V26.B16, V3.B16, V3.B16; \
	VSUB V26.B16, V4.B16, V4.B16

#define LOADW_Q5_1 \
	HALF(R1, F0, 0); \
	HALF(R1, F9, 9); \
	VDUP V9.S[0], V9.S4; \
	QH5; \
	NIBBLES; \
	VORR V7.B16, V3.B16, V3.B16; \
	VORR V8.B16, V4.B16, V4.B16

// ROW_Q8_0 multiplies the weight block with the Q8_0 block at (ra) and
// accumulates into acc0 (lanes 0-3) and acc1 (lanes 4-7).
#define ROW_Q8_0(ra, SUM4, acc0, acc1, accm) \
	HALF(ra, F1, 1); \
	FMULS F1, F0, F1; \
	VDUP V1.S[0], V2.S4; \
	VLD1.P 32(ra), [V5.B16, V6.B16]; \
	SUM4(16, 3, 5); \
	SUM4(17, 4, 6); \
	SCVTF4S(16, 16); \
	SCVTF4S(17, 17); \
	VFMLA V16.S4, V2.S4, acc0; \
	VFMLA V17.S4, V2.S4, acc1

// ROW_Q8_1 is ROW_Q8_0 for a Q8_1 block, whose s = d·Σq multiplies m_w
// into lane 0 of accm.
#define ROW_Q8_1(ra, SUM4, acc0, acc1, accm) \
	HALF(ra, F1, 1); \
	FMULS F1, F0, F1; \
	VDUP V1.S[0], V2.S4; \
	HALF(ra, F1, 1); \
	VFMLA V1.S4, V9.S4, accm; \
	VLD1.P 32(ra), [V5.B16, V6.B16]; \
	SUM4(16, 3, 5); \
	SUM4(17, 4, 6); \
	SCVTF4S(16, 16); \
	SCVTF4S(17, 17); \
	VFMLA V16.S4, V2.S4, acc0; \
	VFMLA V17.S4, V2.S4, acc1

#define ZERO(r) VEOR r.B16, r.B16, r.B16

// DOT1 runs one weight row against the activation row at R2 for R0 blocks
// (at least 1) and stores lanes 0-7 and the third accumulator at (R3).
#define DOT1(LOADW, ROW, SUM4) \
	CONSTS; \
	ZERO(V10); ZERO(V11); ZERO(V12); \
loop: \
	LOADW; \
	ROW(R2, SUM4, V10.S4, V11.S4, V12.S4); \
	SUBS $1, R0; \
	BNE loop; \
	VST1 [V10.S4, V11.S4, V12.S4], (R3)

// DOT4 is DOT1 for four activation rows R2, R5, R6, R7, each weight block
// loaded and unpacked once; the rows' 12 floats follow each other at (R3).
#define DOT4(LOADW, ROW, SUM4) \
	CONSTS; \
	ZERO(V10); ZERO(V11); ZERO(V12); \
	ZERO(V13); ZERO(V14); ZERO(V15); \
	ZERO(V18); ZERO(V19); ZERO(V20); \
	ZERO(V21); ZERO(V22); ZERO(V23); \
loop: \
	LOADW; \
	ROW(R2, SUM4, V10.S4, V11.S4, V12.S4); \
	ROW(R5, SUM4, V13.S4, V14.S4, V15.S4); \
	ROW(R6, SUM4, V18.S4, V19.S4, V20.S4); \
	ROW(R7, SUM4, V21.S4, V22.S4, V23.S4); \
	SUBS $1, R0; \
	BNE loop; \
	VST1.P [V10.S4, V11.S4, V12.S4], 48(R3); \
	VST1.P [V13.S4, V14.S4, V15.S4], 48(R3); \
	VST1.P [V18.S4, V19.S4, V20.S4], 48(R3); \
	VST1 [V21.S4, V22.S4, V23.S4], (R3)

#define ARGS1 \
	MOVD nb+0(FP), R0; \
	MOVD w+8(FP), R1; \
	MOVD a+16(FP), R2; \
	MOVD acc+24(FP), R3

#define ARGS4 \
	MOVD nb+0(FP), R0; \
	MOVD w+8(FP), R1; \
	MOVD a0+16(FP), R2; \
	MOVD a1+24(FP), R5; \
	MOVD a2+32(FP), R6; \
	MOVD a3+40(FP), R7; \
	MOVD acc+48(FP), R3

// func dotQ8_0SDOT(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ8_0SDOT(SB), NOSPLIT, $0-32
	ARGS1
	DOT1(LOADW_Q8_0, ROW_Q8_0, SUM4_SDOT)
	RET

// func dotQ8_0SDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ8_0SDOTx4(SB), NOSPLIT, $0-56
	ARGS4
	DOT4(LOADW_Q8_0, ROW_Q8_0, SUM4_SDOT)
	RET

// func dotQ8_0NEON(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ8_0NEON(SB), NOSPLIT, $0-32
	ARGS1
	DOT1(LOADW_Q8_0, ROW_Q8_0, SUM4_NEON)
	RET

// func dotQ8_0NEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ8_0NEONx4(SB), NOSPLIT, $0-56
	ARGS4
	DOT4(LOADW_Q8_0, ROW_Q8_0, SUM4_NEON)
	RET

// func dotQ4_0SDOT(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ4_0SDOT(SB), NOSPLIT, $0-32
	ARGS1
	DOT1(LOADW_Q4_0, ROW_Q8_0, SUM4_SDOT)
	RET

// func dotQ4_0SDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ4_0SDOTx4(SB), NOSPLIT, $0-56
	ARGS4
	DOT4(LOADW_Q4_0, ROW_Q8_0, SUM4_SDOT)
	RET

// func dotQ4_0NEON(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ4_0NEON(SB), NOSPLIT, $0-32
	ARGS1
	DOT1(LOADW_Q4_0, ROW_Q8_0, SUM4_NEON)
	RET

// func dotQ4_0NEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ4_0NEONx4(SB), NOSPLIT, $0-56
	ARGS4
	DOT4(LOADW_Q4_0, ROW_Q8_0, SUM4_NEON)
	RET

// func dotQ5_0SDOT(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ5_0SDOT(SB), NOSPLIT, $0-32
	ARGS1
	DOT1(LOADW_Q5_0, ROW_Q8_0, SUM4_SDOT)
	RET

// func dotQ5_0SDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ5_0SDOTx4(SB), NOSPLIT, $0-56
	ARGS4
	DOT4(LOADW_Q5_0, ROW_Q8_0, SUM4_SDOT)
	RET

// func dotQ5_0NEON(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ5_0NEON(SB), NOSPLIT, $0-32
	ARGS1
	DOT1(LOADW_Q5_0, ROW_Q8_0, SUM4_NEON)
	RET

// func dotQ5_0NEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ5_0NEONx4(SB), NOSPLIT, $0-56
	ARGS4
	DOT4(LOADW_Q5_0, ROW_Q8_0, SUM4_NEON)
	RET

// func dotQ4_1SDOT(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ4_1SDOT(SB), NOSPLIT, $0-32
	ARGS1
	DOT1(LOADW_Q4_1, ROW_Q8_1, SUM4_SDOT)
	RET

// func dotQ4_1SDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ4_1SDOTx4(SB), NOSPLIT, $0-56
	ARGS4
	DOT4(LOADW_Q4_1, ROW_Q8_1, SUM4_SDOT)
	RET

// func dotQ4_1NEON(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ4_1NEON(SB), NOSPLIT, $0-32
	ARGS1
	DOT1(LOADW_Q4_1, ROW_Q8_1, SUM4_NEON)
	RET

// func dotQ4_1NEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ4_1NEONx4(SB), NOSPLIT, $0-56
	ARGS4
	DOT4(LOADW_Q4_1, ROW_Q8_1, SUM4_NEON)
	RET

// func dotQ5_1SDOT(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ5_1SDOT(SB), NOSPLIT, $0-32
	ARGS1
	DOT1(LOADW_Q5_1, ROW_Q8_1, SUM4_SDOT)
	RET

// func dotQ5_1SDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ5_1SDOTx4(SB), NOSPLIT, $0-56
	ARGS4
	DOT4(LOADW_Q5_1, ROW_Q8_1, SUM4_SDOT)
	RET

// func dotQ5_1NEON(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ5_1NEON(SB), NOSPLIT, $0-32
	ARGS1
	DOT1(LOADW_Q5_1, ROW_Q8_1, SUM4_NEON)
	RET

// func dotQ5_1NEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ5_1NEONx4(SB), NOSPLIT, $0-56
	ARGS4
	DOT4(LOADW_Q5_1, ROW_Q8_1, SUM4_NEON)
	RET
