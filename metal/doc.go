// Package metal is a compute.Backend on Apple's Metal GPUs (macOS), built
// without cgo: the Objective-C runtime and Metal.framework are called
// through github.com/ebitengine/purego and its objc package.
//
// New opens the default MTLDevice, compiles kernels.metal (embedded) with
// newLibraryWithSource:options:error: and makes one compute pipeline per
// kernel. Tensors are shared-storage MTLBuffers (Apple silicon's unified
// memory): weights are wrapped without copying when page-aligned and a
// whole number of pages long, copied otherwise.
//
// On the GPU: MatMul and GetRows for F32, F16, Q8_0, Q4_0 and Q4_K
// weights (f32 activations), RMSNorm, RoPE (normal and neox; angles,
// YaRN and frequency factors computed on the host as the CPU backend
// does), Attend over the CPU backend's paged KV layout (F16 or F32 keys
// and values, GQA, sliding window, softcap), SwiGLU, GeGLU, Add, AddRow
// (F32 bias), Scale and Softcap.
//
// On the CPU, explicitly, through a compute/cpu backend operating in place
// on the same shared memory after pending GPU work completes: MatMul and
// GetRows for every other weight type (Q4_1, Q5_0, Q5_1, Q2_K, Q3_K,
// Q5_K, Q6_K, BF16, ...), AddRow with a non-F32 bias, AddRowsScaled
// (LoRA), and KV block copy/read/write (host memory copies).
//
// Verification status — what has and has not been done:
//   - Never run on Apple hardware. No line of this package has executed
//     on a Mac; no kernel has run on a GPU.
//   - kernels.metal has never been compiled by Apple's Metal compiler
//     (there is none off macOS). msl_test.go compiles it with the host
//     C++ compiler (-fsyntax-only, C++17) against testdata/mslshim, a
//     small stand-in for <metal_stdlib> with the address-space qualifiers
//     defined away: that checks syntax, names, types and the template
//     instantiations, not Metal's address-space rules, attributes or
//     code generation. It also checks every pipeline the backend builds
//     names a kernel the source defines, and vice versa.
//   - The Go code builds and vets for darwin/arm64 (make test-darwin);
//     the Objective-C messages it sends are checked by reading only.
//   - The host-side preparation (plan.go) is tested on every platform:
//     the RoPE (cos, sin) table rotates bit-identically to the CPU
//     backend, and kvIndex finds every key and value where the CPU
//     backend's KV store puts them (plan_test.go).
//   - metal_test.go (darwin only) compares every operation, the KV bytes
//     and whole synthetic models of all four families with the CPU
//     backend. It compiles for darwin; it has never been run, and it
//     skips on a Mac without a Metal device.
//
// Selected with --backend metal (internal/backends); on other systems
// Open returns ErrUnavailable.
package metal
