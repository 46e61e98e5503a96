//go:build amd64 && !noasm

#include "textflag.h"

// RED reduces the 16 lanes of z (y, x: its lower halves) as
// _mm512_reduce_add_ps does (halves of 8, of 4, then pairs), exactly as
// dotF16F32x16 does, and stores the float32 at m.
#define RED(z, y, x, m) \
	VEXTRACTF64X4 $1, z, Y30 \
	VADDPS        Y30, y, Y30 \
	VEXTRACTF32X4 $1, Y30, X31 \
	VADDPS        X31, X30, X30 \
	VPERMILPS     $0x4e, X30, X31 \
	VADDPS        X31, X30, X30 \
	VMOVSHDUP     X30, X31 \
	VADDSS        X31, X30, X30 \
	VMOVSS        X30, m

// func tileF16F32x16(n int, w *uint16, wstride int, a *float32, astride int, rows int, dst *float32, dstride int)
// Four F16 weight rows (w, w+wstride, … elements apart) against rows
// (1 to 4) float32 activation rows (a, a+astride, …), n values each (n > 0,
// a multiple of 16): for each weight row i and activation row r, one ZMM
// of 16 lanes accumulates a·w with FMA over the row in steps of 16,
// exactly as dotF16F32x16 does for one pair, is reduced as it reduces,
// and lands at dst[r·dstride+i]. The pairs' chains are independent, so
// running them side by side fills the FMA pipeline that one chain leaves
// waiting, and each weight chunk is converted once for all activation
// rows.
TEXT ·tileF16F32x16(SB), NOSPLIT, $0-64
	MOVQ n+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ wstride+16(FP), R8
	SHLQ $1, R8              // bytes
	LEAQ (R8)(R8*2), R9      // 3 rows
	MOVQ a+24(FP), DI
	MOVQ astride+32(FP), R10
	SHLQ $2, R10             // bytes
	LEAQ (R10)(R10*2), R11   // 3 rows
	MOVQ rows+40(FP), DX
	MOVQ dst+48(FP), BX
	MOVQ dstride+56(FP), R12
	SHLQ $2, R12             // bytes

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

	CMPQ DX, $1
	JEQ  tf16r1
	CMPQ DX, $2
	JEQ  tf16r2
	CMPQ DX, $3
	JEQ  tf16r3

tf16r4:
	VCVTPH2PS   (SI), Z16
	VCVTPH2PS   (SI)(R8*1), Z17
	VCVTPH2PS   (SI)(R8*2), Z18
	VCVTPH2PS   (SI)(R9*1), Z19
	VMOVUPS     (DI), Z20
	VMOVUPS     (DI)(R10*1), Z21
	VMOVUPS     (DI)(R10*2), Z22
	VMOVUPS     (DI)(R11*1), Z23
	VFMADD231PS Z20, Z16, Z0
	VFMADD231PS Z20, Z17, Z1
	VFMADD231PS Z20, Z18, Z2
	VFMADD231PS Z20, Z19, Z3
	VFMADD231PS Z21, Z16, Z4
	VFMADD231PS Z21, Z17, Z5
	VFMADD231PS Z21, Z18, Z6
	VFMADD231PS Z21, Z19, Z7
	VFMADD231PS Z22, Z16, Z8
	VFMADD231PS Z22, Z17, Z9
	VFMADD231PS Z22, Z18, Z10
	VFMADD231PS Z22, Z19, Z11
	VFMADD231PS Z23, Z16, Z12
	VFMADD231PS Z23, Z17, Z13
	VFMADD231PS Z23, Z18, Z14
	VFMADD231PS Z23, Z19, Z15
	ADDQ        $32, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JNZ         tf16r4
	LEAQ        (BX)(R12*2), R13
	ADDQ        R12, R13     // row 3
	RED(Z12, Y12, X12, 0(R13))
	RED(Z13, Y13, X13, 4(R13))
	RED(Z14, Y14, X14, 8(R13))
	RED(Z15, Y15, X15, 12(R13))
	JMP         tf16store3

tf16r3:
	VCVTPH2PS   (SI), Z16
	VCVTPH2PS   (SI)(R8*1), Z17
	VCVTPH2PS   (SI)(R8*2), Z18
	VCVTPH2PS   (SI)(R9*1), Z19
	VMOVUPS     (DI), Z20
	VMOVUPS     (DI)(R10*1), Z21
	VMOVUPS     (DI)(R10*2), Z22
	VFMADD231PS Z20, Z16, Z0
	VFMADD231PS Z20, Z17, Z1
	VFMADD231PS Z20, Z18, Z2
	VFMADD231PS Z20, Z19, Z3
	VFMADD231PS Z21, Z16, Z4
	VFMADD231PS Z21, Z17, Z5
	VFMADD231PS Z21, Z18, Z6
	VFMADD231PS Z21, Z19, Z7
	VFMADD231PS Z22, Z16, Z8
	VFMADD231PS Z22, Z17, Z9
	VFMADD231PS Z22, Z18, Z10
	VFMADD231PS Z22, Z19, Z11
	ADDQ        $32, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JNZ         tf16r3

tf16store3:
	LEAQ (BX)(R12*2), R13 // row 2
	RED(Z8, Y8, X8, 0(R13))
	RED(Z9, Y9, X9, 4(R13))
	RED(Z10, Y10, X10, 8(R13))
	RED(Z11, Y11, X11, 12(R13))
	JMP  tf16store2

tf16r2:
	VCVTPH2PS   (SI), Z16
	VCVTPH2PS   (SI)(R8*1), Z17
	VCVTPH2PS   (SI)(R8*2), Z18
	VCVTPH2PS   (SI)(R9*1), Z19
	VMOVUPS     (DI), Z20
	VMOVUPS     (DI)(R10*1), Z21
	VFMADD231PS Z20, Z16, Z0
	VFMADD231PS Z20, Z17, Z1
	VFMADD231PS Z20, Z18, Z2
	VFMADD231PS Z20, Z19, Z3
	VFMADD231PS Z21, Z16, Z4
	VFMADD231PS Z21, Z17, Z5
	VFMADD231PS Z21, Z18, Z6
	VFMADD231PS Z21, Z19, Z7
	ADDQ        $32, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JNZ         tf16r2

tf16store2:
	LEAQ (BX)(R12*1), R13 // row 1
	RED(Z4, Y4, X4, 0(R13))
	RED(Z5, Y5, X5, 4(R13))
	RED(Z6, Y6, X6, 8(R13))
	RED(Z7, Y7, X7, 12(R13))
	JMP  tf16store1

tf16r1:
	VCVTPH2PS   (SI), Z16
	VCVTPH2PS   (SI)(R8*1), Z17
	VCVTPH2PS   (SI)(R8*2), Z18
	VCVTPH2PS   (SI)(R9*1), Z19
	VMOVUPS     (DI), Z20
	VFMADD231PS Z20, Z16, Z0
	VFMADD231PS Z20, Z17, Z1
	VFMADD231PS Z20, Z18, Z2
	VFMADD231PS Z20, Z19, Z3
	ADDQ        $32, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JNZ         tf16r1

tf16store1:
	RED(Z0, Y0, X0, 0(BX))
	RED(Z1, Y1, X1, 4(BX))
	RED(Z2, Y2, X2, 8(BX))
	RED(Z3, Y3, X3, 12(BX))
	VZEROUPPER
	RET
