//go:build amd64 && !noasm

package quant

// testISAs lists the kernel instruction sets the tests run, best last.
func testISAs() []string { return cpuISAs() }

// setISA selects the kernels of isa.
func setISA(isa string) { useISA(isa) }
