package quant

// FastPackedFor returns the repacked layout the CPU backend's default
// (not exact) mode uses for weight type t on this CPU, or nil where it
// has none: the layouts of PackedFor, whose orders are llama.cpp's or
// their own, plus those whose summation order is chosen for speed alone
// (F16x16, BF16x16, BF16x16AMX), which the exact mode must not use, and
// IQ4_XSx16, llama.cpp's prompt order for IQ4_XS, which the default mode
// takes for every call (the exact mode keeps the vector order of
// llama.cpp's decode, and with llama.cpp's batching switches as llama.cpp
// does: IQ4XSPanel). With amx, BF16 weights take AMX tiles where the CPU
// has AMX-BF16 and the OS grants the tile state (BF16x16AMX), and Q8_0
// weights where it has AMX-INT8 (Q8_0x16AMX, in the order of llama.cpp's
// AMX kernels, which the exact mode computes with its own kernels).
func FastPackedFor(t Type, amx bool) *Packed {
	switch {
	case t == BF16 && amx && AMXTiles():
		return bf16x16AMXPacked()
	case t == Q8_0 && amx:
		if p := q8x16AMXPacked(); p != nil {
			return p
		}
		return PackedFor(t)
	case t == F16 && f16x16Kernel != nil:
		return &Packed{Name: "F16x16", Act: F32, BlockSize: QK, BlockBytes: F16x16BlockBytes,
			Repack: RepackF16x16, Kernel: f16x16Kernel, Accumulate: f16x16AccKernel,
			Decode: f16x16Decode, DecodeGroups: half16DecodeGroups,
			DecodeMulti: f16x16DecodeMulti, DecodeRows: f16x16DecodeRows, Pair: f16x16Pair}
	case t == BF16 && bf16x16Kernel != nil:
		if p := bf16zPacked(); p != nil {
			return p
		}
		return bf16x16Packed()
	case t == IQ4_XS && iq4xsx16Kernel != nil:
		return IQ4XSPanel()
	}
	return PackedFor(t)
}

// bf16x16Packed returns the BF16x16 layout (nil where this CPU has no
// kernel for it).
func bf16x16Packed() *Packed {
	if bf16x16Kernel == nil {
		return nil
	}
	return &Packed{Name: "BF16x16", Act: BF16, BlockSize: QK, BlockBytes: F16x16BlockBytes,
		Repack: RepackBF16x16, Kernel: bf16x16Kernel, Accumulate: bf16x16AccKernel,
		Decode: bf16x16Decode, DecodeGroups: half16DecodeGroups,
		DecodeMulti: bf16x16DecodeMulti, DecodeRows: bf16x16DecodeRows, Pair: bf16x16Pair}
}

// IQ4XSPanel returns the IQ4_XSx16 layout whatever the CPU: its kernel
// where this CPU has one, the pure-Go reference otherwise (slow). Its order
// is that of llama.cpp's IQ4_XS prompt path (the "IQ panel" gemm, which
// llama.cpp takes for calls of eight tokens or more on AVX2 machines,
// weights of a multiple of 8 rows and of 256 columns): per super-block the
// exact integer Σ (s−32)·Σ v·a, fused-multiply-added with d·d_a. The exact
// mode with llama.cpp's batching takes it for such calls.
func IQ4XSPanel() *Packed {
	k, acc := iq4xsx16Kernel, iq4xsx16AccKernel
	if k == nil {
		k, acc = IQ4XSx16Reference, IQ4XSx16AccReference
	}
	return &Packed{Name: "IQ4_XSx16", Act: Q8_K, BlockSize: QKK, BlockBytes: IQ4XSx16BlockBytes, AuxWords: IQ4XSx16AuxWords,
		Aux: IQ4XSx16Aux, Repack: RepackIQ4XSx16, Kernel: k, Accumulate: acc}
}

// bf16AMXTileRows is the most activation rows of one call of the BF16x16
// AMX kernel: two row tiles of 16, which with a pair of groups of 16
// weight rows make four float32 accumulator tiles.
const bf16AMXTileRows = 32

// bf16x16AMXPacked returns the BF16x16AMX layout: the BF16x16 bytes (each
// block is an AMX-BF16 B tile as it lies), multiplied by bf16 activations
// with TDPBF16PS for every batch, decode included, so that a prompt and
// its decode steps agree bit for bit. The instruction adds a block's 32
// products to its float32 accumulator in the hardware's own order, which
// no sequence of vector instructions reproduces; the tests hold its
// results to float32 summation rounding of the float64 products.
func bf16x16AMXPacked() *Packed {
	k := bf16x16AMX
	one := func(acc bool) PackedKernel { // up to PackedRows rows: one call
		return func(nb int, w, a []byte, astride int, aux []uint32, auxstride, rows int, dst []float32, dstride int) {
			k(nb, w, nb*F16x16BlockBytes, 1, a, astride, nil, 0, rows, dst, dstride, acc)
		}
	}
	return &Packed{Name: "BF16x16AMX", Act: BF16, BlockSize: QK, BlockBytes: F16x16BlockBytes,
		Repack: RepackBF16x16, Kernel: one(false), Accumulate: one(true),
		Tile: k, TileRows: bf16AMXTileRows, AMX: true}
}

// AMXTiles reports whether FastPackedFor(BF16, true) takes AMX tiles
// here: the CPU has AMX-BF16 and the OS lets this process use the tile
// state (on Linux it asks for it, once).
func AMXTiles() bool { return bf16x16AMX != nil && amxTiles() }
