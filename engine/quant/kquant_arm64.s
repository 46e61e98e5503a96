//go:build arm64 && !noasm

#include "textflag.h"
#include "neon_arm64.h"

// Dot products of the K-quants with Q8_K activations in the references'
// reduction order (kLanes): lane u (0-7) of a super-block adds, over every
// 32-element chunk, the group scale times the sum of the 4 products of
// elements 4u..4u+3 (first 16 bytes, V16) or 16+4(u-4).. (last 16, V17);
// the integer lanes are converted and fused-multiply-added with d8·d into
// V10-V11, stored to acc[0:8]. The minimum terms go to acc[8:12] (Q4_K:
// 4 lanes; Q5_K: lane 8 only); Q2_K's join its lanes, Q6_K's offset of 32
// is subtracted from them. Q6_K, Q3_K and Q2_K have groups of 16: lanes
// 0-3 of a chunk take its first group's scale, lanes 4-7 the second's.
//
// Registers of the single-row Q4_K and Q5_K kernels (the others say
// where they differ): R0 super-blocks left, R1 weights, R2 activations,
// R3 output; V2 d8·d and V3 -d8·dmin in every lane, V7 V8 (V9 V13) the
// group scales (minimums) as int32, V28 0x0f bytes, V29 the fifth bit
// mask, V30-V31 SUM4_NEON scratch.

#define ZERO(r) VEOR r.B16, r.B16, r.B16

#define ARGS \
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

// Q6_K: the unsigned 6-bit quants (0..63) against the Q8_K activations
// in kLanes' lanes with groups of 16 (lanes 0-3 of a 32-element chunk
// take the scale of its first group, lanes 4-7 of its second), then lane
// u minus 32·(sc[2u]·bsums[2u] + sc[2u+1]·bsums[2u+1]), as dotQ6_KQ8_K.
//
// Registers: R1 the super-block, R4 its ql, R5 its qh; V3 V6 the 16
// scales as int16, V7 V8 V9 V13 as int32; V18-V21 64 bytes of ql, V4 V5
// 32 bytes of qh; V24 V25 a chunk's 32 quants; V28 0x0f, V29 0x30 bytes.

// Q6HI adds to V24 V25 the top two bits already shifted to bits 4-5 of
// V14 V15.
#define Q6HI \
	VAND V29.B16, V14.B16, V14.B16; \
	VAND V29.B16, V15.B16, V15.B16; \
	VORR V14.B16, V24.B16, V24.B16; \
	VORR V15.B16, V25.B16, V25.B16

// Q6DOT adds the chunk V24 V25 times the next 32 activations, scaled by
// lanes il (elements 0-15) and ih (16-31) of scale register s.
#define Q6DOT(SUM4, s, il, ih) \
	VLD1.P 32(R2), [V22.B16, V23.B16]; \
	SUM4(26, 24, 22); \
	SUM4(27, 25, 23); \
	MLAE4S(16, 26, s, il); \
	MLAE4S(17, 27, s, ih)

// Q6HALF does the 4 chunks of 128 elements whose 8 scales are the int32
// lanes of registers A and B.
#define Q6HALF(SUM4, A, B) \
	VLD1.P 64(R4), [V18.B16, V19.B16, V20.B16, V21.B16]; \
	VLD1.P 32(R5), [V4.B16, V5.B16]; \
	VAND V28.B16, V18.B16, V24.B16; \
	VAND V28.B16, V19.B16, V25.B16; \
	VSHL $4, V4.B16, V14.B16; \
	VSHL $4, V5.B16, V15.B16; \
	Q6HI; \
	Q6DOT(SUM4, A, 0, 1); \
	VAND V28.B16, V20.B16, V24.B16; \
	VAND V28.B16, V21.B16, V25.B16; \
	VSHL $2, V4.B16, V14.B16; \
	VSHL $2, V5.B16, V15.B16; \
	Q6HI; \
	Q6DOT(SUM4, A, 2, 3); \
	VUSHR $4, V18.B16, V24.B16; \
	VUSHR $4, V19.B16, V25.B16; \
	VORR V4.B16, V4.B16, V14.B16; \
	VORR V5.B16, V5.B16, V15.B16; \
	Q6HI; \
	Q6DOT(SUM4, B, 0, 1); \
	VUSHR $4, V20.B16, V24.B16; \
	VUSHR $4, V21.B16, V25.B16; \
	VUSHR $2, V4.B16, V14.B16; \
	VUSHR $2, V5.B16, V15.B16; \
	Q6HI; \
	Q6DOT(SUM4, B, 2, 3)

#define Q6_K(SUM4) \
	VMOVI $15, V28.B16; \
	VMOVI $48, V29.B16; \
	ZERO(V10); ZERO(V11); \
loop: \
	FMOVS.P 4(R2), F1; \
	MOVHU 208(R1), R9; \
	FMOVS R9, F0; \
	FCVTSH(0, 0); \
	FMULS F0, F1, F2; \
	VDUP V2.S[0], V2.S4; \
	ADD $192, R1, R5; \
	VLD1 (R5), [V12.B16]; \
	SXTL8H(3, 12); \
	SXTL28H(6, 12); \
	SXTL4S(7, 3); \
	SXTL24S(8, 3); \
	SXTL4S(9, 6); \
	SXTL24S(13, 6); \
	MOVD R1, R4; \
	ADD $128, R1, R5; \
	ZERO(V16); ZERO(V17); \
	Q6HALF(SUM4, 7, 8); \
	Q6HALF(SUM4, 9, 13); \
	VLD1.P 32(R2), [V14.H8, V15.H8]; \
	SMULL4S(26, 3, 14); \
	SMULL24S(27, 3, 14); \
	ADDP4S(26, 26, 27); \
	SMULL4S(27, 6, 15); \
	SMULL24S(14, 6, 15); \
	ADDP4S(27, 27, 14); \
	VSHL $5, V26.S4, V26.S4; \
	VSHL $5, V27.S4, V27.S4; \
	VSUB V26.S4, V16.S4, V16.S4; \
	VSUB V27.S4, V17.S4, V17.S4; \
	KFMA; \
	ADD $210, R1; \
	SUBS $1, R0; \
	BNE loop; \
	VST1 [V10.S4, V11.S4], (R3)

// func dotQ6_KSDOT(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ6_KSDOT(SB), NOSPLIT, $0-32
	ARGS
	Q6_K(SUM4_SDOT)
	RET

// func dotQ6_KNEON(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ6_KNEON(SB), NOSPLIT, $0-32
	ARGS
	Q6_K(SUM4_NEON)
	RET

// Q3_K and Q2_K keep element 128n+32k+i in bits 2k of byte 32n+i of qs:
// each half's 32 bytes (V18 V19) give its 4 chunks by shifting. Their
// lanes are kLanes' with groups of 16, scaled as Q6_K's (Q6DOT).

// Q2LOW and Q2BITS put bits 0-1, or bits sh..sh+1, of V18 V19 into V24
// V25 (V28 holds 3 in every byte).
#define Q2LOW \
	VAND V28.B16, V18.B16, V24.B16; \
	VAND V28.B16, V19.B16, V25.B16

#define Q2BITS(sh) \
	VUSHR $sh, V18.B16, V24.B16; \
	VUSHR $sh, V19.B16, V25.B16; \
	Q2LOW2

#define Q2LOW2 \
	VAND V28.B16, V24.B16, V24.B16; \
	VAND V28.B16, V25.B16, V25.B16

// Q3H adds the next hmask bit (bit 0 of V4 V5, which then shift right)
// as bit 2 of V24 V25 and subtracts 4 (V29 holds 4 in every byte): the
// signed quants -4..3.
#define Q3H \
	VSHL $2, V4.B16, V14.B16; \
	VSHL $2, V5.B16, V15.B16; \
	VAND V29.B16, V14.B16, V14.B16; \
	VAND V29.B16, V15.B16, V15.B16; \
	VORR V14.B16, V24.B16, V24.B16; \
	VORR V15.B16, V25.B16, V25.B16; \
	VSUB V29.B16, V24.B16, V24.B16; \
	VSUB V29.B16, V25.B16, V25.B16; \
	VUSHR $1, V4.B16, V4.B16; \
	VUSHR $1, V5.B16, V5.B16

#define Q3HALF(SUM4, A, B) \
	VLD1.P 32(R4), [V18.B16, V19.B16]; \
	Q2LOW; Q3H; Q6DOT(SUM4, A, 0, 1); \
	Q2BITS(2); Q3H; Q6DOT(SUM4, A, 2, 3); \
	Q2BITS(4); Q3H; Q6DOT(SUM4, B, 0, 1); \
	Q2BITS(6); Q3H; Q6DOT(SUM4, B, 2, 3)

#define Q2HALF(SUM4, A, B) \
	VLD1.P 32(R4), [V18.B16, V19.B16]; \
	Q2LOW; Q6DOT(SUM4, A, 0, 1); \
	Q2BITS(2); Q6DOT(SUM4, A, 2, 3); \
	Q2BITS(4); Q6DOT(SUM4, B, 0, 1); \
	Q2BITS(6); Q6DOT(SUM4, B, 2, 3)

// Q3SCALES unpacks the 16 6-bit scales at 96(R1) as ggml does with
// 32-bit words (kmask1 0x03030303, kmask2 0x0f0f0f0f), minus 32: V3 V6
// as int16, V7 V8 V9 V13 as int32 (GPR scratch a-c, t0-t4; V12). V20
// holds 32 in every byte.
#define Q3SCALES(a, b, c, t0, t1, t2, t3, t4) \
	MOVWU 96(R1), a; \
	MOVWU 100(R1), b; \
	MOVWU 104(R1), c; \
	ANDW $0x03030303, c, t0; \
	ANDW $0x0f0f0f0f, a, t1; \
	ORRW t0<<4, t1, t0; \
	LSRW $2, c, t1; \
	ANDW $0x03030303, t1, t1; \
	ANDW $0x0f0f0f0f, b, t2; \
	ORRW t1<<4, t2, t1; \
	LSRW $4, a, t2; \
	ANDW $0x0f0f0f0f, t2, t2; \
	LSRW $4, c, t3; \
	ANDW $0x03030303, t3, t3; \
	ORRW t3<<4, t2, t2; \
	LSRW $4, b, t3; \
	ANDW $0x0f0f0f0f, t3, t3; \
	LSRW $6, c, t4; \
	ANDW $0x03030303, t4, t4; \
	ORRW t4<<4, t3, t3; \
	ORR t1<<32, t0, t0; \
	ORR t3<<32, t2, t2; \
	VMOV t0, V12.D[0]; \
	VMOV t2, V12.D[1]; \
	VSUB V20.B16, V12.B16, V12.B16; \
	SXTL8H(3, 12); \
	SXTL28H(6, 12); \
	SXTL4S(7, 3); \
	SXTL24S(8, 3); \
	SXTL4S(9, 6); \
	SXTL24S(13, 6)

#define Q3_K(SUM4) \
	VMOVI $3, V28.B16; \
	VMOVI $4, V29.B16; \
	VMOVI $32, V20.B16; \
	ZERO(V10); ZERO(V11); \
loop: \
	FMOVS.P 4(R2), F1; \
	MOVHU 108(R1), R9; \
	FMOVS R9, F0; \
	FCVTSH(0, 0); \
	FMULS F0, F1, F2; \
	VDUP V2.S[0], V2.S4; \
	Q3SCALES(R4, R5, R6, R7, R8, R10, R11, R12); \
	VLD1 (R1), [V4.B16, V5.B16]; \
	ADD $32, R1, R4; \
	ZERO(V16); ZERO(V17); \
	Q3HALF(SUM4, 7, 8); \
	Q3HALF(SUM4, 9, 13); \
	ADD $32, R2; \
	KFMA; \
	ADD $110, R1; \
	SUBS $1, R0; \
	BNE loop; \
	VST1 [V10.S4, V11.S4], (R3)

// Q2_K first adds each lane's minimum term, -d8·dmin times
// m[2u]·bsums[2u] + m[2u+1]·bsums[2u+1], then its scaled products, as
// dotQ2_KQ8_K. V29 holds 0x0f in every byte.
#define Q2_K(SUM4) \
	VMOVI $3, V28.B16; \
	VMOVI $15, V29.B16; \
	ZERO(V10); ZERO(V11); \
loop: \
	FMOVS.P 4(R2), F1; \
	MOVHU 80(R1), R9; \
	FMOVS R9, F0; \
	FCVTSH(0, 0); \
	FMULS F0, F1, F2; \
	VDUP V2.S[0], V2.S4; \
	MOVHU 82(R1), R9; \
	FMOVS R9, F3; \
	FCVTSH(3, 3); \
	FMULS F3, F1, F3; \
	FNEGS F3, F3; \
	VDUP V3.S[0], V3.S4; \
	VLD1 (R1), [V12.B16]; \
	VAND V29.B16, V12.B16, V6.B16; \
	VUSHR $4, V12.B16, V12.B16; \
	ADD $256, R2, R5; \
	VLD1 (R5), [V14.H8, V15.H8]; \
	VUXTL V12.B8, V20.H8; \
	VUXTL2 V12.B16, V21.H8; \
	SMULL4S(26, 20, 14); \
	SMULL24S(27, 20, 14); \
	ADDP4S(26, 26, 27); \
	SMULL4S(27, 21, 15); \
	SMULL24S(14, 21, 15); \
	ADDP4S(27, 27, 14); \
	SCVTF4S(26, 26); \
	SCVTF4S(27, 27); \
	VFMLA V26.S4, V3.S4, V10.S4; \
	VFMLA V27.S4, V3.S4, V11.S4; \
	VUXTL V6.B8, V22.H8; \
	VUXTL2 V6.B16, V23.H8; \
	VUXTL V22.H4, V7.S4; \
	VUXTL2 V22.H8, V8.S4; \
	VUXTL V23.H4, V9.S4; \
	VUXTL2 V23.H8, V13.S4; \
	ADD $16, R1, R4; \
	ZERO(V16); ZERO(V17); \
	Q2HALF(SUM4, 7, 8); \
	Q2HALF(SUM4, 9, 13); \
	ADD $32, R2; \
	KFMA; \
	ADD $84, R1; \
	SUBS $1, R0; \
	BNE loop; \
	VST1 [V10.S4, V11.S4], (R3)

// func dotQ3_KSDOT(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ3_KSDOT(SB), NOSPLIT, $0-32
	ARGS
	Q3_K(SUM4_SDOT)
	RET

// func dotQ3_KNEON(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ3_KNEON(SB), NOSPLIT, $0-32
	ARGS
	Q3_K(SUM4_NEON)
	RET

// func dotQ2_KSDOT(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ2_KSDOT(SB), NOSPLIT, $0-32
	ARGS
	Q2_K(SUM4_SDOT)
	RET

// func dotQ2_KNEON(nb int, w, a *byte, acc *[12]float32)
TEXT ·dotQ2_KNEON(SB), NOSPLIT, $0-32
	ARGS
	Q2_K(SUM4_NEON)
	RET

// The four-row Q4_K kernel unpacks each 64-element pair of weights once
// and runs it against the four activation rows R2 R5 R6 R7, whose
// integer lanes are V0 V1, V4 V5, V6 V12 and V14 V15. The float
// accumulators stay in acc (zeroed first), updated once per super-block.
// V3 holds the rows' d8, V29 (F29) the weights' d, V11 (F11) their dmin.

// KHEADW is KHEAD without the activations: F29 d, F11 dmin, V7 V8 the
// scales and V9 V13 the minimums as int32 (scratch V12 V16 V17).
#define KHEADW \
	HALF(R1, F29, 29); \
	HALF(R1, F11, 11); \
	KSCALESW

// KSCALESW unpacks the 12 bytes of scales and minimums at (R1) into V7
// V8 and V9 V13, advancing R1 (scratch R10-R14, V12 V16 V17).
#define KSCALESW \
	MOVWU.P 4(R1), R10; \
	MOVWU.P 4(R1), R11; \
	MOVWU.P 4(R1), R12; \
	LSRW $6, R10, R13; \
	ANDW $0x03030303, R13, R13; \
	ANDW $0x0f0f0f0f, R12, R14; \
	ORRW R13<<4, R14, R14; \
	ANDW $0x3f3f3f3f, R10, R10; \
	ORR R14<<32, R10, R10; \
	LSRW $6, R11, R13; \
	ANDW $0x03030303, R13, R13; \
	LSRW $4, R12, R14; \
	ANDW $0x0f0f0f0f, R14, R14; \
	ORRW R13<<4, R14, R14; \
	ANDW $0x3f3f3f3f, R11, R11; \
	ORR R14<<32, R11, R11; \
	VMOV R10, V12.D[0]; \
	VMOV R11, V12.D[1]; \
	VUXTL V12.B8, V16.H8; \
	VUXTL2 V12.B16, V17.H8; \
	VUXTL V16.H4, V7.S4; \
	VUXTL2 V16.H8, V8.S4; \
	VUXTL V17.H4, V9.S4; \
	VUXTL2 V17.H8, V13.S4

// KPAIRR is KPAIR for activation row ra into the integer lanes lo, hi.
#define KPAIRR(SUM4, ra, lo, hi, sl, il, sh, ih) \
	VLD1.P 64(ra), [V20.B16, V21.B16, V22.B16, V23.B16]; \
	SUM4(26, 24, 20); \
	SUM4(27, 25, 21); \
	MLAE4S(lo, 26, sl, il); \
	MLAE4S(hi, 27, sl, il); \
	SUM4(26, 18, 22); \
	SUM4(27, 19, 23); \
	MLAE4S(lo, 26, sh, ih); \
	MLAE4S(hi, 27, sh, ih)

#define KPAIR4(SUM4, sl, il, sh, ih) \
	Q4PAIR; \
	KROWS4(SUM4, sl, il, sh, ih)

#define KROWS4(SUM4, sl, il, sh, ih) \
	KPAIRR(SUM4, R2, 0, 1, sl, il, sh, ih); \
	KPAIRR(SUM4, R5, 4, 5, sl, il, sh, ih); \
	KPAIRR(SUM4, R6, 6, 12, sl, il, sh, ih); \
	KPAIRR(SUM4, R7, 14, 15, sl, il, sh, ih)

// KEND4 finishes row ra's super-block (integer lanes lo, hi, numbered
// and named; d8 in lane r of V3): the minimum lanes from its bsums and
// the scaled lanes fused into its 12 floats at (R8), R8 then advancing.
#define KEND4(ra, lo, hi, Vlo, Vhi, r) \
	VDUP V3.S[r], V2.S4; \
	FMULS F29, F2, F2; \
	VDUP V2.S[0], V2.S4; \
	VDUP V3.S[r], V10.S4; \
	FMULS F11, F10, F10; \
	FNEGS F10, F10; \
	VDUP V10.S[0], V10.S4; \
	VLD1.P 32(ra), [V20.H8, V21.H8]; \
	SADDLP4S(20, 20); \
	SADDLP4S(21, 21); \
	MUL4S(20, 20, 9); \
	MUL4S(21, 21, 13); \
	ADDP4S(20, 20, 21); \
	SCVTF4S(20, 20); \
	VLD1 (R8), [V22.S4, V23.S4, V24.S4]; \
	VFMLA V20.S4, V10.S4, V24.S4; \
	SCVTF4S(lo, lo); \
	SCVTF4S(hi, hi); \
	VFMLA Vlo.S4, V2.S4, V22.S4; \
	VFMLA Vhi.S4, V2.S4, V23.S4; \
	VST1.P [V22.S4, V23.S4, V24.S4], 48(R8)

#define Q4_Kx4(SUM4) \
	VMOVI $15, V28.B16; \
	ZERO(V22); ZERO(V23); ZERO(V24); \
	MOVD R3, R8; \
	VST1.P [V22.S4, V23.S4, V24.S4], 48(R8); \
	VST1.P [V22.S4, V23.S4, V24.S4], 48(R8); \
	VST1.P [V22.S4, V23.S4, V24.S4], 48(R8); \
	VST1 [V22.S4, V23.S4, V24.S4], (R8); \
loop: \
	VLD1.P 4(R2), V3.S[0]; \
	VLD1.P 4(R5), V3.S[1]; \
	VLD1.P 4(R6), V3.S[2]; \
	VLD1.P 4(R7), V3.S[3]; \
	KHEADW; \
	ZERO(V0); ZERO(V1); ZERO(V4); ZERO(V5); \
	ZERO(V6); ZERO(V12); ZERO(V14); ZERO(V15); \
	KPAIR4(SUM4, 7, 0, 7, 1); \
	KPAIR4(SUM4, 7, 2, 7, 3); \
	KPAIR4(SUM4, 8, 0, 8, 1); \
	KPAIR4(SUM4, 8, 2, 8, 3); \
	MOVD R3, R8; \
	KEND4(R2, 0, 1, V0, V1, 0); \
	KEND4(R5, 4, 5, V4, V5, 1); \
	KEND4(R6, 6, 12, V6, V12, 2); \
	KEND4(R7, 14, 15, V14, V15, 3); \
	SUBS $1, R0; \
	BNE loop

// func dotQ4_KSDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ4_KSDOTx4(SB), NOSPLIT, $0-56
	ARGS4
	Q4_Kx4(SUM4_SDOT)
	RET

// func dotQ4_KNEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ4_KNEONx4(SB), NOSPLIT, $0-56
	ARGS4
	Q4_Kx4(SUM4_NEON)
	RET

// The four-row Q6_K kernel builds each 32-element chunk once and runs it
// against the rows R2 R5 R6 R7, integer lanes V16 V17, V0 V1, V2 V10,
// V11 V12; the rows' d8 bits are in R10-R13, the weights' f16 d in R9;
// R14 R15 point at ql and qh. The float lanes stay in acc.

// Q6DOTR is Q6DOT for activation row ra into the integer lanes lo, hi.
#define Q6DOTR(SUM4, ra, lo, hi, s, il, ih) \
	VLD1.P 32(ra), [V22.B16, V23.B16]; \
	SUM4(26, 24, 22); \
	SUM4(27, 25, 23); \
	MLAE4S(lo, 26, s, il); \
	MLAE4S(hi, 27, s, ih)

#define Q6DOT4(SUM4, s, il, ih) \
	Q6DOTR(SUM4, R2, 16, 17, s, il, ih); \
	Q6DOTR(SUM4, R5, 0, 1, s, il, ih); \
	Q6DOTR(SUM4, R6, 2, 10, s, il, ih); \
	Q6DOTR(SUM4, R7, 11, 12, s, il, ih)

#define Q6HALF4(SUM4, A, B) \
	VLD1.P 64(R14), [V18.B16, V19.B16, V20.B16, V21.B16]; \
	VLD1.P 32(R15), [V4.B16, V5.B16]; \
	VAND V28.B16, V18.B16, V24.B16; \
	VAND V28.B16, V19.B16, V25.B16; \
	VSHL $4, V4.B16, V14.B16; \
	VSHL $4, V5.B16, V15.B16; \
	Q6HI; \
	Q6DOT4(SUM4, A, 0, 1); \
	VAND V28.B16, V20.B16, V24.B16; \
	VAND V28.B16, V21.B16, V25.B16; \
	VSHL $2, V4.B16, V14.B16; \
	VSHL $2, V5.B16, V15.B16; \
	Q6HI; \
	Q6DOT4(SUM4, A, 2, 3); \
	VUSHR $4, V18.B16, V24.B16; \
	VUSHR $4, V19.B16, V25.B16; \
	VORR V4.B16, V4.B16, V14.B16; \
	VORR V5.B16, V5.B16, V15.B16; \
	Q6HI; \
	Q6DOT4(SUM4, B, 0, 1); \
	VUSHR $4, V20.B16, V24.B16; \
	VUSHR $4, V21.B16, V25.B16; \
	VUSHR $2, V4.B16, V14.B16; \
	VUSHR $2, V5.B16, V15.B16; \
	Q6HI; \
	Q6DOT4(SUM4, B, 2, 3)

// KEND6 finishes row ra's super-block as Q6_K does: the offset from its
// bsums, then its lanes fused with d8 (bits in Rd)·d into its floats at
// (R8), R8 then advancing to the next row.
#define KEND6(ra, lo, hi, Vlo, Vhi, Rd) \
	VLD1.P 32(ra), [V14.H8, V15.H8]; \
	SMULL4S(26, 3, 14); \
	SMULL24S(27, 3, 14); \
	ADDP4S(26, 26, 27); \
	SMULL4S(27, 6, 15); \
	SMULL24S(14, 6, 15); \
	ADDP4S(27, 27, 14); \
	VSHL $5, V26.S4, V26.S4; \
	VSHL $5, V27.S4, V27.S4; \
	VSUB V26.S4, Vlo.S4, Vlo.S4; \
	VSUB V27.S4, Vhi.S4, Vhi.S4; \
	SCVTF4S(lo, lo); \
	SCVTF4S(hi, hi); \
	FMOVS R9, F22; \
	FCVTSH(22, 22); \
	FMOVS Rd, F23; \
	FMULS F22, F23, F23; \
	VDUP V23.S[0], V23.S4; \
	VLD1 (R8), [V24.S4, V25.S4]; \
	VFMLA Vlo.S4, V23.S4, V24.S4; \
	VFMLA Vhi.S4, V23.S4, V25.S4; \
	VST1 [V24.S4, V25.S4], (R8); \
	ADD $48, R8

#define Q6_Kx4(SUM4) \
	VMOVI $15, V28.B16; \
	VMOVI $48, V29.B16; \
	ZERO(V24); ZERO(V25); ZERO(V26); \
	MOVD R3, R8; \
	VST1.P [V24.S4, V25.S4, V26.S4], 48(R8); \
	VST1.P [V24.S4, V25.S4, V26.S4], 48(R8); \
	VST1.P [V24.S4, V25.S4, V26.S4], 48(R8); \
	VST1 [V24.S4, V25.S4, V26.S4], (R8); \
loop: \
	MOVWU.P 4(R2), R10; \
	MOVWU.P 4(R5), R11; \
	MOVWU.P 4(R6), R12; \
	MOVWU.P 4(R7), R13; \
	MOVHU 208(R1), R9; \
	ADD $192, R1, R14; \
	VLD1 (R14), [V12.B16]; \
	SXTL8H(3, 12); \
	SXTL28H(6, 12); \
	SXTL4S(7, 3); \
	SXTL24S(8, 3); \
	SXTL4S(9, 6); \
	SXTL24S(13, 6); \
	MOVD R1, R14; \
	ADD $128, R1, R15; \
	ZERO(V16); ZERO(V17); ZERO(V0); ZERO(V1); \
	ZERO(V2); ZERO(V10); ZERO(V11); ZERO(V12); \
	Q6HALF4(SUM4, 7, 8); \
	Q6HALF4(SUM4, 9, 13); \
	MOVD R3, R8; \
	KEND6(R2, 16, 17, V16, V17, R10); \
	KEND6(R5, 0, 1, V0, V1, R11); \
	KEND6(R6, 2, 10, V2, V10, R12); \
	KEND6(R7, 11, 12, V11, V12, R13); \
	ADD $210, R1; \
	SUBS $1, R0; \
	BNE loop

// func dotQ6_KSDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ6_KSDOTx4(SB), NOSPLIT, $0-56
	ARGS4
	Q6_Kx4(SUM4_SDOT)
	RET

// func dotQ6_KNEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ6_KNEONx4(SB), NOSPLIT, $0-56
	ARGS4
	Q6_Kx4(SUM4_NEON)
	RET

// The four-row Q5_K kernel is the Q4_K one with the fifth bits (qh in
// V16 V17, scratch V2 V10, 16 in every byte of V29) and one minimum sum
// per row, as the single-row Q5_K; the weights' f16 d and dmin stay in
// R9 and R15.

#define Q5PAIR4 \
	Q4PAIR; \
	VSHL $4, V16.B16, V2.B16; \
	VSHL $4, V17.B16, V10.B16; \
	VAND V29.B16, V2.B16, V2.B16; \
	VAND V29.B16, V10.B16, V10.B16; \
	VORR V2.B16, V24.B16, V24.B16; \
	VORR V10.B16, V25.B16, V25.B16; \
	VSHL $3, V16.B16, V2.B16; \
	VSHL $3, V17.B16, V10.B16; \
	VAND V29.B16, V2.B16, V2.B16; \
	VAND V29.B16, V10.B16, V10.B16; \
	VORR V2.B16, V18.B16, V18.B16; \
	VORR V10.B16, V19.B16, V19.B16; \
	VUSHR $2, V16.B16, V16.B16; \
	VUSHR $2, V17.B16, V17.B16

#define KEND5(ra, lo, hi, Vlo, Vhi, r) \
	VDUP V3.S[r], V2.S4; \
	FMOVS R9, F10; \
	FCVTSH(10, 10); \
	FMULS F10, F2, F2; \
	VDUP V2.S[0], V2.S4; \
	VDUP V3.S[r], V10.S4; \
	FMOVS R15, F11; \
	FCVTSH(11, 11); \
	FMULS F11, F10, F10; \
	FNEGS F10, F10; \
	VDUP V10.S[0], V10.S4; \
	VLD1.P 32(ra), [V20.H8, V21.H8]; \
	SADDLP4S(20, 20); \
	SADDLP4S(21, 21); \
	MUL4S(20, 20, 9); \
	MUL4S(21, 21, 13); \
	ADDP4S(20, 20, 21); \
	VADDV V20.S4, V20; \
	SCVTF4S(20, 20); \
	VLD1 (R8), [V22.S4, V23.S4, V24.S4]; \
	VFMLA V20.S4, V10.S4, V24.S4; \
	SCVTF4S(lo, lo); \
	SCVTF4S(hi, hi); \
	VFMLA Vlo.S4, V2.S4, V22.S4; \
	VFMLA Vhi.S4, V2.S4, V23.S4; \
	VST1.P [V22.S4, V23.S4, V24.S4], 48(R8)

#define Q5_Kx4(SUM4) \
	VMOVI $15, V28.B16; \
	VMOVI $16, V29.B16; \
	ZERO(V22); ZERO(V23); ZERO(V24); \
	MOVD R3, R8; \
	VST1.P [V22.S4, V23.S4, V24.S4], 48(R8); \
	VST1.P [V22.S4, V23.S4, V24.S4], 48(R8); \
	VST1.P [V22.S4, V23.S4, V24.S4], 48(R8); \
	VST1 [V22.S4, V23.S4, V24.S4], (R8); \
loop: \
	VLD1.P 4(R2), V3.S[0]; \
	VLD1.P 4(R5), V3.S[1]; \
	VLD1.P 4(R6), V3.S[2]; \
	VLD1.P 4(R7), V3.S[3]; \
	MOVHU.P 2(R1), R9; \
	MOVHU.P 2(R1), R15; \
	KSCALESW; \
	VLD1.P 32(R1), [V16.B16, V17.B16]; \
	ZERO(V0); ZERO(V1); ZERO(V4); ZERO(V5); \
	ZERO(V6); ZERO(V12); ZERO(V14); ZERO(V15); \
	Q5PAIR4; \
	KROWS4(SUM4, 7, 0, 7, 1); \
	Q5PAIR4; \
	KROWS4(SUM4, 7, 2, 7, 3); \
	Q5PAIR4; \
	KROWS4(SUM4, 8, 0, 8, 1); \
	Q5PAIR4; \
	KROWS4(SUM4, 8, 2, 8, 3); \
	MOVD R3, R8; \
	KEND5(R2, 0, 1, V0, V1, 0); \
	KEND5(R5, 4, 5, V4, V5, 1); \
	KEND5(R6, 6, 12, V6, V12, 2); \
	KEND5(R7, 14, 15, V14, V15, 3); \
	SUBS $1, R0; \
	BNE loop

// func dotQ5_KSDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ5_KSDOTx4(SB), NOSPLIT, $0-56
	ARGS4
	Q5_Kx4(SUM4_SDOT)
	RET

// func dotQ5_KNEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ5_KNEONx4(SB), NOSPLIT, $0-56
	ARGS4
	Q5_Kx4(SUM4_NEON)
	RET

// The four-row Q3_K and Q2_K kernels build each chunk once for the rows
// R2 R5 R6 R7 (Q6DOT4's lanes); the rows' d8 bits are in R10-R13, the
// weights' f16 d (and Q2_K's dmin) in R9 (R14), qs at R15.

#define Q3HALF4(SUM4, A, B) \
	VLD1.P 32(R15), [V18.B16, V19.B16]; \
	Q2LOW; Q3H; Q6DOT4(SUM4, A, 0, 1); \
	Q2BITS(2); Q3H; Q6DOT4(SUM4, A, 2, 3); \
	Q2BITS(4); Q3H; Q6DOT4(SUM4, B, 0, 1); \
	Q2BITS(6); Q3H; Q6DOT4(SUM4, B, 2, 3)

#define Q2HALF4(SUM4, A, B) \
	VLD1.P 32(R15), [V18.B16, V19.B16]; \
	Q2LOW; Q6DOT4(SUM4, A, 0, 1); \
	Q2BITS(2); Q6DOT4(SUM4, A, 2, 3); \
	Q2BITS(4); Q6DOT4(SUM4, B, 0, 1); \
	Q2BITS(6); Q6DOT4(SUM4, B, 2, 3)

// KLANES4 fuses a row's integer lanes with d8 (bits in Rd)·d (f16 bits
// in R9) into its floats at (R8) and advances R8 to the next row.
#define KLANES4(lo, hi, Vlo, Vhi, Rd) \
	SCVTF4S(lo, lo); \
	SCVTF4S(hi, hi); \
	FMOVS R9, F22; \
	FCVTSH(22, 22); \
	FMOVS Rd, F23; \
	FMULS F22, F23, F23; \
	VDUP V23.S[0], V23.S4; \
	VLD1 (R8), [V24.S4, V25.S4]; \
	VFMLA Vlo.S4, V23.S4, V24.S4; \
	VFMLA Vhi.S4, V23.S4, V25.S4; \
	VST1 [V24.S4, V25.S4], (R8); \
	ADD $48, R8

#define KZERO4 \
	ZERO(V24); ZERO(V25); ZERO(V26); \
	MOVD R3, R8; \
	VST1.P [V24.S4, V25.S4, V26.S4], 48(R8); \
	VST1.P [V24.S4, V25.S4, V26.S4], 48(R8); \
	VST1.P [V24.S4, V25.S4, V26.S4], 48(R8); \
	VST1 [V24.S4, V25.S4, V26.S4], (R8)

#define KD8x4 \
	MOVWU.P 4(R2), R10; \
	MOVWU.P 4(R5), R11; \
	MOVWU.P 4(R6), R12; \
	MOVWU.P 4(R7), R13

#define KZLANES4 \
	ZERO(V16); ZERO(V17); ZERO(V0); ZERO(V1); \
	ZERO(V2); ZERO(V10); ZERO(V11); ZERO(V12)

#define Q3_Kx4(SUM4) \
	VMOVI $3, V28.B16; \
	VMOVI $4, V29.B16; \
	VMOVI $32, V20.B16; \
	KZERO4; \
loop: \
	KD8x4; \
	MOVHU 108(R1), R9; \
	Q3SCALES(R19, R20, R21, R22, R23, R24, R25, R14); \
	VLD1 (R1), [V4.B16, V5.B16]; \
	ADD $32, R1, R15; \
	KZLANES4; \
	Q3HALF4(SUM4, 7, 8); \
	Q3HALF4(SUM4, 9, 13); \
	ADD $32, R2; \
	ADD $32, R5; \
	ADD $32, R6; \
	ADD $32, R7; \
	MOVD R3, R8; \
	KLANES4(16, 17, V16, V17, R10); \
	KLANES4(0, 1, V0, V1, R11); \
	KLANES4(2, 10, V2, V10, R12); \
	KLANES4(11, 12, V11, V12, R13); \
	ADD $110, R1; \
	SUBS $1, R0; \
	BNE loop

// KMIN2 adds, before its lanes, row ra's Q2_K minimum term (m as int16
// in V20 V21; d8 bits in Rd, dmin f16 bits in R14) to its floats at (R8).
#define KMIN2(ra, Rd) \
	VLD1.P 32(ra), [V14.H8, V15.H8]; \
	SMULL4S(26, 20, 14); \
	SMULL24S(27, 20, 14); \
	ADDP4S(26, 26, 27); \
	SMULL4S(27, 21, 15); \
	SMULL24S(14, 21, 15); \
	ADDP4S(27, 27, 14); \
	SCVTF4S(26, 26); \
	SCVTF4S(27, 27); \
	FMOVS R14, F5; \
	FCVTSH(5, 5); \
	FMOVS Rd, F6; \
	FMULS F6, F5, F5; \
	FNEGS F5, F5; \
	VDUP V5.S[0], V5.S4; \
	VLD1 (R8), [V24.S4, V25.S4]; \
	VFMLA V26.S4, V5.S4, V24.S4; \
	VFMLA V27.S4, V5.S4, V25.S4; \
	VST1 [V24.S4, V25.S4], (R8)

#define Q2_Kx4(SUM4) \
	VMOVI $3, V28.B16; \
	VMOVI $15, V29.B16; \
	KZERO4; \
loop: \
	KD8x4; \
	MOVHU 80(R1), R9; \
	MOVHU 82(R1), R14; \
	VLD1 (R1), [V12.B16]; \
	VAND V29.B16, V12.B16, V6.B16; \
	VUSHR $4, V12.B16, V12.B16; \
	VUXTL V12.B8, V20.H8; \
	VUXTL2 V12.B16, V21.H8; \
	VUXTL V6.B8, V22.H8; \
	VUXTL2 V6.B16, V23.H8; \
	VUXTL V22.H4, V7.S4; \
	VUXTL2 V22.H8, V8.S4; \
	VUXTL V23.H4, V9.S4; \
	VUXTL2 V23.H8, V13.S4; \
	ADD $16, R1, R15; \
	KZLANES4; \
	Q2HALF4(SUM4, 7, 8); \
	Q2HALF4(SUM4, 9, 13); \
	MOVD R3, R8; \
	KMIN2(R2, R10); \
	KLANES4(16, 17, V16, V17, R10); \
	KMIN2(R5, R11); \
	KLANES4(0, 1, V0, V1, R11); \
	KMIN2(R6, R12); \
	KLANES4(2, 10, V2, V10, R12); \
	KMIN2(R7, R13); \
	KLANES4(11, 12, V11, V12, R13); \
	ADD $84, R1; \
	SUBS $1, R0; \
	BNE loop

// func dotQ3_KSDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ3_KSDOTx4(SB), NOSPLIT, $0-56
	ARGS4
	Q3_Kx4(SUM4_SDOT)
	RET

// func dotQ3_KNEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ3_KNEONx4(SB), NOSPLIT, $0-56
	ARGS4
	Q3_Kx4(SUM4_NEON)
	RET

// func dotQ2_KSDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ2_KSDOTx4(SB), NOSPLIT, $0-56
	ARGS4
	Q2_Kx4(SUM4_SDOT)
	RET

// func dotQ2_KNEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
TEXT ·dotQ2_KNEONx4(SB), NOSPLIT, $0-56
	ARGS4
	Q2_Kx4(SUM4_NEON)
	RET
