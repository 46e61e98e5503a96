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
// Verification status: the Go code is built and vetted for darwin/arm64
// on Linux, and the host-side argument preparation (plan.go) is tested on
// every platform. kernels.metal has been checked by reading only: it has
// never been compiled by the Metal compiler or run. metal_test.go
// compares every operation and whole synthetic models with the CPU
// backend; it runs on a Mac with a Metal device and skips elsewhere.
//
// On other systems Open returns ErrUnavailable.
package metal
