//go:build amd64 && !noasm

package quant

import (
	"fmt"
	"testing"
)

// TestKQuantPairsAndGeneral runs the Q5_Kx16 and Q6_Kx16 kernel tests with
// two or more activation rows taken in pairs (q5kx16Decode2AVX512,
// q6kx16Decode2AVX512, the one-row kernels for an odd last row) and by
// the general kernels, whichever this CPU's vendor selects: both give
// the vector dot products' bits for every row.
func TestKQuantPairsAndGeneral(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pairs *int
		test  func(*testing.T)
	}{
		{"Q5_Kx16", &q5kx16PairRows, testQ5Kx16MatchesVecDot},
		{"Q6_Kx16", &q6kx16PairRows, testQ6Kx16MatchesVecDot},
	} {
		for _, pairs := range []int{1, PackedRows} {
			t.Run(fmt.Sprintf("%s/pairs-up-to-%d-rows", tc.name, pairs), func(t *testing.T) {
				old := *tc.pairs
				*tc.pairs = pairs
				defer func() { *tc.pairs = old }()
				tc.test(t)
			})
		}
	}
}
