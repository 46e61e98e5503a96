//go:build amd64 && !noasm

#include "textflag.h"
#include "packed_amd64.h"

// FAR is how much further ahead than the distance the kernel takes as an
// argument (q3kx16Ahead) it also prefetches every line into L2 only.
#define FAR 5472

// The Q3_Kx16 kernel (see q3kx16.go for the layout and its order) with
// AVX-512 VNNI, for one to four activation rows. A block is read lane by
// lane: lane c of every row is high chunk c and low chunk c of both
// halves. Each of the lane's eight planes (half h, bit pair j) becomes
// q + 4 (0..7: the low bits and the high bit moved to bit 2), which
// VPDPBUSD with four activation quants broadcast adds into a fresh sum
// (Z20); VPDPWSSD multiplies that by the rows' group scale (Z4-Z11: the
// scale in the low word of each lane, zero in the high one) into the
// row's lane sum (Z16-Z19, one per activation row), which starts from
// −4·Σ scale·Σa (VPDPWSSD of the scale pairs, Z0-Z3, and the activation
// row's aux words). The lane sum is then converted and
// fused-multiply-added with d_a·d into the lane's accumulator, which
// waits in acc (eight lanes of 16 rows per activation row) until the
// kernel adds the lanes as hsum8 does.
//
// Registers: DX the block; SI, R8, R10, R11 activation rows 0-3 and R12-
// R15 their aux words (each at its block); DI acc; CX blocks left, BX
// activation rows; AX the prefetch distance. Z12 a high chunk, Z13 a low
// one, Z14 a plane, Z15 high bits; Z21 the rows' d; Z22, Z23 scratch;
// Z24 bytes 0x03, Z25 bytes 0x04, Z26 words 0xffff in the low half of
// each lane.

// Q3KPAIRS puts scale pairs p..p+3 (the lanes of one parity) into Z0-Z3
// and their scales alone into Z4-Z11 (half h's bit pair j in Z(4+4h+j)).
#define Q3KPAIRS(o0, o1, o2, o3) \
	VPMOVSXBW o0(DX), Z0 \
	VPMOVSXBW o1(DX), Z1 \
	VPMOVSXBW o2(DX), Z2 \
	VPMOVSXBW o3(DX), Z3 \
	VPANDD    Z26, Z0, Z4 \
	VPSRLD    $16, Z0, Z5 \
	VPANDD    Z26, Z1, Z6 \
	VPSRLD    $16, Z1, Z7 \
	VPANDD    Z26, Z2, Z8 \
	VPSRLD    $16, Z2, Z9 \
	VPANDD    Z26, Z3, Z10 \
	VPSRLD    $16, Z3, Z11

// Q3KCORR starts the lane sum sum of activation row act from −4·Σ
// scale·Σa, with its aux words at off(aux).
#define Q3KCORR(off, aux, sum) \
	VPXORD        sum, sum, sum \
	VPDPWSSD.BCST off(aux), Z0, sum \
	VPDPWSSD.BCST 4+off(aux), Z1, sum \
	VPDPWSSD.BCST 8+off(aux), Z2, sum \
	VPDPWSSD.BCST 12+off(aux), Z3, sum

// Q3KDOT adds plane Z14's products with the activation quants at off(act),
// times scale sc, to sum.
#define Q3KDOT(off, act, sc, sum) \
	VPXORD        Z20, Z20, Z20 \
	VPDPBUSD.BCST off(act), Z14, Z20 \
	VPDPWSSD      Z20, sc, sum

// Q3KHSUM stores the lanes of the activation row at acc+off to (R9), as
// hsum8: ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)).
#define Q3KHSUM(off) \
	LANESHSUM8(off) \
	VMOVUPS Z0, (R9)

// func q3kx16AVX512VNNI(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride int, rows int, dst *float32, dstride int, acc *float32, pfd int)
TEXT ·q3kx16AVX512VNNI(SB), NOSPLIT, $0-88
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), DX
	ACTROWS4
	AUXROWS4
	MOVQ rows+48(FP), BX
	MOVQ acc+72(FP), DI
	MOVL $0x03030303, AX
	VPBROADCASTD AX, Z24
	MOVL $0x04040404, AX
	VPBROADCASTD AX, Z25
	MOVL $0x0000ffff, AX
	VPBROADCASTD AX, Z26
	// The lanes' accumulators start at zero.
	LANESZERO(q3kzero)
	MOVQ pfd+80(FP), AX

q3kblock:
	PREFETCHLINE(0)
	PREFETCHLINE(64)
	PREFETCHLINE(128)
	PREFETCHLINE(192)
	PREFETCHLINE(256)
	VCVTPH2PS 0(DX), Z21
	// Lanes 0-3: scale pairs 0-3.
	Q3KPAIRS(32, 64, 96, 128)
	// Lane 0.
	PREFETCHLINE(288)
	VMOVDQU64 288(DX), Z12
	Q3KCORR(0, R12, Z16)
	CMPQ BX, $1
	JEQ  q3kl0c
	Q3KCORR(0, R13, Z17)
	CMPQ BX, $2
	JEQ  q3kl0c
	Q3KCORR(0, R14, Z18)
	CMPQ BX, $3
	JEQ  q3kl0c
	Q3KCORR(0, R15, Z19)
q3kl0c:
	PREFETCHLINE(352)
	VMOVDQU64 352(DX), Z13
	VPANDD Z24, Z13, Z14
	VPSLLW $2, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(4, SI, Z4, Z16)
	CMPQ BX, $1
	JEQ  q3kl0h0j0
	Q3KDOT(4, R8, Z4, Z17)
	CMPQ BX, $2
	JEQ  q3kl0h0j0
	Q3KDOT(4, R10, Z4, Z18)
	CMPQ BX, $3
	JEQ  q3kl0h0j0
	Q3KDOT(4, R11, Z4, Z19)
q3kl0h0j0:
	VPSRLW $2, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSLLW $1, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(36, SI, Z5, Z16)
	CMPQ BX, $1
	JEQ  q3kl0h0j1
	Q3KDOT(36, R8, Z5, Z17)
	CMPQ BX, $2
	JEQ  q3kl0h0j1
	Q3KDOT(36, R10, Z5, Z18)
	CMPQ BX, $3
	JEQ  q3kl0h0j1
	Q3KDOT(36, R11, Z5, Z19)
q3kl0h0j1:
	VPSRLW $4, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPTERNLOGD $0xf8, Z25, Z12, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(68, SI, Z6, Z16)
	CMPQ BX, $1
	JEQ  q3kl0h0j2
	Q3KDOT(68, R8, Z6, Z17)
	CMPQ BX, $2
	JEQ  q3kl0h0j2
	Q3KDOT(68, R10, Z6, Z18)
	CMPQ BX, $3
	JEQ  q3kl0h0j2
	Q3KDOT(68, R11, Z6, Z19)
q3kl0h0j2:
	VPSRLW $6, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $1, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(100, SI, Z7, Z16)
	CMPQ BX, $1
	JEQ  q3kl0h0j3
	Q3KDOT(100, R8, Z7, Z17)
	CMPQ BX, $2
	JEQ  q3kl0h0j3
	Q3KDOT(100, R10, Z7, Z18)
	CMPQ BX, $3
	JEQ  q3kl0h0j3
	Q3KDOT(100, R11, Z7, Z19)
q3kl0h0j3:
	PREFETCHLINE(416)
	VMOVDQU64 416(DX), Z13
	VPANDD Z24, Z13, Z14
	VPSRLW $2, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(132, SI, Z8, Z16)
	CMPQ BX, $1
	JEQ  q3kl0h1j0
	Q3KDOT(132, R8, Z8, Z17)
	CMPQ BX, $2
	JEQ  q3kl0h1j0
	Q3KDOT(132, R10, Z8, Z18)
	CMPQ BX, $3
	JEQ  q3kl0h1j0
	Q3KDOT(132, R11, Z8, Z19)
q3kl0h1j0:
	VPSRLW $2, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $3, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(164, SI, Z9, Z16)
	CMPQ BX, $1
	JEQ  q3kl0h1j1
	Q3KDOT(164, R8, Z9, Z17)
	CMPQ BX, $2
	JEQ  q3kl0h1j1
	Q3KDOT(164, R10, Z9, Z18)
	CMPQ BX, $3
	JEQ  q3kl0h1j1
	Q3KDOT(164, R11, Z9, Z19)
q3kl0h1j1:
	VPSRLW $4, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $4, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(196, SI, Z10, Z16)
	CMPQ BX, $1
	JEQ  q3kl0h1j2
	Q3KDOT(196, R8, Z10, Z17)
	CMPQ BX, $2
	JEQ  q3kl0h1j2
	Q3KDOT(196, R10, Z10, Z18)
	CMPQ BX, $3
	JEQ  q3kl0h1j2
	Q3KDOT(196, R11, Z10, Z19)
q3kl0h1j2:
	VPSRLW $6, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $5, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(228, SI, Z11, Z16)
	CMPQ BX, $1
	JEQ  q3kl0h1j3
	Q3KDOT(228, R8, Z11, Z17)
	CMPQ BX, $2
	JEQ  q3kl0h1j3
	Q3KDOT(228, R10, Z11, Z18)
	CMPQ BX, $3
	JEQ  q3kl0h1j3
	Q3KDOT(228, R11, Z11, Z19)
q3kl0h1j3:
	LANEFMA(SI, Z16, 0)
	CMPQ BX, $1
	JEQ  q3kl0f
	LANEFMA(R8, Z17, 512)
	CMPQ BX, $2
	JEQ  q3kl0f
	LANEFMA(R10, Z18, 1024)
	CMPQ BX, $3
	JEQ  q3kl0f
	LANEFMA(R11, Z19, 1536)
q3kl0f:
	// Lane 1.
	PREFETCHLINE(480)
	VMOVDQU64 480(DX), Z12
	Q3KCORR(16, R12, Z16)
	CMPQ BX, $1
	JEQ  q3kl1c
	Q3KCORR(16, R13, Z17)
	CMPQ BX, $2
	JEQ  q3kl1c
	Q3KCORR(16, R14, Z18)
	CMPQ BX, $3
	JEQ  q3kl1c
	Q3KCORR(16, R15, Z19)
q3kl1c:
	PREFETCHLINE(544)
	VMOVDQU64 544(DX), Z13
	VPANDD Z24, Z13, Z14
	VPSLLW $2, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(8, SI, Z4, Z16)
	CMPQ BX, $1
	JEQ  q3kl1h0j0
	Q3KDOT(8, R8, Z4, Z17)
	CMPQ BX, $2
	JEQ  q3kl1h0j0
	Q3KDOT(8, R10, Z4, Z18)
	CMPQ BX, $3
	JEQ  q3kl1h0j0
	Q3KDOT(8, R11, Z4, Z19)
q3kl1h0j0:
	VPSRLW $2, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSLLW $1, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(40, SI, Z5, Z16)
	CMPQ BX, $1
	JEQ  q3kl1h0j1
	Q3KDOT(40, R8, Z5, Z17)
	CMPQ BX, $2
	JEQ  q3kl1h0j1
	Q3KDOT(40, R10, Z5, Z18)
	CMPQ BX, $3
	JEQ  q3kl1h0j1
	Q3KDOT(40, R11, Z5, Z19)
q3kl1h0j1:
	VPSRLW $4, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPTERNLOGD $0xf8, Z25, Z12, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(72, SI, Z6, Z16)
	CMPQ BX, $1
	JEQ  q3kl1h0j2
	Q3KDOT(72, R8, Z6, Z17)
	CMPQ BX, $2
	JEQ  q3kl1h0j2
	Q3KDOT(72, R10, Z6, Z18)
	CMPQ BX, $3
	JEQ  q3kl1h0j2
	Q3KDOT(72, R11, Z6, Z19)
q3kl1h0j2:
	VPSRLW $6, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $1, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(104, SI, Z7, Z16)
	CMPQ BX, $1
	JEQ  q3kl1h0j3
	Q3KDOT(104, R8, Z7, Z17)
	CMPQ BX, $2
	JEQ  q3kl1h0j3
	Q3KDOT(104, R10, Z7, Z18)
	CMPQ BX, $3
	JEQ  q3kl1h0j3
	Q3KDOT(104, R11, Z7, Z19)
q3kl1h0j3:
	PREFETCHLINE(608)
	VMOVDQU64 608(DX), Z13
	VPANDD Z24, Z13, Z14
	VPSRLW $2, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(136, SI, Z8, Z16)
	CMPQ BX, $1
	JEQ  q3kl1h1j0
	Q3KDOT(136, R8, Z8, Z17)
	CMPQ BX, $2
	JEQ  q3kl1h1j0
	Q3KDOT(136, R10, Z8, Z18)
	CMPQ BX, $3
	JEQ  q3kl1h1j0
	Q3KDOT(136, R11, Z8, Z19)
q3kl1h1j0:
	VPSRLW $2, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $3, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(168, SI, Z9, Z16)
	CMPQ BX, $1
	JEQ  q3kl1h1j1
	Q3KDOT(168, R8, Z9, Z17)
	CMPQ BX, $2
	JEQ  q3kl1h1j1
	Q3KDOT(168, R10, Z9, Z18)
	CMPQ BX, $3
	JEQ  q3kl1h1j1
	Q3KDOT(168, R11, Z9, Z19)
q3kl1h1j1:
	VPSRLW $4, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $4, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(200, SI, Z10, Z16)
	CMPQ BX, $1
	JEQ  q3kl1h1j2
	Q3KDOT(200, R8, Z10, Z17)
	CMPQ BX, $2
	JEQ  q3kl1h1j2
	Q3KDOT(200, R10, Z10, Z18)
	CMPQ BX, $3
	JEQ  q3kl1h1j2
	Q3KDOT(200, R11, Z10, Z19)
q3kl1h1j2:
	VPSRLW $6, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $5, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(232, SI, Z11, Z16)
	CMPQ BX, $1
	JEQ  q3kl1h1j3
	Q3KDOT(232, R8, Z11, Z17)
	CMPQ BX, $2
	JEQ  q3kl1h1j3
	Q3KDOT(232, R10, Z11, Z18)
	CMPQ BX, $3
	JEQ  q3kl1h1j3
	Q3KDOT(232, R11, Z11, Z19)
q3kl1h1j3:
	LANEFMA(SI, Z16, 64)
	CMPQ BX, $1
	JEQ  q3kl1f
	LANEFMA(R8, Z17, 576)
	CMPQ BX, $2
	JEQ  q3kl1f
	LANEFMA(R10, Z18, 1088)
	CMPQ BX, $3
	JEQ  q3kl1f
	LANEFMA(R11, Z19, 1600)
q3kl1f:
	// Lane 2.
	PREFETCHLINE(672)
	VMOVDQU64 672(DX), Z12
	Q3KCORR(32, R12, Z16)
	CMPQ BX, $1
	JEQ  q3kl2c
	Q3KCORR(32, R13, Z17)
	CMPQ BX, $2
	JEQ  q3kl2c
	Q3KCORR(32, R14, Z18)
	CMPQ BX, $3
	JEQ  q3kl2c
	Q3KCORR(32, R15, Z19)
q3kl2c:
	PREFETCHLINE(736)
	VMOVDQU64 736(DX), Z13
	VPANDD Z24, Z13, Z14
	VPSLLW $2, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(12, SI, Z4, Z16)
	CMPQ BX, $1
	JEQ  q3kl2h0j0
	Q3KDOT(12, R8, Z4, Z17)
	CMPQ BX, $2
	JEQ  q3kl2h0j0
	Q3KDOT(12, R10, Z4, Z18)
	CMPQ BX, $3
	JEQ  q3kl2h0j0
	Q3KDOT(12, R11, Z4, Z19)
q3kl2h0j0:
	VPSRLW $2, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSLLW $1, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(44, SI, Z5, Z16)
	CMPQ BX, $1
	JEQ  q3kl2h0j1
	Q3KDOT(44, R8, Z5, Z17)
	CMPQ BX, $2
	JEQ  q3kl2h0j1
	Q3KDOT(44, R10, Z5, Z18)
	CMPQ BX, $3
	JEQ  q3kl2h0j1
	Q3KDOT(44, R11, Z5, Z19)
q3kl2h0j1:
	VPSRLW $4, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPTERNLOGD $0xf8, Z25, Z12, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(76, SI, Z6, Z16)
	CMPQ BX, $1
	JEQ  q3kl2h0j2
	Q3KDOT(76, R8, Z6, Z17)
	CMPQ BX, $2
	JEQ  q3kl2h0j2
	Q3KDOT(76, R10, Z6, Z18)
	CMPQ BX, $3
	JEQ  q3kl2h0j2
	Q3KDOT(76, R11, Z6, Z19)
q3kl2h0j2:
	VPSRLW $6, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $1, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(108, SI, Z7, Z16)
	CMPQ BX, $1
	JEQ  q3kl2h0j3
	Q3KDOT(108, R8, Z7, Z17)
	CMPQ BX, $2
	JEQ  q3kl2h0j3
	Q3KDOT(108, R10, Z7, Z18)
	CMPQ BX, $3
	JEQ  q3kl2h0j3
	Q3KDOT(108, R11, Z7, Z19)
q3kl2h0j3:
	PREFETCHLINE(800)
	VMOVDQU64 800(DX), Z13
	VPANDD Z24, Z13, Z14
	VPSRLW $2, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(140, SI, Z8, Z16)
	CMPQ BX, $1
	JEQ  q3kl2h1j0
	Q3KDOT(140, R8, Z8, Z17)
	CMPQ BX, $2
	JEQ  q3kl2h1j0
	Q3KDOT(140, R10, Z8, Z18)
	CMPQ BX, $3
	JEQ  q3kl2h1j0
	Q3KDOT(140, R11, Z8, Z19)
q3kl2h1j0:
	VPSRLW $2, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $3, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(172, SI, Z9, Z16)
	CMPQ BX, $1
	JEQ  q3kl2h1j1
	Q3KDOT(172, R8, Z9, Z17)
	CMPQ BX, $2
	JEQ  q3kl2h1j1
	Q3KDOT(172, R10, Z9, Z18)
	CMPQ BX, $3
	JEQ  q3kl2h1j1
	Q3KDOT(172, R11, Z9, Z19)
q3kl2h1j1:
	VPSRLW $4, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $4, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(204, SI, Z10, Z16)
	CMPQ BX, $1
	JEQ  q3kl2h1j2
	Q3KDOT(204, R8, Z10, Z17)
	CMPQ BX, $2
	JEQ  q3kl2h1j2
	Q3KDOT(204, R10, Z10, Z18)
	CMPQ BX, $3
	JEQ  q3kl2h1j2
	Q3KDOT(204, R11, Z10, Z19)
q3kl2h1j2:
	VPSRLW $6, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $5, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(236, SI, Z11, Z16)
	CMPQ BX, $1
	JEQ  q3kl2h1j3
	Q3KDOT(236, R8, Z11, Z17)
	CMPQ BX, $2
	JEQ  q3kl2h1j3
	Q3KDOT(236, R10, Z11, Z18)
	CMPQ BX, $3
	JEQ  q3kl2h1j3
	Q3KDOT(236, R11, Z11, Z19)
q3kl2h1j3:
	LANEFMA(SI, Z16, 128)
	CMPQ BX, $1
	JEQ  q3kl2f
	LANEFMA(R8, Z17, 640)
	CMPQ BX, $2
	JEQ  q3kl2f
	LANEFMA(R10, Z18, 1152)
	CMPQ BX, $3
	JEQ  q3kl2f
	LANEFMA(R11, Z19, 1664)
q3kl2f:
	// Lane 3.
	PREFETCHLINE(864)
	VMOVDQU64 864(DX), Z12
	Q3KCORR(48, R12, Z16)
	CMPQ BX, $1
	JEQ  q3kl3c
	Q3KCORR(48, R13, Z17)
	CMPQ BX, $2
	JEQ  q3kl3c
	Q3KCORR(48, R14, Z18)
	CMPQ BX, $3
	JEQ  q3kl3c
	Q3KCORR(48, R15, Z19)
q3kl3c:
	PREFETCHLINE(928)
	VMOVDQU64 928(DX), Z13
	VPANDD Z24, Z13, Z14
	VPSLLW $2, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(16, SI, Z4, Z16)
	CMPQ BX, $1
	JEQ  q3kl3h0j0
	Q3KDOT(16, R8, Z4, Z17)
	CMPQ BX, $2
	JEQ  q3kl3h0j0
	Q3KDOT(16, R10, Z4, Z18)
	CMPQ BX, $3
	JEQ  q3kl3h0j0
	Q3KDOT(16, R11, Z4, Z19)
q3kl3h0j0:
	VPSRLW $2, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSLLW $1, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(48, SI, Z5, Z16)
	CMPQ BX, $1
	JEQ  q3kl3h0j1
	Q3KDOT(48, R8, Z5, Z17)
	CMPQ BX, $2
	JEQ  q3kl3h0j1
	Q3KDOT(48, R10, Z5, Z18)
	CMPQ BX, $3
	JEQ  q3kl3h0j1
	Q3KDOT(48, R11, Z5, Z19)
q3kl3h0j1:
	VPSRLW $4, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPTERNLOGD $0xf8, Z25, Z12, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(80, SI, Z6, Z16)
	CMPQ BX, $1
	JEQ  q3kl3h0j2
	Q3KDOT(80, R8, Z6, Z17)
	CMPQ BX, $2
	JEQ  q3kl3h0j2
	Q3KDOT(80, R10, Z6, Z18)
	CMPQ BX, $3
	JEQ  q3kl3h0j2
	Q3KDOT(80, R11, Z6, Z19)
q3kl3h0j2:
	VPSRLW $6, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $1, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(112, SI, Z7, Z16)
	CMPQ BX, $1
	JEQ  q3kl3h0j3
	Q3KDOT(112, R8, Z7, Z17)
	CMPQ BX, $2
	JEQ  q3kl3h0j3
	Q3KDOT(112, R10, Z7, Z18)
	CMPQ BX, $3
	JEQ  q3kl3h0j3
	Q3KDOT(112, R11, Z7, Z19)
q3kl3h0j3:
	PREFETCHLINE(992)
	VMOVDQU64 992(DX), Z13
	VPANDD Z24, Z13, Z14
	VPSRLW $2, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(144, SI, Z8, Z16)
	CMPQ BX, $1
	JEQ  q3kl3h1j0
	Q3KDOT(144, R8, Z8, Z17)
	CMPQ BX, $2
	JEQ  q3kl3h1j0
	Q3KDOT(144, R10, Z8, Z18)
	CMPQ BX, $3
	JEQ  q3kl3h1j0
	Q3KDOT(144, R11, Z8, Z19)
q3kl3h1j0:
	VPSRLW $2, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $3, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(176, SI, Z9, Z16)
	CMPQ BX, $1
	JEQ  q3kl3h1j1
	Q3KDOT(176, R8, Z9, Z17)
	CMPQ BX, $2
	JEQ  q3kl3h1j1
	Q3KDOT(176, R10, Z9, Z18)
	CMPQ BX, $3
	JEQ  q3kl3h1j1
	Q3KDOT(176, R11, Z9, Z19)
q3kl3h1j1:
	VPSRLW $4, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $4, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(208, SI, Z10, Z16)
	CMPQ BX, $1
	JEQ  q3kl3h1j2
	Q3KDOT(208, R8, Z10, Z17)
	CMPQ BX, $2
	JEQ  q3kl3h1j2
	Q3KDOT(208, R10, Z10, Z18)
	CMPQ BX, $3
	JEQ  q3kl3h1j2
	Q3KDOT(208, R11, Z10, Z19)
q3kl3h1j2:
	VPSRLW $6, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $5, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(240, SI, Z11, Z16)
	CMPQ BX, $1
	JEQ  q3kl3h1j3
	Q3KDOT(240, R8, Z11, Z17)
	CMPQ BX, $2
	JEQ  q3kl3h1j3
	Q3KDOT(240, R10, Z11, Z18)
	CMPQ BX, $3
	JEQ  q3kl3h1j3
	Q3KDOT(240, R11, Z11, Z19)
q3kl3h1j3:
	LANEFMA(SI, Z16, 192)
	CMPQ BX, $1
	JEQ  q3kl3f
	LANEFMA(R8, Z17, 704)
	CMPQ BX, $2
	JEQ  q3kl3f
	LANEFMA(R10, Z18, 1216)
	CMPQ BX, $3
	JEQ  q3kl3f
	LANEFMA(R11, Z19, 1728)
q3kl3f:
	// Lanes 4-7: scale pairs 4-7.
	Q3KPAIRS(160, 192, 224, 256)
	// Lane 4.
	PREFETCHLINE(1056)
	VMOVDQU64 1056(DX), Z12
	Q3KCORR(64, R12, Z16)
	CMPQ BX, $1
	JEQ  q3kl4c
	Q3KCORR(64, R13, Z17)
	CMPQ BX, $2
	JEQ  q3kl4c
	Q3KCORR(64, R14, Z18)
	CMPQ BX, $3
	JEQ  q3kl4c
	Q3KCORR(64, R15, Z19)
q3kl4c:
	PREFETCHLINE(1120)
	VMOVDQU64 1120(DX), Z13
	VPANDD Z24, Z13, Z14
	VPSLLW $2, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(20, SI, Z4, Z16)
	CMPQ BX, $1
	JEQ  q3kl4h0j0
	Q3KDOT(20, R8, Z4, Z17)
	CMPQ BX, $2
	JEQ  q3kl4h0j0
	Q3KDOT(20, R10, Z4, Z18)
	CMPQ BX, $3
	JEQ  q3kl4h0j0
	Q3KDOT(20, R11, Z4, Z19)
q3kl4h0j0:
	VPSRLW $2, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSLLW $1, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(52, SI, Z5, Z16)
	CMPQ BX, $1
	JEQ  q3kl4h0j1
	Q3KDOT(52, R8, Z5, Z17)
	CMPQ BX, $2
	JEQ  q3kl4h0j1
	Q3KDOT(52, R10, Z5, Z18)
	CMPQ BX, $3
	JEQ  q3kl4h0j1
	Q3KDOT(52, R11, Z5, Z19)
q3kl4h0j1:
	VPSRLW $4, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPTERNLOGD $0xf8, Z25, Z12, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(84, SI, Z6, Z16)
	CMPQ BX, $1
	JEQ  q3kl4h0j2
	Q3KDOT(84, R8, Z6, Z17)
	CMPQ BX, $2
	JEQ  q3kl4h0j2
	Q3KDOT(84, R10, Z6, Z18)
	CMPQ BX, $3
	JEQ  q3kl4h0j2
	Q3KDOT(84, R11, Z6, Z19)
q3kl4h0j2:
	VPSRLW $6, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $1, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(116, SI, Z7, Z16)
	CMPQ BX, $1
	JEQ  q3kl4h0j3
	Q3KDOT(116, R8, Z7, Z17)
	CMPQ BX, $2
	JEQ  q3kl4h0j3
	Q3KDOT(116, R10, Z7, Z18)
	CMPQ BX, $3
	JEQ  q3kl4h0j3
	Q3KDOT(116, R11, Z7, Z19)
q3kl4h0j3:
	PREFETCHLINE(1184)
	VMOVDQU64 1184(DX), Z13
	VPANDD Z24, Z13, Z14
	VPSRLW $2, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(148, SI, Z8, Z16)
	CMPQ BX, $1
	JEQ  q3kl4h1j0
	Q3KDOT(148, R8, Z8, Z17)
	CMPQ BX, $2
	JEQ  q3kl4h1j0
	Q3KDOT(148, R10, Z8, Z18)
	CMPQ BX, $3
	JEQ  q3kl4h1j0
	Q3KDOT(148, R11, Z8, Z19)
q3kl4h1j0:
	VPSRLW $2, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $3, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(180, SI, Z9, Z16)
	CMPQ BX, $1
	JEQ  q3kl4h1j1
	Q3KDOT(180, R8, Z9, Z17)
	CMPQ BX, $2
	JEQ  q3kl4h1j1
	Q3KDOT(180, R10, Z9, Z18)
	CMPQ BX, $3
	JEQ  q3kl4h1j1
	Q3KDOT(180, R11, Z9, Z19)
q3kl4h1j1:
	VPSRLW $4, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $4, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(212, SI, Z10, Z16)
	CMPQ BX, $1
	JEQ  q3kl4h1j2
	Q3KDOT(212, R8, Z10, Z17)
	CMPQ BX, $2
	JEQ  q3kl4h1j2
	Q3KDOT(212, R10, Z10, Z18)
	CMPQ BX, $3
	JEQ  q3kl4h1j2
	Q3KDOT(212, R11, Z10, Z19)
q3kl4h1j2:
	VPSRLW $6, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $5, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(244, SI, Z11, Z16)
	CMPQ BX, $1
	JEQ  q3kl4h1j3
	Q3KDOT(244, R8, Z11, Z17)
	CMPQ BX, $2
	JEQ  q3kl4h1j3
	Q3KDOT(244, R10, Z11, Z18)
	CMPQ BX, $3
	JEQ  q3kl4h1j3
	Q3KDOT(244, R11, Z11, Z19)
q3kl4h1j3:
	LANEFMA(SI, Z16, 256)
	CMPQ BX, $1
	JEQ  q3kl4f
	LANEFMA(R8, Z17, 768)
	CMPQ BX, $2
	JEQ  q3kl4f
	LANEFMA(R10, Z18, 1280)
	CMPQ BX, $3
	JEQ  q3kl4f
	LANEFMA(R11, Z19, 1792)
q3kl4f:
	// Lane 5.
	PREFETCHLINE(1248)
	VMOVDQU64 1248(DX), Z12
	Q3KCORR(80, R12, Z16)
	CMPQ BX, $1
	JEQ  q3kl5c
	Q3KCORR(80, R13, Z17)
	CMPQ BX, $2
	JEQ  q3kl5c
	Q3KCORR(80, R14, Z18)
	CMPQ BX, $3
	JEQ  q3kl5c
	Q3KCORR(80, R15, Z19)
q3kl5c:
	PREFETCHLINE(1312)
	VMOVDQU64 1312(DX), Z13
	VPANDD Z24, Z13, Z14
	VPSLLW $2, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(24, SI, Z4, Z16)
	CMPQ BX, $1
	JEQ  q3kl5h0j0
	Q3KDOT(24, R8, Z4, Z17)
	CMPQ BX, $2
	JEQ  q3kl5h0j0
	Q3KDOT(24, R10, Z4, Z18)
	CMPQ BX, $3
	JEQ  q3kl5h0j0
	Q3KDOT(24, R11, Z4, Z19)
q3kl5h0j0:
	VPSRLW $2, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSLLW $1, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(56, SI, Z5, Z16)
	CMPQ BX, $1
	JEQ  q3kl5h0j1
	Q3KDOT(56, R8, Z5, Z17)
	CMPQ BX, $2
	JEQ  q3kl5h0j1
	Q3KDOT(56, R10, Z5, Z18)
	CMPQ BX, $3
	JEQ  q3kl5h0j1
	Q3KDOT(56, R11, Z5, Z19)
q3kl5h0j1:
	VPSRLW $4, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPTERNLOGD $0xf8, Z25, Z12, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(88, SI, Z6, Z16)
	CMPQ BX, $1
	JEQ  q3kl5h0j2
	Q3KDOT(88, R8, Z6, Z17)
	CMPQ BX, $2
	JEQ  q3kl5h0j2
	Q3KDOT(88, R10, Z6, Z18)
	CMPQ BX, $3
	JEQ  q3kl5h0j2
	Q3KDOT(88, R11, Z6, Z19)
q3kl5h0j2:
	VPSRLW $6, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $1, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(120, SI, Z7, Z16)
	CMPQ BX, $1
	JEQ  q3kl5h0j3
	Q3KDOT(120, R8, Z7, Z17)
	CMPQ BX, $2
	JEQ  q3kl5h0j3
	Q3KDOT(120, R10, Z7, Z18)
	CMPQ BX, $3
	JEQ  q3kl5h0j3
	Q3KDOT(120, R11, Z7, Z19)
q3kl5h0j3:
	PREFETCHLINE(1376)
	VMOVDQU64 1376(DX), Z13
	VPANDD Z24, Z13, Z14
	VPSRLW $2, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(152, SI, Z8, Z16)
	CMPQ BX, $1
	JEQ  q3kl5h1j0
	Q3KDOT(152, R8, Z8, Z17)
	CMPQ BX, $2
	JEQ  q3kl5h1j0
	Q3KDOT(152, R10, Z8, Z18)
	CMPQ BX, $3
	JEQ  q3kl5h1j0
	Q3KDOT(152, R11, Z8, Z19)
q3kl5h1j0:
	VPSRLW $2, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $3, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(184, SI, Z9, Z16)
	CMPQ BX, $1
	JEQ  q3kl5h1j1
	Q3KDOT(184, R8, Z9, Z17)
	CMPQ BX, $2
	JEQ  q3kl5h1j1
	Q3KDOT(184, R10, Z9, Z18)
	CMPQ BX, $3
	JEQ  q3kl5h1j1
	Q3KDOT(184, R11, Z9, Z19)
q3kl5h1j1:
	VPSRLW $4, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $4, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(216, SI, Z10, Z16)
	CMPQ BX, $1
	JEQ  q3kl5h1j2
	Q3KDOT(216, R8, Z10, Z17)
	CMPQ BX, $2
	JEQ  q3kl5h1j2
	Q3KDOT(216, R10, Z10, Z18)
	CMPQ BX, $3
	JEQ  q3kl5h1j2
	Q3KDOT(216, R11, Z10, Z19)
q3kl5h1j2:
	VPSRLW $6, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $5, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(248, SI, Z11, Z16)
	CMPQ BX, $1
	JEQ  q3kl5h1j3
	Q3KDOT(248, R8, Z11, Z17)
	CMPQ BX, $2
	JEQ  q3kl5h1j3
	Q3KDOT(248, R10, Z11, Z18)
	CMPQ BX, $3
	JEQ  q3kl5h1j3
	Q3KDOT(248, R11, Z11, Z19)
q3kl5h1j3:
	LANEFMA(SI, Z16, 320)
	CMPQ BX, $1
	JEQ  q3kl5f
	LANEFMA(R8, Z17, 832)
	CMPQ BX, $2
	JEQ  q3kl5f
	LANEFMA(R10, Z18, 1344)
	CMPQ BX, $3
	JEQ  q3kl5f
	LANEFMA(R11, Z19, 1856)
q3kl5f:
	// Lane 6.
	PREFETCHLINE(1440)
	VMOVDQU64 1440(DX), Z12
	Q3KCORR(96, R12, Z16)
	CMPQ BX, $1
	JEQ  q3kl6c
	Q3KCORR(96, R13, Z17)
	CMPQ BX, $2
	JEQ  q3kl6c
	Q3KCORR(96, R14, Z18)
	CMPQ BX, $3
	JEQ  q3kl6c
	Q3KCORR(96, R15, Z19)
q3kl6c:
	PREFETCHLINE(1504)
	VMOVDQU64 1504(DX), Z13
	VPANDD Z24, Z13, Z14
	VPSLLW $2, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(28, SI, Z4, Z16)
	CMPQ BX, $1
	JEQ  q3kl6h0j0
	Q3KDOT(28, R8, Z4, Z17)
	CMPQ BX, $2
	JEQ  q3kl6h0j0
	Q3KDOT(28, R10, Z4, Z18)
	CMPQ BX, $3
	JEQ  q3kl6h0j0
	Q3KDOT(28, R11, Z4, Z19)
q3kl6h0j0:
	VPSRLW $2, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSLLW $1, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(60, SI, Z5, Z16)
	CMPQ BX, $1
	JEQ  q3kl6h0j1
	Q3KDOT(60, R8, Z5, Z17)
	CMPQ BX, $2
	JEQ  q3kl6h0j1
	Q3KDOT(60, R10, Z5, Z18)
	CMPQ BX, $3
	JEQ  q3kl6h0j1
	Q3KDOT(60, R11, Z5, Z19)
q3kl6h0j1:
	VPSRLW $4, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPTERNLOGD $0xf8, Z25, Z12, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(92, SI, Z6, Z16)
	CMPQ BX, $1
	JEQ  q3kl6h0j2
	Q3KDOT(92, R8, Z6, Z17)
	CMPQ BX, $2
	JEQ  q3kl6h0j2
	Q3KDOT(92, R10, Z6, Z18)
	CMPQ BX, $3
	JEQ  q3kl6h0j2
	Q3KDOT(92, R11, Z6, Z19)
q3kl6h0j2:
	VPSRLW $6, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $1, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(124, SI, Z7, Z16)
	CMPQ BX, $1
	JEQ  q3kl6h0j3
	Q3KDOT(124, R8, Z7, Z17)
	CMPQ BX, $2
	JEQ  q3kl6h0j3
	Q3KDOT(124, R10, Z7, Z18)
	CMPQ BX, $3
	JEQ  q3kl6h0j3
	Q3KDOT(124, R11, Z7, Z19)
q3kl6h0j3:
	PREFETCHLINE(1568)
	VMOVDQU64 1568(DX), Z13
	VPANDD Z24, Z13, Z14
	VPSRLW $2, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(156, SI, Z8, Z16)
	CMPQ BX, $1
	JEQ  q3kl6h1j0
	Q3KDOT(156, R8, Z8, Z17)
	CMPQ BX, $2
	JEQ  q3kl6h1j0
	Q3KDOT(156, R10, Z8, Z18)
	CMPQ BX, $3
	JEQ  q3kl6h1j0
	Q3KDOT(156, R11, Z8, Z19)
q3kl6h1j0:
	VPSRLW $2, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $3, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(188, SI, Z9, Z16)
	CMPQ BX, $1
	JEQ  q3kl6h1j1
	Q3KDOT(188, R8, Z9, Z17)
	CMPQ BX, $2
	JEQ  q3kl6h1j1
	Q3KDOT(188, R10, Z9, Z18)
	CMPQ BX, $3
	JEQ  q3kl6h1j1
	Q3KDOT(188, R11, Z9, Z19)
q3kl6h1j1:
	VPSRLW $4, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $4, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(220, SI, Z10, Z16)
	CMPQ BX, $1
	JEQ  q3kl6h1j2
	Q3KDOT(220, R8, Z10, Z17)
	CMPQ BX, $2
	JEQ  q3kl6h1j2
	Q3KDOT(220, R10, Z10, Z18)
	CMPQ BX, $3
	JEQ  q3kl6h1j2
	Q3KDOT(220, R11, Z10, Z19)
q3kl6h1j2:
	VPSRLW $6, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $5, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(252, SI, Z11, Z16)
	CMPQ BX, $1
	JEQ  q3kl6h1j3
	Q3KDOT(252, R8, Z11, Z17)
	CMPQ BX, $2
	JEQ  q3kl6h1j3
	Q3KDOT(252, R10, Z11, Z18)
	CMPQ BX, $3
	JEQ  q3kl6h1j3
	Q3KDOT(252, R11, Z11, Z19)
q3kl6h1j3:
	LANEFMA(SI, Z16, 384)
	CMPQ BX, $1
	JEQ  q3kl6f
	LANEFMA(R8, Z17, 896)
	CMPQ BX, $2
	JEQ  q3kl6f
	LANEFMA(R10, Z18, 1408)
	CMPQ BX, $3
	JEQ  q3kl6f
	LANEFMA(R11, Z19, 1920)
q3kl6f:
	// Lane 7.
	PREFETCHLINE(1632)
	VMOVDQU64 1632(DX), Z12
	Q3KCORR(112, R12, Z16)
	CMPQ BX, $1
	JEQ  q3kl7c
	Q3KCORR(112, R13, Z17)
	CMPQ BX, $2
	JEQ  q3kl7c
	Q3KCORR(112, R14, Z18)
	CMPQ BX, $3
	JEQ  q3kl7c
	Q3KCORR(112, R15, Z19)
q3kl7c:
	PREFETCHLINE(1696)
	VMOVDQU64 1696(DX), Z13
	VPANDD Z24, Z13, Z14
	VPSLLW $2, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(32, SI, Z4, Z16)
	CMPQ BX, $1
	JEQ  q3kl7h0j0
	Q3KDOT(32, R8, Z4, Z17)
	CMPQ BX, $2
	JEQ  q3kl7h0j0
	Q3KDOT(32, R10, Z4, Z18)
	CMPQ BX, $3
	JEQ  q3kl7h0j0
	Q3KDOT(32, R11, Z4, Z19)
q3kl7h0j0:
	VPSRLW $2, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSLLW $1, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(64, SI, Z5, Z16)
	CMPQ BX, $1
	JEQ  q3kl7h0j1
	Q3KDOT(64, R8, Z5, Z17)
	CMPQ BX, $2
	JEQ  q3kl7h0j1
	Q3KDOT(64, R10, Z5, Z18)
	CMPQ BX, $3
	JEQ  q3kl7h0j1
	Q3KDOT(64, R11, Z5, Z19)
q3kl7h0j1:
	VPSRLW $4, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPTERNLOGD $0xf8, Z25, Z12, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(96, SI, Z6, Z16)
	CMPQ BX, $1
	JEQ  q3kl7h0j2
	Q3KDOT(96, R8, Z6, Z17)
	CMPQ BX, $2
	JEQ  q3kl7h0j2
	Q3KDOT(96, R10, Z6, Z18)
	CMPQ BX, $3
	JEQ  q3kl7h0j2
	Q3KDOT(96, R11, Z6, Z19)
q3kl7h0j2:
	VPSRLW $6, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $1, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(128, SI, Z7, Z16)
	CMPQ BX, $1
	JEQ  q3kl7h0j3
	Q3KDOT(128, R8, Z7, Z17)
	CMPQ BX, $2
	JEQ  q3kl7h0j3
	Q3KDOT(128, R10, Z7, Z18)
	CMPQ BX, $3
	JEQ  q3kl7h0j3
	Q3KDOT(128, R11, Z7, Z19)
q3kl7h0j3:
	PREFETCHLINE(1760)
	VMOVDQU64 1760(DX), Z13
	VPANDD Z24, Z13, Z14
	VPSRLW $2, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(160, SI, Z8, Z16)
	CMPQ BX, $1
	JEQ  q3kl7h1j0
	Q3KDOT(160, R8, Z8, Z17)
	CMPQ BX, $2
	JEQ  q3kl7h1j0
	Q3KDOT(160, R10, Z8, Z18)
	CMPQ BX, $3
	JEQ  q3kl7h1j0
	Q3KDOT(160, R11, Z8, Z19)
q3kl7h1j0:
	VPSRLW $2, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $3, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(192, SI, Z9, Z16)
	CMPQ BX, $1
	JEQ  q3kl7h1j1
	Q3KDOT(192, R8, Z9, Z17)
	CMPQ BX, $2
	JEQ  q3kl7h1j1
	Q3KDOT(192, R10, Z9, Z18)
	CMPQ BX, $3
	JEQ  q3kl7h1j1
	Q3KDOT(192, R11, Z9, Z19)
q3kl7h1j1:
	VPSRLW $4, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $4, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(224, SI, Z10, Z16)
	CMPQ BX, $1
	JEQ  q3kl7h1j2
	Q3KDOT(224, R8, Z10, Z17)
	CMPQ BX, $2
	JEQ  q3kl7h1j2
	Q3KDOT(224, R10, Z10, Z18)
	CMPQ BX, $3
	JEQ  q3kl7h1j2
	Q3KDOT(224, R11, Z10, Z19)
q3kl7h1j2:
	VPSRLW $6, Z13, Z14
	VPANDD Z24, Z14, Z14
	VPSRLW $5, Z12, Z15
	VPTERNLOGD $0xf8, Z25, Z15, Z14 // q+4: low bits | (high bit & 4)
	Q3KDOT(256, SI, Z11, Z16)
	CMPQ BX, $1
	JEQ  q3kl7h1j3
	Q3KDOT(256, R8, Z11, Z17)
	CMPQ BX, $2
	JEQ  q3kl7h1j3
	Q3KDOT(256, R10, Z11, Z18)
	CMPQ BX, $3
	JEQ  q3kl7h1j3
	Q3KDOT(256, R11, Z11, Z19)
q3kl7h1j3:
	LANEFMA(SI, Z16, 448)
	CMPQ BX, $1
	JEQ  q3kl7f
	LANEFMA(R8, Z17, 960)
	CMPQ BX, $2
	JEQ  q3kl7f
	LANEFMA(R10, Z18, 1472)
	CMPQ BX, $3
	JEQ  q3kl7f
	LANEFMA(R11, Z19, 1984)
q3kl7f:
	ADDQ $292, SI
	ADDQ $292, R8
	ADDQ $292, R10
	ADDQ $292, R11
	ADDQ $128, R12
	ADDQ $128, R13
	ADDQ $128, R14
	ADDQ $128, R15
	ADDQ $1824, DX
	DECQ CX
	JNZ  q3kblock

	MOVQ dst+56(FP), R9
	MOVQ dstride+64(FP), R8
	SHLQ $2, R8
	Q3KHSUM(0)
	CMPQ BX, $1
	JEQ  q3kdone
	ADDQ R8, R9
	Q3KHSUM(512)
	CMPQ BX, $2
	JEQ  q3kdone
	ADDQ R8, R9
	Q3KHSUM(1024)
	CMPQ BX, $3
	JEQ  q3kdone
	ADDQ R8, R9
	Q3KHSUM(1536)

q3kdone:
	VZEROUPPER
	RET
