//go:build unix

package quant

import (
	"math/rand/v2"
	"testing"
)

// TestFlashTileReadsOnlyItsRows gives FlashScores its query rows and
// FlashPV its weights ending at an unreadable page, for 1 to 9 rows: a
// kernel that computes more rows than asked (reading the rows after the
// last) faults. The single-row forms once fell through to the four-row
// loop, which read three rows past the end and did four rows' work.
func TestFlashTileReadsOnlyItsRows(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	const dk = 64
	kt := randRow(r, dk*FlashTile, 1)
	v := randRow(r, FlashTile*dk, 1)
	for rows := 1; rows <= 9; rows++ {
		q := guarded[float32](t, (rows-1)*dk+dk)
		copy(q, randRow(r, len(q), 1))
		got, want := make([]float32, rows*FlashTile), make([]float32, rows*FlashTile)
		FlashScores(got, q, dk, kt, dk, rows)
		flashScoresRef(want, q, dk, kt, dk, rows)
		if !sameBits(got, want) {
			t.Fatalf("scores of %d rows differ from the reference", rows)
		}

		p := guarded[float32](t, rows*FlashTile)
		copy(p, randRow(r, len(p), 0.3))
		acc := randRow(r, rows*dk, 1)
		accRef := append([]float32(nil), acc...)
		FlashPV(acc, dk, p, v, dk, rows)
		flashPVRef(accRef, dk, p, v, dk, rows)
		if !sameBits(acc, accRef) {
			t.Fatalf("value sums of %d rows differ from the reference", rows)
		}
	}
}
