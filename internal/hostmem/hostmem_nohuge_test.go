//go:build !linux

package hostmem

const alignsHuge = false
