//go:build amd64 && !noasm

#include "textflag.h"
#include "packed_amd64.h"

// PFD is how far ahead of the superblock being read the four-stream kernel
// prefetches the weights; the general kernel takes its distance as an
// argument (q4kx16Ahead), because the best one differs by CPU. One-row
// decode read 29.8 GB/s at 1152 bytes on a 2-core Intel Sapphire Rapids
// VM, 28.9 at 2304, 19.9 at 4608; on two AMD Zen 5 cores
// (BenchmarkDecodeStream, each run between two read probes) 79-81 % of
// the probe at 1152 and 85 % at 2304 and 3552, and in a phase of the
// host when the probe read 80 GB/s, 60-62 % at 1152 against 77 % at
// 3552. Each chunk's prefetch goes just before it, not eight at the top of
// the half (1B Q4_K_M decode 34.7-35.1 -> 35.0-35.7 tokens/s). On one
// Zen 5 core under taskset (read probe 42-43 GB/s, five alternated
// rounds, L2 as below): 3552 read 33.6-36.2 GB/s, 4608 34.4-37.3 (median
// 36.4), 5184 35.5-37.3.
#define PFD 1152

// FAR is how much further ahead than that the general kernel also
// prefetches every line into L2 only (PREFETCHT2): with the L1 prefetch
// alone a core kept too few lines in flight. Zen 5 one-row decode
// (BenchmarkDecodeStream, each run between two read probes, a phase of
// the host when they read 50 GB/s): 79-80 % of the probe without, 83-84 %
// with it at 4608 or 9216 bytes past an L1 distance of 3552, 78 % at
// 2304 (T1 instead: 78 %); with the L1 distance at 4608, 3456 past it
// (the figures above). Not measured on Intel.
#define FAR 3456

// The Q4_Kx16 kernel (see q4kx16.go for the layout and its order) with
// AVX-512 VNNI. Each 32-byte half k of a block's quants is eight 64-byte
// chunks, split into low nibbles (Z0-Z7, group 2k: lane i holds four
// quants of row i) and high nibbles (Z8-Z15, group 2k+1). For each
// activation row, VPDPBUSD with four of its quants broadcast adds into
// two fresh sums, which VPMULLD scales by the rows' group scales (Z16,
// Z17) and adds into the row's half sum; VPDPWSSD makes the half's
// minimum term from the minimum pairs (Z28) and the groups' activation
// sums (Q8_KAux); and both are converted and fused-multiply-added, with
// d·d_a and dmin·d_a, into the row's two float32 accumulators (the second
// kept in the row's destination until the end, when the kernel stores
// their difference), half after half, as llama.cpp's repacked Q4_K gemm
// does. The four halves are unrolled, so every offset is a constant.
//
// Registers: DX the block; SI, R8, R10, R11 activation rows 0-3 (moved by
// 64 per half, so every half reads the same offsets), R12-R15 their aux
// words; DI the destination row of the minimum accumulator, R9 the
// destination stride; CX blocks left, BX activation rows; AX the prefetch
// distance (each line is prefetched at off(DX)(AX*1), and at
// FAR+off(DX)(AX*1) into L2). Z18-Z21 half
// sums, Z22-Z25 accumulators of activation rows 0-3; Z26, Z27 scratch,
// Z28 a chunk, then the half's minimum pairs; Z29 bytes 0x0f; Z30, Z31
// the rows' d and dmin.

// Q4KCHUNK splits the chunk at off(DX) into lo and hi nibbles.
#define Q4KCHUNK(off, lo, hi) \
	VMOVDQU64 off(DX), Z28 \
	VPANDD    Z29, Z28, lo \
	VPSRLW    $4, Z28, Z28 \
	VPANDD    Z29, Z28, hi

// Q4KLOADHALF loads half k of the block at DX: its eight quant chunks,
// each line prefetched just before, split into low nibbles (Z0-Z7) and
// high nibbles (Z8-Z15), the scales of its two groups (Z16, Z17) and their
// minimum pairs (Z28).
#define Q4KLOADHALF(k) \
	PREFETCHLINE(320+512*k+0) \
	Q4KCHUNK(320+512*k+0, Z0, Z8) \
	PREFETCHLINE(320+512*k+64) \
	Q4KCHUNK(320+512*k+64, Z1, Z9) \
	PREFETCHLINE(320+512*k+128) \
	Q4KCHUNK(320+512*k+128, Z2, Z10) \
	PREFETCHLINE(320+512*k+192) \
	Q4KCHUNK(320+512*k+192, Z3, Z11) \
	PREFETCHLINE(320+512*k+256) \
	Q4KCHUNK(320+512*k+256, Z4, Z12) \
	PREFETCHLINE(320+512*k+320) \
	Q4KCHUNK(320+512*k+320, Z5, Z13) \
	PREFETCHLINE(320+512*k+384) \
	Q4KCHUNK(320+512*k+384, Z6, Z14) \
	PREFETCHLINE(320+512*k+448) \
	Q4KCHUNK(320+512*k+448, Z7, Z15) \
	VPMOVZXBD 64+32*k(DX), Z16 \
	VPMOVZXBD 80+32*k(DX), Z17 \
	VPMOVZXBW 192+32*k(DX), Z28

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

// Q4KLANES adds half k of activation row act (act now 64·(k+1) bytes in),
// whose block sum is sum, to acc with d_w·d_a (Z30), and the half's
// minimum term, from the aux words at (aux) and the minimum pairs in Z28,
// to the minimum accumulator at (DI) with dmin_w·d_a (Z31), through sum
// (free once added); then moves DI to the next row's destination. As
// llama.cpp's repacked Q4_K gemm: one fused multiply-add per half and
// accumulator.
#define Q4KLANES(k, act, aux, sum, acc) \
	VCVTDQ2PS       sum, sum \
	VMULPS.BCST     -(64*(k+1))(act), Z30, Z26 \
	VFMADD231PS     Z26, sum, acc \
	VPXORD          Z26, Z26, Z26 \
	VPDPWSSD.BCST   (4*k)(aux), Z28, Z26 \
	VCVTDQ2PS       Z26, Z26 \
	VMULPS.BCST     -(64*(k+1))(act), Z31, Z27 \
	VMOVUPS         (DI), sum \
	VFMADD231PS     Z27, Z26, sum \
	VMOVUPS         sum, (DI) \
	ADDQ            R9, DI

// func q4kx16AVX512VNNI(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int, pfd int)
TEXT ·q4kx16AVX512VNNI(SB), NOSPLIT, $0-80
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), DX
	ACTROWS4
	AUXROWS4
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
	MOVQ pfd+72(FP), AX

q4kblock:
	PREFETCHLINE(0)
	PREFETCHLINE(64)
	PREFETCHLINE(128)
	PREFETCHLINE(192)
	PREFETCHLINE(256)

q4kheader:
	VCVTPH2PS 0(DX), Z30  // d
	VCVTPH2PS 32(DX), Z31 // dmin
	MOVQ dstride+64(FP), R9
	SHLQ $2, R9
	// Half 0: groups 0 and 1.
q4kchunks0:
	Q4KLOADHALF(0)
	MOVQ dst+56(FP), DI
	VPXORD Z18, Z18, Z18
	Q4KHALF(SI, Z18)
	Q4KLANES(0, SI, R12, Z18, Z22)
	CMPQ BX, $1
	JEQ  q4khalfdone0
	VPXORD Z19, Z19, Z19
	Q4KHALF(R8, Z19)
	Q4KLANES(0, R8, R13, Z19, Z23)
	CMPQ BX, $2
	JEQ  q4khalfdone0
	VPXORD Z20, Z20, Z20
	Q4KHALF(R10, Z20)
	Q4KLANES(0, R10, R14, Z20, Z24)
	CMPQ BX, $3
	JEQ  q4khalfdone0
	VPXORD Z21, Z21, Z21
	Q4KHALF(R11, Z21)
	Q4KLANES(0, R11, R15, Z21, Z25)
q4khalfdone0:
	// Half 1: groups 2 and 3.
q4kchunks1:
	Q4KLOADHALF(1)
	MOVQ dst+56(FP), DI
	VPXORD Z18, Z18, Z18
	Q4KHALF(SI, Z18)
	Q4KLANES(1, SI, R12, Z18, Z22)
	CMPQ BX, $1
	JEQ  q4khalfdone1
	VPXORD Z19, Z19, Z19
	Q4KHALF(R8, Z19)
	Q4KLANES(1, R8, R13, Z19, Z23)
	CMPQ BX, $2
	JEQ  q4khalfdone1
	VPXORD Z20, Z20, Z20
	Q4KHALF(R10, Z20)
	Q4KLANES(1, R10, R14, Z20, Z24)
	CMPQ BX, $3
	JEQ  q4khalfdone1
	VPXORD Z21, Z21, Z21
	Q4KHALF(R11, Z21)
	Q4KLANES(1, R11, R15, Z21, Z25)
q4khalfdone1:
	// Half 2: groups 4 and 5.
q4kchunks2:
	Q4KLOADHALF(2)
	MOVQ dst+56(FP), DI
	VPXORD Z18, Z18, Z18
	Q4KHALF(SI, Z18)
	Q4KLANES(2, SI, R12, Z18, Z22)
	CMPQ BX, $1
	JEQ  q4khalfdone2
	VPXORD Z19, Z19, Z19
	Q4KHALF(R8, Z19)
	Q4KLANES(2, R8, R13, Z19, Z23)
	CMPQ BX, $2
	JEQ  q4khalfdone2
	VPXORD Z20, Z20, Z20
	Q4KHALF(R10, Z20)
	Q4KLANES(2, R10, R14, Z20, Z24)
	CMPQ BX, $3
	JEQ  q4khalfdone2
	VPXORD Z21, Z21, Z21
	Q4KHALF(R11, Z21)
	Q4KLANES(2, R11, R15, Z21, Z25)
q4khalfdone2:
	// Half 3: groups 6 and 7.
q4kchunks3:
	Q4KLOADHALF(3)
	MOVQ dst+56(FP), DI
	VPXORD Z18, Z18, Z18
	Q4KHALF(SI, Z18)
	Q4KLANES(3, SI, R12, Z18, Z22)
	CMPQ BX, $1
	JEQ  q4khalfdone3
	VPXORD Z19, Z19, Z19
	Q4KHALF(R8, Z19)
	Q4KLANES(3, R8, R13, Z19, Z23)
	CMPQ BX, $2
	JEQ  q4khalfdone3
	VPXORD Z20, Z20, Z20
	Q4KHALF(R10, Z20)
	Q4KLANES(3, R10, R14, Z20, Z24)
	CMPQ BX, $3
	JEQ  q4khalfdone3
	VPXORD Z21, Z21, Z21
	Q4KHALF(R11, Z21)
	Q4KLANES(3, R11, R15, Z21, Z25)
q4khalfdone3:
	// Next block: activation rows and aux words.
	ADDQ $36, SI
	ADDQ $16, R12
	ADDQ $36, R8
	ADDQ $16, R13
	ADDQ $36, R10
	ADDQ $16, R14
	ADDQ $36, R11
	ADDQ $16, R15

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

// Q4KSCHUNK is Q4KCHUNK for the chunk at off(DX)(idx*sc).
#define Q4KSCHUNK(off, idx, sc, lo, hi) \
	PREFETCHT0 PFD+off(DX)(idx*sc) \
	VMOVDQU64  off(DX)(idx*sc), Z28 \
	VPANDD     Z29, Z28, lo \
	VPSRLW     $4, Z28, Z28 \
	VPANDD     Z29, Z28, hi

// Q4KSPREFETCH prefetches the header lines of the block at (DX)(idx*sc).
#define Q4KSPREFETCH(idx, sc) \
	PREFETCHT0 PFD+0(DX)(idx*sc) \
	PREFETCHT0 PFD+64(DX)(idx*sc) \
	PREFETCHT0 PFD+128(DX)(idx*sc) \
	PREFETCHT0 PFD+192(DX)(idx*sc) \
	PREFETCHT0 PFD+256(DX)(idx*sc)

// Q4KSHALF adds half k of the block at (DX)(idx*sc) to acc and to the
// minimum accumulator at (R15)(didx*dsc), for the activation block at SI
// with its aux words at R12: the kernel's half for one activation row.
#define Q4KSHALF(k, idx, sc, didx, dsc, acc) \
	VCVTPH2PS 0(DX)(idx*sc), Z30 \
	VCVTPH2PS 32(DX)(idx*sc), Z31 \
	Q4KSCHUNK(320+512*k, idx, sc, Z0, Z8) \
	Q4KSCHUNK(384+512*k, idx, sc, Z1, Z9) \
	Q4KSCHUNK(448+512*k, idx, sc, Z2, Z10) \
	Q4KSCHUNK(512+512*k, idx, sc, Z3, Z11) \
	Q4KSCHUNK(576+512*k, idx, sc, Z4, Z12) \
	Q4KSCHUNK(640+512*k, idx, sc, Z5, Z13) \
	Q4KSCHUNK(704+512*k, idx, sc, Z6, Z14) \
	Q4KSCHUNK(768+512*k, idx, sc, Z7, Z15) \
	VPMOVZXBD 64+32*k(DX)(idx*sc), Z16 \
	VPMOVZXBD 80+32*k(DX)(idx*sc), Z17 \
	VPMOVZXBW 192+32*k(DX)(idx*sc), Z28 \
	LEAQ      64*k(SI), R10 \
	LEAQ      (R15)(didx*dsc), DI \
	VPXORD    Z18, Z18, Z18 \
	Q4KHALF(R10, Z18) \
	Q4KLANES(k, R10, R12, Z18, acc)

// func q4kx16Decode4AVX512VNNI(nb int, w *byte, stride int, a *byte, aux *uint32, dst *float32, dstride int)
//
// The Q4_Kx16 kernel for one activation row over four groups stride bytes
// apart (four rows of 16 outputs, dstride floats apart), a half-block of
// each in turn (a whole block of each, 2368 bytes, read no faster than one
// stream: the streams must meet within the core's window of
// instructions), with the same sums: group s's accumulator is Z22+s and its
// minimum accumulator waits in its destination row, as the kernel keeps
// those of four activation rows. Four streams of weights keep more of
// memory's latency overlapped than one (see q4x16Decode4AVX512VNNI).
//
// Registers: DX the blocks of group 0, R11 zero, R13 stride, R14
// 3·stride; SI the activation block, R10 its copy that Q4KHALF moves,
// R12 the aux words; R15 dst, R9 dstride in bytes, BX 3·dstride; DI a
// minimum accumulator; CX blocks left.
TEXT ·q4kx16Decode4AVX512VNNI(SB), NOSPLIT, $0-56
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), DX
	MOVQ stride+16(FP), R13
	LEAQ (R13)(R13*2), R14
	XORQ R11, R11
	MOVQ a+24(FP), SI
	MOVQ aux+32(FP), R12
	MOVQ dst+40(FP), R15
	MOVQ dstride+48(FP), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), BX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z29
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VMOVUPS Z22, (R15)
	VMOVUPS Z22, (R15)(R9*1)
	VMOVUPS Z22, (R15)(R9*2)
	VMOVUPS Z22, (R15)(BX*1)

q4k4block:
	// Half 0 of each group.
	Q4KSPREFETCH(R11, 1)
	Q4KSHALF(0, R11, 1, R11, 1, Z22)
	Q4KSPREFETCH(R13, 1)
	Q4KSHALF(0, R13, 1, R9, 1, Z23)
	Q4KSPREFETCH(R13, 2)
	Q4KSHALF(0, R13, 2, R9, 2, Z24)
	Q4KSPREFETCH(R14, 1)
	Q4KSHALF(0, R14, 1, BX, 1, Z25)
	// Half 1 of each group.
	Q4KSHALF(1, R11, 1, R11, 1, Z22)
	Q4KSHALF(1, R13, 1, R9, 1, Z23)
	Q4KSHALF(1, R13, 2, R9, 2, Z24)
	Q4KSHALF(1, R14, 1, BX, 1, Z25)
	// Half 2 of each group.
	Q4KSHALF(2, R11, 1, R11, 1, Z22)
	Q4KSHALF(2, R13, 1, R9, 1, Z23)
	Q4KSHALF(2, R13, 2, R9, 2, Z24)
	Q4KSHALF(2, R14, 1, BX, 1, Z25)
	// Half 3 of each group.
	Q4KSHALF(3, R11, 1, R11, 1, Z22)
	Q4KSHALF(3, R13, 1, R9, 1, Z23)
	Q4KSHALF(3, R13, 2, R9, 2, Z24)
	Q4KSHALF(3, R14, 1, BX, 1, Z25)
	ADDQ $2368, DX
	ADDQ $292, SI
	ADDQ $16, R12
	DECQ CX
	JNZ  q4k4block

	VSUBPS  (R15), Z22, Z22
	VMOVUPS Z22, (R15)
	VSUBPS  (R15)(R9*1), Z23, Z23
	VMOVUPS Z23, (R15)(R9*1)
	VSUBPS  (R15)(R9*2), Z24, Z24
	VMOVUPS Z24, (R15)(R9*2)
	VSUBPS  (R15)(BX*1), Z25, Z25
	VMOVUPS Z25, (R15)(BX*1)
	VZEROUPPER
	RET

// Q4KD_LANES adds half k's block sum (Z18) of the one-row kernel below to
// its accumulator Z22 with d_w·d_a (Z30), and the half's minimum term,
// from the aux words at (R12) and the minimum pairs in Z28, to the
// minimum accumulator Z23 with dmin_w·d_a (Z31): Q4KLANES's steps with
// the accumulators in registers.
#define Q4KD_LANES(k) \
	VCVTDQ2PS     Z18, Z18 \
	VFMADD231PS   Z30, Z18, Z22 \
	VPXORD        Z26, Z26, Z26 \
	VPDPWSSD.BCST (4*k)(R12), Z28, Z26 \
	VCVTDQ2PS     Z26, Z26 \
	VFMADD231PS   Z31, Z26, Z23

// func q4kx16DecodeAVX512VNNI(nb int, w *byte, a *byte, aux *uint32, dst *float32, pfd int)
//
// The Q4_Kx16 kernel for one activation row (decode), with its sums: the
// same loads, prefetches and integer steps, but both float accumulators in
// registers, d_w·d_a and dmin_w·d_a computed once a block, and no
// branches on the number of rows.
TEXT ·q4kx16DecodeAVX512VNNI(SB), NOSPLIT, $0-48
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), DX
	MOVQ a+16(FP), SI
	MOVQ aux+24(FP), R12
	MOVQ pfd+40(FP), AX
	MOVL $0x0f0f0f0f, R10
	VPBROADCASTD R10, Z29
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23

q4kdblock:
	PREFETCHLINE(0)
	PREFETCHLINE(64)
	PREFETCHLINE(128)
	PREFETCHLINE(192)
	PREFETCHLINE(256)
	VCVTPH2PS   0(DX), Z30  // d
	VMULPS.BCST (SI), Z30, Z30
	VCVTPH2PS   32(DX), Z31 // dmin
	VMULPS.BCST (SI), Z31, Z31
	// Half 0: groups 0 and 1.
	Q4KLOADHALF(0)
	VPXORD Z18, Z18, Z18
	Q4KHALF(SI, Z18)
	Q4KD_LANES(0)
	// Half 1: groups 2 and 3.
	Q4KLOADHALF(1)
	VPXORD Z18, Z18, Z18
	Q4KHALF(SI, Z18)
	Q4KD_LANES(1)
	// Half 2: groups 4 and 5.
	Q4KLOADHALF(2)
	VPXORD Z18, Z18, Z18
	Q4KHALF(SI, Z18)
	Q4KD_LANES(2)
	// Half 3: groups 6 and 7.
	Q4KLOADHALF(3)
	VPXORD Z18, Z18, Z18
	Q4KHALF(SI, Z18)
	Q4KD_LANES(3)
	ADDQ $36, SI
	ADDQ $16, R12
	ADDQ $2368, DX
	DECQ CX
	JNZ  q4kdblock

	VSUBPS  Z23, Z22, Z22
	MOVQ    dst+32(FP), DI
	VMOVUPS Z22, (DI)
	VZEROUPPER
	RET
