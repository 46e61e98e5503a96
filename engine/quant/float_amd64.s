//go:build amd64 && !noasm

#include "textflag.h"

// Kernels of the float weight formats, one to four activation rows per
// weight group. They reproduce the references' sequential sums, so they
// gain by converting and multiplying 8 elements at once and by running the
// rows' independent addition chains side by side, not by reordering.
//
// Registers: SI weight row, DI activation row 0, R10 = 0, R8 = stride,
// R11 = 2·stride, R9 = 3·stride (row r at (DI)(Rr*1)), CX groups left,
// DX rows, BX the accumulators.

#define SETUPF \
	MOVQ n+0(FP), CX \
	MOVQ w+8(FP), SI \
	MOVQ a+16(FP), DI \
	MOVQ stride+24(FP), R8 \
	MOVQ rows+32(FP), DX \
	MOVQ acc+40(FP), BX \
	XORQ R10, R10 \
	LEAQ (R8)(R8*1), R11 \
	LEAQ (R11)(R8*1), R9

// ---- F16 and BF16 ----
// The references add each product (exact in float32) as float64 to a
// float64 sum, element after element. Per group of 8 elements the weights
// are converted once (Y0); each row multiplies its converted activations
// (Y1), widens the 8 products to float64 and adds them one by one to
// its sum (X8-X11).

// SUM8 adds the 8 products Y1 of one row to sum in order; the widening
// and the shuffles do not wait on the sum, only the additions do.
#define SUM8(sum) \
	VCVTPS2PD    X1, Y2 \
	VEXTRACTF128 $1, Y1, X1 \
	VCVTPS2PD    X1, Y3 \
	VADDSD       X2, sum, sum \
	VUNPCKHPD    X2, X2, X4 \
	VADDSD       X4, sum, sum \
	VEXTRACTF128 $1, Y2, X2 \
	VADDSD       X2, sum, sum \
	VUNPCKHPD    X2, X2, X4 \
	VADDSD       X4, sum, sum \
	VADDSD       X3, sum, sum \
	VUNPCKHPD    X3, X3, X4 \
	VADDSD       X4, sum, sum \
	VEXTRACTF128 $1, Y3, X3 \
	VADDSD       X3, sum, sum \
	VUNPCKHPD    X3, X3, X4 \
	VADDSD       X4, sum, sum

#define F16ROW(idx, sum) \
	VCVTPH2PS (DI)(idx*1), Y1 \
	VMULPS    Y0, Y1, Y1 \
	SUM8(sum)

#define BF16ROW(idx, sum) \
	VPMOVZXWD (DI)(idx*1), Y1 \
	VPSLLD    $16, Y1, Y1 \
	VMULPS    Y0, Y1, Y1 \
	SUM8(sum)

#define LOADSUMS \
	VMOVSD 0(BX), X8 \
	VMOVSD 8(BX), X9 \
	VMOVSD 16(BX), X10 \
	VMOVSD 24(BX), X11

#define STORESUMS \
	VMOVSD X8, 0(BX) \
	VMOVSD X9, 8(BX) \
	VMOVSD X10, 16(BX) \
	VMOVSD X11, 24(BX)

// func kernF16AVX2(n int, w, a *byte, stride, rows int, acc *[4]float64)
// adds n groups of 8 elements to acc.
TEXT ·kernF16AVX2(SB), NOSPLIT, $0-48
	SETUPF
	LOADSUMS
f16loop:
	VCVTPH2PS (SI), Y0
	F16ROW(R10, X8)
	CMPQ DX, $1
	JEQ  f16next
	F16ROW(R8, X9)
	CMPQ DX, $2
	JEQ  f16next
	F16ROW(R11, X10)
	CMPQ DX, $3
	JEQ  f16next
	F16ROW(R9, X11)
f16next:
	ADDQ $16, SI
	ADDQ $16, DI
	DECQ CX
	JNZ  f16loop
	STORESUMS
	VZEROUPPER
	RET

// func kernBF16AVX2(n int, w, a *byte, stride, rows int, acc *[4]float64)
// adds n groups of 8 elements to acc.
TEXT ·kernBF16AVX2(SB), NOSPLIT, $0-48
	SETUPF
	LOADSUMS
bf16loop:
	VPMOVZXWD (SI), Y0
	VPSLLD    $16, Y0, Y0
	BF16ROW(R10, X8)
	CMPQ DX, $1
	JEQ  bf16next
	BF16ROW(R8, X9)
	CMPQ DX, $2
	JEQ  bf16next
	BF16ROW(R11, X10)
	CMPQ DX, $3
	JEQ  bf16next
	BF16ROW(R9, X11)
bf16next:
	ADDQ $16, SI
	ADDQ $16, DI
	DECQ CX
	JNZ  bf16loop
	STORESUMS
	VZEROUPPER
	RET

// ---- F32 ----
// The reference keeps 4 float32 sums, sum j taking the rounded products of
// elements 4i+j: one XMM register per row (X8-X11), a multiply and an add
// per 4 elements, never fused.

#define F32ROW(idx, sum) \
	VMULPS (DI)(idx*1), X0, X1 \
	VADDPS X1, sum, sum

// func kernF32AVX2(n int, w, a *byte, stride, rows int, acc *[4][4]float32)
// adds n groups of 4 elements to acc.
TEXT ·kernF32AVX2(SB), NOSPLIT, $0-48
	SETUPF
	VMOVUPS 0(BX), X8
	VMOVUPS 16(BX), X9
	VMOVUPS 32(BX), X10
	VMOVUPS 48(BX), X11
f32loop:
	VMOVUPS (SI), X0
	F32ROW(R10, X8)
	CMPQ DX, $1
	JEQ  f32next
	F32ROW(R8, X9)
	CMPQ DX, $2
	JEQ  f32next
	F32ROW(R11, X10)
	CMPQ DX, $3
	JEQ  f32next
	F32ROW(R9, X11)
f32next:
	ADDQ $16, SI
	ADDQ $16, DI
	DECQ CX
	JNZ  f32loop
	VMOVUPS X8, 0(BX)
	VMOVUPS X9, 16(BX)
	VMOVUPS X10, 32(BX)
	VMOVUPS X11, 48(BX)
	RET
