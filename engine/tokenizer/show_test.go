package tokenizer

import "testing"

// TestStreamDecoderShow: a control token decodes to nothing unless the
// decoder is told to show it (a thinking model's </think>), then to its
// text; other control tokens stay hidden.
func TestStreamDecoderShow(t *testing.T) {
	checked := 0
	for _, tok := range fuzzTokenizers(t) {
		var controls []int32
		for id := range int32(tok.VocabSize()) {
			if tok.IsControl(id) && tok.Piece(id) != "" {
				controls = append(controls, id)
			}
			if len(controls) == 2 {
				break
			}
		}
		if len(controls) < 2 {
			continue
		}
		shown, hidden := controls[0], controls[1]
		if got := NewStreamDecoder(tok).Add(shown); got != "" {
			t.Fatalf("control token %d decoded to %q", shown, got)
		}
		d := NewStreamDecoder(tok)
		d.Show(shown)
		if got := d.Add(shown) + d.Add(hidden) + d.Flush(); got != tok.Piece(shown) {
			t.Fatalf("shown %d (%q), hidden %d: %q", shown, tok.Piece(shown), hidden, got)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no vocabulary with two control tokens")
	}
}
