//go:build amd64 && !noasm

#include "textflag.h"

// func maxMinAVX512(x *float32, n int) (hi, lo float32, special bool)
//
// n a positive multiple of 16. VMAXPS and VMINPS over 16 lanes, −Inf
// lanes left out of the minimum (taken as +Inf there); a lane whose
// exponent bits are all ones and that is not −Inf (NaN or +Inf) sets
// special.
TEXT ·maxMinAVX512(SB), NOSPLIT, $0-25
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $4, CX
	MOVL $0xff800000, AX
	VPBROADCASTD AX, Z1 // the running maximum, -Inf
	VPBROADCASTD AX, Z5 // -Inf
	MOVL $0x7f800000, AX
	VPBROADCASTD AX, Z2 // the running minimum, +Inf
	VPBROADCASTD AX, Z3 // the exponent mask, and +Inf
	KXORW K2, K2, K2

mmloop:
	VMOVUPS   (SI), Z0
	VMAXPS    Z0, Z1, Z1
	VPCMPEQD  Z5, Z0, K3     // -Inf
	VPANDD    Z3, Z0, Z4
	VPCMPEQD  Z3, Z4, K1     // NaN or ±Inf
	KANDNW    K1, K3, K1     // NaN or +Inf
	KORW      K1, K2, K2
	VMOVAPS   Z3, K3, Z0     // -Inf lanes out of the minimum
	VMINPS    Z0, Z2, Z2
	ADDQ      $64, SI
	DECQ      CX
	JNZ       mmloop

	VEXTRACTF64X4 $1, Z1, Y0
	VMAXPS        Y0, Y1, Y1
	VEXTRACTF128  $1, Y1, X0
	VMAXPS        X0, X1, X1
	VPERMILPS     $0x4e, X1, X0
	VMAXPS        X0, X1, X1
	VMOVSHDUP     X1, X0
	VMAXSS        X0, X1, X1
	VMOVSS        X1, hi+16(FP)
	VEXTRACTF64X4 $1, Z2, Y0
	VMINPS        Y0, Y2, Y2
	VEXTRACTF128  $1, Y2, X0
	VMINPS        X0, X2, X2
	VPERMILPS     $0x4e, X2, X0
	VMINPS        X0, X2, X2
	VMOVSHDUP     X2, X0
	VMINSS        X0, X2, X2
	VMOVSS        X2, lo+20(FP)
	KMOVW         K2, AX
	TESTL         AX, AX
	SETNE         special+24(FP)
	VZEROUPPER
	RET

// func indexCmpAVX512(x *float32, n int, v float32, equal bool) int
//
// The index of the first of n elements (a positive multiple of 16) equal
// to v (equal) or greater than v (ordered: a NaN never is), or n.
TEXT ·indexCmpAVX512(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS v+16(FP), Z1
	XORQ         DX, DX
	MOVBQZX      equal+20(FP), AX
	TESTQ        AX, AX
	JNZ          eqloop

gtloop:
	VCMPPS   $0x11, (SI)(DX*4), Z1, K1 // v < x, ordered, quiet
	KORTESTW K1, K1
	JNZ      found
	ADDQ     $16, DX
	CMPQ     DX, CX
	JB       gtloop
	MOVQ     CX, ret+24(FP)
	VZEROUPPER
	RET

eqloop:
	VCMPPS   $0x00, (SI)(DX*4), Z1, K1 // v == x, ordered, quiet
	KORTESTW K1, K1
	JNZ      found
	ADDQ     $16, DX
	CMPQ     DX, CX
	JB       eqloop
	MOVQ     CX, ret+24(FP)
	VZEROUPPER
	RET

found:
	KMOVW K1, AX
	TZCNTL AX, AX
	ADDQ   AX, DX
	MOVQ   DX, ret+24(FP)
	VZEROUPPER
	RET

// func setWhereClearAVX512(x *float32, bits *uint64, n int, v float32)
//
// n a positive multiple of 64: per 16 elements, the 16 bits' complement
// masks a store of v.
TEXT ·setWhereClearAVX512(SB), NOSPLIT, $0-28
	MOVQ         x+0(FP), DI
	MOVQ         bits+8(FP), SI
	MOVQ         n+16(FP), CX
	SHRQ         $4, CX
	VBROADCASTSS v+24(FP), Z0

swcloop:
	KMOVW      (SI), K1
	KNOTW      K1, K1
	VMOVUPS    Z0, K1, (DI)
	ADDQ       $2, SI
	ADDQ       $64, DI
	DECQ       CX
	JNZ        swcloop
	VZEROUPPER
	RET
