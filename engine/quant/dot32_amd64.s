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
// ones, Y0 the weight quants (signed), Y1 their magnitudes, Y2 d_w in every lane.

// ROW32 adds row (DI)(idx*1)'s block product to acc.
#define ROW32(idx, acc) \
	VMOVDQU    2(DI)(idx*1), Y3 \
	VPSIGNB    Y0, Y3, Y3 \
	VPMADDUBSW Y3, Y1, Y3 \
	VPMADDWD   Y15, Y3, Y3 \
	VCVTDQ2PS  Y3, Y3 \
	VPBROADCASTW (DI)(idx*1), X4 \
	VCVTPH2PS  X4, Y4 \
	VMULPS     Y2, Y4, Y4 \
	VFMADD231PS Y4, Y3, acc

// ROW32U adds row (DI)(idx*1)'s product with the unsigned weight quants
// Y1 to acc, the activations being Q8_1 (d, s, qs), and fused-multiply-adds
// the weights' minimum (f16 at 2(SI)) times the activations' s into sacc.
#define ROW32U(idx, acc, sacc) \
	VMOVDQU    4(DI)(idx*1), Y3 \
	VPMADDUBSW Y3, Y1, Y3 \
	VPMADDWD   Y15, Y3, Y3 \
	VCVTDQ2PS  Y3, Y3 \
	VPBROADCASTW (DI)(idx*1), X4 \
	VCVTPH2PS  X4, Y4 \
	VMULPS     Y2, Y4, Y4 \
	VFMADD231PS Y4, Y3, acc \
	MOVWLZX    2(DI)(idx*1), AX \
	VMOVD      AX, X3 \
	VCVTPH2PS  X3, X3 \
	MOVWLZX    2(SI), AX \
	VMOVD      AX, X4 \
	VCVTPH2PS  X4, X4 \
	VFMADD231SS X3, X4, sacc

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
	VXORPS Y14, Y14, Y14 \
	VXORPS Y7, Y7, Y7 \
	VXORPS Y8, Y8, Y8 \
	VXORPS Y9, Y9, Y9 \
	VXORPS Y10, Y10, Y10

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

// ROWSU runs ROW32U on 1 to 4 rows, then advances DI by one Q8_1 block.
#define ROWSU(lbl) \
	ROW32U(R10, Y11, X7) \
	CMPQ DX, $1 \
	JEQ  lbl \
	ROW32U(R8, Y12, X8) \
	CMPQ DX, $2 \
	JEQ  lbl \
	ROW32U(R11, Y13, X9) \
	CMPQ DX, $3 \
	JEQ  lbl \
	ROW32U(R9, Y14, X10) \
lbl: \
	ADDQ $36, DI

// STORE writes the rows' 8 lanes to acc[r][0:8] and their minimum terms
// (zero unless ROWSU ran) to acc[r][8].
#define STORE \
	MOVQ acc+40(FP), BX \
	VMOVUPS Y11, 0(BX) \
	VMOVUPS Y12, 64(BX) \
	VMOVUPS Y13, 128(BX) \
	VMOVUPS Y14, 192(BX) \
	VMOVSS  X7, 32(BX) \
	VMOVSS  X8, 96(BX) \
	VMOVSS  X9, 160(BX) \
	VMOVSS  X10, 224(BX) \
	VZEROUPPER

// QH5 ORs the fifth bits of the 32 elements (bit i of the uint32 at off(SI)
// for element i) as 0x10 into the quants in Y0; Y6 holds bytes 0x10.
#define QH5(off) \
	VPBROADCASTD off(SI), Y1 \
	VPSHUFB      qhShuf<>(SB), Y1, Y1 \
	VPAND        qhBits<>(SB), Y1, Y1 \
	VPCMPEQB     qhBits<>(SB), Y1, Y1 \
	VPAND        Y6, Y1, Y1 \
	VPOR         Y1, Y0, Y0

// NIBBLES loads the 16 bytes at off(SI) as 32 nibbles in element order:
// bytes 0-15 of Y0 the low nibbles, 16-31 the high ones. Y5 holds 0x0f.
#define NIBBLES(off) \
	VMOVDQU     off(SI), X0 \
	VPSRLW      $4, X0, X1 \
	VINSERTI128 $1, X1, Y0, Y0 \
	VPAND       Y5, Y0, Y0

// WSCALE converts the weight block's f16 scale to every lane of Y2.
#define WSCALE \
	VPBROADCASTW (SI), X2 \
	VCVTPH2PS    X2, Y2

#define MASKS \
	MOVL $0x0f0f0f0f, AX \
	VMOVD AX, X5 \
	VPBROADCASTD X5, Y5 \
	MOVL $0x10101010, AX \
	VMOVD AX, X6 \
	VPBROADCASTD X6, Y6

// byte i of qhShuf selects byte i/8 of the broadcast uint32; qhBits then
// tests bit i%8 of it.
DATA qhShuf<>+0(SB)/8, $0x0000000000000000
DATA qhShuf<>+8(SB)/8, $0x0101010101010101
DATA qhShuf<>+16(SB)/8, $0x0202020202020202
DATA qhShuf<>+24(SB)/8, $0x0303030303030303
GLOBL qhShuf<>(SB), RODATA|NOPTR, $32
DATA qhBits<>+0(SB)/8, $0x8040201008040201
DATA qhBits<>+8(SB)/8, $0x8040201008040201
DATA qhBits<>+16(SB)/8, $0x8040201008040201
DATA qhBits<>+24(SB)/8, $0x8040201008040201
GLOBL qhBits<>(SB), RODATA|NOPTR, $32

// func kernQ8_0AVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernQ8_0AVX2(SB), NOSPLIT, $0-48
	SETUP
q8_0loop:
	VMOVDQU   2(SI), Y0
	VPSIGNB   Y0, Y0, Y1
	WSCALE
	ROWS(q8_0next)
	ADDQ $34, SI
	DECQ CX
	JNZ  q8_0loop
	STORE
	RET

// func kernQ4_0AVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernQ4_0AVX2(SB), NOSPLIT, $0-48
	SETUP
	MASKS
	MOVL $0x08080808, AX
	VMOVD AX, X6
	VPBROADCASTD X6, Y6
q4_0loop:
	NIBBLES(2)
	VPSUBB      Y6, Y0, Y0
	VPSIGNB     Y0, Y0, Y1
	WSCALE
	ROWS(q4_0next)
	ADDQ $18, SI
	DECQ CX
	JNZ  q4_0loop
	STORE
	RET

// func kernQ5_0AVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernQ5_0AVX2(SB), NOSPLIT, $0-48
	SETUP
	MASKS
q5_0loop:
	NIBBLES(6)
	QH5(2)
	VPSUBB  Y6, Y0, Y0
	VPSIGNB Y0, Y0, Y1
	WSCALE
	ROWS(q5_0next)
	ADDQ $22, SI
	DECQ CX
	JNZ  q5_0loop
	STORE
	RET

// func kernQ4_1AVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernQ4_1AVX2(SB), NOSPLIT, $0-48
	SETUP
	MASKS
q4_1loop:
	NIBBLES(4)
	VMOVDQA Y0, Y1
	WSCALE
	ROWSU(q4_1next)
	ADDQ $20, SI
	DECQ CX
	JNZ  q4_1loop
	STORE
	RET

// func kernQ5_1AVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernQ5_1AVX2(SB), NOSPLIT, $0-48
	SETUP
	MASKS
q5_1loop:
	NIBBLES(8)
	QH5(4)
	VMOVDQA Y0, Y1
	WSCALE
	ROWSU(q5_1next)
	ADDQ $24, SI
	DECQ CX
	JNZ  q5_1loop
	STORE
	RET

// ---- VNNI variants of Q8_0 and Q4_0 ----
// VPDPBUSD sums the 4 products |w|·(y·sign w) of each lane exactly in
// int32, replacing VPMADDUBSW and VPMADDWD: the same lane sums, so the
// same results. DP is the instruction: EVEX-encoded (AVX512-VNNI with
// AVX512VL) or VEX-encoded (AVX-VNNI, which the Go assembler does not
// know, so it is spelled in bytes), both computing Y4 += dot(Y1, Y3).

#define DPEVEX VPDPBUSD Y3, Y1, Y4

// vpdpbusd ymm4, ymm1, ymm3 with a VEX prefix: C4, RXB=111 map 0F38,
// W=0 vvvv=~1 L=1 pp=66, opcode 50, modrm 11 100 011.
#define DPVEX BYTE $0xC4; BYTE $0xE2; BYTE $0x75; BYTE $0x50; BYTE $0xE3

#define ROW32V(dp, idx, acc) \
	VMOVDQU    2(DI)(idx*1), Y3 \
	VPSIGNB    Y0, Y3, Y3 \
	VPXOR      Y4, Y4, Y4 \
	dp \
	VCVTDQ2PS  Y4, Y3 \
	VPBROADCASTW (DI)(idx*1), X4 \
	VCVTPH2PS  X4, Y4 \
	VMULPS     Y2, Y4, Y4 \
	VFMADD231PS Y4, Y3, acc

#define ROWSV(dp, lbl) \
	ROW32V(dp, R10, Y11) \
	CMPQ DX, $1 \
	JEQ  lbl \
	ROW32V(dp, R8, Y12) \
	CMPQ DX, $2 \
	JEQ  lbl \
	ROW32V(dp, R11, Y13) \
	CMPQ DX, $3 \
	JEQ  lbl \
	ROW32V(dp, R9, Y14) \
lbl: \
	ADDQ $34, DI

#define KQ8_0V(dp) \
	SETUP \
q8loop: \
	VMOVDQU   2(SI), Y0 \
	VPSIGNB   Y0, Y0, Y1 \
	WSCALE \
	ROWSV(dp, q8next) \
	ADDQ $34, SI \
	DECQ CX \
	JNZ  q8loop \
	STORE \
	RET

#define KQ4_0V(dp) \
	SETUP \
	MASKS \
	MOVL $0x08080808, AX \
	VMOVD AX, X6 \
	VPBROADCASTD X6, Y6 \
q4loop: \
	NIBBLES(2) \
	VPSUBB  Y6, Y0, Y0 \
	VPSIGNB Y0, Y0, Y1 \
	WSCALE \
	ROWSV(dp, q4next) \
	ADDQ $18, SI \
	DECQ CX \
	JNZ  q4loop \
	STORE \
	RET

// func kernQ8_0AVX512VNNI(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernQ8_0AVX512VNNI(SB), NOSPLIT, $0-48
	KQ8_0V(DPEVEX)

// func kernQ8_0AVXVNNI(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernQ8_0AVXVNNI(SB), NOSPLIT, $0-48
	KQ8_0V(DPVEX)

// func kernQ4_0AVX512VNNI(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernQ4_0AVX512VNNI(SB), NOSPLIT, $0-48
	KQ4_0V(DPEVEX)

// func kernQ4_0AVXVNNI(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernQ4_0AVXVNNI(SB), NOSPLIT, $0-48
	KQ4_0V(DPVEX)
