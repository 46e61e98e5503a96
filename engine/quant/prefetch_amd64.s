//go:build amd64 && !noasm

#include "textflag.h"

// func prefetchLines(p unsafe.Pointer, n int)
// PREFETCHT2 (to L2) of the line of every 64th byte from p and of the
// last byte's: a prefetch never faults.
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	LEAQ -1(SI)(CX*1), DX
pfloop:
	PREFETCHT2 (SI)
	ADDQ $64, SI
	CMPQ SI, DX
	JLE pfloop
	PREFETCHT2 (DX)
	RET
