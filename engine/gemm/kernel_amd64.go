//go:build amd64 && !noasm

package gemm

import "golang.org/x/sys/cpu"

// level is the best float32 kernel level this CPU runs; tests set it to
// each level in turn (setLevel).
var level = cpuLevels()[len(cpuLevels())-1]

// cpuLevels lists the kernel levels this CPU runs, worst first.
func cpuLevels() []isa {
	x := cpu.X86
	levels := []isa{isaNone}
	if x.HasAVX2 && x.HasFMA {
		levels = append(levels, isaAVX2)
		if x.HasAVX512F {
			levels = append(levels, isaAVX512)
		}
	}
	return levels
}

// nnTile runs the NN kernel of the current level.
func nnTile(k int, a *[mrNN]*float32, b *float32, ldb int, c *[mrNN]*float32) {
	if level == isaAVX512 {
		nnTile512(k, a, b, ldb, c)
	} else {
		nnTile256(k, a, b, ldb, c)
	}
}

// ntTile runs the NT kernel (AVX-512 only).
func ntTile(k16 int, a, b *[mrNT]*float32, out *[mrNT * mrNT]float32) {
	ntTile512(k16, a, b, out)
}

// Implemented in kernel_amd64.s.

//go:noescape
func nnTile512(k int, a *[mrNN]*float32, b *float32, ldb int, c *[mrNN]*float32)

//go:noescape
func nnTile256(k int, a *[mrNN]*float32, b *float32, ldb int, c *[mrNN]*float32)

//go:noescape
func ntTile512(k16 int, a, b *[mrNT]*float32, out *[mrNT * mrNT]float32)
