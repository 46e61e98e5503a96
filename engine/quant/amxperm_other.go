//go:build amd64 && !noasm && !linux

package quant

// amxTiles is false: only Linux is asked for the tile state (no macOS
// machine has AMX; other systems are not supported).
func amxTiles() bool { return false }
