package tokenizer

// byteToRune is GPT-2's reversible mapping of bytes to printable unicode
// characters: printable Latin-1 bytes map to themselves, the rest to
// U+0100 onwards in byte order. runeToByte is its inverse. Both are
// derived tables, computed once.
var byteToRune, runeToByte = gpt2ByteTables()

func gpt2ByteTables() ([256]rune, map[rune]byte) {
	var fwd [256]rune
	inv := make(map[rune]byte, 256)
	printable := func(b int) bool {
		return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
	}
	next := rune(256)
	for b := 0; b < 256; b++ {
		if printable(b) {
			fwd[b] = rune(b)
		} else {
			fwd[b] = next
			next++
		}
		inv[fwd[b]] = byte(b)
	}
	return fwd, inv
}
