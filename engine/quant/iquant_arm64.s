//go:build arm64 && !noasm

#include "textflag.h"
#include "neon_arm64.h"

// NEON kernels of the i-quants (SDOT where the CPU has FEAT_DotProd, the
// sdot argument; plain NEON otherwise), in the references' lanes: lane u
// (0-7) of a super-block adds scale·w·a over the weights 32c+4u..32c+4u+3
// of every 32-weight chunk c, which is what SDOT (or SMULL, SADDLP, ADDP)
// sums into the int32 lanes of the chunk's low 16 bytes (lanes 0-3) and
// high 16 bytes (lanes 4-7). A super-block's weights are decoded once
// into the frame (W: 256 signed bytes; SC: two int32 scales per chunk,
// for its first and last 16 weights; IQ1_M's delta signs DS; IQ1_S's
// signed scales DSV), then each activation row (1 to 4, stride bytes
// apart) is multiplied with them and its lanes fused-multiply-added with
// d_w·d_a into acc[r][0:8] (IQ1_M's delta lanes into acc[r][8:16], IQ1_S's
// delta sum into acc[r][8]).
//
// Registers: R0 blocks left, R1 weight block, R2 activation block of row
// 0, R3 acc, R4 stride, R5 rows, R19 sdot, R20 the frame buffer, R21 and
// R22 table bases; F3 d_w. Row phase: R6 rows left, R7 the row's block,
// R8 its acc, R9 W, R10 its chunk, R11 SC, R12 chunks left; V8 V9 the
// lanes, V0 V1 weights, V24 V25 activations, V2 scales.

// MULB: MUL Vd.16B, Vn.16B, Vm.16B
#define MULB(d, n, m) WORD $(0x4E209C00 | ((m)<<16) | ((n)<<5) | (d))

// TBL1: TBL Vd.16B, {Vn.16B}, Vm.16B
#define TBL1(d, n, m) WORD $(0x4E000000 | ((m)<<16) | ((n)<<5) | (d))

#define ZERO(r) VEOR r.B16, r.B16, r.B16

#define IQARGS \
	MOVD nb+0(FP), R0; \
	MOVD w+8(FP), R1; \
	MOVD a+16(FP), R2; \
	MOVD stride+24(FP), R4; \
	MOVD rows+32(FP), R5; \
	MOVD acc+40(FP), R3; \
	MOVD sdot+48(FP), R19; \
	MOVD $buf-608(SP), R20

// GRID8 loads grid point idx (8 bytes, table R21) into lane of vd.
#define GRID8(idx, vd, lane) \
	MOVD (R21)(idx<<3), R14; \
	VMOV R14, vd.D[lane]

// SIGN8 loads the 8 sign bytes idx (table R22) into lane of vd.
#define SIGN8(idx, vd, lane) \
	MOVD (R22)(idx<<3), R14; \
	VMOV R14, vd.D[lane]

// GRID4 loads grid point idx (4 bytes, table R21) into lane of vd.
#define GRID4(idx, vd, lane) \
	MOVWU (R21)(idx<<2), R14; \
	VMOV R14, vd.S[lane]

// HALFW loads the f16 at mem into F3 as a float32.
#define HALFW(mem) \
	MOVHU mem, R14; \
	FMOVS R14, F3; \
	FCVTSH(3, 3)

// SUM2 sets V26 V27 to the lanes of V0 V1 times V24 V25 (labels n, s).
#define SUM2(n, s) \
	CBZ R19, n; \
	SUM4_SDOT(26, 0, 24); \
	SUM4_SDOT(27, 1, 25); \
	B s; \
n: \
	SUM4_NEON(26, 0, 24); \
	SUM4_NEON(27, 1, 25); \
s:

// ROWFMA adds d_a·d_w (d_a the float at (R7)) times the float lanes of
// lo, hi (numbers; Vlo, Vhi their names) to the 8 floats at aoff(R8).
#define ROWFMA(lo, hi, Vlo, Vhi, aoff) \
	FMOVS (R7), F4; \
	FMULS F3, F4, F4; \
	VDUP V4.S[0], V4.S4; \
	SCVTF4S(lo, lo); \
	SCVTF4S(hi, hi); \
	ADD $aoff, R8, R13; \
	VLD1 (R13), [V5.S4, V6.S4]; \
	VFMLA Vlo.S4, V4.S4, V5.S4; \
	VFMLA Vhi.S4, V4.S4, V6.S4; \
	VST1 [V5.S4, V6.S4], (R13)

// ROWS multiplies the decoded super-block with every row (lanes V8 V9).
#define ROWS \
	MOVD R2, R7; \
	MOVD R3, R8; \
	MOVD R5, R6; \
rowloop: \
	ZERO(V8); \
	ZERO(V9); \
	MOVD R20, R9; \
	ADD $256, R20, R11; \
	ADD $4, R7, R10; \
	MOVD $8, R12; \
chunkloop: \
	VLD1.P 32(R9), [V0.B16, V1.B16]; \
	VLD1.P 32(R10), [V24.B16, V25.B16]; \
	VLD1.P 8(R11), [V2.S2]; \
	SUM2(chunkneon, chunksum); \
	MLAE4S(8, 26, 2, 0); \
	MLAE4S(9, 27, 2, 1); \
	SUBS $1, R12; \
	BNE chunkloop; \
	ROWFMA(8, 9, V8, V9, 0); \
	ADD R4, R7; \
	ADD $64, R8; \
	SUBS $1, R6; \
	BNE rowloop

// NEXT advances to the next super-block of bytes weight bytes.
#define NEXT(bytes, L) \
	ADD $bytes, R1; \
	ADD $292, R2; \
	SUBS $1, R0; \
	BNE L

// STORESC stores the int32 scales s0 (first 16 weights) and s1 at (R11)
// and advances R11.
#define STORESC(s0, s1) \
	MOVW s0, (R11); \
	MOVW s1, 4(R11); \
	ADD $8, R11

// ODD makes 2s+1 of r in place.
#define ODD(r) \
	LSLW $1, r; \
	ADDW $1, r

// ---- IQ2_XXS (66 bytes: d; per chunk 4 index bytes and a uint32 of 4
// sign codes and the scale in bits 28-31) ----

// func kernIQ2_XXSNEON(nb int, w, a *byte, stride, rows int, acc *[4][16]float32, sdot int)
TEXT ·kernIQ2_XXSNEON(SB), 0, $608-56
	IQARGS
	MOVD $·iq2xxsGrid(SB), R21
	MOVD $·iqSignsBytes(SB), R22
block:
	HALFW((R1))
	ADD $2, R1, R15
	MOVD R20, R9
	ADD $256, R20, R11
	MOVD $8, R12
decode:
	MOVWU (R15), R16
	MOVWU 4(R15), R17
	UBFX $0, R16, $8, R13
	GRID8(R13, V0, 0)
	UBFX $8, R16, $8, R13
	GRID8(R13, V0, 1)
	UBFX $16, R16, $8, R13
	GRID8(R13, V1, 0)
	UBFX $24, R16, $8, R13
	GRID8(R13, V1, 1)
	UBFX $0, R17, $7, R13
	SIGN8(R13, V5, 0)
	UBFX $7, R17, $7, R13
	SIGN8(R13, V5, 1)
	UBFX $14, R17, $7, R13
	SIGN8(R13, V6, 0)
	UBFX $21, R17, $7, R13
	SIGN8(R13, V6, 1)
	MULB(0, 0, 5)
	MULB(1, 1, 6)
	VST1.P [V0.B16, V1.B16], 32(R9)
	LSRW $28, R17, R13
	ODD(R13)
	STORESC(R13, R13)
	ADD $8, R15
	SUBS $1, R12
	BNE decode
	ROWS
	NEXT(66, block)
	RET

// ---- IQ2_XS (74 bytes: d; 32 uint16 of a 9-bit index and a 7-bit sign
// code; 8 scale bytes at 66, low nibble the first 16 weights) ----

// IQ2XSG decodes group k of the uint16s in R16.
#define IQ2XSG(k, vg, vs, lane) \
	UBFX $(16*k), R16, $9, R13; \
	GRID8(R13, vg, lane); \
	UBFX $(16*k+9), R16, $7, R13; \
	SIGN8(R13, vs, lane)

// SCALE2 stores 2·lo+1 and 2·hi+1 of the scale byte at (R23), advancing it.
#define SCALE2 \
	MOVBU.P 1(R23), R13; \
	AND $15, R13, R16; \
	ODD(R16); \
	LSRW $4, R13; \
	ODD(R13); \
	STORESC(R16, R13)

// func kernIQ2_XSNEON(nb int, w, a *byte, stride, rows int, acc *[4][16]float32, sdot int)
TEXT ·kernIQ2_XSNEON(SB), 0, $608-56
	IQARGS
	MOVD $·iq2xsGrid(SB), R21
	MOVD $·iqSignsBytes(SB), R22
block:
	HALFW((R1))
	ADD $2, R1, R15
	ADD $66, R1, R23
	MOVD R20, R9
	ADD $256, R20, R11
	MOVD $8, R12
decode:
	MOVD.P 8(R15), R16
	IQ2XSG(0, V0, V5, 0)
	IQ2XSG(1, V0, V5, 1)
	IQ2XSG(2, V1, V6, 0)
	IQ2XSG(3, V1, V6, 1)
	MULB(0, 0, 5)
	MULB(1, 1, 6)
	VST1.P [V0.B16, V1.B16], 32(R9)
	SCALE2
	SUBS $1, R12
	BNE decode
	ROWS
	NEXT(74, block)
	RET

// ---- IQ2_S (82 bytes: d; 32 low index bytes at 2; 32 sign bytes at 34;
// 8 qh bytes at 66 (bits 2k..2k+1: index bits 8-9 of group k); 8 scale
// bytes at 74) ----

// IQ2SG decodes group k: index byte k(R15) plus bits of qh (R17), sign
// byte k(R24).
#define IQ2SG(k, vg, vs, lane) \
	MOVBU k(R15), R13; \
	UBFX $(2*k), R17, $2, R16; \
	ORR R16<<8, R13, R13; \
	GRID8(R13, vg, lane); \
	MOVBU k(R24), R13; \
	SIGN8(R13, vs, lane)

// func kernIQ2_SNEON(nb int, w, a *byte, stride, rows int, acc *[4][16]float32, sdot int)
TEXT ·kernIQ2_SNEON(SB), 0, $608-56
	IQARGS
	MOVD $·iq2sGrid(SB), R21
	MOVD $·iqSignBits8(SB), R22
block:
	HALFW((R1))
	ADD $2, R1, R15
	ADD $34, R1, R24
	ADD $66, R1, R25
	ADD $74, R1, R23
	MOVD R20, R9
	ADD $256, R20, R11
	MOVD $8, R12
decode:
	MOVBU.P 1(R25), R17
	IQ2SG(0, V0, V5, 0)
	IQ2SG(1, V0, V5, 1)
	IQ2SG(2, V1, V6, 0)
	IQ2SG(3, V1, V6, 1)
	MULB(0, 0, 5)
	MULB(1, 1, 6)
	VST1.P [V0.B16, V1.B16], 32(R9)
	SCALE2
	ADD $4, R15
	ADD $4, R24
	SUBS $1, R12
	BNE decode
	ROWS
	NEXT(82, block)
	RET

// ---- IQ3_XXS (98 bytes: d; 64 index bytes at 2, 8 per chunk, 4 weights
// each; per chunk a uint32 at 66 of 4 sign codes and the scale) ----

// IQ3G loads grid point index byte j of (R15) into lane of vd.
#define IQ3G(j, vd, lane) \
	MOVBU j(R15), R13; \
	GRID4(R13, vd, lane)

// func kernIQ3_XXSNEON(nb int, w, a *byte, stride, rows int, acc *[4][16]float32, sdot int)
TEXT ·kernIQ3_XXSNEON(SB), 0, $608-56
	IQARGS
	MOVD $·iq3xxsGrid(SB), R21
	MOVD $·iqSignsBytes(SB), R22
block:
	HALFW((R1))
	ADD $2, R1, R15
	ADD $66, R1, R23
	MOVD R20, R9
	ADD $256, R20, R11
	MOVD $8, R12
decode:
	IQ3G(0, V0, 0)
	IQ3G(1, V0, 1)
	IQ3G(2, V0, 2)
	IQ3G(3, V0, 3)
	IQ3G(4, V1, 0)
	IQ3G(5, V1, 1)
	IQ3G(6, V1, 2)
	IQ3G(7, V1, 3)
	MOVWU.P 4(R23), R17
	UBFX $0, R17, $7, R13
	SIGN8(R13, V5, 0)
	UBFX $7, R17, $7, R13
	SIGN8(R13, V5, 1)
	UBFX $14, R17, $7, R13
	SIGN8(R13, V6, 0)
	UBFX $21, R17, $7, R13
	SIGN8(R13, V6, 1)
	MULB(0, 0, 5)
	MULB(1, 1, 6)
	VST1.P [V0.B16, V1.B16], 32(R9)
	LSRW $28, R17, R13
	ODD(R13)
	STORESC(R13, R13)
	ADD $8, R15
	SUBS $1, R12
	BNE decode
	ROWS
	NEXT(98, block)
	RET

// ---- IQ3_S (110 bytes: d; 64 low index bytes at 2; 8 qh bytes at 66
// (bit j: index bit 8 of the chunk's j-th point); 32 sign bytes at 74; 4
// scale bytes at 106, chunk c in nibble c%2 of byte c/2) ----

// IQ3SG loads point j of the chunk: index byte j(R15), bit j of qh (R17).
#define IQ3SG(j, vd, lane) \
	MOVBU j(R15), R13; \
	UBFX $j, R17, $1, R16; \
	ORR R16<<8, R13, R13; \
	GRID4(R13, vd, lane)

// IQ3SCHUNK decodes one chunk with the scale s (a register).
#define IQ3SCHUNK(s) \
	MOVBU.P 1(R25), R17; \
	IQ3SG(0, V0, 0); \
	IQ3SG(1, V0, 1); \
	IQ3SG(2, V0, 2); \
	IQ3SG(3, V0, 3); \
	IQ3SG(4, V1, 0); \
	IQ3SG(5, V1, 1); \
	IQ3SG(6, V1, 2); \
	IQ3SG(7, V1, 3); \
	MOVBU 0(R24), R13; \
	SIGN8(R13, V5, 0); \
	MOVBU 1(R24), R13; \
	SIGN8(R13, V5, 1); \
	MOVBU 2(R24), R13; \
	SIGN8(R13, V6, 0); \
	MOVBU 3(R24), R13; \
	SIGN8(R13, V6, 1); \
	MULB(0, 0, 5); \
	MULB(1, 1, 6); \
	VST1.P [V0.B16, V1.B16], 32(R9); \
	STORESC(s, s); \
	ADD $8, R15; \
	ADD $4, R24

// func kernIQ3_SNEON(nb int, w, a *byte, stride, rows int, acc *[4][16]float32, sdot int)
TEXT ·kernIQ3_SNEON(SB), 0, $608-56
	IQARGS
	MOVD $·iq3sGrid(SB), R21
	MOVD $·iqSignBits8(SB), R22
block:
	HALFW((R1))
	ADD $2, R1, R15
	ADD $66, R1, R25
	ADD $74, R1, R24
	ADD $106, R1, R23
	MOVD R20, R9
	ADD $256, R20, R11
	MOVD $4, R12
decode:
	MOVBU.P 1(R23), R6
	AND $15, R6, R7
	ODD(R7)
	IQ3SCHUNK(R7)
	LSRW $4, R6, R7
	ODD(R7)
	IQ3SCHUNK(R7)
	SUBS $1, R12
	BNE decode
	ROWS
	NEXT(110, block)
	RET

// ---- IQ4_XS (136 bytes: d; scales_h uint16 at 2; scales_l at 4; 16
// bytes of nibbles per chunk at 8, low nibbles its first 16 weights) ----
// V28 the value table, V29 bytes 0x0f.

// func kernIQ4_XSNEON(nb int, w, a *byte, stride, rows int, acc *[4][16]float32, sdot int)
TEXT ·kernIQ4_XSNEON(SB), 0, $608-56
	IQARGS
	MOVD $·iq4nlValues(SB), R13
	VLD1 (R13), [V28.B16]
	VMOVI $15, V29.B16
block:
	HALFW((R1))
	MOVHU 2(R1), R17
	MOVWU 4(R1), R16
	ADD $8, R1, R15
	MOVD R20, R9
	ADD $256, R20, R11
	MOVD $0, R24
	MOVD $0, R25
	MOVD $8, R12
decode:
	VLD1.P 16(R15), [V5.B16]
	VAND V29.B16, V5.B16, V6.B16
	VUSHR $4, V5.B16, V7.B16
	TBL1(0, 28, 6)
	TBL1(1, 28, 7)
	VST1.P [V0.B16, V1.B16], 32(R9)
	LSRW R24, R16, R13
	AND $15, R13
	LSRW R25, R17, R6
	AND $3, R6
	ORRW R6<<4, R13, R13
	SUBW $32, R13
	STORESC(R13, R13)
	ADD $4, R24
	ADD $2, R25
	SUBS $1, R12
	BNE decode
	ROWS
	NEXT(136, block)
	RET

// ---- IQ1_S (50 bytes: d; 32 low index bytes at 2; per chunk a uint16
// at 34: bits 3k..3k+2 index bits 8-10 of group k, 12-14 the scale, 15
// the delta's sign) ----
// The grid is signed (-1, 0, 1): W is the points themselves. DSV (frame
// 576) holds each chunk's ±(2s+1) twice as int16, for the delta term
// Σ bsums·DSV fused-multiply-added with d into acc[r][8].

// IQ1SG loads group k: index byte k(R15), bits 3k..3k+2 of R17.
#define IQ1SG(k, vd, lane) \
	MOVBU k(R15), R13; \
	UBFX $(3*k), R17, $3, R16; \
	ORR R16<<8, R13, R13; \
	GRID8(R13, vd, lane)

// func kernIQ1_SNEON(nb int, w, a *byte, stride, rows int, acc *[4][16]float32, sdot int)
TEXT ·kernIQ1_SNEON(SB), 0, $608-56
	IQARGS
	MOVD $·iq1sGrid(SB), R21
block:
	HALFW((R1))
	ADD $2, R1, R15
	ADD $34, R1, R23
	ADD $576, R20, R24
	MOVD R20, R9
	ADD $256, R20, R11
	MOVD $8, R12
decode:
	MOVHU.P 2(R23), R17
	IQ1SG(0, V0, 0)
	IQ1SG(1, V0, 1)
	IQ1SG(2, V1, 0)
	IQ1SG(3, V1, 1)
	VST1.P [V0.B16, V1.B16], 32(R9)
	UBFX $12, R17, $3, R13
	ODD(R13)
	STORESC(R13, R13)
	UBFX $15, R17, $1, R16
	NEG R16, R16
	EORW R16, R13, R13
	SUBW R16, R13, R13
	MOVH R13, (R24)
	MOVH R13, 2(R24)
	ADD $4, R24
	ADD $4, R15
	SUBS $1, R12
	BNE decode
	ROWS
	// the delta term of every row
	ADD $576, R20, R13
	VLD1 (R13), [V20.H8, V21.H8]
	MOVD R2, R7
	MOVD R3, R8
	MOVD R5, R6
deltaloop:
	ADD $260, R7, R13
	VLD1 (R13), [V24.H8, V25.H8]
	SMULL4S(26, 24, 20)
	SMULL24S(27, 24, 20)
	VADD V27.S4, V26.S4, V26.S4
	SMULL4S(27, 25, 21)
	VADD V27.S4, V26.S4, V26.S4
	SMULL24S(27, 25, 21)
	VADD V27.S4, V26.S4, V26.S4
	VADDV V26.S4, V26
	SCVTF4S(26, 26)
	FMOVS (R7), F4
	FMULS F3, F4, F4
	VDUP V4.S[0], V4.S4
	ADD $32, R8, R13
	VLD1 (R13), [V5.S4]
	VFMLA V26.S4, V4.S4, V5.S4
	VST1 [V5.S4], (R13)
	ADD R4, R7
	ADD $64, R8
	SUBS $1, R6
	BNE deltaloop
	NEXT(50, block)
	RET

// ---- IQ1_M (56 bytes: 32 low index bytes; per chunk 2 qh bytes at 32
// (nibble k: index bits 8-10 of group k, bit 3 its delta's sign); 4
// scale words at 48 (3-bit scales of the halves, d in the top nibbles)) ----
// DS (frame 320): the delta signs as ±1 bytes; rows add the delta lanes
// (V10 V11, activations times DS) to acc[r][8:16].

// IQ1MG loads group k: index byte k(R15), the low 3 bits of nibble k of
// R17, and its delta sign bytes into lane of vs.
#define IQ1MG(k, vd, vs, lane) \
	MOVBU k(R15), R13; \
	UBFX $(4*k), R17, $3, R16; \
	ORR R16<<8, R13, R13; \
	GRID8(R13, vd, lane); \
	UBFX $(4*k+3), R17, $1, R13; \
	NEG R13, R13; \
	ORR R22, R13, R13; \
	VMOV R13, vs.D[lane]

// IQ1MCHUNK decodes one chunk whose half scales are in bits sh.. and
// sh+3.. of R6.
#define IQ1MCHUNK(sh) \
	MOVHU.P 2(R23), R17; \
	IQ1MG(0, V0, V5, 0); \
	IQ1MG(1, V0, V5, 1); \
	IQ1MG(2, V1, V6, 0); \
	IQ1MG(3, V1, V6, 1); \
	VST1.P [V0.B16, V1.B16], 32(R9); \
	VST1.P [V5.B16, V6.B16], 32(R24); \
	UBFX $sh, R6, $3, R13; \
	ODD(R13); \
	UBFX $(sh+3), R6, $3, R16; \
	ODD(R16); \
	STORESC(R13, R16); \
	ADD $4, R15

// func kernIQ1_MNEON(nb int, w, a *byte, stride, rows int, acc *[4][16]float32, sdot int)
TEXT ·kernIQ1_MNEON(SB), 0, $608-56
	IQARGS
	MOVD $·iq1sGrid(SB), R21
	MOVD $0x0101010101010101, R22
block:
	// d_w: the top nibbles of the four scale words
	MOVHU 48(R1), R13
	LSRW $12, R13
	MOVHU 50(R1), R16
	LSRW $8, R16
	AND $0xf0, R16
	ORRW R16, R13
	MOVHU 52(R1), R16
	LSRW $4, R16
	AND $0xf00, R16
	ORRW R16, R13
	MOVHU 54(R1), R16
	AND $0xf000, R16
	ORRW R16, R13
	FMOVS R13, F3
	FCVTSH(3, 3)
	MOVD R1, R15
	ADD $32, R1, R23
	ADD $48, R1, R25
	MOVD R20, R9
	ADD $256, R20, R11
	ADD $320, R20, R24
	MOVD $4, R12
decode:
	MOVHU.P 2(R25), R6
	IQ1MCHUNK(0)
	IQ1MCHUNK(6)
	SUBS $1, R12
	BNE decode
	// rows: main lanes V8 V9, delta lanes V10 V11
	MOVD R2, R7
	MOVD R3, R8
	MOVD R5, R6
rowloop:
	ZERO(V8)
	ZERO(V9)
	ZERO(V10)
	ZERO(V11)
	MOVD R20, R9
	ADD $256, R20, R11
	ADD $320, R20, R24
	ADD $4, R7, R10
	MOVD $8, R12
chunkloop:
	VLD1.P 32(R9), [V0.B16, V1.B16]
	VLD1.P 32(R10), [V24.B16, V25.B16]
	VLD1.P 8(R11), [V2.S2]
	SUM2(mainneon, mainsum)
	MLAE4S(8, 26, 2, 0)
	MLAE4S(9, 27, 2, 1)
	VLD1.P 32(R24), [V0.B16, V1.B16]
	SUM2(deltaneon, deltasum)
	MLAE4S(10, 26, 2, 0)
	MLAE4S(11, 27, 2, 1)
	SUBS $1, R12
	BNE chunkloop
	ROWFMA(8, 9, V8, V9, 0)
	ROWFMA(10, 11, V10, V11, 32)
	ADD R4, R7
	ADD $64, R8
	SUBS $1, R6
	BNE rowloop
	NEXT(56, block)
	RET

// ---- IQ4_NL (18-byte blocks against 34-byte Q8_0 blocks, one row) ----
// Blocks in pairs as llama.cpp's AVX2 kernel: the even blocks' float
// lanes in V8 V9, the odd ones' in V10 V11; each block's int32 lanes
// converted and fused-multiply-added with d_a·d_w. nb is even.

// IQ4NLB adds the block at R1 against the one at R2 into float lanes lo hi.
#define IQ4NLB(Vlo, Vhi, n, s) \
	MOVHU (R1), R13; \
	FMOVS R13, F3; \
	FCVTSH(3, 3); \
	ADD $2, R1, R13; \
	VLD1 (R13), [V5.B16]; \
	VAND V29.B16, V5.B16, V6.B16; \
	VUSHR $4, V5.B16, V7.B16; \
	TBL1(0, 28, 6); \
	TBL1(1, 28, 7); \
	MOVHU (R2), R13; \
	FMOVS R13, F4; \
	FCVTSH(4, 4); \
	ADD $2, R2, R13; \
	VLD1 (R13), [V24.B16, V25.B16]; \
	SUM2(n, s); \
	FMULS F3, F4, F4; \
	VDUP V4.S[0], V4.S4; \
	SCVTF4S(26, 26); \
	SCVTF4S(27, 27); \
	VFMLA V26.S4, V4.S4, Vlo.S4; \
	VFMLA V27.S4, V4.S4, Vhi.S4; \
	ADD $18, R1; \
	ADD $34, R2

// func kernIQ4_NLNEON(nb int, w, a *byte, acc *[16]float32, sdot int)
TEXT ·kernIQ4_NLNEON(SB), NOSPLIT, $0-40
	MOVD nb+0(FP), R0
	MOVD w+8(FP), R1
	MOVD a+16(FP), R2
	MOVD acc+24(FP), R3
	MOVD sdot+32(FP), R19
	MOVD $·iq4nlValues(SB), R13
	VLD1 (R13), [V28.B16]
	VMOVI $15, V29.B16
	ZERO(V8)
	ZERO(V9)
	ZERO(V10)
	ZERO(V11)
	LSR $1, R0
pair:
	IQ4NLB(V8, V9, evenneon, evensum)
	IQ4NLB(V10, V11, oddneon, oddsum)
	SUBS $1, R0
	BNE pair
	VST1 [V8.S4, V9.S4, V10.S4, V11.S4], (R3)
	RET
