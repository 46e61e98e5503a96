//go:build (amd64 || arm64) && !noasm

package quant

// The wrapper of the i-quants' assembly kernels, shared by amd64
// (iquant_amd64.go) and arm64 (iquant_arm64.go): each kernel accumulates
// nb blocks of a weight row against 1 to 4 activation rows into acc[r]
// (lanes 0-7 the main sum; for IQ1_S lane 8 the delta term, for IQ1_M
// lanes 8-15 the delta lanes, for IQ4_NL lanes 8-15 the odd blocks'
// lanes), and the finish (the type's factor, the delta, a last unpaired
// IQ4_NL block) runs here with the references' arithmetic.

// iqFinish says how a row's lanes make its result.
type iqFinish uint8

const (
	iqScaled iqFinish = iota // factor·hsum8(lanes 0-7)
	iqDelta1                 // IQ1_S: hsum8 + 1/8·lane 8, fused
	iqDelta8                 // IQ1_M: hsum8 + 1/8·hsum8(lanes 8-15), fused
	iqPairs                  // IQ4_NL: hsum8(lanes 0-7 + lanes 8-15), then the odd block
)

// iqSpec is one i-quant's kernel.
type iqSpec struct {
	typ    Type
	k      iqKernelID
	finish iqFinish
	factor float32
}

// run is the multi-row dot product of s.
func (s iqSpec) run(n int, w, a []byte, stride int, dst []float32) {
	rows := len(dst)
	if rows > MaxMultiRows {
		panic("quant: multi-row dot of more than MaxMultiRows rows")
	}
	bs, act := s.typ.BlockSize(), VecDotType(s.typ)
	nb := n / bs
	kb := nb // blocks the kernel takes
	if s.finish == iqPairs {
		kb = nb &^ 1
	}
	if rows == 0 {
		return
	}
	// Slicing panics like the references' indexing would on short
	// buffers.
	_ = w[nb*s.typ.BlockBytes()-1]
	_ = a[(rows-1)*stride+nb*act.BlockBytes()-1]
	var acc [MaxMultiRows][16]float32
	if kb > 0 {
		runIQKernel(s.k, kb, &w[0], &a[0], stride, rows, &acc)
	}
	for r := range dst {
		l := &acc[r]
		main := (*[8]float32)(l[:8])
		var v float32
		switch s.finish {
		case iqScaled:
			v = s.factor * hsum8(main)
		case iqDelta1:
			v = fma32(iq1Delta, l[8], hsum8(main))
		case iqDelta8:
			v = fma32(iq1Delta, hsum8((*[8]float32)(l[8:16])), hsum8(main))
		case iqPairs:
			var sum [8]float32
			for u := range sum {
				sum[u] = l[u] + l[8+u]
			}
			v = hsum8(&sum)
			if kb < nb {
				x := w[kb*iq4_NLBytes : (kb+1)*iq4_NLBytes]
				y := a[r*stride+kb*q8_0Bytes : r*stride+(kb+1)*q8_0Bytes]
				var t int32
				for _, p := range iq4Lanes(x[2:], y[2:]) {
					t += p
				}
				v = fma32(f16At(y)*f16At(x), float32(t), v)
			}
		}
		dst[r] = v
	}
}
