//go:build amd64 && !noasm

#include "textflag.h"

// The RoPE rotations of rope.go with AVX-512F: the products of x1 in
// float32 (VMULPS), then x0·cos (x0·sin) plus that product in float64
// (VCVTPS2PD, one VFMADD231PD/VFMSUB231PD: the float32 operands' product
// is exact in float64, so the sum is rounded once), converted back to
// float32 (VCVTPD2PS) with the default rounding, as fma64 does.

// func ropePairsAVX512(v, cs *float32, n int)
// n values (n/2 pairs), n a positive multiple of 8; four pairs a step.
TEXT ·ropePairsAVX512(SB), NOSPLIT, $0-24
	MOVQ v+0(FP), DI
	MOVQ cs+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	// Y7: the sign bit in the even lanes, which take −x1·sin.
	MOVQ $0x80000000, AX
	MOVQ AX, X7
	VPBROADCASTQ X7, Y7

ropepairs:
	VMOVUPS      (DI), Y0
	VMOVSLDUP    Y0, Y1        // x0 x0 …
	VMOVSHDUP    Y0, Y2        // x1 x1 …
	VMOVUPS      (SI), Y3      // cos sin …
	VPERMILPS    $0xb1, Y3, Y4 // sin cos …
	VMULPS       Y4, Y2, Y5    // x1·sin, x1·cos (float32)
	VXORPS       Y7, Y5, Y5    // −x1·sin, x1·cos
	VCVTPS2PD    Y1, Z1
	VCVTPS2PD    Y3, Z3
	VCVTPS2PD    Y5, Z5
	VFMADD231PD  Z3, Z1, Z5    // x0·cos − x1·sin, x0·sin + x1·cos
	VCVTPD2PS    Z5, Y5
	VMOVUPS      Y5, (DI)
	ADDQ         $32, DI
	ADDQ         $32, SI
	DECQ         CX
	JNZ          ropepairs
	VZEROUPPER
	RET

// func ropeHalvesAVX512(lo, hi, cos, sin *float32, n int)
// n pairs, n a positive multiple of 8; eight pairs a step.
TEXT ·ropeHalvesAVX512(SB), NOSPLIT, $0-40
	MOVQ lo+0(FP), DI
	MOVQ hi+8(FP), SI
	MOVQ cos+16(FP), R8
	MOVQ sin+24(FP), R9
	MOVQ n+32(FP), CX
	SHRQ $3, CX

ropehalves:
	VMOVUPS      (DI), Y0   // x0
	VMOVUPS      (SI), Y1   // x1
	VMOVUPS      (R8), Y2   // cos
	VMOVUPS      (R9), Y3   // sin
	VMULPS       Y3, Y1, Y4 // x1·sin (float32)
	VMULPS       Y2, Y1, Y5 // x1·cos
	VCVTPS2PD    Y0, Z0
	VCVTPS2PD    Y2, Z2
	VCVTPS2PD    Y3, Z3
	VCVTPS2PD    Y4, Z4
	VCVTPS2PD    Y5, Z5
	VFMSUB231PD  Z2, Z0, Z4 // x0·cos − x1·sin
	VFMADD231PD  Z3, Z0, Z5 // x0·sin + x1·cos
	VCVTPD2PS    Z4, Y4
	VCVTPD2PS    Z5, Y5
	VMOVUPS      Y4, (DI)
	VMOVUPS      Y5, (SI)
	ADDQ         $32, DI
	ADDQ         $32, SI
	ADDQ         $32, R8
	ADDQ         $32, R9
	DECQ         CX
	JNZ          ropehalves
	VZEROUPPER
	RET
