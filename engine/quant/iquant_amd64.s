//go:build amd64 && !noasm

#include "textflag.h"
#include "packed_amd64.h"

// AVX2 kernels of the i-quants against their activation formats, one to
// four activation rows per weight block (iquant_amd64.go calls them). For
// each 32-weight chunk they decode the weights once: the grid types into
// unsigned grid bytes (Y0), the signs as ±1 bytes (Y1) and the chunk's
// int16 scales (Y2, low lane the first 16 weights, high lane the rest);
// then for each row VPSIGNB puts the signs on the activation bytes,
// VPMADDUBSW multiplies (exact: grid bytes are at most 62), VPMADDWD
// applies the scales, and the int32 lanes (lane u: weights 4u..4u+3 of
// every chunk, the references' iqBlock.lanes) add up in Y8-Y11. Once per
// super-block each row's lanes are fused-multiply-added with d_w·d_a into
// its 8 float lanes acc[r][0:8] in memory. The grids are indexed with
// scalar loads: gathers are slower on the CPUs that have them.
//
// Registers shared by the kernels: SI weight block, DI activation block of
// row 0, R8 = stride, R11 = 2·stride, R9 = 3·stride, DX rows, R12 and R13
// table bases, R14 the activation chunk of row 0, BX the chunk index (then
// the acc pointer), CX free for shifts (the block count lives in nb+0(FP)),
// Y8-Y11 the rows' integer lanes.

#define IQSETUP \
	MOVQ w+8(FP), SI \
	MOVQ a+16(FP), DI \
	MOVQ stride+24(FP), R8 \
	MOVQ rows+32(FP), DX \
	LEAQ (R8)(R8*1), R11 \
	LEAQ (R11)(R8*1), R9

#define IQZERO \
	VPXOR Y8, Y8, Y8 \
	VPXOR Y9, Y9, Y9 \
	VPXOR Y10, Y10, Y10 \
	VPXOR Y11, Y11, Y11

// IQROW adds one row's products of the decoded chunk (Y0 grid, Y1 signs,
// Y2 scales) with the activations at mem to iacc.
#define IQROW(mem, iacc) \
	VMOVDQU    mem, Y3 \
	VPSIGNB    Y1, Y3, Y3 \
	VPMADDUBSW Y3, Y0, Y3 \
	VPMADDWD   Y2, Y3, Y3 \
	VPADDD     Y3, iacc, iacc

#define IQROWS(L) \
	IQROW((R14), Y8) \
	CMPQ DX, $1 \
	JEQ  L \
	IQROW((R14)(R8*1), Y9) \
	CMPQ DX, $2 \
	JEQ  L \
	IQROW((R14)(R11*1), Y10) \
	CMPQ DX, $3 \
	JEQ  L \
	IQROW((R14)(R9*1), Y11) \
L:

// IQFMAD adds d_a·d_w (d_w a float in X4, d_a the float at the start of
// the row's Q8_K block at mem) times the float of the lanes iacc to the 8
// float lanes at aoff(BX).
#define IQFMAD(mem, iacc, aoff) \
	VCVTDQ2PS    iacc, Y12 \
	VMOVSS       mem, X13 \
	VMULSS       X4, X13, X13 \
	VBROADCASTSS X13, Y13 \
	VMOVUPS      aoff(BX), Y15 \
	VFMADD231PS  Y13, Y12, Y15 \
	VMOVUPS      Y15, aoff(BX)

// IQFINISH: X4 = the f16 at 0(SI) as a float, then IQFMAD for every row.
#define IQFINISH(L) \
	MOVWLZX   (SI), AX \
	VMOVD     AX, X4 \
	VCVTPH2PS X4, X4 \
	MOVQ      acc+40(FP), BX \
	IQFMAD((DI), Y8, 0) \
	CMPQ DX, $1 \
	JEQ  L \
	IQFMAD((DI)(R8*1), Y9, 64) \
	CMPQ DX, $2 \
	JEQ  L \
	IQFMAD((DI)(R11*1), Y10, 128) \
	CMPQ DX, $3 \
	JEQ  L \
	IQFMAD((DI)(R9*1), Y11, 192) \
L:

// GRID8x4 loads the 4 grid points (8 bytes each) of the tables at R12
// with indexes r0..r3 into Y0 (X5 scratch).
#define GRID8x4(r0, r1, r2, r3) \
	VMOVQ       (R12)(r0*8), X0 \
	VPINSRQ     $1, (R12)(r1*8), X0, X0 \
	VMOVQ       (R12)(r2*8), X5 \
	VPINSRQ     $1, (R12)(r3*8), X5, X5 \
	VINSERTI128 $1, X5, Y0, Y0

// SIGNS4 loads the ±1 bytes of the 4 7-bit sign codes in bits 0-27 of
// R10 (iqSignsBytes at R13) into Y1, using AX and R15.
#define SIGNS4 \
	MOVL    R10, AX \
	ANDL    $127, AX \
	VMOVQ   (R13)(AX*8), X1 \
	MOVL    R10, AX \
	SHRL    $7, AX \
	ANDL    $127, AX \
	VPINSRQ $1, (R13)(AX*8), X1, X1 \
	MOVL    R10, AX \
	SHRL    $14, AX \
	ANDL    $127, AX \
	VMOVQ   (R13)(AX*8), X5 \
	MOVL    R10, AX \
	SHRL    $21, AX \
	ANDL    $127, AX \
	VPINSRQ $1, (R13)(AX*8), X5, X5 \
	VINSERTI128 $1, X5, Y1, Y1

// SCALE1 broadcasts 2·(R10>>28)+1 as int16 to Y2.
#define SCALE1 \
	SHRL         $28, R10 \
	LEAL         1(R10)(R10*1), R10 \
	VMOVD        R10, X2 \
	VPBROADCASTW X2, Y2

// SCALE2 puts 2·lo+1 (lo the low nibble of AX) in Y2's low lane and
// 2·hi+1 (the high nibble) in its high lane, as int16.
#define SCALE2 \
	MOVL         AX, R10 \
	ANDL         $15, AX \
	LEAL         1(AX)(AX*1), AX \
	VMOVD        AX, X2 \
	VPBROADCASTW X2, X2 \
	SHRL         $4, R10 \
	LEAL         1(R10)(R10*1), R10 \
	VMOVD        R10, X5 \
	VPBROADCASTW X5, X5 \
	VINSERTI128  $1, X5, Y2, Y2

// ---- IQ2_XXS ----
// Block (66 bytes): d, then per chunk c at 2+8c four grid index bytes and
// a uint32 of four sign codes and the scale in bits 28-31.

// func kernIQ2_XXSAVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernIQ2_XXSAVX2(SB), NOSPLIT, $0-48
	IQSETUP
	LEAQ ·iq2xxsGrid(SB), R12
	LEAQ ·iqSignsBytes(SB), R13
iq2xxsblock:
	IQZERO
	LEAQ 4(DI), R14
	XORQ BX, BX
iq2xxschunk:
	MOVBQZX 2(SI)(BX*8), AX
	MOVBQZX 3(SI)(BX*8), R10
	MOVBQZX 4(SI)(BX*8), R15
	MOVBQZX 5(SI)(BX*8), CX
	GRID8x4(AX, R10, R15, CX)
	MOVL    6(SI)(BX*8), R10
	SIGNS4
	SCALE1
	IQROWS(iq2xxsrows)
	ADDQ $32, R14
	INCQ BX
	CMPQ BX, $8
	JNE  iq2xxschunk
	IQFINISH(iq2xxsfin)
	ADDQ $66, SI
	ADDQ $292, DI
	DECQ nb+0(FP)
	JNZ  iq2xxsblock
	VZEROUPPER
	RET

// Constants: iqSignShuf repeats byte k of a broadcast dword over bytes
// 8k..8k+7 (k = 0, 1 in the low lane, 2, 3 in the high lane); iqBits holds
// bit j%8 in byte j; then bytes of 1, of 0x0f, and int16 ones and sevens.
DATA iqSignShuf<>+0(SB)/8, $0x0000000000000000
DATA iqSignShuf<>+8(SB)/8, $0x0101010101010101
DATA iqSignShuf<>+16(SB)/8, $0x0202020202020202
DATA iqSignShuf<>+24(SB)/8, $0x0303030303030303
GLOBL iqSignShuf<>(SB), RODATA|NOPTR, $32

DATA iqBits<>+0(SB)/8, $0x8040201008040201
DATA iqBits<>+8(SB)/8, $0x8040201008040201
DATA iqBits<>+16(SB)/8, $0x8040201008040201
DATA iqBits<>+24(SB)/8, $0x8040201008040201
GLOBL iqBits<>(SB), RODATA|NOPTR, $32

DATA iqOnes8<>+0(SB)/8, $0x0101010101010101
DATA iqOnes8<>+8(SB)/8, $0x0101010101010101
DATA iqOnes8<>+16(SB)/8, $0x0101010101010101
DATA iqOnes8<>+24(SB)/8, $0x0101010101010101
GLOBL iqOnes8<>(SB), RODATA|NOPTR, $32

DATA iqMask0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA iqMask0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL iqMask0f<>(SB), RODATA|NOPTR, $16

DATA iqOnes16<>+0(SB)/8, $0x0001000100010001
DATA iqOnes16<>+8(SB)/8, $0x0001000100010001
DATA iqOnes16<>+16(SB)/8, $0x0001000100010001
DATA iqOnes16<>+24(SB)/8, $0x0001000100010001
GLOBL iqOnes16<>(SB), RODATA|NOPTR, $32

DATA iqHShifts<>+0(SB)/8, $0x0000000200000000
DATA iqHShifts<>+8(SB)/8, $0x0000000600000004
DATA iqHShifts<>+16(SB)/8, $0x0000000a00000008
DATA iqHShifts<>+24(SB)/8, $0x0000000e0000000c
GLOBL iqHShifts<>(SB), RODATA|NOPTR, $32

DATA iqThrees<>+0(SB)/8, $0x0000000300000003
DATA iqThrees<>+8(SB)/8, $0x0000000300000003
DATA iqThrees<>+16(SB)/8, $0x0000000300000003
DATA iqThrees<>+24(SB)/8, $0x0000000300000003
GLOBL iqThrees<>(SB), RODATA|NOPTR, $32

DATA iqThirtyTwos<>+0(SB)/8, $0x0020002000200020
DATA iqThirtyTwos<>+8(SB)/8, $0x0020002000200020
GLOBL iqThirtyTwos<>(SB), RODATA|NOPTR, $16

DATA iqSevens16<>+0(SB)/8, $0x0007000700070007
DATA iqSevens16<>+8(SB)/8, $0x0007000700070007
GLOBL iqSevens16<>(SB), RODATA|NOPTR, $16


// iqScaleShuf<>+32c picks scale byte 2c as int16 words in the low lane and
// byte 2c+1 in the high lane (of a register holding the 16 scale bytes in
// both lanes): VPSHUFB control for chunk c of the per-16 scale types.
DATA iqScaleShuf<>+0(SB)/8, $0x8000800080008000
DATA iqScaleShuf<>+8(SB)/8, $0x8000800080008000
DATA iqScaleShuf<>+16(SB)/8, $0x8001800180018001
DATA iqScaleShuf<>+24(SB)/8, $0x8001800180018001
DATA iqScaleShuf<>+32(SB)/8, $0x8002800280028002
DATA iqScaleShuf<>+40(SB)/8, $0x8002800280028002
DATA iqScaleShuf<>+48(SB)/8, $0x8003800380038003
DATA iqScaleShuf<>+56(SB)/8, $0x8003800380038003
DATA iqScaleShuf<>+64(SB)/8, $0x8004800480048004
DATA iqScaleShuf<>+72(SB)/8, $0x8004800480048004
DATA iqScaleShuf<>+80(SB)/8, $0x8005800580058005
DATA iqScaleShuf<>+88(SB)/8, $0x8005800580058005
DATA iqScaleShuf<>+96(SB)/8, $0x8006800680068006
DATA iqScaleShuf<>+104(SB)/8, $0x8006800680068006
DATA iqScaleShuf<>+112(SB)/8, $0x8007800780078007
DATA iqScaleShuf<>+120(SB)/8, $0x8007800780078007
DATA iqScaleShuf<>+128(SB)/8, $0x8008800880088008
DATA iqScaleShuf<>+136(SB)/8, $0x8008800880088008
DATA iqScaleShuf<>+144(SB)/8, $0x8009800980098009
DATA iqScaleShuf<>+152(SB)/8, $0x8009800980098009
DATA iqScaleShuf<>+160(SB)/8, $0x800a800a800a800a
DATA iqScaleShuf<>+168(SB)/8, $0x800a800a800a800a
DATA iqScaleShuf<>+176(SB)/8, $0x800b800b800b800b
DATA iqScaleShuf<>+184(SB)/8, $0x800b800b800b800b
DATA iqScaleShuf<>+192(SB)/8, $0x800c800c800c800c
DATA iqScaleShuf<>+200(SB)/8, $0x800c800c800c800c
DATA iqScaleShuf<>+208(SB)/8, $0x800d800d800d800d
DATA iqScaleShuf<>+216(SB)/8, $0x800d800d800d800d
DATA iqScaleShuf<>+224(SB)/8, $0x800e800e800e800e
DATA iqScaleShuf<>+232(SB)/8, $0x800e800e800e800e
DATA iqScaleShuf<>+240(SB)/8, $0x800f800f800f800f
DATA iqScaleShuf<>+248(SB)/8, $0x800f800f800f800f
GLOBL iqScaleShuf<>(SB), RODATA|NOPTR, $256

// iq1mScaleShuf<>+32c repeats word [0,4,1,5,2,6,3,7][c] of each lane, for
// IQ1_M's scale vector (IQ1MSCALES).
DATA iq1mScaleShuf<>+0(SB)/8, $0x0100010001000100
DATA iq1mScaleShuf<>+8(SB)/8, $0x0100010001000100
DATA iq1mScaleShuf<>+16(SB)/8, $0x0100010001000100
DATA iq1mScaleShuf<>+24(SB)/8, $0x0100010001000100
DATA iq1mScaleShuf<>+32(SB)/8, $0x0908090809080908
DATA iq1mScaleShuf<>+40(SB)/8, $0x0908090809080908
DATA iq1mScaleShuf<>+48(SB)/8, $0x0908090809080908
DATA iq1mScaleShuf<>+56(SB)/8, $0x0908090809080908
DATA iq1mScaleShuf<>+64(SB)/8, $0x0302030203020302
DATA iq1mScaleShuf<>+72(SB)/8, $0x0302030203020302
DATA iq1mScaleShuf<>+80(SB)/8, $0x0302030203020302
DATA iq1mScaleShuf<>+88(SB)/8, $0x0302030203020302
DATA iq1mScaleShuf<>+96(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA iq1mScaleShuf<>+104(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA iq1mScaleShuf<>+112(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA iq1mScaleShuf<>+120(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA iq1mScaleShuf<>+128(SB)/8, $0x0504050405040504
DATA iq1mScaleShuf<>+136(SB)/8, $0x0504050405040504
DATA iq1mScaleShuf<>+144(SB)/8, $0x0504050405040504
DATA iq1mScaleShuf<>+152(SB)/8, $0x0504050405040504
DATA iq1mScaleShuf<>+160(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA iq1mScaleShuf<>+168(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA iq1mScaleShuf<>+176(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA iq1mScaleShuf<>+184(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA iq1mScaleShuf<>+192(SB)/8, $0x0706070607060706
DATA iq1mScaleShuf<>+200(SB)/8, $0x0706070607060706
DATA iq1mScaleShuf<>+208(SB)/8, $0x0706070607060706
DATA iq1mScaleShuf<>+216(SB)/8, $0x0706070607060706
DATA iq1mScaleShuf<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA iq1mScaleShuf<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA iq1mScaleShuf<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA iq1mScaleShuf<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL iq1mScaleShuf<>(SB), RODATA|NOPTR, $256

DATA iq1mShifts<>+0(SB)/8, $0
DATA iq1mShifts<>+8(SB)/8, $6
DATA iq1mShifts<>+16(SB)/8, $3
DATA iq1mShifts<>+24(SB)/8, $9
GLOBL iq1mShifts<>(SB), RODATA|NOPTR, $32

// iq1mDeltaShifts<>: VPSLLVQ counts moving bit 4k+3 of the broadcast qh
// word to bit 63 of qword k.
DATA iq1mDeltaShifts<>+0(SB)/8, $60
DATA iq1mDeltaShifts<>+8(SB)/8, $56
DATA iq1mDeltaShifts<>+16(SB)/8, $52
DATA iq1mDeltaShifts<>+24(SB)/8, $48
GLOBL iq1mDeltaShifts<>(SB), RODATA|NOPTR, $32

DATA iqSevensW<>+0(SB)/8, $0x0007000700070007
DATA iqSevensW<>+8(SB)/8, $0x0007000700070007
DATA iqSevensW<>+16(SB)/8, $0x0007000700070007
DATA iqSevensW<>+24(SB)/8, $0x0007000700070007
GLOBL iqSevensW<>(SB), RODATA|NOPTR, $32

// SCALES16 puts the 16 4-bit scales of the 8 bytes at mem (low nibble
// first) as bytes 2s+1 in both lanes of Y6.
#define SCALES16(mem) \
	VMOVQ        mem, X6 \
	VPSRLW       $4, X6, X7 \
	VPAND        iqMask0f<>(SB), X6, X6 \
	VPAND        iqMask0f<>(SB), X7, X7 \
	VPUNPCKLBW   X7, X6, X6 \
	VPADDB       X6, X6, X6 \
	VPADDB       iqOnes8<>(SB), X6, X6 \
	VINSERTI128  $1, X6, Y6, Y6

// SCALECHUNK puts chunk BX's two scales (from Y6) into Y2.
#define SCALECHUNK \
	MOVQ    BX, AX \
	SHLQ    $5, AX \
	LEAQ    iqScaleShuf<>(SB), R15 \
	VPSHUFB (R15)(AX*1), Y6, Y2

// SIGNBITS puts the ±1 bytes of the 32 sign bits at mem (bit j of byte k
// for weight 8k+j) in Y1.
#define SIGNBITS(mem) \
	VPBROADCASTD mem, Y1 \
	VPSHUFB      iqSignShuf<>(SB), Y1, Y1 \
	VPAND        iqBits<>(SB), Y1, Y1 \
	VPCMPEQB     iqBits<>(SB), Y1, Y1 \
	VPOR         iqOnes8<>(SB), Y1, Y1

// ---- IQ2_XS ----
// Block (74 bytes): d, 32 uint16 at 2 (bits 0-8 a grid index, 9-15 a
// sign code), 8 scale bytes at 66 (low nibble: the chunk's first 16
// weights).

// func kernIQ2_XSAVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernIQ2_XSAVX2(SB), NOSPLIT, $0-48
	IQSETUP
	LEAQ ·iq2xsGrid(SB), R12
	LEAQ ·iqSignsBytes(SB), R13
iq2xsblock:
	IQZERO
	SCALES16(66(SI))
	LEAQ 4(DI), R14
	XORQ BX, BX
iq2xschunk:
	MOVQ    2(SI)(BX*8), R10
	MOVL    R10, AX
	ANDL    $511, AX
	VMOVQ   (R12)(AX*8), X0
	MOVQ    R10, AX
	SHRQ    $16, AX
	ANDL    $511, AX
	VPINSRQ $1, (R12)(AX*8), X0, X0
	MOVQ    R10, AX
	SHRQ    $32, AX
	ANDL    $511, AX
	VMOVQ   (R12)(AX*8), X5
	MOVQ    R10, AX
	SHRQ    $48, AX
	ANDL    $511, AX
	VPINSRQ $1, (R12)(AX*8), X5, X5
	VINSERTI128 $1, X5, Y0, Y0
	MOVQ    R10, AX
	SHRQ    $9, AX
	ANDL    $127, AX
	VMOVQ   (R13)(AX*8), X1
	MOVQ    R10, AX
	SHRQ    $25, AX
	ANDL    $127, AX
	VPINSRQ $1, (R13)(AX*8), X1, X1
	MOVQ    R10, AX
	SHRQ    $41, AX
	ANDL    $127, AX
	VMOVQ   (R13)(AX*8), X5
	SHRQ    $57, R10
	VPINSRQ $1, (R13)(R10*8), X5, X5
	VINSERTI128 $1, X5, Y1, Y1
	SCALECHUNK
	IQROWS(iq2xsrows)
	ADDQ $32, R14
	INCQ BX
	CMPQ BX, $8
	JNE  iq2xschunk
	IQFINISH(iq2xsfin)
	ADDQ $74, SI
	ADDQ $292, DI
	DECQ nb+0(FP)
	JNZ  iq2xsblock
	VZEROUPPER
	RET

// ---- IQ2_S ----
// Block (82 bytes): d, 32 low index bytes at 2, 32 sign bytes at 34, 8
// qh bytes at 66 (bits 2k..2k+1: bits 8-9 of group k's index), 8 scale
// bytes at 74.

// IQ2SIDX loads into AX the index of group k: the byte at off(SI)(BX*4)
// plus bits 2k..2k+1 of R10 (the chunk's qh) moved to bits 8-9.
#define IQ2SIDX(off, mask, sh) \
	MOVBLZX off(SI)(BX*4), AX \
	MOVL    R10, R15 \
	ANDL    $mask, R15 \
	SHLL    $sh, R15 \
	ORL     R15, AX

// func kernIQ2_SAVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernIQ2_SAVX2(SB), NOSPLIT, $0-48
	IQSETUP
	LEAQ ·iq2sGrid(SB), R12
iq2sblock:
	IQZERO
	SCALES16(74(SI))
	LEAQ 4(DI), R14
	XORQ BX, BX
iq2schunk:
	MOVBLZX 66(SI)(BX*1), R10
	IQ2SIDX(2, 0x03, 8)
	VMOVQ   (R12)(AX*8), X0
	IQ2SIDX(3, 0x0c, 6)
	VPINSRQ $1, (R12)(AX*8), X0, X0
	IQ2SIDX(4, 0x30, 4)
	VMOVQ   (R12)(AX*8), X5
	IQ2SIDX(5, 0xc0, 2)
	VPINSRQ $1, (R12)(AX*8), X5, X5
	VINSERTI128 $1, X5, Y0, Y0
	SIGNBITS(34(SI)(BX*4))
	SCALECHUNK
	IQROWS(iq2srows)
	ADDQ $32, R14
	INCQ BX
	CMPQ BX, $8
	JNE  iq2schunk
	IQFINISH(iq2sfin)
	ADDQ $82, SI
	ADDQ $292, DI
	DECQ nb+0(FP)
	JNZ  iq2sblock
	VZEROUPPER
	RET

// ---- IQ3_XXS ----
// Block (98 bytes): d, 64 grid index bytes at 2 (4 weights each, 8 per
// chunk), per chunk a uint32 at 66+4c of four sign codes and the scale.

// GRID4x8 loads the 8 grid points (4 bytes each) of the table at R12
// whose indexes are the bytes off..off+7 of (SI)(BX*8) into Y0.
#define GRID4x8(off) \
	MOVBLZX off(SI)(BX*8), AX \
	VMOVD   (R12)(AX*4), X0 \
	MOVBLZX off+1(SI)(BX*8), AX \
	VPINSRD $1, (R12)(AX*4), X0, X0 \
	MOVBLZX off+2(SI)(BX*8), AX \
	VPINSRD $2, (R12)(AX*4), X0, X0 \
	MOVBLZX off+3(SI)(BX*8), AX \
	VPINSRD $3, (R12)(AX*4), X0, X0 \
	MOVBLZX off+4(SI)(BX*8), AX \
	VMOVD   (R12)(AX*4), X5 \
	MOVBLZX off+5(SI)(BX*8), AX \
	VPINSRD $1, (R12)(AX*4), X5, X5 \
	MOVBLZX off+6(SI)(BX*8), AX \
	VPINSRD $2, (R12)(AX*4), X5, X5 \
	MOVBLZX off+7(SI)(BX*8), AX \
	VPINSRD $3, (R12)(AX*4), X5, X5 \
	VINSERTI128 $1, X5, Y0, Y0

// func kernIQ3_XXSAVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernIQ3_XXSAVX2(SB), NOSPLIT, $0-48
	IQSETUP
	LEAQ ·iq3xxsGrid(SB), R12
	LEAQ ·iqSignsBytes(SB), R13
iq3xxsblock:
	IQZERO
	LEAQ 4(DI), R14
	XORQ BX, BX
iq3xxschunk:
	GRID4x8(2)
	MOVL 66(SI)(BX*4), R10
	SIGNS4
	SCALE1
	IQROWS(iq3xxsrows)
	ADDQ $32, R14
	INCQ BX
	CMPQ BX, $8
	JNE  iq3xxschunk
	IQFINISH(iq3xxsfin)
	ADDQ $98, SI
	ADDQ $292, DI
	DECQ nb+0(FP)
	JNZ  iq3xxsblock
	VZEROUPPER
	RET

// ---- IQ3_S ----
// Block (110 bytes): d, 64 low index bytes at 2, 8 qh bytes at 66 (bit j:
// bit 8 of the chunk's j-th index), 32 sign bytes at 74, 4 scale bytes at
// 106 (chunk c: nibble c%2 of byte c/2).

// IQ3SIDX loads into AX index j of the chunk: byte 2+j of (SI)(BX*8) and
// bit j of R10 moved to bit 8.
#define IQ3SIDX(j, sh) \
	MOVBLZX 2+j(SI)(BX*8), AX \
	MOVL    R10, R15 \
	SHLL    $sh, R15 \
	ANDL    $256, R15 \
	ORL     R15, AX

// func kernIQ3_SAVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernIQ3_SAVX2(SB), NOSPLIT, $0-48
	IQSETUP
	LEAQ ·iq3sGrid(SB), R12
iq3sblock:
	IQZERO
	LEAQ 4(DI), R14
	XORQ BX, BX
iq3schunk:
	MOVBLZX 66(SI)(BX*1), R10
	IQ3SIDX(0, 8)
	VMOVD   (R12)(AX*4), X0
	IQ3SIDX(1, 7)
	VPINSRD $1, (R12)(AX*4), X0, X0
	IQ3SIDX(2, 6)
	VPINSRD $2, (R12)(AX*4), X0, X0
	IQ3SIDX(3, 5)
	VPINSRD $3, (R12)(AX*4), X0, X0
	IQ3SIDX(4, 4)
	VMOVD   (R12)(AX*4), X5
	IQ3SIDX(5, 3)
	VPINSRD $1, (R12)(AX*4), X5, X5
	IQ3SIDX(6, 2)
	VPINSRD $2, (R12)(AX*4), X5, X5
	IQ3SIDX(7, 1)
	VPINSRD $3, (R12)(AX*4), X5, X5
	VINSERTI128 $1, X5, Y0, Y0
	SIGNBITS(74(SI)(BX*4))
	MOVQ    BX, AX
	SHRQ    $1, AX
	MOVBLZX 106(SI)(AX*1), AX
	MOVL    BX, CX
	ANDL    $1, CX
	SHLL    $2, CX
	SHRL    CX, AX
	ANDL    $15, AX
	LEAL    1(AX)(AX*1), AX
	VMOVD   AX, X2
	VPBROADCASTW X2, Y2
	IQROWS(iq3srows)
	ADDQ $32, R14
	INCQ BX
	CMPQ BX, $8
	JNE  iq3schunk
	IQFINISH(iq3sfin)
	ADDQ $110, SI
	ADDQ $292, DI
	DECQ nb+0(FP)
	JNZ  iq3sblock
	VZEROUPPER
	RET

// ---- IQ1_S ----
// Block (50 bytes): d, 32 low index bytes at 2, per chunk a uint16 at
// 34+2c (bits 3k..3k+2: bits 8-10 of group k's index; 12-14 the scale;
// 15 the delta's sign). The grid's coordinates are -1, 0 or 1, so each
// row multiplies the activations signed by the grid (zero where it is 0)
// by ones: Y1 the grid, Y0 bytes of 1. The delta term Σ ±(2s+1)·(the
// chunk's two bsums) is one integer per row (VPMADDWD of the bsums by the
// signed scales, each repeated for its two bsums, in Y6), fused-multiply-
// added with d into acc[r][8].

// IQ1SIDX loads into AX group k's index: byte off of (SI)(BX*4) and bits
// 3k..3k+2 of R10 moved to bits 8-10 (op $sh).
#define IQ1SIDX(off, op, sh) \
	MOVBLZX off(SI)(BX*4), AX \
	MOVL    R10, R15 \
	op      $sh, R15 \
	ANDL    $0x700, R15 \
	ORL     R15, AX

// IQ1SDELTA adds the delta term of the row whose Q8_K block's bsums are
// at bs and d at d to acc at aoff(BX) (X4 = d_w).
#define IQ1SDELTA(bs, d, aoff) \
	VPMADDWD     bs, Y6, Y3 \
	VEXTRACTI128 $1, Y3, X5 \
	VPADDD       X5, X3, X3 \
	VPSHUFD      $0x4e, X3, X5 \
	VPADDD       X5, X3, X3 \
	VPSHUFD      $0xb1, X3, X5 \
	VPADDD       X5, X3, X3 \
	VCVTDQ2PS    X3, X3 \
	VMOVSS       d, X13 \
	VMULSS       X4, X13, X13 \
	VMOVSS       aoff(BX), X15 \
	VFMADD231SS  X13, X3, X15 \
	VMOVSS       X15, aoff(BX)

// func kernIQ1_SAVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernIQ1_SAVX2(SB), NOSPLIT, $0-48
	IQSETUP
	LEAQ ·iq1sGrid(SB), R12
	VMOVDQU iqOnes8<>(SB), Y0
iq1sblock:
	IQZERO
	LEAQ 4(DI), R14
	XORQ BX, BX
iq1schunk:
	MOVWLZX 34(SI)(BX*2), R10
	IQ1SIDX(2, SHLL, 8)
	VMOVQ   (R12)(AX*8), X1
	IQ1SIDX(3, SHLL, 5)
	VPINSRQ $1, (R12)(AX*8), X1, X1
	IQ1SIDX(4, SHLL, 2)
	VMOVQ   (R12)(AX*8), X5
	IQ1SIDX(5, SHRL, 1)
	VPINSRQ $1, (R12)(AX*8), X5, X5
	VINSERTI128 $1, X5, Y1, Y1
	SHRL    $12, R10
	ANDL    $7, R10
	LEAL    1(R10)(R10*1), R10
	VMOVD   R10, X2
	VPBROADCASTW X2, Y2
	IQROWS(iq1srows)
	ADDQ $32, R14
	INCQ BX
	CMPQ BX, $8
	JNE  iq1schunk
	// Y6: the signed scales, each twice
	VMOVDQU    34(SI), X6
	VPSRLW     $12, X6, X7
	VPAND      iqSevens16<>(SB), X7, X7
	VPSLLW     $1, X7, X7
	VPADDW     iqOnes16<>(SB), X7, X7
	VPSRAW     $15, X6, X6
	VPXOR      X6, X7, X7
	VPSUBW     X6, X7, X7
	VPUNPCKLWD X7, X7, X6
	VPUNPCKHWD X7, X7, X7
	VINSERTI128 $1, X7, Y6, Y6
	IQFINISH(iq1sfin)
	IQ1SDELTA(260(DI), (DI), 32)
	CMPQ DX, $1
	JEQ  iq1sdone
	IQ1SDELTA(260(DI)(R8*1), (DI)(R8*1), 96)
	CMPQ DX, $2
	JEQ  iq1sdone
	IQ1SDELTA(260(DI)(R11*1), (DI)(R11*1), 160)
	CMPQ DX, $3
	JEQ  iq1sdone
	IQ1SDELTA(260(DI)(R9*1), (DI)(R9*1), 224)
iq1sdone:
	ADDQ $50, SI
	ADDQ $292, DI
	DECQ nb+0(FP)
	JNZ  iq1sblock
	VZEROUPPER
	RET

// ---- IQ1_M ----
// Block (56 bytes): 32 low index bytes at 0, 16 qh bytes at 32 (per chunk
// a uint16 at 32+2c: nibble k holds bits 8-10 of group k's index and in
// its bit 3 the sign of the group's delta), 4 uint16 scale words at 48
// (3-bit scales of 16-weight halves, the f16 d in their top nibbles).
// Each row has main lanes (Y8-Y11, as IQ1_S) and delta lanes (Y6, Y12,
// Y13, Y14: the activations signed by the groups' delta signs, Y7, times
// ones), both scaled by the halves' 2s+1; X4 holds d_w throughout, the
// frame the block's scale vector.

// IQ1MIDX loads into AX group k's index: byte off of (SI)(BX*4) and the
// low 3 bits of nibble k of R10 moved to bits 8-10 (op $sh).
#define IQ1MIDX(off, op, sh) \
	MOVBLZX off(SI)(BX*4), AX \
	MOVL    R10, R15 \
	op      $sh, R15 \
	ANDL    $0x700, R15 \
	ORL     R15, AX

#define IQ1MROW(mem, iacc, dacc) \
	VMOVDQU    mem, Y3 \
	VPSIGNB    Y1, Y3, Y5 \
	VPMADDUBSW Y5, Y0, Y5 \
	VPMADDWD   Y2, Y5, Y5 \
	VPADDD     Y5, iacc, iacc \
	VPSIGNB    Y7, Y3, Y3 \
	VPMADDUBSW Y3, Y0, Y3 \
	VPMADDWD   Y2, Y3, Y3 \
	VPADDD     Y3, dacc, dacc

// IQ1MFIN adds d_a·d_w times the floats of the row's main lanes iacc to
// acc at aoff(BX) and of its delta lanes dacc to aoff+32(BX).
#define IQ1MFIN(d, iacc, dacc, aoff) \
	VMOVSS       d, X3 \
	VMULSS       X4, X3, X3 \
	VBROADCASTSS X3, Y3 \
	VCVTDQ2PS    iacc, Y5 \
	VMOVUPS      aoff(BX), Y15 \
	VFMADD231PS  Y3, Y5, Y15 \
	VMOVUPS      Y15, aoff(BX) \
	VCVTDQ2PS    dacc, Y5 \
	VMOVUPS      aoff+32(BX), Y15 \
	VFMADD231PS  Y3, Y5, Y15 \
	VMOVUPS      Y15, aoff+32(BX)

// func kernIQ1_MAVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernIQ1_MAVX2(SB), NOSPLIT, $32-48
	IQSETUP
	LEAQ ·iq1sGrid(SB), R12
	VMOVDQU iqOnes8<>(SB), Y0
iq1mblock:
	IQZERO
	VPXOR Y6, Y6, Y6
	VPXOR Y12, Y12, Y12
	VPXOR Y13, Y13, Y13
	VPXOR Y14, Y14, Y14
	// d_w from the top nibbles of the scale words
	MOVWLZX 48(SI), AX
	SHRL    $12, AX
	MOVWLZX 50(SI), R10
	SHRL    $8, R10
	ANDL    $0xf0, R10
	ORL     R10, AX
	MOVWLZX 52(SI), R10
	SHRL    $4, R10
	ANDL    $0xf00, R10
	ORL     R10, AX
	MOVWLZX 54(SI), R10
	ANDL    $0xf000, R10
	ORL     R10, AX
	VMOVD     AX, X4
	VCVTPH2PS X4, X4
	// the 16 scales 2s+1 as words: even ones in the low lane, odd in the high
	VPBROADCASTQ 48(SI), Y2
	VPSRLVQ      iq1mShifts<>(SB), Y2, Y2
	VPAND        iqSevensW<>(SB), Y2, Y2
	VPADDW       Y2, Y2, Y2
	VPADDW       iqOnes16<>(SB), Y2, Y2
	VMOVDQU      Y2, (SP)
	LEAQ 4(DI), R14
	XORQ BX, BX
iq1mchunk:
	MOVWLZX 32(SI)(BX*2), R10
	IQ1MIDX(0, SHLL, 8)
	VMOVQ   (R12)(AX*8), X1
	IQ1MIDX(1, SHLL, 4)
	VPINSRQ $1, (R12)(AX*8), X1, X1
	IQ1MIDX(2, SHLL, 0)
	VMOVQ   (R12)(AX*8), X5
	IQ1MIDX(3, SHRL, 4)
	VPINSRQ $1, (R12)(AX*8), X5, X5
	VINSERTI128 $1, X5, Y1, Y1
	// delta signs: bit 4k+3 of the chunk's qh word to the sign of qword k
	VPBROADCASTW 32(SI)(BX*2), Y7
	VPSLLVQ      iq1mDeltaShifts<>(SB), Y7, Y7
	VPXOR        Y5, Y5, Y5
	VPCMPGTQ     Y7, Y5, Y7
	VPOR         iqOnes8<>(SB), Y7, Y7
	// scales: the chunk's two words of the block's scale vector
	VMOVDQU      (SP), Y2
	MOVQ         BX, AX
	SHLQ         $5, AX
	LEAQ         iq1mScaleShuf<>(SB), R15
	VPSHUFB      (R15)(AX*1), Y2, Y2
	IQ1MROW((R14), Y8, Y6)
	CMPQ DX, $1
	JEQ  iq1mrows
	IQ1MROW((R14)(R8*1), Y9, Y12)
	CMPQ DX, $2
	JEQ  iq1mrows
	IQ1MROW((R14)(R11*1), Y10, Y13)
	CMPQ DX, $3
	JEQ  iq1mrows
	IQ1MROW((R14)(R9*1), Y11, Y14)
iq1mrows:
	ADDQ $32, R14
	INCQ BX
	CMPQ BX, $8
	JNE  iq1mchunk
	MOVQ acc+40(FP), BX
	IQ1MFIN((DI), Y8, Y6, 0)
	CMPQ DX, $1
	JEQ  iq1mfin
	IQ1MFIN((DI)(R8*1), Y9, Y12, 64)
	CMPQ DX, $2
	JEQ  iq1mfin
	IQ1MFIN((DI)(R11*1), Y10, Y13, 128)
	CMPQ DX, $3
	JEQ  iq1mfin
	IQ1MFIN((DI)(R9*1), Y11, Y14, 192)
iq1mfin:
	ADDQ $56, SI
	ADDQ $292, DI
	DECQ nb+0(FP)
	JNZ  iq1mblock
	VZEROUPPER
	RET

// ---- IQ4_XS ----
// Block (136 bytes): d, scales_h (uint16) at 2, scales_l (4 bytes) at 4,
// 128 bytes of nibbles at 8 (16 per chunk: low nibbles the chunk's first
// 16 weights). The nibbles index iq4nlValues (Y6, both lanes) with
// VPSHUFB; as llama.cpp's mul_add_epi8, each row multiplies |w| (Y0) by
// the activations signed by w (Y1). Frame: the 8 chunk scales s-32 as
// int16.

// IQ4XSSCALES stores the 8 chunk scales s-32 as int16 at 0(SP): the
// nibbles of scales_l (byte c/2, nibble c%2) or'ed with the 2-bit pairs of
// scales_h shifted left by 4 (VPSRLVD by 2c in dword c).
#define IQ4XSSCALES \
	VMOVD        4(SI), X1 \
	VPSRLW       $4, X1, X2 \
	VPAND        iqMask0f<>(SB), X1, X1 \
	VPAND        iqMask0f<>(SB), X2, X2 \
	VPUNPCKLBW   X2, X1, X1 \
	VPMOVZXBW    X1, X1 \
	VPBROADCASTW 2(SI), Y2 \
	VPMOVZXWD    X2, Y2 \
	VPSRLVD      iqHShifts<>(SB), Y2, Y2 \
	VPAND        iqThrees<>(SB), Y2, Y2 \
	VPSLLD       $4, Y2, Y2 \
	VEXTRACTI128 $1, Y2, X3 \
	VPACKUSDW    X3, X2, X2 \
	VPOR         X2, X1, X1 \
	VPSUBW       iqThirtyTwos<>(SB), X1, X1 \
	VMOVDQU      X1, (SP)

// IQ4NIBBLES decodes the 16 bytes at mem into the 32 values' magnitudes
// (Y0) and the values (Y1).
#define IQ4NIBBLES(mem) \
	VMOVDQU     mem, X0 \
	VPSRLW      $4, X0, X5 \
	VPAND       iqMask0f<>(SB), X0, X0 \
	VPAND       iqMask0f<>(SB), X5, X5 \
	VINSERTI128 $1, X5, Y0, Y0 \
	VPSHUFB     Y0, Y6, Y1 \
	VPSIGNB     Y1, Y1, Y0

// func kernIQ4_XSAVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernIQ4_XSAVX2(SB), NOSPLIT, $16-48
	IQSETUP
	VBROADCASTI128 ·iq4nlValues(SB), Y6
iq4xsblock:
	IQZERO
	IQ4XSSCALES
	LEAQ 4(DI), R14
	LEAQ 8(SI), R12
	XORQ BX, BX
iq4xschunk:
	IQ4NIBBLES((R12))
	VPBROADCASTW (SP)(BX*2), Y2
	IQROWS(iq4xsrows)
	ADDQ $32, R14
	ADDQ $16, R12
	INCQ BX
	CMPQ BX, $8
	JNE  iq4xschunk
	IQFINISH(iq4xsfin)
	ADDQ $136, SI
	ADDQ $292, DI
	DECQ nb+0(FP)
	JNZ  iq4xsblock
	VZEROUPPER
	RET

// ---- IQ4_NL ----
// Blocks of 18 bytes (d, 16 bytes of nibbles) against Q8_0 blocks (34
// bytes), in pairs as llama.cpp's AVX2 kernel: the even blocks' float
// lanes in Y8-Y11 (rows 0-3), the odd blocks' in Y12-Y15, each block's
// int32 lanes converted and fused-multiply-added with d_a·d_w at once.
// nb is even; the lanes go to acc[r][0:8] and acc[r][8:16] at the end.

#define IQ4NLROW(mem, qmem, facc) \
	VMOVDQU      qmem, Y3 \
	VPSIGNB      Y1, Y3, Y3 \
	VPMADDUBSW   Y3, Y0, Y3 \
	VPMADDWD     iqOnes16<>(SB), Y3, Y3 \
	VCVTDQ2PS    Y3, Y3 \
	MOVWLZX      mem, AX \
	VMOVD        AX, X2 \
	VCVTPH2PS    X2, X2 \
	VMULSS       X4, X2, X2 \
	VBROADCASTSS X2, Y2 \
	VFMADD231PS  Y2, Y3, facc

// IQ4NLBLOCK multiplies the block at SI with the rows' blocks at R14 into
// the float lanes a0..a3.
#define IQ4NLBLOCK(a0, a1, a2, a3, L) \
	IQ4NIBBLES(2(SI)) \
	MOVWLZX   (SI), AX \
	VMOVD     AX, X4 \
	VCVTPH2PS X4, X4 \
	IQ4NLROW((R14), 2(R14), a0) \
	CMPQ DX, $1 \
	JEQ  L \
	IQ4NLROW((R14)(R8*1), 2(R14)(R8*1), a1) \
	CMPQ DX, $2 \
	JEQ  L \
	IQ4NLROW((R14)(R11*1), 2(R14)(R11*1), a2) \
	CMPQ DX, $3 \
	JEQ  L \
	IQ4NLROW((R14)(R9*1), 2(R14)(R9*1), a3) \
L: \
	ADDQ $18, SI \
	ADDQ $34, R14

// IQ4NLSTORE writes row r's even and odd lanes to acc.
#define IQ4NLSTORE(ev, od, aoff) \
	VMOVUPS ev, aoff(BX) \
	VMOVUPS od, aoff+32(BX)

// func kernIQ4_NLAVX2(nb int, w, a *byte, stride, rows int, acc *[4][16]float32)
TEXT ·kernIQ4_NLAVX2(SB), NOSPLIT, $0-48
	IQSETUP
	VBROADCASTI128 ·iq4nlValues(SB), Y6
	MOVQ DI, R14
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	MOVQ nb+0(FP), CX
	SHRQ $1, CX
iq4nlpair:
	IQ4NLBLOCK(Y8, Y9, Y10, Y11, iq4nleven)
	IQ4NLBLOCK(Y12, Y13, Y14, Y15, iq4nlodd)
	DECQ CX
	JNZ  iq4nlpair
	MOVQ acc+40(FP), BX
	IQ4NLSTORE(Y8, Y12, 0)
	IQ4NLSTORE(Y9, Y13, 64)
	IQ4NLSTORE(Y10, Y14, 128)
	IQ4NLSTORE(Y11, Y15, 192)
	VZEROUPPER
	RET

// ---- IQ4_NL in llama.cpp's repacked order ----
// A 4×4 tile: four weight rows (SI, SI+R8, SI+DX, SI+R12) against one to
// four activation rows (DI, DI+R9, DI+R10, DI+R11), each pair's block
// sums taken whole (as llama.cpp's kernels for its 8-row interleaved
// IQ4_NL layout do) and fused-multiply-added with d_w·d_a into one float
// per pair, block after block (DotIQ4_NLInterleaved). Per block: Y0-Y3
// the weight rows' values, X5 their d_w; per activation row Y6 its |q|,
// each weight row's values signed by the activations (VPSIGNB) times |q|
// (VPMADDUBSW, exact), pairs summed by VPMADDWD, the four rows' lanes
// reduced to four exact sums by VPHADDD, converted and fused-multiply-
// added into X8-X11 (activation row r: weight rows 0-3). Y4 the table.

// IQ4NLW decodes the 16 nibble bytes at mem into the 32 values in yv.
#define IQ4NLW(mem, yv, xv) \
	VMOVDQU     mem, xv \
	VPSRLW      $4, xv, X14 \
	VPAND       iqMask0f<>(SB), xv, xv \
	VPAND       iqMask0f<>(SB), X14, X14 \
	VINSERTI128 $1, X14, yv, yv \
	VPSHUFB     yv, Y4, yv

// IQ4NLV puts the int32 pair sums of weight row yw against the activation
// row (|q| in Y6, q at mem) in yd.
#define IQ4NLV(mem, yw, yd) \
	VPSIGNB    mem, yw, yd \
	VPMADDUBSW yd, Y6, yd \
	VPMADDWD   iqOnes16<>(SB), yd, yd

// IQ4NLTROW adds the activation row block at (DI)(idx) to acc.
#define IQ4NLTROW(qmem, dmem, acc) \
	VPABSB       qmem, Y6 \
	IQ4NLV(qmem, Y0, Y7) \
	IQ4NLV(qmem, Y1, Y12) \
	VPHADDD      Y12, Y7, Y7 \
	IQ4NLV(qmem, Y2, Y12) \
	IQ4NLV(qmem, Y3, Y13) \
	VPHADDD      Y13, Y12, Y12 \
	VPHADDD      Y12, Y7, Y7 \
	VEXTRACTI128 $1, Y7, X12 \
	VPADDD       X12, X7, X7 \
	VCVTDQ2PS    X7, X7 \
	MOVWLZX      dmem, AX \
	VMOVD        AX, X13 \
	VCVTPH2PS    X13, X13 \
	VBROADCASTSS X13, X13 \
	VMULPS       X5, X13, X13 \
	VFMADD231PS  X13, X7, acc

// func tileIQ4_NLIAVX2(nb int, w *byte, wstride int, a *byte, astride, rows int, dst *float32, dstride int)
TEXT ·tileIQ4_NLIAVX2(SB), NOSPLIT, $0-64
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ wstride+16(FP), R8
	MOVQ a+24(FP), DI
	MOVQ astride+32(FP), R9
	MOVQ rows+40(FP), BX
	LEAQ (R8)(R8*1), DX
	LEAQ (DX)(R8*1), R12
	LEAQ (R9)(R9*1), R10
	LEAQ (R10)(R9*1), R11
	VBROADCASTI128 ·iq4nlValues(SB), Y4
	VXORPS X8, X8, X8
	VXORPS X9, X9, X9
	VXORPS X10, X10, X10
	VXORPS X11, X11, X11
iq4nltblock:
	IQ4NLW(2(SI), Y0, X0)
	IQ4NLW(2(SI)(R8*1), Y1, X1)
	IQ4NLW(2(SI)(DX*1), Y2, X2)
	IQ4NLW(2(SI)(R12*1), Y3, X3)
	MOVWLZX (SI), AX
	VMOVD   AX, X5
	MOVWLZX (SI)(R8*1), AX
	VPINSRW $1, AX, X5, X5
	MOVWLZX (SI)(DX*1), AX
	VPINSRW $2, AX, X5, X5
	MOVWLZX (SI)(R12*1), AX
	VPINSRW $3, AX, X5, X5
	VCVTPH2PS X5, X5
	IQ4NLTROW(2(DI), (DI), X8)
	CMPQ BX, $1
	JEQ  iq4nltnext
	IQ4NLTROW(2(DI)(R9*1), (DI)(R9*1), X9)
	CMPQ BX, $2
	JEQ  iq4nltnext
	IQ4NLTROW(2(DI)(R10*1), (DI)(R10*1), X10)
	CMPQ BX, $3
	JEQ  iq4nltnext
	IQ4NLTROW(2(DI)(R11*1), (DI)(R11*1), X11)
iq4nltnext:
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  iq4nltblock
	MOVQ dst+48(FP), DI
	MOVQ dstride+56(FP), R8
	SHLQ $2, R8
	VMOVUPS X8, (DI)
	CMPQ BX, $1
	JEQ  iq4nltdone
	ADDQ R8, DI
	VMOVUPS X9, (DI)
	CMPQ BX, $2
	JEQ  iq4nltdone
	ADDQ R8, DI
	VMOVUPS X10, (DI)
	CMPQ BX, $3
	JEQ  iq4nltdone
	ADDQ R8, DI
	VMOVUPS X11, (DI)
iq4nltdone:
	VZEROUPPER
	RET

// ---- IQ3_S, one activation row, AVX-512 ----
// The same lanes as kernIQ3_SAVX2 for rows = 1, 64 weights at a time: the
// 16 grid indices of runs 2k and 2k+1 are their qs bytes with bit 8 from
// the qh bits (a masked VPORD), their grid points (unsigned bytes) one
// VPGATHERDD; the activations are negated where the weights' sign bits
// are set (a masked VPSUBB from zero, which leaves -128 as -128, as
// VPSIGNB does); VPDPBUSD sums each four products (within ±31744, so the
// low word holds it), and VPDPWSSD multiplies the sums by the runs'
// scales 2s+1 (run 2k in dwords 0-7, 2k+1 in 8-15, high words zero) into
// Z8. Both halves of Z8 added are the block's eight integer lanes, exactly
// the AVX2 kernel's (whose VPMADDUBSW pairs stay within ±15872), and the
// float step is its IQFMAD's.

// IQ3S5PAIR adds runs 2k and 2k+1 of the block at SI (qh bits in BX)
// against the Q8_K activations at DI to the lanes in Z8. AX the grid, Z31
// dwords of 256, Z30 zero.
#define IQ3S5PAIR(k) \
	IQ3SGATHER(k, Z1) \
	VMOVDQU64  4+64*k(DI), Z2 \
	KMOVQ      74+8*k(SI), K3 \
	VPSUBB     Z2, Z30, K3, Z2 \
	VPXORD     Z3, Z3, Z3 \
	VPDPBUSD   Z2, Z1, Z3 \
	MOVBLZX    106+k(SI), R10 \
	MOVL       R10, R11 \
	ANDL       $15, R10 \
	SHRL       $4, R11 \
	LEAL       1(R10)(R10*1), R10 \
	LEAL       1(R11)(R11*1), R11 \
	VPBROADCASTD R10, Z4 \
	VPBROADCASTD R11, Z5 \
	VINSERTI64X4 $1, Y5, Z4, Z4 \
	VPDPWSSD   Z4, Z3, Z8

// func kernIQ3_SAVX512(nb int, w, a *byte, acc *[4][16]float32)
TEXT ·kernIQ3_SAVX512(SB), NOSPLIT, $0-32
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ a+16(FP), DI
	MOVQ acc+24(FP), R9
	LEAQ ·iq3sGrid(SB), AX
	MOVL $256, R10
	VPBROADCASTD R10, Z31
	VPXORD Z30, Z30, Z30
	VMOVUPS (R9), Y15
iq3s5block:
	MOVQ 66(SI), BX
	VPXORD Z8, Z8, Z8
	IQ3S5PAIR(0)
	IQ3S5PAIR(1)
	IQ3S5PAIR(2)
	IQ3S5PAIR(3)
	VEXTRACTI64X4 $1, Z8, Y9
	VPADDD       Y9, Y8, Y8
	VCVTDQ2PS    Y8, Y8
	MOVWLZX      (SI), R10
	VMOVD        R10, X4
	VCVTPH2PS    X4, X4
	VMOVSS       (DI), X5
	VMULSS       X4, X5, X5
	VBROADCASTSS X5, Y5
	VFMADD231PS  Y5, Y8, Y15
	ADDQ $110, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq3s5block
	VMOVUPS Y15, (R9)
	VZEROUPPER
	RET
