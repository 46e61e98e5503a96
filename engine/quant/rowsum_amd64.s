//go:build amd64 && !noasm

#include "textflag.h"

// func addScaledRows8(dst *float32, n int, coef *float32, rows int, m *float32, stride int)
//
// dst is walked in chunks of 64 elements (8 accumulators, enough
// independent additions to hide their latency), then 8. For each chunk the
// rows are added in order: dst += coef[r]·m[r], VMULPS then VADDPS, as the
// Go loop rounds.
TEXT ·addScaledRows8(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ coef+16(FP), DX
	MOVQ rows+24(FP), R8
	MOVQ m+32(FP), SI
	MOVQ stride+40(FP), R9
	SHLQ $2, R9 // stride in bytes

chunk64:
	CMPQ CX, $64
	JLT  chunk8
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	MOVQ SI, AX  // row pointer
	MOVQ DX, BX  // coefficient pointer
	MOVQ R8, R10 // rows left

rows64:
	VBROADCASTSS (BX), Y8
	VMULPS 0(AX), Y8, Y9
	VMULPS 32(AX), Y8, Y10
	VMULPS 64(AX), Y8, Y11
	VMULPS 96(AX), Y8, Y12
	VADDPS Y9, Y0, Y0
	VADDPS Y10, Y1, Y1
	VADDPS Y11, Y2, Y2
	VADDPS Y12, Y3, Y3
	VMULPS 128(AX), Y8, Y9
	VMULPS 160(AX), Y8, Y10
	VMULPS 192(AX), Y8, Y11
	VMULPS 224(AX), Y8, Y12
	VADDPS Y9, Y4, Y4
	VADDPS Y10, Y5, Y5
	VADDPS Y11, Y6, Y6
	VADDPS Y12, Y7, Y7
	ADDQ $4, BX
	ADDQ R9, AX
	DECQ R10
	JNZ  rows64
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	ADDQ $256, DI
	ADDQ $256, SI
	SUBQ $64, CX
	JMP  chunk64

chunk8:
	CMPQ CX, $8
	JLT  done
	VMOVUPS 0(DI), Y0
	MOVQ SI, AX
	MOVQ DX, BX
	MOVQ R8, R10

rows8:
	VBROADCASTSS (BX), Y8
	VMULPS 0(AX), Y8, Y9
	VADDPS Y9, Y0, Y0
	ADDQ $4, BX
	ADDQ R9, AX
	DECQ R10
	JNZ  rows8
	VMOVUPS Y0, 0(DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JMP  chunk8

done:
	VZEROUPPER
	RET

// func scaleMul8(dst, x, w *float32, n int, s float32)
//
// dst = (x·s)·w, 32 elements a step, then 8: VMULPS twice, as the Go loop
// rounds.
TEXT ·scaleMul8(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS s+32(FP), Y8

sm32:
	CMPQ CX, $32
	JLT  sm8
	VMULPS 0(SI), Y8, Y0
	VMULPS 32(SI), Y8, Y1
	VMULPS 64(SI), Y8, Y2
	VMULPS 96(SI), Y8, Y3
	VMULPS 0(DX), Y0, Y0
	VMULPS 32(DX), Y1, Y1
	VMULPS 64(DX), Y2, Y2
	VMULPS 96(DX), Y3, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $128, SI
	ADDQ $128, DX
	SUBQ $32, CX
	JMP  sm32

sm8:
	CMPQ CX, $8
	JLT  smdone
	VMULPS 0(SI), Y8, Y0
	VMULPS 0(DX), Y0, Y0
	VMOVUPS Y0, 0(DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP  sm8

smdone:
	VZEROUPPER
	RET

// func add8(dst, x, y *float32, n int)
//
// dst = x + y, 32 elements a step, then 8.
TEXT ·add8(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DX
	MOVQ n+24(FP), CX

add32:
	CMPQ CX, $32
	JLT  addtail
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VADDPS  0(DX), Y0, Y0
	VADDPS  32(DX), Y1, Y1
	VADDPS  64(DX), Y2, Y2
	VADDPS  96(DX), Y3, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $128, SI
	ADDQ $128, DX
	SUBQ $32, CX
	JMP  add32

addtail:
	CMPQ CX, $8
	JLT  adddone
	VMOVUPS 0(SI), Y0
	VADDPS  0(DX), Y0, Y0
	VMOVUPS Y0, 0(DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP  addtail

adddone:
	VZEROUPPER
	RET

// func squareSums8(s *[8]float64, in *float32, n int)
//
// Lanes 0-3 of the eight partial sums in Y0, lanes 4-7 in Y1: each step
// squares eight elements in float32 (VMULPS), widens them to float64
// (VCVTPS2PD) and adds element 8k+j to lane j.
TEXT ·squareSums8(SB), NOSPLIT, $0-24
	MOVQ s+0(FP), DI
	MOVQ in+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1

sqloop:
	VMOVUPS      (SI), Y2
	VMULPS       Y2, Y2, Y2
	VCVTPS2PD    X2, Y3
	VEXTRACTF128 $1, Y2, X4
	VCVTPS2PD    X4, Y4
	VADDPD       Y3, Y0, Y0
	VADDPD       Y4, Y1, Y1
	ADDQ         $32, SI
	DECQ         CX
	JNZ          sqloop
	VMOVUPD Y0, 0(DI)
	VMOVUPD Y1, 32(DI)
	VZEROUPPER
	RET
