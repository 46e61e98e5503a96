//go:build amd64 && !noasm

#include "textflag.h"

// func decodeQ8Half(dst *uint16, src *byte, stride, rows, blocks int)
// rows rows of blocks Q8_0 blocks (34 bytes: f16 scale, 32 int8), row r
// at src + r·stride, to f16 at dst, 32 values per block: each int8 to
// float32, times the scale (one rounding, as float32(q)·d), rounded to
// f16 to nearest even.
TEXT ·decodeQ8Half(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), R8
	MOVQ rows+24(FP), DX
	MOVQ blocks+32(FP), R9

q8row:
	MOVQ SI, R10
	MOVQ R9, CX

q8block:
	MOVWLZX      (R10), AX
	VMOVD        AX, X0
	VCVTPH2PS    X0, X0
	VBROADCASTSS X0, Z0
	VPMOVSXBD    2(R10), Z1
	VPMOVSXBD    18(R10), Z2
	VCVTDQ2PS    Z1, Z1
	VCVTDQ2PS    Z2, Z2
	VMULPS       Z0, Z1, Z1
	VMULPS       Z0, Z2, Z2
	VCVTPS2PH    $0, Z1, Y1
	VCVTPS2PH    $0, Z2, Y2
	VMOVDQU      Y1, (DI)
	VMOVDQU      Y2, 32(DI)
	ADDQ         $34, R10
	ADDQ         $64, DI
	DECQ         CX
	JNZ          q8block
	ADDQ         R8, SI
	DECQ         DX
	JNZ          q8row
	VZEROUPPER
	RET

// func decodeQ4Half(dst *uint16, src *byte, stride, rows, blocks int)
// As decodeQ8Half for Q4_0 blocks (18 bytes: f16 scale, 16 bytes of
// nibbles: byte i holds value i in its low nibble and value i+16 in its
// high one, each minus 8).
TEXT ·decodeQ4Half(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), R8
	MOVQ rows+24(FP), DX
	MOVQ blocks+32(FP), R9
	MOVL $15, AX
	VPBROADCASTD AX, Z5
	MOVL $8, AX
	VPBROADCASTD AX, Z6

q4row:
	MOVQ SI, R10
	MOVQ R9, CX

q4block:
	MOVWLZX      (R10), AX
	VMOVD        AX, X0
	VCVTPH2PS    X0, X0
	VBROADCASTSS X0, Z0
	VPMOVZXBD    2(R10), Z1
	VPSRLD       $4, Z1, Z2
	VPANDD       Z5, Z1, Z1
	VPSUBD       Z6, Z1, Z1
	VPSUBD       Z6, Z2, Z2
	VCVTDQ2PS    Z1, Z1
	VCVTDQ2PS    Z2, Z2
	VMULPS       Z0, Z1, Z1
	VMULPS       Z0, Z2, Z2
	VCVTPS2PH    $0, Z1, Y1
	VCVTPS2PH    $0, Z2, Y2
	VMOVDQU      Y1, (DI)
	VMOVDQU      Y2, 32(DI)
	ADDQ         $18, R10
	ADDQ         $64, DI
	DECQ         CX
	JNZ          q4block
	ADDQ         R8, SI
	DECQ         DX
	JNZ          q4row
	VZEROUPPER
	RET
