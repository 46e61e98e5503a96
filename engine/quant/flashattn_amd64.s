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
