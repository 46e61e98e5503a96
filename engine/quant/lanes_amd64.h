// Macros shared by the kernels that keep llama.cpp's eight float32 lanes
// per output (Q2_Kx16, Q3_Kx16, the i-quant panel): each keeps an
// activation row's lanes in memory at DI, lane u of its 16 outputs at
// 64·u bytes past the row's start.

// LANESHSUM8 adds the eight lanes of the activation row at off(DI) into
// Z0 as hsum8 does: ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)). Z1-Z3 scratch.
#define LANESHSUM8(off) \
	VMOVUPS off(DI), Z0 \
	VMOVUPS off+64(DI), Z1 \
	VMOVUPS off+128(DI), Z2 \
	VMOVUPS off+192(DI), Z3 \
	VADDPS  off+256(DI), Z0, Z0 \
	VADDPS  off+320(DI), Z1, Z1 \
	VADDPS  off+384(DI), Z2, Z2 \
	VADDPS  off+448(DI), Z3, Z3 \
	VADDPS  Z2, Z0, Z0 \
	VADDPS  Z3, Z1, Z1 \
	VADDPS  Z1, Z0, Z0
