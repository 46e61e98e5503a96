// Macros shared by the AVX-512 kernels of the repacked 16-row layouts.

// ACTROWS4 points SI, R8, R10 and R11 at activation rows 0-3 of a kernel
// whose arguments begin (nb int, w *byte, a *byte, astride int, ...); AX
// scratch.
#define ACTROWS4 \
	MOVQ a+16(FP), SI \
	MOVQ astride+24(FP), AX \
	LEAQ (SI)(AX*1), R8 \
	LEAQ (R8)(AX*1), R10 \
	LEAQ (R10)(AX*1), R11

// AUXROWS4 points R12-R15 at the aux words of activation rows 0-3, the
// arguments going on (..., aux *uint32, auxstride int, ...); AX scratch.
#define AUXROWS4 \
	MOVQ aux+32(FP), R12 \
	MOVQ auxstride+40(FP), AX \
	SHLQ $2, AX \
	LEAQ (R12)(AX*1), R13 \
	LEAQ (R13)(AX*1), R14 \
	LEAQ (R14)(AX*1), R15

// PREFETCHLINE prefetches the line at off(DX) AX bytes ahead into L1, and
// FAR bytes further (defined by the including file) into L2 only.
#define PREFETCHLINE(off) \
	PREFETCHT0 off(DX)(AX*1) \
	PREFETCHT2 FAR+off(DX)(AX*1)

// HSUM8 leaves a0 = (a0+a4 + a2+a6) + (a1+a5 + a3+a7): the eight float32
// lanes of 16 outputs added in hsum_float_8's order.
#define HSUM8(a0, a1, a2, a3, a4, a5, a6, a7) \
	VADDPS a4, a0, a0 \
	VADDPS a5, a1, a1 \
	VADDPS a6, a2, a2 \
	VADDPS a7, a3, a3 \
	VADDPS a2, a0, a0 \
	VADDPS a3, a1, a1 \
	VADDPS a1, a0, a0

// The kernels that keep llama.cpp's eight float32 lanes per output
// (Q2_Kx16, Q3_Kx16, the i-quant panel) keep an activation row's lanes in
// memory at DI, lane u of its 16 outputs at 64·u bytes past the row's
// start.

// LANEFMA fused-multiply-adds lane sum sum (int32) of the activation row
// whose block starts at act, converted, with d_a·d (the rows' d in Z21)
// into its lane accumulator at accoff(DI); Z22, Z23 scratch.
#define LANEFMA(act, sum, accoff) \
	VCVTDQ2PS    sum, sum \
	VMULPS.BCST  (act), Z21, Z22 \
	VMOVUPS      accoff(DI), Z23 \
	VFMADD231PS  Z22, sum, Z23 \
	VMOVUPS      Z23, accoff(DI)

// LANESZERO clears the lanes of BX activation rows at DI, looping at
// label; AX, R9 and Z0 scratch.
#define LANESZERO(label) \
	VPXORD Z0, Z0, Z0 \
	MOVQ   BX, AX \
	SHLQ   $3, AX \
	MOVQ   DI, R9 \
label: \
	VMOVUPS Z0, (R9) \
	ADDQ    $64, R9 \
	DECQ    AX \
	JNZ     label

// LANESHSUM8 adds the eight lanes of the activation row at off(DI) into
// Z0 as hsum8 does: ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)). Z1-Z3 scratch.
#define LANESHSUM8(off) \
	VMOVUPS off(DI), Z0 \
	VMOVUPS off+64(DI), Z1 \
	VMOVUPS off+128(DI), Z2 \
	VMOVUPS off+192(DI), Z3 \
	VADDPS  off+256(DI), Z0, Z0 \
	VADDPS  off+320(DI), Z1, Z1 \
	VADDPS  off+384(DI), Z2, Z2 \
	VADDPS  off+448(DI), Z3, Z3 \
	VADDPS  Z2, Z0, Z0 \
	VADDPS  Z3, Z1, Z1 \
	VADDPS  Z1, Z0, Z0

// Q5X16UNPACK unpacks the Q5_0x16 or Q5_1x16 block at DI, whose quant
// chunks start q bytes in (after its scales, or scales and minimums):
// its 16 scales to Z24 and its quants into the lanes Z16-Z23 (quants
// 4j..4j+3 of each row in lane i of Zj, 0..31: low nibbles lanes 0-3,
// high ones 4-7, fifth bits from the high-bit chunk, Z31, shifted to bit
// 4 and or-ed in), with Z29 bytes 0x0f, Z30 bytes 0x10 and Z27 scratch.
// Before each of the block's six lines is loaded, PF (PREFETCHT0 or
// PREFETCHT2) asks for the line R14 bytes further on.
#define Q5X16UNPACK(PF, q) \
	PF 0(DI)(R14*1) \
	VCVTPH2PS 0(DI), Z24 \
	PF 64(DI)(R14*1) \
	VMOVDQU64 (q+0)(DI), Z27 \
	VPANDD    Z29, Z27, Z16 \
	VPSRLW    $4, Z27, Z27 \
	VPANDD    Z29, Z27, Z20 \
	PF 128(DI)(R14*1) \
	VMOVDQU64 (q+64)(DI), Z27 \
	VPANDD    Z29, Z27, Z17 \
	VPSRLW    $4, Z27, Z27 \
	VPANDD    Z29, Z27, Z21 \
	PF 192(DI)(R14*1) \
	VMOVDQU64 (q+128)(DI), Z27 \
	VPANDD    Z29, Z27, Z18 \
	VPSRLW    $4, Z27, Z27 \
	VPANDD    Z29, Z27, Z22 \
	PF 256(DI)(R14*1) \
	VMOVDQU64 (q+192)(DI), Z27 \
	VPANDD    Z29, Z27, Z19 \
	VPSRLW    $4, Z27, Z27 \
	VPANDD    Z29, Z27, Z23 \
	PF 320(DI)(R14*1) \
	VMOVDQU64 (q+256)(DI), Z31 \
	VPSLLD    $4, Z31, Z27 \
	VPTERNLOGD $0xf8, Z30, Z27, Z16 \
	VPSLLD    $3, Z31, Z27 \
	VPTERNLOGD $0xf8, Z30, Z27, Z17 \
	VPSLLD    $2, Z31, Z27 \
	VPTERNLOGD $0xf8, Z30, Z27, Z18 \
	VPSLLD    $1, Z31, Z27 \
	VPTERNLOGD $0xf8, Z30, Z27, Z19 \
	VPTERNLOGD $0xf8, Z30, Z31, Z20 \
	VPSRLD    $1, Z31, Z27 \
	VPTERNLOGD $0xf8, Z30, Z27, Z21 \
	VPSRLD    $2, Z31, Z27 \
	VPTERNLOGD $0xf8, Z30, Z27, Z22 \
	VPSRLD    $3, Z31, Z27 \
	VPTERNLOGD $0xf8, Z30, Z27, Z23

// IQ3SGATHER loads into dst the grid points of the 16 IQ3_S grid indices
// 16k..16k+15 of the block at SI: its qs bytes, with bit 8 from the qh
// bits in BX (a masked VPORD of Z31, dwords of 256), looked up in the grid
// at AX by one VPGATHERDD. DX, Z0, K1 and K2 scratch.
#define IQ3SGATHER(k, dst) \
	VPMOVZXBD  2+16*k(SI), Z0 \
	MOVQ       BX, DX \
	SHRQ       $(16*k), DX \
	KMOVW      DX, K1 \
	VPORD      Z31, Z0, K1, Z0 \
	KXNORW     K2, K2, K2 \
	VPGATHERDD (AX)(Z0*4), K2, dst
