// Package hostmem maps large, long-lived buffers (repacked weights, KV
// caches, the bandwidth probe's stream) outside the Go heap, in transparent
// huge pages where the kernel offers them.
//
// Outside the heap, hundreds of MiB of long-lived data do not raise the
// garbage collector's target. In huge pages, a stream through them takes
// one TLB entry per 2 MiB instead of one per 4 KiB: on a 2-core VM,
// decode's weight stream read 35–55 % faster for Q4_0 and Q6_K (20.7 vs
// 13–17 GB/s on two threads) once its pages were huge.
package hostmem

// HugePage is the size of a transparent huge page on the platforms that
// have them (x86-64 and arm64 Linux with 4 KiB base pages). Alloc aligns
// buffers of at least this size to it.
const HugePage = 2 << 20
