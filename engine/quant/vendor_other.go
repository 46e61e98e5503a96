//go:build !amd64 || noasm

package quant

// StreamsPay reports whether decode should read a worker's share of a
// product through the Packed.Streams kernels; there are none here.
func StreamsPay() bool { return false }
