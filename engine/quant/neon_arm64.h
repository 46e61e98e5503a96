// Encodings of the AArch64 SIMD instructions that Go's assembler does not
// know, for the dot-product kernels in *_arm64.s. Arguments are register
// numbers (V0-V31); each macro's comment gives the instruction.

// SDOT Vd.4S, Vn.16B, Vm.16B (ARMv8.2 dot product, FEAT_DotProd)
#define SDOT(d, n, m) WORD $(0x4E809400 | ((m)<<16) | ((n)<<5) | (d))

// SMULL Vd.8H, Vn.8B, Vm.8B
#define SMULL8H(d, n, m) WORD $(0x0E20C000 | ((m)<<16) | ((n)<<5) | (d))

// SMULL2 Vd.8H, Vn.16B, Vm.16B
#define SMULL28H(d, n, m) WORD $(0x4E20C000 | ((m)<<16) | ((n)<<5) | (d))

// SMULL Vd.4S, Vn.4H, Vm.4H
#define SMULL4S(d, n, m) WORD $(0x0E60C000 | ((m)<<16) | ((n)<<5) | (d))

// SMULL2 Vd.4S, Vn.8H, Vm.8H
#define SMULL24S(d, n, m) WORD $(0x4E60C000 | ((m)<<16) | ((n)<<5) | (d))

// SADDLP Vd.4S, Vn.8H
#define SADDLP4S(d, n) WORD $(0x4E602800 | ((n)<<5) | (d))

// ADDP Vd.4S, Vn.4S, Vm.4S
#define ADDP4S(d, n, m) WORD $(0x4EA0BC00 | ((m)<<16) | ((n)<<5) | (d))

// SCVTF Vd.4S, Vn.4S
#define SCVTF4S(d, n) WORD $(0x4E21D800 | ((n)<<5) | (d))

// MUL Vd.4S, Vn.4S, Vm.4S
#define MUL4S(d, n, m) WORD $(0x4EA09C00 | ((m)<<16) | ((n)<<5) | (d))

// MLA Vd.4S, Vn.4S, Vm.S[i]
#define MLAE4S(d, n, m, i) WORD $(0x6F800000 | (((i)&1)<<21) | (((i)>>1)<<11) | ((m)<<16) | ((n)<<5) | (d))

// SXTL Vd.8H, Vn.8B (SSHLL #0)
#define SXTL8H(d, n) WORD $(0x0F08A400 | ((n)<<5) | (d))

// SXTL2 Vd.8H, Vn.16B (SSHLL2 #0)
#define SXTL28H(d, n) WORD $(0x4F08A400 | ((n)<<5) | (d))

// SXTL Vd.4S, Vn.4H (SSHLL #0)
#define SXTL4S(d, n) WORD $(0x0F10A400 | ((n)<<5) | (d))

// SXTL2 Vd.4S, Vn.8H (SSHLL2 #0)
#define SXTL24S(d, n) WORD $(0x4F10A400 | ((n)<<5) | (d))

// FCVT Sd, Hn (half to single precision, exact)
#define FCVTSH(d, n) WORD $(0x1EE24000 | ((n)<<5) | (d))

// MOVI Vd.2D, #0
#define MOVI0(d) WORD $(0x6F00E400 | (d))

// SUM4_SDOT sets the 4 int32 lanes of Vd to the sums of 4 consecutive
// products of the int8 lanes of Vn and Vm.
#define SUM4_SDOT(d, n, m) \
	MOVI0(d); \
	SDOT(d, n, m)

// SUM4_NEON computes SUM4_SDOT's result without FEAT_DotProd: int8
// products widened to int16 (|p| <= 2^14), then added pairwise twice.
// It clobbers V30 and V31.
#define SUM4_NEON(d, n, m) \
	SMULL8H(30, n, m); \
	SMULL28H(31, n, m); \
	SADDLP4S(30, 30); \
	SADDLP4S(31, 31); \
	ADDP4S(d, 30, 31)

// FCVTL Vd.4S, Vn.4H (half to single precision, the low four halves)
#define FCVTL4S(d, n) WORD $(0x0E217800 | ((n)<<5) | (d))

// FCVTL2 Vd.4S, Vn.8H (the high four halves)
#define FCVTL24S(d, n) WORD $(0x4E217800 | ((n)<<5) | (d))

// FMLA Vd.4S, Vn.4S, Vm.S[i] (fused multiply-add by element)
#define FMLAE4S(d, n, m, i) WORD $(0x4F801000 | (((i)&1)<<21) | (((i)>>1)<<11) | ((m)<<16) | ((n)<<5) | (d))

// SHLL Vd.4S, Vn.4H, #16 (bf16 to float32, the low four halves)
#define SHLL4S(d, n) WORD $(0x2E613800 | ((n)<<5) | (d))

// SHLL2 Vd.4S, Vn.8H, #16 (the high four halves)
#define SHLL24S(d, n) WORD $(0x6E613800 | ((n)<<5) | (d))
