//go:build amd64 && !noasm

package quant

// iqPanelKernel is the i-quant panel kernel chosen by useIQPanel (nil:
// none): the products of a decoded panel (nb blocks of 16 rows) with rows
// activation rows.
var iqPanelKernel func(nb int, panel []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int, factor float32)

// useIQPanel selects the panel kernel for isa: AVX-512 VNNI with BW, as
// the repacked layouts.
func useIQPanel(isa string) {
	iqPanelKernel, decodeIQ3_SPanel = nil, decodeIQ3_S
	if isa == isaAVX512VNNI && hasTileISA {
		iqPanelKernel, decodeIQ3_SPanel = iqPanel, decodeIQ3_SAVX512
	}
}

// iqPanel checks the buffers and runs the assembly kernel four activation
// rows at a time.
func iqPanel(nb int, panel []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int, factor float32) {
	if rows < 1 || nb < 1 {
		panic("quant: i-quant panel kernel of no rows or blocks")
	}
	_ = panel[nb*IQGridPanelBlockBytes-1]
	_ = a[(rows-1)*astride+nb*q8_KBytes-1]
	_ = aux[(rows-1)*auxstride+IQGridPanelAuxWords*nb-1]
	_ = dst[(rows-1)*dstride+Q4x16Rows-1]
	var acc [TileRows * 8 * Q4x16Rows]float32 // eight lanes of each output
	for r := 0; r < rows; r += TileRows {
		iqpanelAVX512VNNI(nb, &panel[0], &a[r*astride], astride, &aux[r*auxstride], auxstride, min(TileRows, rows-r), &dst[r*dstride], dstride, &acc[0], factor)
	}
}

//go:noescape
func iqpanelAVX512VNNI(nb int, panel *byte, a *byte, astride int, aux *uint32, auxstride int, rows int, dst *float32, dstride int, acc *float32, factor float32)

// iqPanelTranspose writes the weights and corrections of panel block p
// from the 16 rows' quants, stride bytes apart from q (see
// iqPanelTransposeAVX512).
func iqPanelTranspose(q []byte, stride int, p []byte) {
	_ = q[15*stride+QKK-1]
	_ = p[IQGridPanelBlockBytes-1]
	iqPanelTransposeAVX512(&q[0], stride, &p[0])
}

//go:noescape
func iqPanelTransposeAVX512(q *byte, stride int, panel *byte)

// decodeIQ3_SAVX512 is decodeIQ3_S with the quants decoded by
// iq3sQuantsAVX512.
func decodeIQ3_SAVX512(x []byte, b *iqBlock) float32 {
	_ = x[iq3_SBytes-1]
	iq3sScales(x, b)
	iq3sQuantsAVX512(&x[0], &b.q[0])
	return f16At(x)
}

//go:noescape
func iq3sQuantsAVX512(x *byte, q *int8)
