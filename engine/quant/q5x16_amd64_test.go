//go:build amd64 && !noasm

package quant

import "testing"

// TestQ5x16DecodeLoops runs the Q5_0x16 and Q5_1x16 (and Q4_1) tests with
// the kernels' one-row products in each of their loops: the one that
// prefetches into L2 (q5x16DecodeL2, CPUs other than Intel's) and the
// general one (Intel's), whichever this CPU takes.
func TestQ5x16DecodeLoops(t *testing.T) {
	if q5x16Kernel == nil {
		t.Skip("no Q5_0x16 kernel on this CPU")
	}
	saved := q5x16DecodeL2
	t.Cleanup(func() { q5x16DecodeL2 = saved })
	for _, l2 := range []bool{false, true} {
		q5x16DecodeL2 = l2
		name := "general loop"
		if l2 {
			name = "one-row loop"
		}
		t.Run(name, func(t *testing.T) {
			testQ5x16MatchesVecDot(t)
			for _, tc := range q51x16Cases {
				testQ51x16MatchesVecDot(t, tc)
			}
		})
	}
}
