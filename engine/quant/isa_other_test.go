//go:build !amd64 || noasm

package quant

// testISAs lists the kernel instruction sets the tests run: none here,
// where every dot product is the reference.
func testISAs() []string { return nil }

func setISA(string) {}
