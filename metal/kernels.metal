// Metal Shading Language kernels of the ruvllm Metal backend (metal/).
//
// This file is compiled at run time by newLibraryWithSource:options:error:
// on a Mac. It has never been compiled by the Metal compiler nor run; off
// macOS, metal/msl_test.go only parses and type-checks it as C++17 against
// testdata/mslshim (no Metal address-space or attribute checking).
// Kernels are deliberately plain (one thread or one SIMD group per output,
// no tiling) so each can be checked against engine/compute/cpu line by
// line.
//
// Conventions:
//   - Activations are row-major float. Weights keep their GGUF layout and
//     are read as bytes, so block alignment never matters.
//   - Every parameter struct holds only 4-byte scalars; the Go side packs
//     them in declaration order (metal/plan.go).
//   - Grids are dispatched as whole threadgroups; kernels bound-check.
//   - SIMD-group kernels assume a SIMD width of 32 (checked at start-up).

#include <metal_stdlib>
using namespace metal;

// ---------------------------------------------------------------------------
// Weight elements. Each returns element i of a weight row as float.

static inline float f16_at(device const uchar* p) {
    return float(as_type<half>(ushort(ushort(p[0]) | (ushort(p[1]) << 8))));
}

static inline float w_f32(device const uchar* row, uint i) {
    return ((device const float*)row)[i];
}

static inline float w_f16(device const uchar* row, uint i) {
    return float(((device const half*)row)[i]);
}

// Q8_0: blocks of 34 bytes: f16 scale, 32 signed bytes.
static inline float w_q8_0(device const uchar* row, uint i) {
    device const uchar* blk = row + (i / 32) * 34;
    return f16_at(blk) * float(as_type<char>(blk[2 + i % 32]));
}

// Q4_0: blocks of 18 bytes: f16 scale, 16 bytes of nibbles; element j < 16
// is the low nibble of byte j, element j >= 16 the high nibble of byte j-16;
// quants are offset by 8.
static inline float w_q4_0(device const uchar* row, uint i) {
    device const uchar* blk = row + (i / 32) * 18;
    uint j = i % 32;
    uchar q = blk[2 + (j & 15)];
    int v = j < 16 ? int(q & 15) : int(q >> 4);
    return f16_at(blk) * float(v - 8);
}

// Q4_K: super-blocks of 144 bytes over 256 elements: f16 d, f16 dmin,
// 12 bytes of packed 6-bit scales and minimums for 8 sub-blocks of 32,
// 128 bytes of nibbles. Chunk c (64 elements) uses bytes qs[32c..32c+32):
// low nibbles for sub-block 2c, high nibbles for sub-block 2c+1.
static inline float w_q4_k(device const uchar* row, uint i) {
    device const uchar* blk = row + (i / 256) * 144;
    uint k = i % 256;
    uint s = k / 32;          // sub-block 0..7
    uint l = k % 32;
    device const uchar* sc = blk + 4;
    uint scale, mn;
    if (s < 4) {
        scale = sc[s] & 63;
        mn = sc[s + 4] & 63;
    } else {
        scale = (sc[s + 4] & 15) | ((sc[s - 4] >> 6) << 4);
        mn = (sc[s + 4] >> 4) | ((sc[s] >> 6) << 4);
    }
    uchar q = blk[16 + 32 * (s / 2) + l];
    uint nib = (s % 2 == 0) ? uint(q & 15) : uint(q >> 4);
    return f16_at(blk) * float(scale) * float(nib) - f16_at(blk + 2) * float(mn);
}

// ---------------------------------------------------------------------------
// MatMul: dst[r][o] = sum_i w[o][i] * x[r][i]. One SIMD group (32 lanes)
// per output element, four SIMD groups per threadgroup of 128 threads;
// grid = (ceil(out/4), n) threadgroups.

struct MatMulArgs {
    uint in;
    uint out;
    uint n;
    uint row_bytes;
};

#define MATMUL_KERNEL(NAME, ELEM)                                              \
kernel void NAME(                                                              \
        device const uchar* w [[buffer(0)]],                                   \
        device const float* x [[buffer(1)]],                                   \
        device float* dst [[buffer(2)]],                                       \
        constant MatMulArgs& a [[buffer(3)]],                                  \
        uint2 tg [[threadgroup_position_in_grid]],                             \
        uint sg [[simdgroup_index_in_threadgroup]],                            \
        uint lane [[thread_index_in_simdgroup]]) {                             \
    uint o = tg.x * 4 + sg;                                                    \
    uint r = tg.y;                                                             \
    if (o >= a.out || r >= a.n) {                                              \
        return;                                                                \
    }                                                                          \
    device const uchar* wr = w + ulong(o) * a.row_bytes;                       \
    device const float* xr = x + ulong(r) * a.in;                              \
    float sum = 0.0f;                                                          \
    for (uint i = lane; i < a.in; i += 32) {                                   \
        sum += ELEM(wr, i) * xr[i];                                            \
    }                                                                          \
    sum = simd_sum(sum);                                                       \
    if (lane == 0) {                                                           \
        dst[ulong(r) * a.out + o] = sum;                                       \
    }                                                                          \
}

MATMUL_KERNEL(matmul_f32, w_f32)
MATMUL_KERNEL(matmul_f16, w_f16)
MATMUL_KERNEL(matmul_q8_0, w_q8_0)
MATMUL_KERNEL(matmul_q4_0, w_q4_0)
MATMUL_KERNEL(matmul_q4_k, w_q4_k)

// ---------------------------------------------------------------------------
// GetRows: dst[j][c] = table[ids[j]][c]. One thread per element; grid =
// (ceil(cols/64), len(ids)) threadgroups of 64. ids are range-checked on
// the host.

struct GetRowsArgs {
    uint cols;
    uint row_bytes;
    uint n;
};

#define GET_ROWS_KERNEL(NAME, ELEM)                                            \
kernel void NAME(                                                              \
        device const uchar* table [[buffer(0)]],                               \
        device const int* ids [[buffer(1)]],                                   \
        device float* dst [[buffer(2)]],                                       \
        constant GetRowsArgs& a [[buffer(3)]],                                 \
        uint2 gid [[thread_position_in_grid]]) {                               \
    uint c = gid.x;                                                            \
    uint j = gid.y;                                                            \
    if (c >= a.cols || j >= a.n) {                                             \
        return;                                                                \
    }                                                                          \
    device const uchar* row = table + ulong(ids[j]) * a.row_bytes;             \
    dst[ulong(j) * a.cols + c] = ELEM(row, c);                                 \
}

GET_ROWS_KERNEL(get_rows_f32, w_f32)
GET_ROWS_KERNEL(get_rows_f16, w_f16)
GET_ROWS_KERNEL(get_rows_q8_0, w_q8_0)
GET_ROWS_KERNEL(get_rows_q4_0, w_q4_0)
GET_ROWS_KERNEL(get_rows_q4_k, w_q4_k)

// ---------------------------------------------------------------------------
// Elementwise kernels: one thread per element; grid = ceil(n/256)
// threadgroups of 256.

kernel void add_f32(
        device const float* a [[buffer(0)]],
        device const float* b [[buffer(1)]],
        device float* dst [[buffer(2)]],
        constant uint& n [[buffer(3)]],
        uint i [[thread_position_in_grid]]) {
    if (i >= n) {
        return;
    }
    dst[i] = a[i] + b[i];
}

// dst[r][c] += bias[c] over n = rows*cols elements.
kernel void add_row_f32(
        device float* dst [[buffer(0)]],
        device const float* bias [[buffer(1)]],
        constant uint& n [[buffer(2)]],
        constant uint& cols [[buffer(3)]],
        uint i [[thread_position_in_grid]]) {
    if (i >= n) {
        return;
    }
    dst[i] += bias[i % cols];
}

kernel void scale_f32(
        device float* x [[buffer(0)]],
        constant float& s [[buffer(1)]],
        constant uint& n [[buffer(2)]],
        uint i [[thread_position_in_grid]]) {
    if (i >= n) {
        return;
    }
    x[i] *= s;
}

kernel void softcap_f32(
        device float* x [[buffer(0)]],
        constant float& c [[buffer(1)]],
        constant uint& n [[buffer(2)]],
        uint i [[thread_position_in_grid]]) {
    if (i >= n) {
        return;
    }
    x[i] = c * precise::tanh(x[i] / c);
}

kernel void swiglu_f32(
        device const float* gate [[buffer(0)]],
        device const float* up [[buffer(1)]],
        device float* dst [[buffer(2)]],
        constant uint& n [[buffer(3)]],
        uint i [[thread_position_in_grid]]) {
    if (i >= n) {
        return;
    }
    float g = gate[i];
    dst[i] = g / (1.0f + precise::exp(-g)) * up[i];
}

// gelu with the tanh approximation, as the CPU backend.
kernel void geglu_f32(
        device const float* gate [[buffer(0)]],
        device const float* up [[buffer(1)]],
        device float* dst [[buffer(2)]],
        constant uint& n [[buffer(3)]],
        uint i [[thread_position_in_grid]]) {
    if (i >= n) {
        return;
    }
    const float c = 0.7978845608028654f; // sqrt(2/pi)
    float g = gate[i];
    dst[i] = 0.5f * g * (1.0f + precise::tanh(c * (g + 0.044715f * g * g * g))) * up[i];
}

// ---------------------------------------------------------------------------
// RMSNorm: one SIMD group (threadgroup of 32) per row; dst may alias x
// because every lane reads and writes only its own indices, and all reads
// of the sum happen before the writes (simd_sum is a SIMD-group barrier).

kernel void rms_norm_f32(
        device const float* x [[buffer(0)]],
        device const float* w [[buffer(1)]],
        device float* dst [[buffer(2)]],
        constant uint& n [[buffer(3)]],
        constant float& eps [[buffer(4)]],
        uint row [[threadgroup_position_in_grid]],
        uint lane [[thread_index_in_threadgroup]]) {
    device const float* in = x + ulong(row) * n;
    device float* out = dst + ulong(row) * n;
    float sum = 0.0f;
    for (uint i = lane; i < n; i += 32) {
        sum += in[i] * in[i];
    }
    sum = simd_sum(sum);
    float scale = 1.0f / precise::sqrt(sum / float(n) + eps);
    for (uint i = lane; i < n; i += 32) {
        out[i] = in[i] * scale * w[i];
    }
}

// ---------------------------------------------------------------------------
// RoPE: the host computes cos and sin (YaRN, factors and attention factor
// included) for every rotated row, exactly as the CPU backend does; the
// kernel only rotates. cs holds count×half (cos, sin) pairs; rows[k] is
// the batch row of entry k. One thread per (pair, head, entry).

struct RoPEArgs {
    uint heads;
    uint head_dim;
    uint half_dims;
    uint cols;
    uint neox;
    uint count;
};

kernel void rope_f32(
        device float* x [[buffer(0)]],
        device const float* cs [[buffer(1)]],
        device const uint* rows [[buffer(2)]],
        constant RoPEArgs& a [[buffer(3)]],
        uint3 gid [[thread_position_in_grid]]) {
    uint i = gid.x;
    uint h = gid.y;
    uint k = gid.z;
    if (i >= a.half_dims || h >= a.heads || k >= a.count) {
        return;
    }
    device float* v = x + ulong(rows[k]) * a.cols + h * a.head_dim;
    float c = cs[(ulong(k) * a.half_dims + i) * 2];
    float s = cs[(ulong(k) * a.half_dims + i) * 2 + 1];
    uint i0 = a.neox != 0 ? i : 2 * i;
    uint i1 = a.neox != 0 ? i + a.half_dims : 2 * i + 1;
    float x0 = v[i0];
    float x1 = v[i1];
    // Fused as the CPU backend (and llama.cpp's x86 build) rotates.
    v[i0] = fma(x0, c, -(x1 * s));
    v[i1] = fma(x0, s, x1 * c);
}

// ---------------------------------------------------------------------------
// Paged KV cache, the CPU backend's layout: for each block, for each layer,
// K then V, each block_size × row_elems elements. Position t of a sequence
// lives in block blocks[table + t / block_size] at slot t % block_size.
// T is the stored element type (half or float); the buffer is passed as
// void so both instantiations share one signature.

struct AttnArgs {
    uint heads;
    uint kv_heads;
    uint head_dim;
    uint q_cols;       // heads × head_dim
    uint row_elems;    // kv_heads × head_dim
    uint block_size;
    uint per_layer;    // elements of K (or V) of one layer in one block
    uint per_block;    // elements of one block, all layers, K and V
    uint layer;
    uint window;       // 0: none
    uint count;        // query rows
    float scale;
    float softcap;     // 0: none
};

// One query row: its batch row, its position and where its sequence's
// block table starts in the blocks array.
struct AttnRow {
    int row;
    int pos;
    int table;
};

static inline ulong kv_index(constant AttnArgs& a, device const int* blocks, AttnRow r, uint t) {
    ulong blk = ulong(blocks[r.table + t / a.block_size]);
    return blk * a.per_block + ulong(a.layer) * 2 * a.per_layer + ulong(t % a.block_size) * a.row_elems;
}

// kv_store writes row j's keys and values at its position. One thread per
// (element, row).
template <typename T>
kernel void kv_store(
        device void* kvp [[buffer(0)]],
        device const float* k [[buffer(1)]],
        device const float* v [[buffer(2)]],
        device const int* blocks [[buffer(3)]],
        device const AttnRow* rows [[buffer(4)]],
        constant AttnArgs& a [[buffer(5)]],
        uint2 gid [[thread_position_in_grid]]) {
    uint e = gid.x;
    uint j = gid.y;
    if (e >= a.row_elems || j >= a.count) {
        return;
    }
    device T* kv = (device T*)kvp;
    AttnRow r = rows[j];
    ulong o = kv_index(a, blocks, r, uint(r.pos)) + e;
    kv[o] = T(k[ulong(r.row) * a.row_elems + e]);
    kv[o + a.per_layer] = T(v[ulong(r.row) * a.row_elems + e]);
}

typedef decltype(kv_store<float>) kv_store_t;
template [[host_name("kv_store_f32")]] kernel kv_store_t kv_store<float>;
template [[host_name("kv_store_f16")]] kernel kv_store_t kv_store<half>;

// attend computes causal attention of one query head over its sequence's
// keys: a first pass finds the maximum score and the softmax denominator
// (online), a second recomputes each score and accumulates p·v into dst.
// As the CPU backend and llama.cpp, with f16 keys the query is rounded to
// f16, and with f16 values the probability is. One thread per (row, head).
template <typename T>
kernel void attend(
        device float* dst [[buffer(0)]],
        device const float* q [[buffer(1)]],
        device const void* kvp [[buffer(2)]],
        device const int* blocks [[buffer(3)]],
        device const AttnRow* rows [[buffer(4)]],
        constant AttnArgs& a [[buffer(5)]],
        uint2 gid [[thread_position_in_grid]]) {
    uint j = gid.x;
    uint h = gid.y;
    if (j >= a.count || h >= a.heads) {
        return;
    }
    device const T* kv = (device const T*)kvp;
    AttnRow r = rows[j];
    uint pos = uint(r.pos);
    uint first = 0;
    if (a.window > 0 && pos + 1 > a.window) {
        first = pos + 1 - a.window;
    }
    uint hd = a.head_dim;
    uint kv_off = (h / (a.heads / a.kv_heads)) * hd;
    device const float* qh = q + ulong(r.row) * a.q_cols + h * hd;
    device float* out = dst + ulong(r.row) * a.q_cols + h * hd;

    float m = -INFINITY;
    float l = 0.0f;
    for (uint t = first; t <= pos; t++) {
        ulong o = kv_index(a, blocks, r, t) + kv_off;
        float dot = 0.0f;
        for (uint e = 0; e < hd; e++) {
            dot += float(T(qh[e])) * float(kv[o + e]);
        }
        float s = dot * a.scale;
        if (a.softcap > 0.0f) {
            s = a.softcap * precise::tanh(s / a.softcap);
        }
        float mn = max(m, s);
        l = l * precise::exp(m - mn) + precise::exp(s - mn);
        m = mn;
    }
    float inv = 1.0f / l;

    for (uint e = 0; e < hd; e++) {
        out[e] = 0.0f;
    }
    for (uint t = first; t <= pos; t++) {
        ulong o = kv_index(a, blocks, r, t) + kv_off;
        float dot = 0.0f;
        for (uint e = 0; e < hd; e++) {
            dot += float(T(qh[e])) * float(kv[o + e]);
        }
        float s = dot * a.scale;
        if (a.softcap > 0.0f) {
            s = a.softcap * precise::tanh(s / a.softcap);
        }
        float p = float(T(precise::exp(s - m) * inv));
        for (uint e = 0; e < hd; e++) {
            out[e] += p * float(kv[o + a.per_layer + e]);
        }
    }
}

typedef decltype(attend<float>) attend_t;
template [[host_name("attend_f32")]] kernel attend_t attend<float>;
template [[host_name("attend_f16")]] kernel attend_t attend<half>;
