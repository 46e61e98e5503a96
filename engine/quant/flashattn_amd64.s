//go:build amd64 && !noasm

#include "textflag.h"

// AVX-512 forms of the llama.cpp arithmetic of flashattn.go and swiglu.go:
// the same instructions ggml's AVX-512 build runs, in the same order, so
// the results are bit-identical to the Go references (the tests check).

// func dotHalf64(n int, x, y *uint16) float32
// n > 0, a multiple of 64.
TEXT ·dotHalf64(SB), NOSPLIT, $0-28
	MOVQ   n+0(FP), CX
	MOVQ   x+8(FP), SI
	MOVQ   y+16(FP), DI
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3

dh64loop:
	VCVTPH2PS   (SI), Z4
	VCVTPH2PS   (DI), Z5
	VFMADD231PS Z5, Z4, Z0
	VCVTPH2PS   32(SI), Z6
	VCVTPH2PS   32(DI), Z7
	VFMADD231PS Z7, Z6, Z1
	VCVTPH2PS   64(SI), Z8
	VCVTPH2PS   64(DI), Z9
	VFMADD231PS Z9, Z8, Z2
	VCVTPH2PS   96(SI), Z10
	VCVTPH2PS   96(DI), Z11
	VFMADD231PS Z11, Z10, Z3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $64, CX
	JNZ         dh64loop

	VADDPS        Z2, Z0, Z0
	VADDPS        Z3, Z1, Z1
	VADDPS        Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VPERMILPS     $0x4e, X0, X1
	VADDPS        X1, X0, X0
	VMOVSHDUP     X0, X1
	VADDSS        X1, X0, X0
	VZEROUPPER
	MOVSS         X0, ret+24(FP)
	RET

// func madHalf16(n int, y, x *uint16, v float32)
// y[i] = f16(x[i]·v + y[i]) for n > 0, a multiple of 16.
TEXT ·madHalf16(SB), NOSPLIT, $0-28
	MOVQ         n+0(FP), CX
	MOVQ         y+8(FP), DI
	MOVQ         x+16(FP), SI
	VBROADCASTSS v+24(FP), Z0

mh16loop:
	VCVTPH2PS   (DI), Z1
	VCVTPH2PS   (SI), Z2
	VFMADD231PS Z0, Z2, Z1
	VCVTPS2PH   $0, Z1, Y1
	VMOVDQU     Y1, (DI)
	ADDQ        $32, DI
	ADDQ        $32, SI
	SUBQ        $16, CX
	JNZ         mh16loop
	VZEROUPPER
	RET

// func scaleHalf16(n int, y *uint16, v float32)
// y[i] = f16(y[i]·v) for n > 0, a multiple of 16.
TEXT ·scaleHalf16(SB), NOSPLIT, $0-20
	MOVQ         n+0(FP), CX
	MOVQ         y+8(FP), DI
	VBROADCASTSS v+16(FP), Z0

sh16loop:
	VCVTPH2PS (DI), Z1
	VMULPS    Z0, Z1, Z1
	VCVTPS2PH $0, Z1, Y1
	VMOVDQU   Y1, (DI)
	ADDQ      $32, DI
	SUBQ      $16, CX
	JNZ       sh16loop
	VZEROUPPER
	RET

// func swiglu16(n int, dst, gate, up *float32)
// dst[i] = g/(1+e^-g)·u with ggml_v_expf's AVX-512 formula, n > 0 a
// multiple of 16.
TEXT ·swiglu16(SB), NOSPLIT, $0-32
	MOVQ         n+0(FP), CX
	MOVQ         dst+8(FP), DI
	MOVQ         gate+16(FP), SI
	MOVQ         up+24(FP), DX
	VBROADCASTSS gvc<>+0(SB), Z16  // shift 0x1.8p23
	VBROADCASTSS gvc<>+4(SB), Z17  // log2 e
	VBROADCASTSS gvc<>+8(SB), Z18  // ln 2 high
	VBROADCASTSS gvc<>+12(SB), Z19 // ln 2 low
	VBROADCASTSS gvc<>+16(SB), Z20 // p0
	VBROADCASTSS gvc<>+20(SB), Z21 // p1
	VBROADCASTSS gvc<>+24(SB), Z22 // p2
	VBROADCASTSS gvc<>+28(SB), Z23 // p3
	VBROADCASTSS gvc<>+32(SB), Z24 // p4
	VBROADCASTSS gvc<>+36(SB), Z25 // 1
	VBROADCASTSS gvc<>+40(SB), Z26 // 192
	VBROADCASTSS gvc<>+44(SB), Z27 // +inf
	VPBROADCASTD gvc<>+48(SB), Z28 // 0x7fffffff
	VXORPS       Z29, Z29, Z29     // 0

sw16loop:
	VMOVUPS      (SI), Z0
	VSUBPS       Z0, Z29, Z1       // t = 0 - x
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
	VADDPS       Z9, Z25, Z9       // 1 + e^-x
	VDIVPS       Z9, Z0, Z0        // x / (1 + e^-x)
	VMULPS       (DX), Z0, Z0
	VMOVUPS      Z0, (DI)
	ADDQ         $64, SI
	ADDQ         $64, DX
	ADDQ         $64, DI
	SUBQ         $16, CX
	JNZ          sw16loop
	VZEROUPPER
	RET

DATA gvc<>+0(SB)/4, $0x4b400000  // 0x1.8p23
DATA gvc<>+4(SB)/4, $0x3fb8aa3b  // 0x1.715476p+0
DATA gvc<>+8(SB)/4, $0x3f317200  // 0x1.62e4p-1
DATA gvc<>+12(SB)/4, $0x35bfbe8e // 0x1.7f7d1cp-20
DATA gvc<>+16(SB)/4, $0x3c072010 // 0x1.0e4020p-7
DATA gvc<>+20(SB)/4, $0x3d2b9f17 // 0x1.573e2ep-5
DATA gvc<>+24(SB)/4, $0x3e2aaf33 // 0x1.555e66p-3
DATA gvc<>+28(SB)/4, $0x3efffedb // 0x1.fffdb6p-2
DATA gvc<>+32(SB)/4, $0x3f7ffff6 // 0x1.ffffecp-1
DATA gvc<>+36(SB)/4, $0x3f800000 // 1
DATA gvc<>+40(SB)/4, $0x43400000 // 192
DATA gvc<>+44(SB)/4, $0x7f800000 // +inf
DATA gvc<>+48(SB)/4, $0x7fffffff
GLOBL gvc<>(SB), RODATA|NOPTR, $52

// func dotF16F32x16(n int, w *uint16, a *float32) float32
// llama.cpp's AMX-buffer F16 kernel (tinygemm_kernel_avx): one ZMM of 16
// lanes, lane l accumulating a[k+l]·w[k+l] with FMA over k in steps of 16,
// then _mm512_reduce_add_ps. n > 0, a multiple of 16.
TEXT ·dotF16F32x16(SB), NOSPLIT, $0-28
	MOVQ   n+0(FP), CX
	MOVQ   w+8(FP), SI
	MOVQ   a+16(FP), DI
	VXORPS Z0, Z0, Z0

df16loop:
	VCVTPH2PS   (SI), Z1
	VFMADD231PS (DI), Z1, Z0
	ADDQ        $32, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JNZ         df16loop

	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VPERMILPS     $0x4e, X0, X1
	VADDPS        X1, X0, X0
	VMOVSHDUP     X0, X1
	VADDSS        X1, X0, X0
	VZEROUPPER
	MOVSS         X0, ret+24(FP)
	RET

// func flashMad64(hd int, acc, v *uint16, vstride int, ms, vs *float32, n int)
// For each 64 of the hd accumulator elements (hd a multiple of 64), held
// in four ZMM registers as float32 across the n keys: when ms[i] ≠ 1,
// acc = f16(acc·ms[i]) (ggml_vec_scale_f16), then acc = f16(v_i·vs[i] +
// acc) (ggml_vec_mad_f16), v_i at v + i·vstride elements. Each step
// rounds as scaleHalf16 and madHalf16 do through memory.
TEXT ·flashMad64(SB), NOSPLIT, $0-56
	MOVQ hd+0(FP), R8
	SHRQ $6, R8
	MOVQ acc+8(FP), DI
	MOVQ v+16(FP), SI
	MOVQ vstride+24(FP), DX
	SHLQ $1, DX
	MOVQ ms+32(FP), R9
	MOVQ vs+40(FP), R10
	MOVQ n+48(FP), CX
	MOVL $0x3f800000, AX
	VMOVD AX, X31

fm64slice:
	VCVTPH2PS 0(DI), Z0
	VCVTPH2PS 32(DI), Z1
	VCVTPH2PS 64(DI), Z2
	VCVTPH2PS 96(DI), Z3
	MOVQ SI, R11
	XORQ AX, AX

fm64key:
	VMOVSS   (R9)(AX*4), X4
	VUCOMISS X31, X4
	JNE      fm64scale
	JPS      fm64scale
	JMP      fm64mad

fm64scale:
	VBROADCASTSS X4, Z5
	VMULPS       Z5, Z0, Z0
	VMULPS       Z5, Z1, Z1
	VMULPS       Z5, Z2, Z2
	VMULPS       Z5, Z3, Z3
	VCVTPS2PH    $0, Z0, Y0
	VCVTPS2PH    $0, Z1, Y1
	VCVTPS2PH    $0, Z2, Y2
	VCVTPS2PH    $0, Z3, Y3
	VCVTPH2PS    Y0, Z0
	VCVTPH2PS    Y1, Z1
	VCVTPH2PS    Y2, Z2
	VCVTPH2PS    Y3, Z3

fm64mad:
	VBROADCASTSS (R10)(AX*4), Z5
	VCVTPH2PS    0(R11), Z6
	VCVTPH2PS    32(R11), Z7
	VCVTPH2PS    64(R11), Z8
	VCVTPH2PS    96(R11), Z9
	VFMADD231PS  Z5, Z6, Z0
	VFMADD231PS  Z5, Z7, Z1
	VFMADD231PS  Z5, Z8, Z2
	VFMADD231PS  Z5, Z9, Z3
	VCVTPS2PH    $0, Z0, Y0
	VCVTPS2PH    $0, Z1, Y1
	VCVTPS2PH    $0, Z2, Y2
	VCVTPS2PH    $0, Z3, Y3
	VCVTPH2PS    Y0, Z0
	VCVTPH2PS    Y1, Z1
	VCVTPH2PS    Y2, Z2
	VCVTPH2PS    Y3, Z3
	ADDQ         DX, R11
	INCQ         AX
	CMPQ         AX, CX
	JLT          fm64key

	VCVTPS2PH $0, Z0, 0(DI)
	VCVTPS2PH $0, Z1, 32(DI)
	VCVTPS2PH $0, Z2, 64(DI)
	VCVTPS2PH $0, Z3, 96(DI)
	ADDQ $128, DI
	ADDQ $128, SI
	DECQ R8
	JNZ  fm64slice
	VZEROUPPER
	RET

// func dotHalf64Keys(hd int, k *uint16, kstride int, q *uint16, n int, scale float32, out *float32)
// out[i] = dotHalf64(hd, k + i·kstride, q)·scale for i < n, with
// dotHalf64's instructions in its order.
TEXT ·dotHalf64Keys(SB), NOSPLIT, $0-56
	MOVQ         k+8(FP), R8
	MOVQ         kstride+16(FP), DX
	SHLQ         $1, DX
	MOVQ         n+32(FP), R9
	VMOVSS       scale+40(FP), X12
	MOVQ         out+48(FP), R10

dhkkey:
	MOVQ   hd+0(FP), CX
	MOVQ   R8, SI
	MOVQ   q+24(FP), DI
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3

dhkloop:
	VCVTPH2PS   (SI), Z4
	VCVTPH2PS   (DI), Z5
	VFMADD231PS Z5, Z4, Z0
	VCVTPH2PS   32(SI), Z6
	VCVTPH2PS   32(DI), Z7
	VFMADD231PS Z7, Z6, Z1
	VCVTPH2PS   64(SI), Z8
	VCVTPH2PS   64(DI), Z9
	VFMADD231PS Z9, Z8, Z2
	VCVTPH2PS   96(SI), Z10
	VCVTPH2PS   96(DI), Z11
	VFMADD231PS Z11, Z10, Z3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $64, CX
	JNZ         dhkloop

	VADDPS        Z2, Z0, Z0
	VADDPS        Z3, Z1, Z1
	VADDPS        Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VPERMILPS     $0x4e, X0, X1
	VADDPS        X1, X0, X0
	VMOVSHDUP     X0, X1
	VADDSS        X1, X0, X0
	VMULSS        X12, X0, X0
	VMOVSS        X0, (R10)
	ADDQ          $4, R10
	ADDQ          DX, R8
	DECQ          R9
	JNZ           dhkkey
	VZEROUPPER
	RET

// DHFMA adds the products of the converted key chunk Z16-Z19 and the f16
// query elements at q0-q3 to a0-a3, as dotHalf64Keys does.
#define DHFMA(q0, q1, q2, q3, a0, a1, a2, a3) \
	VCVTPH2PS   q0, Z20 \
	VFMADD231PS Z20, Z16, a0 \
	VCVTPH2PS   q1, Z21 \
	VFMADD231PS Z21, Z17, a1 \
	VCVTPH2PS   q2, Z22 \
	VFMADD231PS Z22, Z18, a2 \
	VCVTPH2PS   q3, Z23 \
	VFMADD231PS Z23, Z19, a3

// DHSUM reduces a0-a3 in dotHalf64's order, scales the sum by X24 and
// stores it at off(R10); y0, x0 are a0's lower halves and y1, x1 a1's.
#define DHSUM(a0, a1, a2, a3, y0, y1, x0, x1, off) \
	VADDPS        a2, a0, a0 \
	VADDPS        a3, a1, a1 \
	VADDPS        a1, a0, a0 \
	VEXTRACTF64X4 $1, a0, y1 \
	VADDPS        y1, y0, y0 \
	VEXTRACTF128  $1, y0, x1 \
	VADDPS        x1, x0, x0 \
	VPERMILPS     $0x4e, x0, x1 \
	VADDPS        x1, x0, x0 \
	VMOVSHDUP     x0, x1 \
	VADDSS        x1, x0, x0 \
	VMULSS        X24, x0, x0 \
	VMOVSS        x0, off(R10)

// func dotHalf64KeysHeads(hd int, k *uint16, kstride int, q *uint16, heads, n int, scale float32, out *float32)
// dotHalf64Keys for heads (1-4) queries at q + h·hd elements: each key
// chunk is converted once and multiplied into every head's accumulators
// (head h in Z4h-Z4h+3); out[h·64 + i] is head h's score of key i.
TEXT ·dotHalf64KeysHeads(SB), NOSPLIT, $0-64
	MOVQ k+8(FP), R8
	MOVQ kstride+16(FP), DX
	SHLQ $1, DX
	MOVQ heads+32(FP), BX
	MOVQ n+40(FP), R9
	MOVQ out+56(FP), R10
	VMOVSS scale+48(FP), X24
	MOVQ hd+0(FP), R11
	SHLQ $1, R11             // bytes of one head's query
	LEAQ (R11)(R11*2), R13   // three heads' bytes

dhhkey:
	MOVQ   hd+0(FP), CX
	MOVQ   R8, SI
	MOVQ   q+24(FP), DI
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	VXORPS Z8, Z8, Z8
	VXORPS Z9, Z9, Z9
	VXORPS Z10, Z10, Z10
	VXORPS Z11, Z11, Z11
	VXORPS Z12, Z12, Z12
	VXORPS Z13, Z13, Z13
	VXORPS Z14, Z14, Z14
	VXORPS Z15, Z15, Z15

dhhloop:
	VCVTPH2PS (SI), Z16
	VCVTPH2PS 32(SI), Z17
	VCVTPH2PS 64(SI), Z18
	VCVTPH2PS 96(SI), Z19
	DHFMA((DI), 32(DI), 64(DI), 96(DI), Z0, Z1, Z2, Z3)
	CMPQ BX, $1
	JEQ  dhhnext
	DHFMA((DI)(R11*1), 32(DI)(R11*1), 64(DI)(R11*1), 96(DI)(R11*1), Z4, Z5, Z6, Z7)
	CMPQ BX, $2
	JEQ  dhhnext
	DHFMA((DI)(R11*2), 32(DI)(R11*2), 64(DI)(R11*2), 96(DI)(R11*2), Z8, Z9, Z10, Z11)
	CMPQ BX, $3
	JEQ  dhhnext
	DHFMA((DI)(R13*1), 32(DI)(R13*1), 64(DI)(R13*1), 96(DI)(R13*1), Z12, Z13, Z14, Z15)

dhhnext:
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $64, CX
	JNZ  dhhloop

	DHSUM(Z0, Z1, Z2, Z3, Y0, Y1, X0, X1, 0)
	CMPQ BX, $1
	JEQ  dhhstored
	DHSUM(Z4, Z5, Z6, Z7, Y4, Y5, X4, X5, 256)
	CMPQ BX, $2
	JEQ  dhhstored
	DHSUM(Z8, Z9, Z10, Z11, Y8, Y9, X8, X9, 512)
	CMPQ BX, $3
	JEQ  dhhstored
	DHSUM(Z12, Z13, Z14, Z15, Y12, Y13, X12, X13, 768)

dhhstored:
	ADDQ $4, R10
	ADDQ DX, R8
	DECQ R9
	JNZ  dhhkey
	VZEROUPPER
	RET

// FMHEAD runs one key's step of flashMad64 for the head whose ms and vs
// are at off(R9) and off(R10) (index AX) and whose accumulators are a0-a3
// (y0-y3 their f16 halves), with the key's value converted in Z16-Z19.
#define FMHEAD(off, a0, a1, a2, a3, y0, y1, y2, y3, scale, mad) \
	VMOVSS       off(R9)(AX*4), X20 \
	VUCOMISS     X31, X20 \
	JNE          scale \
	JPS          scale \
	JMP          mad \
scale: \
	VBROADCASTSS X20, Z21 \
	VMULPS       Z21, a0, a0 \
	VMULPS       Z21, a1, a1 \
	VMULPS       Z21, a2, a2 \
	VMULPS       Z21, a3, a3 \
	VCVTPS2PH    $0, a0, y0 \
	VCVTPS2PH    $0, a1, y1 \
	VCVTPS2PH    $0, a2, y2 \
	VCVTPS2PH    $0, a3, y3 \
	VCVTPH2PS    y0, a0 \
	VCVTPH2PS    y1, a1 \
	VCVTPH2PS    y2, a2 \
	VCVTPH2PS    y3, a3 \
mad: \
	VBROADCASTSS off(R10)(AX*4), Z21 \
	VFMADD231PS  Z21, Z16, a0 \
	VFMADD231PS  Z21, Z17, a1 \
	VFMADD231PS  Z21, Z18, a2 \
	VFMADD231PS  Z21, Z19, a3 \
	VCVTPS2PH    $0, a0, y0 \
	VCVTPS2PH    $0, a1, y1 \
	VCVTPS2PH    $0, a2, y2 \
	VCVTPS2PH    $0, a3, y3 \
	VCVTPH2PS    y0, a0 \
	VCVTPH2PS    y1, a1 \
	VCVTPH2PS    y2, a2 \
	VCVTPH2PS    y3, a3

// FMLOAD and FMSTORE move 64 accumulator elements at base between f16
// memory and a0-a3.
#define FMLOAD(o0, o1, o2, o3, a0, a1, a2, a3) \
	VCVTPH2PS o0, a0 \
	VCVTPH2PS o1, a1 \
	VCVTPH2PS o2, a2 \
	VCVTPH2PS o3, a3

#define FMSTORE(o0, o1, o2, o3, a0, a1, a2, a3) \
	VCVTPS2PH $0, a0, o0 \
	VCVTPS2PH $0, a1, o1 \
	VCVTPS2PH $0, a2, o2 \
	VCVTPS2PH $0, a3, o3

// func flashMad64Heads(hd int, acc, v *uint16, vstride int, ms, vs *float32, n, heads int)
// flashMad64 for heads (1-4) accumulators at acc + h·hd elements, head h
// with ms[h·64 + i] and vs[h·64 + i]: each value is converted once, and
// the heads' rounding chains (head h in Z4h-Z4h+3) run side by side.
TEXT ·flashMad64Heads(SB), NOSPLIT, $0-64
	MOVQ hd+0(FP), R8
	SHRQ $6, R8
	MOVQ hd+0(FP), R12
	SHLQ $1, R12             // bytes of one head's accumulator
	LEAQ (R12)(R12*2), R13   // three heads' bytes
	MOVQ acc+8(FP), DI
	MOVQ v+16(FP), SI
	MOVQ vstride+24(FP), DX
	SHLQ $1, DX
	MOVQ ms+32(FP), R9
	MOVQ vs+40(FP), R10
	MOVQ n+48(FP), CX
	MOVQ heads+56(FP), BX
	MOVL $0x3f800000, AX
	VMOVD AX, X31

fmhslice:
	FMLOAD(0(DI), 32(DI), 64(DI), 96(DI), Z0, Z1, Z2, Z3)
	CMPQ BX, $1
	JEQ  fmhloaded
	FMLOAD(0(DI)(R12*1), 32(DI)(R12*1), 64(DI)(R12*1), 96(DI)(R12*1), Z4, Z5, Z6, Z7)
	CMPQ BX, $2
	JEQ  fmhloaded
	FMLOAD(0(DI)(R12*2), 32(DI)(R12*2), 64(DI)(R12*2), 96(DI)(R12*2), Z8, Z9, Z10, Z11)
	CMPQ BX, $3
	JEQ  fmhloaded
	FMLOAD(0(DI)(R13*1), 32(DI)(R13*1), 64(DI)(R13*1), 96(DI)(R13*1), Z12, Z13, Z14, Z15)

fmhloaded:
	MOVQ SI, R11
	XORQ AX, AX

fmhkey:
	VCVTPH2PS 0(R11), Z16
	VCVTPH2PS 32(R11), Z17
	VCVTPH2PS 64(R11), Z18
	VCVTPH2PS 96(R11), Z19
	FMHEAD(0, Z0, Z1, Z2, Z3, Y0, Y1, Y2, Y3, fmhscale0, fmhmad0)
	CMPQ BX, $1
	JEQ  fmhnext
	FMHEAD(256, Z4, Z5, Z6, Z7, Y4, Y5, Y6, Y7, fmhscale1, fmhmad1)
	CMPQ BX, $2
	JEQ  fmhnext
	FMHEAD(512, Z8, Z9, Z10, Z11, Y8, Y9, Y10, Y11, fmhscale2, fmhmad2)
	CMPQ BX, $3
	JEQ  fmhnext
	FMHEAD(768, Z12, Z13, Z14, Z15, Y12, Y13, Y14, Y15, fmhscale3, fmhmad3)

fmhnext:
	ADDQ DX, R11
	INCQ AX
	CMPQ AX, CX
	JLT  fmhkey

	FMSTORE(0(DI), 32(DI), 64(DI), 96(DI), Z0, Z1, Z2, Z3)
	CMPQ BX, $1
	JEQ  fmhstored
	FMSTORE(0(DI)(R12*1), 32(DI)(R12*1), 64(DI)(R12*1), 96(DI)(R12*1), Z4, Z5, Z6, Z7)
	CMPQ BX, $2
	JEQ  fmhstored
	FMSTORE(0(DI)(R12*2), 32(DI)(R12*2), 64(DI)(R12*2), 96(DI)(R12*2), Z8, Z9, Z10, Z11)
	CMPQ BX, $3
	JEQ  fmhstored
	FMSTORE(0(DI)(R13*1), 32(DI)(R13*1), 64(DI)(R13*1), 96(DI)(R13*1), Z12, Z13, Z14, Z15)

fmhstored:
	ADDQ $128, DI
	ADDQ $128, SI
	DECQ R8
	JNZ  fmhslice
	VZEROUPPER
	RET
