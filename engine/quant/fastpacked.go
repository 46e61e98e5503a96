package quant

// FastPackedFor returns the repacked layout the CPU backend's default
// (not exact) mode uses for weight type t on this CPU, or nil where it
// has none: the layouts of PackedFor, whose orders are llama.cpp's or
// their own, plus those whose summation order is chosen for speed alone
// (F16x16, BF16x16, IQ4_XSx16), which the exact mode must not use.
func FastPackedFor(t Type) *Packed {
	switch {
	case t == F16 && f16x16Kernel != nil:
		return &Packed{Name: "F16x16", Act: F32, BlockSize: QK, BlockBytes: F16x16BlockBytes,
			Repack: RepackF16x16, Kernel: f16x16Kernel, Accumulate: f16x16AccKernel,
			Decode: f16x16Decode, DecodeGroups: half16DecodeGroups}
	case t == BF16 && bf16x16Kernel != nil:
		return &Packed{Name: "BF16x16", Act: BF16, BlockSize: QK, BlockBytes: F16x16BlockBytes,
			Repack: RepackBF16x16, Kernel: bf16x16Kernel, Accumulate: bf16x16AccKernel,
			Decode: bf16x16Decode, DecodeGroups: half16DecodeGroups}
	case t == IQ4_XS && iq4xsx16Kernel != nil:
		return &Packed{Name: "IQ4_XSx16", Act: Q8_K, BlockSize: QKK, BlockBytes: IQ4XSx16BlockBytes, AuxWords: IQ4XSx16AuxWords,
			Aux: IQ4XSx16Aux, Repack: RepackIQ4XSx16, Kernel: iq4xsx16Kernel, Accumulate: iq4xsx16AccKernel}
	}
	return PackedFor(t)
}
