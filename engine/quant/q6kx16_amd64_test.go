//go:build amd64 && !noasm

package quant

import (
	"fmt"
	"testing"
)

// TestQ6Kx16PairsAndGeneral runs the Q6_Kx16 kernel tests with two or
// more activation rows taken in pairs (q6kx16Decode2AVX512, the one-row
// kernel for an odd last row) and by the general kernel, whichever this
// CPU's vendor selects: both give dotQ6_KQ8_K's bits for every row.
func TestQ6Kx16PairsAndGeneral(t *testing.T) {
	for _, pairs := range []int{1, PackedRows} {
		t.Run(fmt.Sprintf("pairs-up-to-%d-rows", pairs), func(t *testing.T) {
			old := q6kx16PairRows
			q6kx16PairRows = pairs
			defer func() { q6kx16PairRows = old }()
			testQ6Kx16MatchesVecDot(t)
		})
	}
}
