//go:build amd64 && !noasm

#include "textflag.h"

// PFD is how far ahead of the superblock being read the weights are
// prefetched with two or more rows (see q4x16_amd64.s).
#define PFD 4608

// The Q4_Kx16 kernel (see q4kx16.go for the layout and its order) with
// AVX-512 VNNI. Each 32-byte half k of a block's quants is eight 64-byte
// chunks, split into low nibbles (Z0-Z7, group 2k: lane i holds four
// quants of row i) and high nibbles (Z8-Z15, group 2k+1). For each
// activation row, VPDPBUSD with four of its quants broadcast adds into
// two fresh sums, which VPMULLD scales by the rows' group scales (Z16,
// Z17) and adds into the row's block sum. After the four halves, VPDPWSSD
// adds the minimums times the groups' activation sums (Q8_KAux), and the
// two sums are converted and fused-multiply-added, with d·d_a and dmin·d_a,
// into the row's two float32 accumulators (the second kept in the row's
// destination until the end, when the kernel stores their difference), as
// llama.cpp's repacked Q4_K kernels do.
//
// Registers: DX the block; DI its quants, R9 its group scales (both move
// through the halves); SI, R8, R10, R11 activation rows 0-3 (moved by 64
// per half, so every half reads the same offsets); R12-R15 their aux
// words; CX blocks left, BX activation rows, AX halves left.
// Z18-Z21 block sums, Z22-Z25 accumulators of activation rows 0-3; Z26,
// Z27 scratch, Z28 a chunk, Z29 bytes 0x0f.

// Q4KCHUNK splits chunk c (byte offset off) into lo and hi nibbles.
#define Q4KCHUNK(off, lo, hi) \
	VMOVDQU64 off(DI), Z28 \
	VPANDD    Z29, Z28, lo \
	VPSRLW    $4, Z28, Z28 \
	VPANDD    Z29, Z28, hi

// Q4KHALF adds the current half of activation row act to sum.
#define Q4KHALF(act, sum) \
	VPXORD        Z26, Z26, Z26 \
	VPXORD        Z27, Z27, Z27 \
	VPDPBUSD.BCST 4(act), Z0, Z26 \
	VPDPBUSD.BCST 36(act), Z8, Z27 \
	VPDPBUSD.BCST 8(act), Z1, Z26 \
	VPDPBUSD.BCST 40(act), Z9, Z27 \
	VPDPBUSD.BCST 12(act), Z2, Z26 \
	VPDPBUSD.BCST 44(act), Z10, Z27 \
	VPDPBUSD.BCST 16(act), Z3, Z26 \
	VPDPBUSD.BCST 48(act), Z11, Z27 \
	VPDPBUSD.BCST 20(act), Z4, Z26 \
	VPDPBUSD.BCST 52(act), Z12, Z27 \
	VPDPBUSD.BCST 24(act), Z5, Z26 \
	VPDPBUSD.BCST 56(act), Z13, Z27 \
	VPDPBUSD.BCST 28(act), Z6, Z26 \
	VPDPBUSD.BCST 60(act), Z14, Z27 \
	VPDPBUSD.BCST 32(act), Z7, Z26 \
	VPDPBUSD.BCST 64(act), Z15, Z27 \
	VPMULLD       Z16, Z26, Z26 \
	VPMULLD       Z17, Z27, Z27 \
	VPADDD        Z26, sum, sum \
	VPADDD        Z27, sum, sum \
	ADDQ          $64, act

// Q4KFINISH adds activation row act's block (act now 256 bytes in) with
// aux words at (aux) to acc and to the minimum accumulator at (DI), and
// moves act, aux and DI to the next block and row.
#define Q4KFINISH(act, aux, sum, acc) \
	VPXORD          Z26, Z26, Z26 \
	VPDPWSSD.BCST   0(aux), Z0, Z26 \
	VPDPWSSD.BCST   4(aux), Z1, Z26 \
	VPDPWSSD.BCST   8(aux), Z2, Z26 \
	VPDPWSSD.BCST   12(aux), Z3, Z26 \
	VCVTDQ2PS       sum, sum \
	VMULPS.BCST     -256(act), Z4, Z27 \
	VFMADD231PS     Z27, sum, acc \
	VCVTDQ2PS       Z26, Z26 \
	VMULPS.BCST     -256(act), Z5, Z27 \
	VMOVUPS         (DI), Z28 \
	VFMADD231PS     Z27, Z26, Z28 \
	VMOVUPS         Z28, (DI) \
	ADDQ            R9, DI \
	ADDQ            $36, act \
	ADDQ            $16, aux

// func q4kx16AVX512VNNI(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int)
TEXT ·q4kx16AVX512VNNI(SB), NOSPLIT, $0-72
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), DX
	MOVQ a+16(FP), SI
	MOVQ astride+24(FP), AX
	LEAQ (SI)(AX*1), R8
	LEAQ (R8)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	MOVQ aux+32(FP), R12
	MOVQ auxstride+40(FP), AX
	SHLQ $2, AX
	LEAQ (R12)(AX*1), R13
	LEAQ (R13)(AX*1), R14
	LEAQ (R14)(AX*1), R15
	MOVQ rows+48(FP), BX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z29
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	// The minimum accumulators start at zero in dst.
	MOVQ dst+56(FP), DI
	MOVQ dstride+64(FP), R9
	SHLQ $2, R9
	MOVQ BX, AX

q4kzero:
	VMOVUPS Z22, (DI)
	ADDQ    R9, DI
	DECQ    AX
	JNZ     q4kzero

q4kblock:
	CMPQ BX, $2
	JLT  q4kheader
	PREFETCHT0 PFD+0(DX)
	PREFETCHT0 PFD+64(DX)
	PREFETCHT0 PFD+128(DX)
	PREFETCHT0 PFD+192(DX)
	PREFETCHT0 PFD+256(DX)

q4kheader:
	LEAQ 320(DX), DI
	LEAQ 64(DX), R9
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	MOVQ $4, AX

q4khalf:
	CMPQ BX, $2
	JLT  q4kchunks
	PREFETCHT0 PFD+0(DI)
	PREFETCHT0 PFD+64(DI)
	PREFETCHT0 PFD+128(DI)
	PREFETCHT0 PFD+192(DI)
	PREFETCHT0 PFD+256(DI)
	PREFETCHT0 PFD+320(DI)
	PREFETCHT0 PFD+384(DI)
	PREFETCHT0 PFD+448(DI)

q4kchunks:
	Q4KCHUNK(0, Z0, Z8)
	Q4KCHUNK(64, Z1, Z9)
	Q4KCHUNK(128, Z2, Z10)
	Q4KCHUNK(192, Z3, Z11)
	Q4KCHUNK(256, Z4, Z12)
	Q4KCHUNK(320, Z5, Z13)
	Q4KCHUNK(384, Z6, Z14)
	Q4KCHUNK(448, Z7, Z15)
	VPMOVZXBD 0(R9), Z16
	VPMOVZXBD 16(R9), Z17
	Q4KHALF(SI, Z18)
	CMPQ BX, $1
	JEQ  q4khalfdone
	Q4KHALF(R8, Z19)
	CMPQ BX, $2
	JEQ  q4khalfdone
	Q4KHALF(R10, Z20)
	CMPQ BX, $3
	JEQ  q4khalfdone
	Q4KHALF(R11, Z21)

q4khalfdone:
	ADDQ $512, DI
	ADDQ $32, R9
	DECQ AX
	JNZ  q4khalf

	VPMOVZXBW 192(DX), Z0
	VPMOVZXBW 224(DX), Z1
	VPMOVZXBW 256(DX), Z2
	VPMOVZXBW 288(DX), Z3
	VCVTPH2PS 0(DX), Z4
	VCVTPH2PS 32(DX), Z5
	MOVQ      dst+56(FP), DI
	MOVQ      dstride+64(FP), R9
	SHLQ      $2, R9
	Q4KFINISH(SI, R12, Z18, Z22)
	CMPQ BX, $1
	JEQ  q4knext
	Q4KFINISH(R8, R13, Z19, Z23)
	CMPQ BX, $2
	JEQ  q4knext
	Q4KFINISH(R10, R14, Z20, Z24)
	CMPQ BX, $3
	JEQ  q4knext
	Q4KFINISH(R11, R15, Z21, Z25)

q4knext:
	ADDQ $2368, DX
	DECQ CX
	JNZ  q4kblock

	MOVQ dst+56(FP), DI
	MOVQ dstride+64(FP), R8
	SHLQ $2, R8
	VSUBPS  (DI), Z22, Z22
	VMOVUPS Z22, (DI)
	CMPQ BX, $1
	JEQ  q4kdone
	ADDQ R8, DI
	VSUBPS  (DI), Z23, Z23
	VMOVUPS Z23, (DI)
	CMPQ BX, $2
	JEQ  q4kdone
	ADDQ R8, DI
	VSUBPS  (DI), Z24, Z24
	VMOVUPS Z24, (DI)
	CMPQ BX, $3
	JEQ  q4kdone
	ADDQ R8, DI
	VSUBPS  (DI), Z25, Z25
	VMOVUPS Z25, (DI)

q4kdone:
	VZEROUPPER
	RET
