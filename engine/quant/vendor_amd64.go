//go:build amd64 && !noasm

package quant

// cpuVendor returns CPUID leaf 0's vendor string registers.
func cpuVendor() (ebx, ecx, edx uint32)

// StreamsPay reports whether decode should read a worker's share of a
// product through the Packed.Streams kernels, DecodeStreams groups far
// apart at once, rather than one group after the other. On two cores of
// an Intel Sapphire Rapids VM four streams read 37-39 GB/s where one
// read 34-35 (a C probe of the Q4_0x16 loop; 1B decode 3-8 % faster); on
// two AMD Zen 5 (EPYC) cores they read 3-11 % slower
// (BenchmarkDecodeStream in engine/compute/cpu: Q4_0x16 43.8 against
// 48.8 GB/s, Q6_Kx16 39.7 against 43.7), its hardware prefetchers keeping
// one stream a core busy enough. Other CPUs were not measured: Intel's
// take the streams, the rest one stream.
func StreamsPay() bool { return isIntel() }

// isIntel reports whether the CPU is Intel's, by CPUID's vendor string.
func isIntel() bool {
	ebx, ecx, edx := cpuVendor()
	// "GenuineIntel" in EBX, EDX, ECX.
	return ebx == 0x756e6547 && edx == 0x49656e69 && ecx == 0x6c65746e
}
