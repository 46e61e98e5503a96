//go:build amd64 && !noasm

#include "textflag.h"

// func cvtHalf8(dst *float32, src *uint16, n int)
TEXT ·cvtHalf8(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX

loop:
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       loop
	VZEROUPPER
	RET

// func cvtFloat8(dst *uint16, src *float32, n int)
TEXT ·cvtFloat8(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX

floatloop:
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0, Y0, X1 // round to nearest even
	VMOVDQU   X1, (DI)
	ADDQ      $32, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       floatloop
	VZEROUPPER
	RET

// func roundHalf8(x *float32, n int)
TEXT ·roundHalf8(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	SHRQ $3, CX

roundloop:
	VMOVUPS   (DI), Y0
	VCVTPS2PH $0, Y0, X1
	VCVTPH2PS X1, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $32, DI
	DECQ      CX
	JNZ       roundloop
	VZEROUPPER
	RET
