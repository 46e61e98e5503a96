//go:build amd64 && !noasm

#include "textflag.h"

// AVX2 kernels of the 32-element formats against Q8_0 activations, one to
// four activation rows per weight block. Each block's 32 products are
// summed exactly in groups of 4 (|w|·(y·sign w) with VPMADDUBSW, then
// VPMADDWD by ones), group j going to float lane j, and fused-multiply-
// added with d_w·d_a into the row's 8 accumulators: the reduction order of
// the Go references and of llama.cpp's ggml_vec_dot_q8_0_q8_0.
//
// Registers: SI weight block, DI activation block of row 0, R10 = 0,
// R8 = stride, R11 = 2·stride, R9 = 3·stride (row r at (DI)(Rr*1)),
// CX blocks left, DX rows, Y11-Y14 the rows' accumulators, Y15 int16
// ones, Y0 the weight quants (signed), Y1 their magnitudes, X2 d_w.

// ROW32 adds row (DI)(idx*1)'s block product to acc.
#define ROW32(idx, acc) \
	VMOVDQU    2(DI)(idx*1), Y3 \
	VPSIGNB    Y0, Y3, Y3 \
	VPMADDUBSW Y3, Y1, Y3 \
	VPMADDWD   Y15, Y3, Y3 \
	VCVTDQ2PS  Y3, Y3 \
	MOVWLZX    (DI)(idx*1), AX \
	VMOVD      AX, X4 \
	VCVTPH2PS  X4, X4 \
	VMULSS     X2, X4, X4 \
	VBROADCASTSS X4, Y4 \
	VFMADD231PS Y4, Y3, acc

#define SETUP \
	MOVQ nb+0(FP), CX \
	MOVQ w+8(FP), SI \
	MOVQ a+16(FP), DI \
	MOVQ stride+24(FP), R8 \
	MOVQ rows+32(FP), DX \
	XORQ R10, R10 \
	LEAQ (R8)(R8*1), R11 \
	LEAQ (R11)(R8*1), R9 \
	VPCMPEQW Y15, Y15, Y15 \
	VPSRLW $15, Y15, Y15 \
	VXORPS Y11, Y11, Y11 \
	VXORPS Y12, Y12, Y12 \
	VXORPS Y13, Y13, Y13 \
	VXORPS Y14, Y14, Y14

// ROWS runs ROW32 on 1 to 4 rows, then advances DI by one Q8_0 block.
#define ROWS(lbl) \
	ROW32(R10, Y11) \
	CMPQ DX, $1 \
	JEQ  lbl \
	ROW32(R8, Y12) \
	CMPQ DX, $2 \
	JEQ  lbl \
	ROW32(R11, Y13) \
	CMPQ DX, $3 \
	JEQ  lbl \
	ROW32(R9, Y14) \
lbl: \
	ADDQ $34, DI

#define STORE \
	MOVQ acc+40(FP), BX \
	VMOVUPS Y11, 0(BX) \
	VMOVUPS Y12, 64(BX) \
	VMOVUPS Y13, 128(BX) \
	VMOVUPS Y14, 192(BX) \
	VZEROUPPER

// func kernQ8_0AVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernQ8_0AVX2(SB), NOSPLIT, $0-48
	SETUP
q8_0loop:
	VMOVDQU   2(SI), Y0
	VPSIGNB   Y0, Y0, Y1
	MOVWLZX   (SI), AX
	VMOVD     AX, X2
	VCVTPH2PS X2, X2
	ROWS(q8_0next)
	ADDQ $34, SI
	DECQ CX
	JNZ  q8_0loop
	STORE
	RET

// func kernQ4_0AVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernQ4_0AVX2(SB), NOSPLIT, $0-48
	SETUP
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X5
	VPBROADCASTD X5, Y5
	MOVL $0x08080808, AX
	VMOVD AX, X6
	VPBROADCASTD X6, Y6
q4_0loop:
	// Element i < 16 in the low nibble of byte i, element i+16 in its high
	// nibble: bytes 0-15 of Y0 the low nibbles, 16-31 the high ones.
	VMOVDQU     2(SI), X0
	VPSRLW      $4, X0, X1
	VINSERTI128 $1, X1, Y0, Y0
	VPAND       Y5, Y0, Y0
	VPSUBB      Y6, Y0, Y0
	VPSIGNB     Y0, Y0, Y1
	MOVWLZX     (SI), AX
	VMOVD       AX, X2
	VCVTPH2PS   X2, X2
	ROWS(q4_0next)
	ADDQ $18, SI
	DECQ CX
	JNZ  q4_0loop
	STORE
	RET
