//go:build arm64 && !noasm

#include "textflag.h"
#include "neon_arm64.h"

// Dot products of the K-quants with Q8_K activations in the references'
// reduction order (kLanes): lane u (0-7) of a super-block adds, over every
// 32-element chunk, the group scale times the sum of the 4 products of
// elements 4u..4u+3 (first 16 bytes, V16) or 16+4(u-4).. (last 16, V17);
// the integer lanes are converted and fused-multiply-added with d8·d into
// V10-V11, stored to acc[0:8]. The minimum terms go to acc[8:12] (Q4_K:
// 4 lanes; Q5_K: lane 8 only).
//
// Registers: R0 super-blocks left, R1 weights, R2 activations, R3 output;
// V2 d8·d and V3 -d8·dmin in every lane, V7 V8 (V9 V13) the group scales
// as int32, V28 0x0f bytes, V29 the fifth/sixth bit mask, V30-V31
// SUM4_NEON scratch.

#define ZERO(r) VEOR r.B16, r.B16, r.B16

#define ARGS \
	MOVD nb+0(FP), R0; \
	MOVD w+8(FP), R1; \
	MOVD a+16(FP), R2; \
	MOVD acc+24(FP), R3

// HALF loads the f16 at (R) into S register FR (number f), converted to
// float32, and advances R.
#define HALF(R, FR, f) \
	MOVHU.P 2(R), R9; \
	FMOVS R9, FR; \
	FCVTSH(f, f)

// KHEAD reads d8 and the Q4_K/Q5_K header (d, dmin, 12 bytes of 6-bit
// scales and minimums): V2 = d8·d, V3 = -(d8·dmin), V7 V8 the 8 scales and
// V9 V13 the 8 minimums as int32. The scales are unpacked as ggml does
// with 32-bit words: sc = u0&k1 | (u2&k2 | (u0>>6&k3)<<4) << 32 and
// m = u1&k1 | (u2>>4&k2 | (u1>>6&k3)<<4) << 32.
#define KHEAD \
	FMOVS.P 4(R2), F1; \
	HALF(R1, F0, 0); \
	FMULS F0, F1, F2; \
	VDUP V2.S[0], V2.S4; \
	HALF(R1, F3, 3); \
	FMULS F3, F1, F3; \
	FNEGS F3, F3; \
	VDUP V3.S[0], V3.S4; \
	MOVWU.P 4(R1), R4; \
	MOVWU.P 4(R1), R5; \
	MOVWU.P 4(R1), R6; \
	LSRW $6, R4, R7; \
	ANDW $0x03030303, R7, R7; \
	ANDW $0x0f0f0f0f, R6, R8; \
	ORRW R7<<4, R8, R8; \
	ANDW $0x3f3f3f3f, R4, R4; \
	ORR R8<<32, R4, R4; \
	LSRW $6, R5, R7; \
	ANDW $0x03030303, R7, R7; \
	LSRW $4, R6, R8; \
	ANDW $0x0f0f0f0f, R8, R8; \
	ORRW R7<<4, R8, R8; \
	ANDW $0x3f3f3f3f, R5, R5; \
	ORR R8<<32, R5, R5; \
	VMOV R4, V4.D[0]; \
	VMOV R5, V4.D[1]; \
	VUXTL V4.B8, V5.H8; \
	VUXTL2 V4.B16, V6.H8; \
	VUXTL V5.H4, V7.S4; \
	VUXTL2 V5.H8, V8.S4; \
	VUXTL V6.H4, V9.S4; \
	VUXTL2 V6.H8, V13.S4

// KMINS leaves in V14 the 4 integer minimum lanes of kMinSums32 from the Q8_K
// bsums at (R2), advancing R2 past them: the sums of each group of 32
// times its minimum, added in pairs of groups.
#define KMINS \
	VLD1.P 32(R2), [V14.H8, V15.H8]; \
	SADDLP4S(14, 14); \
	SADDLP4S(15, 15); \
	MUL4S(14, 14, 9); \
	MUL4S(15, 15, 13); \
	ADDP4S(14, 14, 15)

// KFMA converts the integer lanes V16 V17 and accumulates them with d.
#define KFMA \
	SCVTF4S(16, 16); \
	SCVTF4S(17, 17); \
	VFMLA V16.S4, V2.S4, V10.S4; \
	VFMLA V17.S4, V2.S4, V11.S4

// KPAIR adds to the lanes the two 32-element groups of V24 V25 (low) and
// V18 V19 (high) against the 64 activations at (R2), with the scales in
// lanes il and ih of sl and sh (register numbers).
#define KPAIR(SUM4, sl, il, sh, ih) \
	VLD1.P 64(R2), [V20.B16, V21.B16, V22.B16, V23.B16]; \
	SUM4(26, 24, 20); \
	SUM4(27, 25, 21); \
	MLAE4S(16, 26, sl, il); \
	MLAE4S(17, 27, sl, il); \
	SUM4(26, 18, 22); \
	SUM4(27, 19, 23); \
	MLAE4S(16, 26, sh, ih); \
	MLAE4S(17, 27, sh, ih)

// Q4PAIR splits 32 bytes of Q4_K nibbles at (R1) into V24 V25 (low) and
// V18 V19 (high).
#define Q4PAIR \
	VLD1.P 32(R1), [V18.B16, V19.B16]; \
	VAND V28.B16, V18.B16, V24.B16; \
	VAND V28.B16, V19.B16, V25.B16; \
	VUSHR $4, V18.B16, V18.B16; \
	VUSHR $4, V19.B16, V19.B16

#define Q4_K(SUM4) \
	VMOVI $15, V28.B16; \
	ZERO(V10); ZERO(V11); ZERO(V12); \
loop: \
	KHEAD; \
	ZERO(V16); ZERO(V17); \
	Q4PAIR; \
	KPAIR(SUM4, 7, 0, 7, 1); \
	Q4PAIR; \
	KPAIR(SUM4, 7, 2, 7, 3); \
	Q4PAIR; \
	KPAIR(SUM4, 8, 0, 8, 1); \
	Q4PAIR; \
	KPAIR(SUM4, 8, 2, 8, 3); \
	KMINS; \
	SCVTF4S(14, 14); \
	VFMLA V14.S4, V3.S4, V12.S4; \
	KFMA; \
	SUBS $1, R0; \
	BNE loop; \
	VST1 [V10.S4, V11.S4, V12.S4], (R3)

// Q5PAIR is Q4PAIR plus the fifth bits of the pair from V4 V5 (qh, bits
// 0 and 1, which are then shifted out).
#define Q5PAIR \
	Q4PAIR; \
	VSHL $4, V4.B16, V14.B16; \
	VSHL $4, V5.B16, V15.B16; \
	VAND V29.B16, V14.B16, V14.B16; \
	VAND V29.B16, V15.B16, V15.B16; \
	VORR V14.B16, V24.B16, V24.B16; \
	VORR V15.B16, V25.B16, V25.B16; \
	VSHL $3, V4.B16, V14.B16; \
	VSHL $3, V5.B16, V15.B16; \
	VAND V29.B16, V14.B16, V14.B16; \
	VAND V29.B16, V15.B16, V15.B16; \
	VORR V14.B16, V18.B16, V18.B16; \
	VORR V15.B16, V19.B16, V19.B16; \
	VUSHR $2, V4.B16, V4.B16; \
	VUSHR $2, V5.B16, V5.B16

// Q5_K sums its minimum term exactly per super-block and accumulates it
// in lane 0 of V12, as the reference's scalar summs.
#define Q5_K(SUM4) \
	VMOVI $15, V28.B16; \
	VMOVI $16, V29.B16; \
	ZERO(V10); ZERO(V11); ZERO(V12); \
loop: \
	KHEAD; \
	VLD1.P 32(R1), [V4.B16, V5.B16]; \
	ZERO(V16); ZERO(V17); \
	Q5PAIR; \
	KPAIR(SUM4, 7, 0, 7, 1); \
	Q5PAIR; \
	KPAIR(SUM4, 7, 2, 7, 3); \
	Q5PAIR; \
	KPAIR(SUM4, 8, 0, 8, 1); \
	Q5PAIR; \
	KPAIR(SUM4, 8, 2, 8, 3); \
	KMINS; \
	VADDV V14.S4, V14; \
	SCVTF4S(14, 14); \
	VFMLA V14.S4, V3.S4, V12.S4; \
	KFMA; \
	SUBS $1, R0; \
	BNE loop; \
	VST1 [V10.S4, V11.S4, V12.S4], (R3)

// func dotQ4_KSDOT(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ4_KSDOT(SB), NOSPLIT, $0-32
	ARGS
	Q4_K(SUM4_SDOT)
	RET

// func dotQ4_KNEON(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ4_KNEON(SB), NOSPLIT, $0-32
	ARGS
	Q4_K(SUM4_NEON)
	RET

// func dotQ5_KSDOT(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ5_KSDOT(SB), NOSPLIT, $0-32
	ARGS
	Q5_K(SUM4_SDOT)
	RET

// func dotQ5_KNEON(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ5_KNEON(SB), NOSPLIT, $0-32
	ARGS
	Q5_K(SUM4_NEON)
	RET
