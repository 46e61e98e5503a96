//go:build amd64 && !noasm

#include "textflag.h"

// The read probe's loops: 256 bytes per iteration into four accumulators
// of 64-bit lanes (VPADDQ from memory), with software prefetch pfd bytes
// ahead (0: the line being read, which prefetches nothing).

// func readAVX512(p *byte, n, pfd int) uint64
TEXT ·readAVX512(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ pfd+16(FP), DX
	SHRQ $8, CX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3

r512loop:
	PREFETCHT0 (SI)(DX*1)
	PREFETCHT0 64(SI)(DX*1)
	PREFETCHT0 128(SI)(DX*1)
	PREFETCHT0 192(SI)(DX*1)
	VPADDQ 0(SI), Z0, Z0
	VPADDQ 64(SI), Z1, Z1
	VPADDQ 128(SI), Z2, Z2
	VPADDQ 192(SI), Z3, Z3
	ADDQ   $256, SI
	DECQ   CX
	JNZ    r512loop

	VPADDQ Z1, Z0, Z0
	VPADDQ Z3, Z2, Z2
	VPADDQ Z2, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDQ Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDQ X1, X0, X0
	VMOVQ X0, AX
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET

// func readAVX2(p *byte, n, pfd int) uint64
TEXT ·readAVX2(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ pfd+16(FP), DX
	SHRQ $8, CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3

r256loop:
	PREFETCHT0 (SI)(DX*1)
	PREFETCHT0 64(SI)(DX*1)
	PREFETCHT0 128(SI)(DX*1)
	PREFETCHT0 192(SI)(DX*1)
	VPADDQ 0(SI), Y0, Y0
	VPADDQ 32(SI), Y1, Y1
	VPADDQ 64(SI), Y2, Y2
	VPADDQ 96(SI), Y3, Y3
	VPADDQ 128(SI), Y0, Y0
	VPADDQ 160(SI), Y1, Y1
	VPADDQ 192(SI), Y2, Y2
	VPADDQ 224(SI), Y3, Y3
	ADDQ   $256, SI
	DECQ   CX
	JNZ    r256loop

	VPADDQ Y1, Y0, Y0
	VPADDQ Y3, Y2, Y2
	VPADDQ Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDQ X1, X0, X0
	VMOVQ X0, AX
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET
