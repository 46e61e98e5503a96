//go:build !amd64 || noasm

package gemm

// level: no float32 kernels here; every product runs the portable Go.
var level = isaNone

// cpuLevels lists the kernel levels this CPU runs.
func cpuLevels() []isa { return []isa{isaNone} }

func nnTile(k int, a *[mrNN]*float32, b *float32, ldb int, c *[mrNN]*float32) {
	panic("gemm: no NN kernel on this platform")
}

func ntTile(k16 int, a, b *[mrNT]*float32, out *[mrNT * mrNT]float32) {
	panic("gemm: no NT kernel on this platform")
}
