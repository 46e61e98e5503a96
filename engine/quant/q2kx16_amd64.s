//go:build amd64 && !noasm

#include "textflag.h"
#include "packed_amd64.h"

// FAR is how much further ahead than the distance the kernel takes as an
// argument (q2kx16Ahead) it also prefetches every line into L2 only, as
// the Q4_Kx16 kernel does.
#define FAR 4032

// The Q2_Kx16 kernel (see q2kx16.go for the layout and its order) with
// AVX-512 VNNI, for one to four activation rows. A block is read lane by
// lane: lane u of every row is chunk u of both halves. Q2KPLANES splits a
// chunk into its four 2-bit planes and multiplies each by its group's
// scales (16-bit products of bytes and a scale under 16 stay within their
// byte: at most 45), so that VPDPBUSD with four activation quants
// broadcast adds scale·q·a of four elements to each row's lane sum
// (Z13-Z16, one per activation row). Q2KLANE then makes the lane's
// minimum term with VPDPWSSD (the lane's minimum pair and the activation
// row's group sums), and fused-multiply-adds it with −d_a·dmin and the
// lane sum with d_a·d into the lane's accumulator, which waits in acc
// (eight lanes of 16 rows per activation row) until the kernel adds the
// lanes as hsum8 does.
//
// Registers: DX the block; SI, R8, R10, R11 activation rows 0-3 (each at
// its block); DI acc; CX blocks left, BX activation rows; AX the
// prefetch distance. Z0-Z7 the scales of scale pairs 0-7 (the first or
// the second group of each, as bytes in both halves of each 16-bit word);
// Z8 a chunk, Z9-Z12 its planes; Z17 a minimum pair, Z18 its product;
// Z19 the rows' d, Z20 their dmin; Z21, Z22 scratch; Z23 bytes 0x03,
// Z24 bytes 0x0f; Z25, Z26 the shuffles that spread the first and the
// second scale of a pair over both words of a row's lane.

DATA q2kShuffles<>+0(SB)/4, $0x80008000
DATA q2kShuffles<>+4(SB)/4, $0x80048004
DATA q2kShuffles<>+8(SB)/4, $0x80088008
DATA q2kShuffles<>+12(SB)/4, $0x800c800c
DATA q2kShuffles<>+16(SB)/4, $0x80028002
DATA q2kShuffles<>+20(SB)/4, $0x80068006
DATA q2kShuffles<>+24(SB)/4, $0x800a800a
DATA q2kShuffles<>+28(SB)/4, $0x800e800e
GLOBL q2kShuffles<>(SB), RODATA|NOPTR, $32

// Q2KSCALE puts the scales of scale pair p (bytes at off(DX)) chosen by
// shuffle shuf into s.
#define Q2KSCALE(off, shuf, s) \
	VPMOVZXBW off(DX), s \
	VPSHUFB   shuf, s, s \
	VPANDD    Z24, s, s

// Q2KSCALES puts the scales of the eight scale pairs into Z0-Z7.
#define Q2KSCALES(shuf) \
	Q2KSCALE(64, shuf, Z0) \
	Q2KSCALE(96, shuf, Z1) \
	Q2KSCALE(128, shuf, Z2) \
	Q2KSCALE(160, shuf, Z3) \
	Q2KSCALE(192, shuf, Z4) \
	Q2KSCALE(224, shuf, Z5) \
	Q2KSCALE(256, shuf, Z6) \
	Q2KSCALE(288, shuf, Z7)

// Q2KPLANES splits the chunk at off(DX) into its planes, times the scales
// s0-s3 of their groups, in Z9-Z12.
#define Q2KPLANES(off, s0, s1, s2, s3) \
	PREFETCHLINE(off) \
	VMOVDQU64  off(DX), Z8 \
	VPSRLW     $2, Z8, Z10 \
	VPSRLW     $4, Z8, Z11 \
	VPSRLW     $6, Z8, Z12 \
	VPANDD     Z23, Z8, Z9 \
	VPANDD     Z23, Z10, Z10 \
	VPANDD     Z23, Z11, Z11 \
	VPANDD     Z23, Z12, Z12 \
	VPMULLW    s0, Z9, Z9 \
	VPMULLW    s1, Z10, Z10 \
	VPMULLW    s2, Z11, Z11 \
	VPMULLW    s3, Z12, Z12

// Q2KDOT adds the four planes' products with activation row act (its
// quants at o0-o3) to the lane sum t.
#define Q2KDOT(o0, o1, o2, o3, act, t) \
	VPDPBUSD.BCST o0(act), Z9, t \
	VPDPBUSD.BCST o1(act), Z10, t \
	VPDPBUSD.BCST o2(act), Z11, t \
	VPDPBUSD.BCST o3(act), Z12, t

// Q2KMINS puts the lane's minimum pair (bytes at off(DX)) into Z17.
#define Q2KMINS(off) \
	VPMOVZXBW off(DX), Z17 \
	VPSRLW    $4, Z17, Z17

// Q2KLANE adds the lane's terms of activation row act (its group sums at
// bs) to its accumulator at accoff(DI): first min·Σa with −d_a·dmin, then
// the lane sum t with d_a·d, each one fused multiply-add.
#define Q2KLANE(bs, act, t, accoff) \
	VPXORD        Z18, Z18, Z18 \
	VPDPWSSD.BCST bs(act), Z17, Z18 \
	VCVTDQ2PS     Z18, Z18 \
	VMULPS.BCST   (act), Z20, Z21 \
	VMOVUPS       accoff(DI), Z22 \
	VFNMADD231PS  Z21, Z18, Z22 \
	VCVTDQ2PS     t, t \
	VMULPS.BCST   (act), Z19, Z21 \
	VFMADD231PS   Z21, t, Z22 \
	VMOVUPS       Z22, accoff(DI)

// Q2KHSUM stores the lanes of the activation row at acc+off to (R12), as
// hsum8: ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)).
#define Q2KHSUM(off) \
	LANESHSUM8(off) \
	VMOVUPS Z0, (R12)

// func q2kx16AVX512VNNI(nb int, w *byte, a *byte, astride int, rows int, dst *float32, dstride int, acc *float32, pfd int)
TEXT ·q2kx16AVX512VNNI(SB), NOSPLIT, $0-72
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), DX
	ACTROWS4
	MOVQ rows+32(FP), BX
	MOVQ acc+56(FP), DI
	MOVL $0x03030303, AX
	VPBROADCASTD AX, Z23
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z24
	VBROADCASTI32X4 q2kShuffles<>+0(SB), Z25
	VBROADCASTI32X4 q2kShuffles<>+16(SB), Z26
	// The lanes' accumulators start at zero.
	LANESZERO(q2kzero)
	MOVQ pfd+64(FP), AX

q2kblock:
	PREFETCHLINE(0)
	PREFETCHLINE(64)
	PREFETCHLINE(128)
	PREFETCHLINE(192)
	PREFETCHLINE(256)
	VCVTPH2PS 0(DX), Z19
	VCVTPH2PS 32(DX), Z20
	// Lanes 0-3: the first group of each scale pair.
	Q2KSCALES(Z25)
	// Lane 0.
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	Q2KPLANES(320, Z0, Z1, Z2, Z3)
	Q2KDOT(4, 36, 68, 100, SI, Z13)
	CMPQ BX, $1
	JEQ  q2kl0h0
	Q2KDOT(4, 36, 68, 100, R8, Z14)
	CMPQ BX, $2
	JEQ  q2kl0h0
	Q2KDOT(4, 36, 68, 100, R10, Z15)
	CMPQ BX, $3
	JEQ  q2kl0h0
	Q2KDOT(4, 36, 68, 100, R11, Z16)
q2kl0h0:
	Q2KPLANES(384, Z4, Z5, Z6, Z7)
	Q2KDOT(132, 164, 196, 228, SI, Z13)
	CMPQ BX, $1
	JEQ  q2kl0h1
	Q2KDOT(132, 164, 196, 228, R8, Z14)
	CMPQ BX, $2
	JEQ  q2kl0h1
	Q2KDOT(132, 164, 196, 228, R10, Z15)
	CMPQ BX, $3
	JEQ  q2kl0h1
	Q2KDOT(132, 164, 196, 228, R11, Z16)
q2kl0h1:
	Q2KMINS(64)
	Q2KLANE(260, SI, Z13, 0)
	CMPQ BX, $1
	JEQ  q2kl0f
	Q2KLANE(260, R8, Z14, 512)
	CMPQ BX, $2
	JEQ  q2kl0f
	Q2KLANE(260, R10, Z15, 1024)
	CMPQ BX, $3
	JEQ  q2kl0f
	Q2KLANE(260, R11, Z16, 1536)
q2kl0f:
	// Lane 1.
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	Q2KPLANES(448, Z0, Z1, Z2, Z3)
	Q2KDOT(8, 40, 72, 104, SI, Z13)
	CMPQ BX, $1
	JEQ  q2kl1h0
	Q2KDOT(8, 40, 72, 104, R8, Z14)
	CMPQ BX, $2
	JEQ  q2kl1h0
	Q2KDOT(8, 40, 72, 104, R10, Z15)
	CMPQ BX, $3
	JEQ  q2kl1h0
	Q2KDOT(8, 40, 72, 104, R11, Z16)
q2kl1h0:
	Q2KPLANES(512, Z4, Z5, Z6, Z7)
	Q2KDOT(136, 168, 200, 232, SI, Z13)
	CMPQ BX, $1
	JEQ  q2kl1h1
	Q2KDOT(136, 168, 200, 232, R8, Z14)
	CMPQ BX, $2
	JEQ  q2kl1h1
	Q2KDOT(136, 168, 200, 232, R10, Z15)
	CMPQ BX, $3
	JEQ  q2kl1h1
	Q2KDOT(136, 168, 200, 232, R11, Z16)
q2kl1h1:
	Q2KMINS(96)
	Q2KLANE(264, SI, Z13, 64)
	CMPQ BX, $1
	JEQ  q2kl1f
	Q2KLANE(264, R8, Z14, 576)
	CMPQ BX, $2
	JEQ  q2kl1f
	Q2KLANE(264, R10, Z15, 1088)
	CMPQ BX, $3
	JEQ  q2kl1f
	Q2KLANE(264, R11, Z16, 1600)
q2kl1f:
	// Lane 2.
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	Q2KPLANES(576, Z0, Z1, Z2, Z3)
	Q2KDOT(12, 44, 76, 108, SI, Z13)
	CMPQ BX, $1
	JEQ  q2kl2h0
	Q2KDOT(12, 44, 76, 108, R8, Z14)
	CMPQ BX, $2
	JEQ  q2kl2h0
	Q2KDOT(12, 44, 76, 108, R10, Z15)
	CMPQ BX, $3
	JEQ  q2kl2h0
	Q2KDOT(12, 44, 76, 108, R11, Z16)
q2kl2h0:
	Q2KPLANES(640, Z4, Z5, Z6, Z7)
	Q2KDOT(140, 172, 204, 236, SI, Z13)
	CMPQ BX, $1
	JEQ  q2kl2h1
	Q2KDOT(140, 172, 204, 236, R8, Z14)
	CMPQ BX, $2
	JEQ  q2kl2h1
	Q2KDOT(140, 172, 204, 236, R10, Z15)
	CMPQ BX, $3
	JEQ  q2kl2h1
	Q2KDOT(140, 172, 204, 236, R11, Z16)
q2kl2h1:
	Q2KMINS(128)
	Q2KLANE(268, SI, Z13, 128)
	CMPQ BX, $1
	JEQ  q2kl2f
	Q2KLANE(268, R8, Z14, 640)
	CMPQ BX, $2
	JEQ  q2kl2f
	Q2KLANE(268, R10, Z15, 1152)
	CMPQ BX, $3
	JEQ  q2kl2f
	Q2KLANE(268, R11, Z16, 1664)
q2kl2f:
	// Lane 3.
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	Q2KPLANES(704, Z0, Z1, Z2, Z3)
	Q2KDOT(16, 48, 80, 112, SI, Z13)
	CMPQ BX, $1
	JEQ  q2kl3h0
	Q2KDOT(16, 48, 80, 112, R8, Z14)
	CMPQ BX, $2
	JEQ  q2kl3h0
	Q2KDOT(16, 48, 80, 112, R10, Z15)
	CMPQ BX, $3
	JEQ  q2kl3h0
	Q2KDOT(16, 48, 80, 112, R11, Z16)
q2kl3h0:
	Q2KPLANES(768, Z4, Z5, Z6, Z7)
	Q2KDOT(144, 176, 208, 240, SI, Z13)
	CMPQ BX, $1
	JEQ  q2kl3h1
	Q2KDOT(144, 176, 208, 240, R8, Z14)
	CMPQ BX, $2
	JEQ  q2kl3h1
	Q2KDOT(144, 176, 208, 240, R10, Z15)
	CMPQ BX, $3
	JEQ  q2kl3h1
	Q2KDOT(144, 176, 208, 240, R11, Z16)
q2kl3h1:
	Q2KMINS(160)
	Q2KLANE(272, SI, Z13, 192)
	CMPQ BX, $1
	JEQ  q2kl3f
	Q2KLANE(272, R8, Z14, 704)
	CMPQ BX, $2
	JEQ  q2kl3f
	Q2KLANE(272, R10, Z15, 1216)
	CMPQ BX, $3
	JEQ  q2kl3f
	Q2KLANE(272, R11, Z16, 1728)
q2kl3f:
	// Lanes 4-7: the second group of each scale pair.
	Q2KSCALES(Z26)
	// Lane 4.
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	Q2KPLANES(832, Z0, Z1, Z2, Z3)
	Q2KDOT(20, 52, 84, 116, SI, Z13)
	CMPQ BX, $1
	JEQ  q2kl4h0
	Q2KDOT(20, 52, 84, 116, R8, Z14)
	CMPQ BX, $2
	JEQ  q2kl4h0
	Q2KDOT(20, 52, 84, 116, R10, Z15)
	CMPQ BX, $3
	JEQ  q2kl4h0
	Q2KDOT(20, 52, 84, 116, R11, Z16)
q2kl4h0:
	Q2KPLANES(896, Z4, Z5, Z6, Z7)
	Q2KDOT(148, 180, 212, 244, SI, Z13)
	CMPQ BX, $1
	JEQ  q2kl4h1
	Q2KDOT(148, 180, 212, 244, R8, Z14)
	CMPQ BX, $2
	JEQ  q2kl4h1
	Q2KDOT(148, 180, 212, 244, R10, Z15)
	CMPQ BX, $3
	JEQ  q2kl4h1
	Q2KDOT(148, 180, 212, 244, R11, Z16)
q2kl4h1:
	Q2KMINS(192)
	Q2KLANE(276, SI, Z13, 256)
	CMPQ BX, $1
	JEQ  q2kl4f
	Q2KLANE(276, R8, Z14, 768)
	CMPQ BX, $2
	JEQ  q2kl4f
	Q2KLANE(276, R10, Z15, 1280)
	CMPQ BX, $3
	JEQ  q2kl4f
	Q2KLANE(276, R11, Z16, 1792)
q2kl4f:
	// Lane 5.
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	Q2KPLANES(960, Z0, Z1, Z2, Z3)
	Q2KDOT(24, 56, 88, 120, SI, Z13)
	CMPQ BX, $1
	JEQ  q2kl5h0
	Q2KDOT(24, 56, 88, 120, R8, Z14)
	CMPQ BX, $2
	JEQ  q2kl5h0
	Q2KDOT(24, 56, 88, 120, R10, Z15)
	CMPQ BX, $3
	JEQ  q2kl5h0
	Q2KDOT(24, 56, 88, 120, R11, Z16)
q2kl5h0:
	Q2KPLANES(1024, Z4, Z5, Z6, Z7)
	Q2KDOT(152, 184, 216, 248, SI, Z13)
	CMPQ BX, $1
	JEQ  q2kl5h1
	Q2KDOT(152, 184, 216, 248, R8, Z14)
	CMPQ BX, $2
	JEQ  q2kl5h1
	Q2KDOT(152, 184, 216, 248, R10, Z15)
	CMPQ BX, $3
	JEQ  q2kl5h1
	Q2KDOT(152, 184, 216, 248, R11, Z16)
q2kl5h1:
	Q2KMINS(224)
	Q2KLANE(280, SI, Z13, 320)
	CMPQ BX, $1
	JEQ  q2kl5f
	Q2KLANE(280, R8, Z14, 832)
	CMPQ BX, $2
	JEQ  q2kl5f
	Q2KLANE(280, R10, Z15, 1344)
	CMPQ BX, $3
	JEQ  q2kl5f
	Q2KLANE(280, R11, Z16, 1856)
q2kl5f:
	// Lane 6.
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	Q2KPLANES(1088, Z0, Z1, Z2, Z3)
	Q2KDOT(28, 60, 92, 124, SI, Z13)
	CMPQ BX, $1
	JEQ  q2kl6h0
	Q2KDOT(28, 60, 92, 124, R8, Z14)
	CMPQ BX, $2
	JEQ  q2kl6h0
	Q2KDOT(28, 60, 92, 124, R10, Z15)
	CMPQ BX, $3
	JEQ  q2kl6h0
	Q2KDOT(28, 60, 92, 124, R11, Z16)
q2kl6h0:
	Q2KPLANES(1152, Z4, Z5, Z6, Z7)
	Q2KDOT(156, 188, 220, 252, SI, Z13)
	CMPQ BX, $1
	JEQ  q2kl6h1
	Q2KDOT(156, 188, 220, 252, R8, Z14)
	CMPQ BX, $2
	JEQ  q2kl6h1
	Q2KDOT(156, 188, 220, 252, R10, Z15)
	CMPQ BX, $3
	JEQ  q2kl6h1
	Q2KDOT(156, 188, 220, 252, R11, Z16)
q2kl6h1:
	Q2KMINS(256)
	Q2KLANE(284, SI, Z13, 384)
	CMPQ BX, $1
	JEQ  q2kl6f
	Q2KLANE(284, R8, Z14, 896)
	CMPQ BX, $2
	JEQ  q2kl6f
	Q2KLANE(284, R10, Z15, 1408)
	CMPQ BX, $3
	JEQ  q2kl6f
	Q2KLANE(284, R11, Z16, 1920)
q2kl6f:
	// Lane 7.
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	Q2KPLANES(1216, Z0, Z1, Z2, Z3)
	Q2KDOT(32, 64, 96, 128, SI, Z13)
	CMPQ BX, $1
	JEQ  q2kl7h0
	Q2KDOT(32, 64, 96, 128, R8, Z14)
	CMPQ BX, $2
	JEQ  q2kl7h0
	Q2KDOT(32, 64, 96, 128, R10, Z15)
	CMPQ BX, $3
	JEQ  q2kl7h0
	Q2KDOT(32, 64, 96, 128, R11, Z16)
q2kl7h0:
	Q2KPLANES(1280, Z4, Z5, Z6, Z7)
	Q2KDOT(160, 192, 224, 256, SI, Z13)
	CMPQ BX, $1
	JEQ  q2kl7h1
	Q2KDOT(160, 192, 224, 256, R8, Z14)
	CMPQ BX, $2
	JEQ  q2kl7h1
	Q2KDOT(160, 192, 224, 256, R10, Z15)
	CMPQ BX, $3
	JEQ  q2kl7h1
	Q2KDOT(160, 192, 224, 256, R11, Z16)
q2kl7h1:
	Q2KMINS(288)
	Q2KLANE(288, SI, Z13, 448)
	CMPQ BX, $1
	JEQ  q2kl7f
	Q2KLANE(288, R8, Z14, 960)
	CMPQ BX, $2
	JEQ  q2kl7f
	Q2KLANE(288, R10, Z15, 1472)
	CMPQ BX, $3
	JEQ  q2kl7f
	Q2KLANE(288, R11, Z16, 1984)
q2kl7f:
	ADDQ $292, SI
	ADDQ $292, R8
	ADDQ $292, R10
	ADDQ $292, R11
	ADDQ $1344, DX
	DECQ CX
	JNZ  q2kblock

	MOVQ dst+40(FP), R12
	MOVQ dstride+48(FP), R9
	SHLQ $2, R9
	Q2KHSUM(0)
	CMPQ BX, $1
	JEQ  q2kdone
	ADDQ R9, R12
	Q2KHSUM(512)
	CMPQ BX, $2
	JEQ  q2kdone
	ADDQ R9, R12
	Q2KHSUM(1024)
	CMPQ BX, $3
	JEQ  q2kdone
	ADDQ R9, R12
	Q2KHSUM(1536)

q2kdone:
	VZEROUPPER
	RET

// Q2KDLANE is Q2KLANE for the one-row kernel: the lane's accumulator acc
// is a register, and Z19, Z20 hold d_a·d and d_a·dmin.
#define Q2KDLANE(bs, acc) \
	VPXORD        Z18, Z18, Z18 \
	VPDPWSSD.BCST bs(SI), Z17, Z18 \
	VCVTDQ2PS     Z18, Z18 \
	VFNMADD231PS  Z20, Z18, acc \
	VCVTDQ2PS     Z13, Z13 \
	VFMADD231PS   Z19, Z13, acc

// func q2kx16DecodeAVX512VNNI(nb int, w *byte, a *byte, dst *float32, pfd int)
//
// The Q2_Kx16 kernel for one activation row (decode), with the same sums:
// the eight lanes' accumulators stay in registers (Z14-Z16, Z22, Z27-Z30)
// and each block's d_a·d and d_a·dmin are made once.
TEXT ·q2kx16DecodeAVX512VNNI(SB), NOSPLIT, $0-40
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), DX
	MOVQ a+16(FP), SI
	MOVL $0x03030303, AX
	VPBROADCASTD AX, Z23
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z24
	VBROADCASTI32X4 q2kShuffles<>+0(SB), Z25
	VBROADCASTI32X4 q2kShuffles<>+16(SB), Z26
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z22, Z22, Z22
	VPXORD Z27, Z27, Z27
	VPXORD Z28, Z28, Z28
	VPXORD Z29, Z29, Z29
	VPXORD Z30, Z30, Z30
	MOVQ pfd+32(FP), AX

q2kdblock:
	PREFETCHLINE(0)
	PREFETCHLINE(64)
	PREFETCHLINE(128)
	PREFETCHLINE(192)
	PREFETCHLINE(256)
	VCVTPH2PS 0(DX), Z19
	VCVTPH2PS 32(DX), Z20
	VMULPS.BCST (SI), Z19, Z19
	VMULPS.BCST (SI), Z20, Z20
	Q2KSCALES(Z25)
	// Lane 0.
	VPXORD Z13, Z13, Z13
	Q2KPLANES(320, Z0, Z1, Z2, Z3)
	Q2KDOT(4, 36, 68, 100, SI, Z13)
	Q2KPLANES(384, Z4, Z5, Z6, Z7)
	Q2KDOT(132, 164, 196, 228, SI, Z13)
	Q2KMINS(64)
	Q2KDLANE(260, Z14)
	// Lane 1.
	VPXORD Z13, Z13, Z13
	Q2KPLANES(448, Z0, Z1, Z2, Z3)
	Q2KDOT(8, 40, 72, 104, SI, Z13)
	Q2KPLANES(512, Z4, Z5, Z6, Z7)
	Q2KDOT(136, 168, 200, 232, SI, Z13)
	Q2KMINS(96)
	Q2KDLANE(264, Z15)
	// Lane 2.
	VPXORD Z13, Z13, Z13
	Q2KPLANES(576, Z0, Z1, Z2, Z3)
	Q2KDOT(12, 44, 76, 108, SI, Z13)
	Q2KPLANES(640, Z4, Z5, Z6, Z7)
	Q2KDOT(140, 172, 204, 236, SI, Z13)
	Q2KMINS(128)
	Q2KDLANE(268, Z16)
	// Lane 3.
	VPXORD Z13, Z13, Z13
	Q2KPLANES(704, Z0, Z1, Z2, Z3)
	Q2KDOT(16, 48, 80, 112, SI, Z13)
	Q2KPLANES(768, Z4, Z5, Z6, Z7)
	Q2KDOT(144, 176, 208, 240, SI, Z13)
	Q2KMINS(160)
	Q2KDLANE(272, Z22)
	Q2KSCALES(Z26)
	// Lane 4.
	VPXORD Z13, Z13, Z13
	Q2KPLANES(832, Z0, Z1, Z2, Z3)
	Q2KDOT(20, 52, 84, 116, SI, Z13)
	Q2KPLANES(896, Z4, Z5, Z6, Z7)
	Q2KDOT(148, 180, 212, 244, SI, Z13)
	Q2KMINS(192)
	Q2KDLANE(276, Z27)
	// Lane 5.
	VPXORD Z13, Z13, Z13
	Q2KPLANES(960, Z0, Z1, Z2, Z3)
	Q2KDOT(24, 56, 88, 120, SI, Z13)
	Q2KPLANES(1024, Z4, Z5, Z6, Z7)
	Q2KDOT(152, 184, 216, 248, SI, Z13)
	Q2KMINS(224)
	Q2KDLANE(280, Z28)
	// Lane 6.
	VPXORD Z13, Z13, Z13
	Q2KPLANES(1088, Z0, Z1, Z2, Z3)
	Q2KDOT(28, 60, 92, 124, SI, Z13)
	Q2KPLANES(1152, Z4, Z5, Z6, Z7)
	Q2KDOT(156, 188, 220, 252, SI, Z13)
	Q2KMINS(256)
	Q2KDLANE(284, Z29)
	// Lane 7.
	VPXORD Z13, Z13, Z13
	Q2KPLANES(1216, Z0, Z1, Z2, Z3)
	Q2KDOT(32, 64, 96, 128, SI, Z13)
	Q2KPLANES(1280, Z4, Z5, Z6, Z7)
	Q2KDOT(160, 192, 224, 256, SI, Z13)
	Q2KMINS(288)
	Q2KDLANE(288, Z30)
	ADDQ $292, SI
	ADDQ $1344, DX
	DECQ CX
	JNZ  q2kdblock

	MOVQ dst+24(FP), R12
	VADDPS  Z14, Z27, Z0 // lanes 0+4
	VADDPS  Z15, Z28, Z1 // 1+5
	VADDPS  Z16, Z29, Z2 // 2+6
	VADDPS  Z22, Z30, Z3 // 3+7
	VADDPS  Z2, Z0, Z0
	VADDPS  Z3, Z1, Z1
	VADDPS  Z1, Z0, Z0
	VMOVUPS Z0, (R12)
	VZEROUPPER
	RET
