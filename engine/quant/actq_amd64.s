//go:build amd64 && !noasm

#include "textflag.h"

// func quantQ8_0AVX2(dst *byte, src *float32, nb int) int
//
// Per block of 32: amax as the largest absolute value's bits (for finite
// floats the integer order of |x|'s bits is the float order, and Inf and
// NaNs compare above every finite value, so one unsigned compare finds
// them); d = amax/127 to f16; quants = round-half-even(x·(127/amax)) with
// VCVTPS2DQ under the default rounding mode, packed to bytes in order.
TEXT ·quantQ8_0AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nb+16(FP), CX
	XORQ AX, AX
	MOVL $0x7fffffff, DX
	VMOVD DX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x42fe0000, DX // 127.0
	VMOVD DX, X14
	VMOVDQU q8Perm<>(SB), Y13

loop:
	CMPQ AX, CX
	JGE  done
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VPAND   Y15, Y0, Y4
	VPAND   Y15, Y1, Y5
	VPAND   Y15, Y2, Y6
	VPAND   Y15, Y3, Y7
	VPMAXUD Y5, Y4, Y4
	VPMAXUD Y7, Y6, Y6
	VPMAXUD Y6, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPMAXUD X5, X4, X4
	VPSHUFD $0x4e, X4, X5
	VPMAXUD X5, X4, X4
	VPSHUFD $0xb1, X4, X5
	VPMAXUD X5, X4, X4
	VMOVD   X4, DX
	CMPL    DX, $0x7f800000
	JAE     done
	TESTL   DX, DX
	JZ      zero
	CMPL    DX, $0x03000000
	JB      done
	VDIVSS  X14, X4, X5 // d = amax / 127
	VDIVSS  X4, X14, X6 // id = 127 / amax
	JMP     scaled

zero:
	VXORPS X5, X5, X5
	VXORPS X6, X6, X6

scaled:
	VCVTPS2PH $0, X5, X7
	VPEXTRW   $0, X7, DX
	MOVW      DX, 0(DI)
	VBROADCASTSS X6, Y6
	VMULPS    Y6, Y0, Y0
	VMULPS    Y6, Y1, Y1
	VMULPS    Y6, Y2, Y2
	VMULPS    Y6, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD    Y0, Y13, Y0
	VMOVDQU   Y0, 2(DI)
	ADDQ $128, SI
	ADDQ $34, DI
	INCQ AX
	JMP  loop

done:
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET

// The packs leave 4-byte groups in the order 0 2 4 6 1 3 5 7 of the
// block; VPERMD with these indices restores it.
DATA q8Perm<>+0(SB)/4, $0
DATA q8Perm<>+4(SB)/4, $4
DATA q8Perm<>+8(SB)/4, $1
DATA q8Perm<>+12(SB)/4, $5
DATA q8Perm<>+16(SB)/4, $2
DATA q8Perm<>+20(SB)/4, $6
DATA q8Perm<>+24(SB)/4, $3
DATA q8Perm<>+28(SB)/4, $7
GLOBL q8Perm<>(SB), RODATA|NOPTR, $32

// func quantQ8_KAVX512(qs *byte, x *float32) float32
//
// Quantizes one super-block of 256 values to the 256 Q8_K quants at qs
// and returns the inverse scale -127/vmax, vmax being the first value of
// largest magnitude (found as the first whose |x| bits equal the largest,
// as absMax's strict comparison picks it); quants are min(127,
// round-half-even(iscale·x)). It returns 0 without writing when the
// largest magnitude is zero, infinite, NaN or below 2⁻¹²¹, which the
// scalar code handles.
TEXT ·quantQ8_KAVX512(SB), NOSPLIT, $0-20
	MOVQ qs+0(FP), DI
	MOVQ x+8(FP), SI
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z31
	VPANDD 0(SI), Z31, Z0
	VPANDD 64(SI), Z31, Z1
	VPANDD 128(SI), Z31, Z2
	VPANDD 192(SI), Z31, Z3
	VPANDD 256(SI), Z31, Z4
	VPANDD 320(SI), Z31, Z5
	VPANDD 384(SI), Z31, Z6
	VPANDD 448(SI), Z31, Z7
	VPANDD 512(SI), Z31, Z8
	VPANDD 576(SI), Z31, Z9
	VPANDD 640(SI), Z31, Z10
	VPANDD 704(SI), Z31, Z11
	VPANDD 768(SI), Z31, Z12
	VPANDD 832(SI), Z31, Z13
	VPANDD 896(SI), Z31, Z14
	VPANDD 960(SI), Z31, Z15
	VPMAXUD Z8, Z0, Z0
	VPMAXUD Z9, Z1, Z1
	VPMAXUD Z10, Z2, Z2
	VPMAXUD Z11, Z3, Z3
	VPMAXUD Z12, Z4, Z4
	VPMAXUD Z13, Z5, Z5
	VPMAXUD Z14, Z6, Z6
	VPMAXUD Z15, Z7, Z7
	VPMAXUD Z4, Z0, Z0
	VPMAXUD Z5, Z1, Z1
	VPMAXUD Z6, Z2, Z2
	VPMAXUD Z7, Z3, Z3
	VPMAXUD Z2, Z0, Z0
	VPMAXUD Z3, Z1, Z1
	VPMAXUD Z1, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPMAXUD Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPMAXUD X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPMAXUD X1, X0, X0
	VPSHUFD $0xb1, X0, X1
	VPMAXUD X1, X0, X0
	VMOVD X0, AX
	CMPL AX, $0x7f800000
	JAE  kbail
	CMPL AX, $0x03000000
	JB   kbail
	VPBROADCASTD AX, Z16
	XORQ CX, CX

kfind:
	VPANDD   (SI)(CX*1), Z31, Z17
	VPCMPEQD Z16, Z17, K1
	KMOVW    K1, AX
	TESTL    AX, AX
	JNZ      kfound
	ADDQ     $64, CX
	JMP      kfind

kfound:
	BSFL   AX, AX
	ADDQ   SI, CX
	VMOVSS (CX)(AX*4), X18
	MOVL   $0xc2fe0000, DX // -127
	VMOVD  DX, X19
	VDIVSS X18, X19, X19
	VBROADCASTSS X19, Z19
	MOVL   $127, AX
	VPBROADCASTD AX, Z20
	MOVQ   $16, CX

kquant:
	VMULPS    (SI), Z19, Z21
	VCVTPS2DQ Z21, Z21
	VPMINSD   Z20, Z21, Z21
	VPMOVSDB  Z21, (DI)
	ADDQ $64, SI
	ADDQ $16, DI
	DECQ CX
	JNZ  kquant
	VMOVSS X19, ret+16(FP)
	VZEROUPPER
	RET

kbail:
	MOVL $0, ret+16(FP)
	VZEROUPPER
	RET
