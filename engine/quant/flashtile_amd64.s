//go:build amd64 && !noasm

#include "textflag.h"

// The tiled flash attention's steps (flashtile.go) with AVX-512. Every
// output is the reference's chain of fused multiply-adds in the same
// order, so the results are bit-identical to flashScoresRef, flashPVRef
// and FlashSoftmax's 16-lane formula.

// func flashScores4(s *float32, q *float32, ldq int, kt *float32, dk, rows int)
// s[r*64+j] = chain over d of kt[d*64+j]·q[r*ldq+d], rows 1 to 4: the four
// rows' 16 accumulators (Z0-Z15, row r in Z4r..Z4r+3) take one key-row
// load of four registers per d.
TEXT ·flashScores4(SB), NOSPLIT, $0-48
	MOVQ s+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ ldq+16(FP), AX
	SHLQ $2, AX
	MOVQ kt+24(FP), DX
	MOVQ dk+32(FP), CX
	MOVQ rows+40(FP), BX
	LEAQ (SI)(AX*2), R8 // row 2

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	CMPQ BX, $4
	JEQ fs4loop
	CMPQ BX, $3
	JEQ fs3loop
	CMPQ BX, $2
	JEQ fs2loop
	JMP fs1loop
fs4loop:
	VMOVUPS (DX), Z16
	VMOVUPS 64(DX), Z17
	VMOVUPS 128(DX), Z18
	VMOVUPS 192(DX), Z19
	VBROADCASTSS (SI), Z20
	VFMADD231PS Z20, Z16, Z0
	VFMADD231PS Z20, Z17, Z1
	VFMADD231PS Z20, Z18, Z2
	VFMADD231PS Z20, Z19, Z3
	VBROADCASTSS (SI)(AX*1), Z20
	VFMADD231PS Z20, Z16, Z4
	VFMADD231PS Z20, Z17, Z5
	VFMADD231PS Z20, Z18, Z6
	VFMADD231PS Z20, Z19, Z7
	VBROADCASTSS (R8), Z20
	VFMADD231PS Z20, Z16, Z8
	VFMADD231PS Z20, Z17, Z9
	VFMADD231PS Z20, Z18, Z10
	VFMADD231PS Z20, Z19, Z11
	VBROADCASTSS (R8)(AX*1), Z20
	VFMADD231PS Z20, Z16, Z12
	VFMADD231PS Z20, Z17, Z13
	VFMADD231PS Z20, Z18, Z14
	VFMADD231PS Z20, Z19, Z15
	ADDQ $256, DX
	ADDQ $4, SI
	ADDQ $4, R8
	DECQ CX
	JNZ fs4loop
	JMP fsstore
fs3loop:
	VMOVUPS (DX), Z16
	VMOVUPS 64(DX), Z17
	VMOVUPS 128(DX), Z18
	VMOVUPS 192(DX), Z19
	VBROADCASTSS (SI), Z20
	VFMADD231PS Z20, Z16, Z0
	VFMADD231PS Z20, Z17, Z1
	VFMADD231PS Z20, Z18, Z2
	VFMADD231PS Z20, Z19, Z3
	VBROADCASTSS (SI)(AX*1), Z20
	VFMADD231PS Z20, Z16, Z4
	VFMADD231PS Z20, Z17, Z5
	VFMADD231PS Z20, Z18, Z6
	VFMADD231PS Z20, Z19, Z7
	VBROADCASTSS (R8), Z20
	VFMADD231PS Z20, Z16, Z8
	VFMADD231PS Z20, Z17, Z9
	VFMADD231PS Z20, Z18, Z10
	VFMADD231PS Z20, Z19, Z11
	ADDQ $256, DX
	ADDQ $4, SI
	ADDQ $4, R8
	DECQ CX
	JNZ fs3loop
	JMP fsstore
fs2loop:
	VMOVUPS (DX), Z16
	VMOVUPS 64(DX), Z17
	VMOVUPS 128(DX), Z18
	VMOVUPS 192(DX), Z19
	VBROADCASTSS (SI), Z20
	VFMADD231PS Z20, Z16, Z0
	VFMADD231PS Z20, Z17, Z1
	VFMADD231PS Z20, Z18, Z2
	VFMADD231PS Z20, Z19, Z3
	VBROADCASTSS (SI)(AX*1), Z20
	VFMADD231PS Z20, Z16, Z4
	VFMADD231PS Z20, Z17, Z5
	VFMADD231PS Z20, Z18, Z6
	VFMADD231PS Z20, Z19, Z7
	ADDQ $256, DX
	ADDQ $4, SI
	ADDQ $4, R8
	DECQ CX
	JNZ fs2loop
	JMP fsstore
fs1loop:
	VMOVUPS (DX), Z16
	VMOVUPS 64(DX), Z17
	VMOVUPS 128(DX), Z18
	VMOVUPS 192(DX), Z19
	VBROADCASTSS (SI), Z20
	VFMADD231PS Z20, Z16, Z0
	VFMADD231PS Z20, Z17, Z1
	VFMADD231PS Z20, Z18, Z2
	VFMADD231PS Z20, Z19, Z3
	ADDQ $256, DX
	ADDQ $4, SI
	ADDQ $4, R8
	DECQ CX
	JNZ fs1loop
	JMP fsstore
fsstore:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	CMPQ BX, $1
	JLE fsdone
	VMOVUPS Z4, 256(DI)
	VMOVUPS Z5, 320(DI)
	VMOVUPS Z6, 384(DI)
	VMOVUPS Z7, 448(DI)
	CMPQ BX, $2
	JLE fsdone
	VMOVUPS Z8, 512(DI)
	VMOVUPS Z9, 576(DI)
	VMOVUPS Z10, 640(DI)
	VMOVUPS Z11, 704(DI)
	CMPQ BX, $3
	JLE fsdone
	VMOVUPS Z12, 768(DI)
	VMOVUPS Z13, 832(DI)
	VMOVUPS Z14, 896(DI)
	VMOVUPS Z15, 960(DI)
fsdone:
	VZEROUPPER
	RET

// func flashPV4(acc *float32, ldacc int, p *float32, v *float32, ldv, rows int)
// acc[r*ldacc+e] = chain over j of v[j*ldv+e]·p[r*64+j] from acc's value,
// for 64 columns e and rows 1 to 4 (row r in Z4r..Z4r+3).
TEXT ·flashPV4(SB), NOSPLIT, $0-48
	MOVQ acc+0(FP), DI
	MOVQ ldacc+8(FP), AX
	SHLQ $2, AX
	MOVQ p+16(FP), SI
	MOVQ v+24(FP), DX
	MOVQ ldv+32(FP), R9
	SHLQ $2, R9
	MOVQ rows+40(FP), BX
	MOVQ $64, CX
	MOVQ DI, R10
	VMOVUPS 0(R10), Z0
	VMOVUPS 64(R10), Z1
	VMOVUPS 128(R10), Z2
	VMOVUPS 192(R10), Z3
	CMPQ BX, $1
	JLE pvloaded
	ADDQ AX, R10
	VMOVUPS 0(R10), Z4
	VMOVUPS 64(R10), Z5
	VMOVUPS 128(R10), Z6
	VMOVUPS 192(R10), Z7
	CMPQ BX, $2
	JLE pvloaded
	ADDQ AX, R10
	VMOVUPS 0(R10), Z8
	VMOVUPS 64(R10), Z9
	VMOVUPS 128(R10), Z10
	VMOVUPS 192(R10), Z11
	CMPQ BX, $3
	JLE pvloaded
	ADDQ AX, R10
	VMOVUPS 0(R10), Z12
	VMOVUPS 64(R10), Z13
	VMOVUPS 128(R10), Z14
	VMOVUPS 192(R10), Z15
pvloaded:
	CMPQ BX, $4
	JEQ pv4loop
	CMPQ BX, $3
	JEQ pv3loop
	CMPQ BX, $2
	JEQ pv2loop
	JMP pv1loop
pv4loop:
	VMOVUPS 0(DX), Z16
	VMOVUPS 64(DX), Z17
	VMOVUPS 128(DX), Z18
	VMOVUPS 192(DX), Z19
	VBROADCASTSS 0(SI), Z20
	VFMADD231PS Z20, Z16, Z0
	VFMADD231PS Z20, Z17, Z1
	VFMADD231PS Z20, Z18, Z2
	VFMADD231PS Z20, Z19, Z3
	VBROADCASTSS 256(SI), Z20
	VFMADD231PS Z20, Z16, Z4
	VFMADD231PS Z20, Z17, Z5
	VFMADD231PS Z20, Z18, Z6
	VFMADD231PS Z20, Z19, Z7
	VBROADCASTSS 512(SI), Z20
	VFMADD231PS Z20, Z16, Z8
	VFMADD231PS Z20, Z17, Z9
	VFMADD231PS Z20, Z18, Z10
	VFMADD231PS Z20, Z19, Z11
	VBROADCASTSS 768(SI), Z20
	VFMADD231PS Z20, Z16, Z12
	VFMADD231PS Z20, Z17, Z13
	VFMADD231PS Z20, Z18, Z14
	VFMADD231PS Z20, Z19, Z15
	ADDQ R9, DX
	ADDQ $4, SI
	DECQ CX
	JNZ pv4loop
	JMP pvstore
pv3loop:
	VMOVUPS 0(DX), Z16
	VMOVUPS 64(DX), Z17
	VMOVUPS 128(DX), Z18
	VMOVUPS 192(DX), Z19
	VBROADCASTSS 0(SI), Z20
	VFMADD231PS Z20, Z16, Z0
	VFMADD231PS Z20, Z17, Z1
	VFMADD231PS Z20, Z18, Z2
	VFMADD231PS Z20, Z19, Z3
	VBROADCASTSS 256(SI), Z20
	VFMADD231PS Z20, Z16, Z4
	VFMADD231PS Z20, Z17, Z5
	VFMADD231PS Z20, Z18, Z6
	VFMADD231PS Z20, Z19, Z7
	VBROADCASTSS 512(SI), Z20
	VFMADD231PS Z20, Z16, Z8
	VFMADD231PS Z20, Z17, Z9
	VFMADD231PS Z20, Z18, Z10
	VFMADD231PS Z20, Z19, Z11
	ADDQ R9, DX
	ADDQ $4, SI
	DECQ CX
	JNZ pv3loop
	JMP pvstore
pv2loop:
	VMOVUPS 0(DX), Z16
	VMOVUPS 64(DX), Z17
	VMOVUPS 128(DX), Z18
	VMOVUPS 192(DX), Z19
	VBROADCASTSS 0(SI), Z20
	VFMADD231PS Z20, Z16, Z0
	VFMADD231PS Z20, Z17, Z1
	VFMADD231PS Z20, Z18, Z2
	VFMADD231PS Z20, Z19, Z3
	VBROADCASTSS 256(SI), Z20
	VFMADD231PS Z20, Z16, Z4
	VFMADD231PS Z20, Z17, Z5
	VFMADD231PS Z20, Z18, Z6
	VFMADD231PS Z20, Z19, Z7
	ADDQ R9, DX
	ADDQ $4, SI
	DECQ CX
	JNZ pv2loop
	JMP pvstore
pv1loop:
	VMOVUPS 0(DX), Z16
	VMOVUPS 64(DX), Z17
	VMOVUPS 128(DX), Z18
	VMOVUPS 192(DX), Z19
	VBROADCASTSS 0(SI), Z20
	VFMADD231PS Z20, Z16, Z0
	VFMADD231PS Z20, Z17, Z1
	VFMADD231PS Z20, Z18, Z2
	VFMADD231PS Z20, Z19, Z3
	ADDQ R9, DX
	ADDQ $4, SI
	DECQ CX
	JNZ pv1loop
	JMP pvstore
pvstore:
	MOVQ DI, R10
	VMOVUPS Z0, 0(R10)
	VMOVUPS Z1, 64(R10)
	VMOVUPS Z2, 128(R10)
	VMOVUPS Z3, 192(R10)
	CMPQ BX, $1
	JLE pvdone
	ADDQ AX, R10
	VMOVUPS Z4, 0(R10)
	VMOVUPS Z5, 64(R10)
	VMOVUPS Z6, 128(R10)
	VMOVUPS Z7, 192(R10)
	CMPQ BX, $2
	JLE pvdone
	ADDQ AX, R10
	VMOVUPS Z8, 0(R10)
	VMOVUPS Z9, 64(R10)
	VMOVUPS Z10, 128(R10)
	VMOVUPS Z11, 192(R10)
	CMPQ BX, $3
	JLE pvdone
	ADDQ AX, R10
	VMOVUPS Z12, 0(R10)
	VMOVUPS Z13, 64(R10)
	VMOVUPS Z14, 128(R10)
	VMOVUPS Z15, 192(R10)
pvdone:
	VZEROUPPER
	RET

// func flashSoftmax64(x *float32, m float32) float64
// x[j] = e^(x[j]-m) with ggml_v_expf's AVX-512 formula (as swiglu16) for
// 64 values; returns the sum of the four 16-lane blocks, each added across
// as _mm512_reduce_add_ps does, in float64.
TEXT ·flashSoftmax64(SB), NOSPLIT, $0-24
	MOVQ         x+0(FP), DI
	VBROADCASTSS m+8(FP), Z30
	VBROADCASTSS ftc<>+0(SB), Z16  // shift 0x1.8p23
	VBROADCASTSS ftc<>+4(SB), Z17  // log2 e
	VBROADCASTSS ftc<>+8(SB), Z18  // ln 2 high
	VBROADCASTSS ftc<>+12(SB), Z19 // ln 2 low
	VBROADCASTSS ftc<>+16(SB), Z20 // p0
	VBROADCASTSS ftc<>+20(SB), Z21 // p1
	VBROADCASTSS ftc<>+24(SB), Z22 // p2
	VBROADCASTSS ftc<>+28(SB), Z23 // p3
	VBROADCASTSS ftc<>+32(SB), Z24 // p4
	VBROADCASTSS ftc<>+36(SB), Z25 // 1
	VBROADCASTSS ftc<>+40(SB), Z26 // 192
	VBROADCASTSS ftc<>+44(SB), Z27 // +inf
	VPBROADCASTD ftc<>+48(SB), Z28 // 0x7fffffff
	VXORPS       Z29, Z29, Z29     // 0
	VXORPD       X31, X31, X31     // the float64 sum
	MOVQ         $4, CX

fsmloop:
	VMOVUPS      (DI), Z0
	VSUBPS       Z30, Z0, Z1       // t = x - m
	VMOVAPS      Z16, Z2
	VFMADD231PS  Z17, Z1, Z2       // z = t·log2e + shift
	VSUBPS       Z16, Z2, Z3       // n = z - shift
	VMOVAPS      Z1, Z4
	VFNMADD231PS Z18, Z3, Z4       // t - n·ln2hi
	VFNMADD231PS Z19, Z3, Z4       // b = that - n·ln2lo
	VPANDD       Z28, Z3, Z5
	VCMPPS       $0x1e, Z26, Z5, K1 // |n| > 192
	VCMPPS       $0x02, Z29, Z3, K2 // n <= 0
	VMULPS       Z4, Z4, Z5        // u = b·b
	VMOVAPS      Z21, Z6
	VFMADD231PS  Z20, Z4, Z6       // p0·b + p1
	VMOVAPS      Z23, Z7
	VFMADD231PS  Z22, Z4, Z7       // p2·b + p3
	VFMADD231PS  Z5, Z6, Z7        // (p0·b+p1)·u + (p2·b+p3)
	VMOVAPS      Z25, Z8
	VFMADD231PS  Z24, Z4, Z8       // p4·b + 1
	VFMADD231PS  Z5, Z7, Z8        // j
	VSCALEFPS    Z3, Z8, Z9        // j·2^n
	VMOVAPS      Z27, Z10
	VMOVAPS      Z29, K2, Z10      // n <= 0: 0, else +inf
	VMOVAPS      Z10, K1, Z9       // |n| > 192 takes that
	VMOVUPS      Z9, (DI)
	VEXTRACTF64X4 $1, Z9, Y11
	VADDPS       Y9, Y11, Y11      // t[l] = v[8+l] + v[l]
	VEXTRACTF128 $1, Y11, X12
	VADDPS       X11, X12, X12     // t[4+l] + t[l]
	VPERMILPS    $0x4e, X12, X13
	VADDPS       X13, X12, X13     // lane 0: t0+t2, lane 1: t1+t3
	VMOVSHDUP    X13, X14
	VADDSS       X14, X13, X14     // (t0+t2) + (t1+t3)
	VCVTSS2SD    X14, X14, X14
	VADDSD       X14, X31, X31
	ADDQ         $64, DI
	DECQ         CX
	JNZ          fsmloop
	VMOVSD       X31, ret+16(FP)
	VZEROUPPER
	RET

// ggml_v_expf's constants, as gvc in flashattn_amd64.s.
DATA ftc<>+0(SB)/4, $0x4b400000  // 0x1.8p23
DATA ftc<>+4(SB)/4, $0x3fb8aa3b  // 0x1.715476p+0
DATA ftc<>+8(SB)/4, $0x3f317200  // 0x1.62e4p-1
DATA ftc<>+12(SB)/4, $0x35bfbe8e // 0x1.7f7d1cp-20
DATA ftc<>+16(SB)/4, $0x3c072010 // 0x1.0e4020p-7
DATA ftc<>+20(SB)/4, $0x3d2b9f17 // 0x1.573e2ep-5
DATA ftc<>+24(SB)/4, $0x3e2aaf33 // 0x1.555e66p-3
DATA ftc<>+28(SB)/4, $0x3efffedb // 0x1.fffdb6p-2
DATA ftc<>+32(SB)/4, $0x3f7ffff6 // 0x1.ffffecp-1
DATA ftc<>+36(SB)/4, $0x3f800000 // 1
DATA ftc<>+40(SB)/4, $0x43400000 // 192
DATA ftc<>+44(SB)/4, $0x7f800000 // +inf
DATA ftc<>+48(SB)/4, $0x7fffffff
GLOBL ftc<>(SB), RODATA|NOPTR, $52

// func flashScaleMask64(x *float32, scale float32, lo, hi int) float32
// x[c] *= scale for the 64 scores, columns outside [lo, hi] set to -inf,
// and the largest returned.
TEXT ·flashScaleMask64(SB), NOSPLIT, $0-36
	MOVQ         x+0(FP), DI
	VBROADCASTSS scale+8(FP), Z16
	MOVQ         lo+16(FP), AX
	MOVQ         hi+24(FP), DX
	VPBROADCASTD AX, Z17          // lo
	VPBROADCASTD DX, Z18          // hi
	VMOVDQU32    ftidx<>(SB), Z19 // 0..15
	MOVL         $0x10, AX
	VPBROADCASTD AX, Z20          // 16
	MOVL         $0xff800000, AX
	VPBROADCASTD AX, Z21          // -inf
	VMOVAPS      Z21, Z22         // the running maximum
	MOVQ         $4, CX

fsmkloop:
	VMULPS       (DI), Z16, Z0
	VPCMPD       $1, Z17, Z19, K1 // c < lo
	VPCMPD       $6, Z18, Z19, K2 // c > hi
	KORW         K1, K2, K1
	VMOVAPS      Z21, K1, Z0
	VMOVUPS      Z0, (DI)
	VMAXPS       Z0, Z22, Z22
	VPADDD       Z20, Z19, Z19
	ADDQ         $64, DI
	DECQ         CX
	JNZ          fsmkloop
	VEXTRACTF64X4 $1, Z22, Y0
	VMAXPS       Y0, Y22, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VMAXSS       X1, X0, X0
	VMOVSS       X0, ret+32(FP)
	VZEROUPPER
	RET

DATA ftidx<>+0(SB)/4, $0
DATA ftidx<>+4(SB)/4, $1
DATA ftidx<>+8(SB)/4, $2
DATA ftidx<>+12(SB)/4, $3
DATA ftidx<>+16(SB)/4, $4
DATA ftidx<>+20(SB)/4, $5
DATA ftidx<>+24(SB)/4, $6
DATA ftidx<>+28(SB)/4, $7
DATA ftidx<>+32(SB)/4, $8
DATA ftidx<>+36(SB)/4, $9
DATA ftidx<>+40(SB)/4, $10
DATA ftidx<>+44(SB)/4, $11
DATA ftidx<>+48(SB)/4, $12
DATA ftidx<>+52(SB)/4, $13
DATA ftidx<>+56(SB)/4, $14
DATA ftidx<>+60(SB)/4, $15
GLOBL ftidx<>(SB), RODATA|NOPTR, $64

// func flashLoadKT16(kt *float32, src *uint16, hd int)
// kt[d*64+p] = src[d*16+p] as float32, for d < hd and p < 16.
TEXT ·flashLoadKT16(SB), NOSPLIT, $0-24
	MOVQ kt+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ hd+16(FP), CX

fkt16loop:
	VCVTPH2PS (SI), Z0
	VMOVUPS   Z0, (DI)
	ADDQ      $32, SI
	ADDQ      $256, DI
	DECQ      CX
	JNZ       fkt16loop
	VZEROUPPER
	RET

// func flashLoadV16(dst *float32, src *uint16, stride, n, hd int)
// n rows of hd (a multiple of 16) halves, stride halves apart, to float32.
TEXT ·flashLoadV16(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), AX
	SHLQ $1, AX
	MOVQ n+24(FP), DX
	MOVQ hd+32(FP), BX
	SHRQ $4, BX

flvrow:
	MOVQ SI, R8
	MOVQ BX, CX

flvcol:
	VCVTPH2PS (R8), Z0
	VMOVUPS   Z0, (DI)
	ADDQ      $32, R8
	ADDQ      $64, DI
	DECQ      CX
	JNZ       flvcol
	ADDQ      AX, SI
	DECQ      DX
	JNZ       flvrow
	VZEROUPPER
	RET
