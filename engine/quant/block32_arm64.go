//go:build arm64 && !noasm

package quant

// Assembly in block32_arm64.s; see there for the register use. acc must
// be the Go side's stack array: the kernels do not retain their pointers.

//go:noescape
func dotQ8_0SDOT(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ8_0SDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)

//go:noescape
func dotQ8_0NEON(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ8_0NEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)

//go:noescape
func dotQ4_0SDOT(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ4_0SDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)

//go:noescape
func dotQ4_0NEON(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ4_0NEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)

//go:noescape
func dotQ5_0SDOT(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ5_0SDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)

//go:noescape
func dotQ5_0NEON(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ5_0NEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)

//go:noescape
func dotQ4_1SDOT(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ4_1SDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)

//go:noescape
func dotQ4_1NEON(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ4_1NEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)

//go:noescape
func dotQ5_1SDOT(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ5_1SDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)

//go:noescape
func dotQ5_1NEON(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ5_1NEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)
