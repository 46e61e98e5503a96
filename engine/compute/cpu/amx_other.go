//go:build !amd64

package cpu

// hasAMXInt8 is false off amd64.
const hasAMXInt8 = false
