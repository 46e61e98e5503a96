// oracle: llama.cpp's own dequantize, quantize and dot-product routines
// behind a tiny binary protocol on stdin/stdout, so that engine/quant's
// tests (TestGGMLOracle, run by bench/iquant/oracle.sh, never by make
// test) can compare the Go references with ggml bit for bit on random
// data. Build: see oracle.sh. Linked against the libggml of a llama.cpp
// build; nothing of it is copied here.
//
// Request: u32 cmd, u32 type, u32 n (elements per row), u32 rows,
// u32 flags, then the payload; every reply starts with u32 status (0 ok).
//   'D' dequantize: payload rows*row_size(type,n) bytes; reply rows*n f32.
//   'V' vec_dot: payload row_size(type,n) weight bytes, then rows*n f32
//       activations; each row is converted with the CPU backend's
//       from_float of the vec_dot type, and the reply is rows f32 dots.
//   'Q' quantize: payload rows*n f32, then (flags&1) n f32 importance
//       weights; reply rows*row_size(type,n) bytes (ggml_quantize_chunk).
//   'T' time vec_dot: payload as 'V' with rows = iterations and one
//       activation row; reply the f64 nanoseconds per dot product.
//   'R' repacked product (IQ4_NL or Q4_K, rows a multiple of 8): payload rows
//       weight rows, then n f32 activations; the weights are repacked into
//       llama.cpp's 8-row interleaved layout and multiplied with its gemv
//       (what llama.cpp runs on AVX2 machines); reply rows f32.
//   'G' repacked Q2_K product by llama.cpp's GEMM and GEMV (rows a multiple
//       of 8): payload rows weight rows, then 4 activation rows of n f32;
//       reply 4*rows f32 from the GEMM (the activations quantized four at
//       a time, ggml_quantize_mat_q8_K_4x8), then 4*rows from the GEMV (each
//       row alone, quantize_row_q8_K).
//   'M' matrix product as a graph runs it (ggml_mul_mat on one thread:
//       llamafile's sgemm, vec_dot, whichever the build takes for the
//       shape; no repacking): payload rows weight rows, then flags (≥ 1)
//       activation rows of n f32; reply flags*rows f32, activation row
//       by row.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml.h"
#include "ggml-cpu.h"

// The repack entry points of libggml-cpu (C++ templates, exported).
struct block_iq4_nl;
struct block_q4_K;
struct block_q2_K;
extern "C" void ggml_quantize_mat_q8_K_4x8(const float *, void *, int64_t);
namespace ggml { namespace cpu { namespace repack {
template <typename BLOC_TYPE, int64_t INTER_SIZE, int64_t NB_COLS>
int repack(struct ggml_tensor *, const void *, size_t);
template <typename BLOC_TYPE, int64_t INTER_SIZE, int64_t NB_COLS, ggml_type PARAM_TYPE>
void gemv(int, float *, size_t, const void *, const void *, int, int);
template <typename BLOC_TYPE, int64_t INTER_SIZE, int64_t NB_COLS, ggml_type PARAM_TYPE>
void gemm(int, float *, size_t, const void *, const void *, int, int);
}}}

static int readn(void *p, size_t n) { return fread(p, 1, n, stdin) == n; }
static void writen(const void *p, size_t n) { fwrite(p, 1, n, stdout); }
static void status(uint32_t s) { writen(&s, 4); }

int main(void) {
    ggml_cpu_init();
    uint32_t h[5];
    while (readn(h, sizeof h)) {
        uint32_t cmd = h[0], n = h[2], rows = h[3], flags = h[4];
        enum ggml_type type = (enum ggml_type)h[1];
        if (type >= GGML_TYPE_COUNT || n == 0 || rows == 0 || n % ggml_blck_size(type) != 0) {
            fprintf(stderr, "oracle: bad request type %u n %u rows %u\n", h[1], n, rows);
            return 1;
        }
        size_t rs = ggml_row_size(type, n);
        if (cmd == 'D') {
            uint8_t *src = (uint8_t *)malloc(rs * rows);
            float *dst = (float *)malloc(sizeof(float) * n * rows);
            if (!readn(src, rs * rows)) return 1;
            ggml_get_type_traits(type)->to_float(src, dst, (int64_t)n * rows);
            status(0);
            writen(dst, sizeof(float) * n * rows);
            free(src); free(dst);
        } else if (cmd == 'V') {
            const struct ggml_type_traits_cpu *tc = ggml_get_type_traits_cpu(type);
            enum ggml_type vt = tc->vec_dot_type;
            size_t vrs = ggml_row_size(vt, n);
            uint8_t *w = (uint8_t *)malloc(rs);
            float *x = (float *)malloc(sizeof(float) * n);
            uint8_t *q = (uint8_t *)malloc(vrs);
            if (!readn(w, rs)) return 1;
            status(0);
            for (uint32_t r = 0; r < rows; r++) {
                if (!readn(x, sizeof(float) * n)) return 1;
                const struct ggml_type_traits_cpu *vc = ggml_get_type_traits_cpu(vt);
                vc->from_float(x, q, n);
                float s = 0;
                tc->vec_dot(n, &s, 0, w, 0, q, 0, 1);
                writen(&s, 4);
            }
            free(w); free(x); free(q);
        } else if (cmd == 'Q') {
            float *x = (float *)malloc(sizeof(float) * n * rows);
            float *im = NULL;
            uint8_t *dst = (uint8_t *)malloc(rs * rows);
            if (!readn(x, sizeof(float) * n * rows)) return 1;
            if (flags & 1) {
                im = (float *)malloc(sizeof(float) * n);
                if (!readn(im, sizeof(float) * n)) return 1;
            }
            ggml_quantize_init(type);
            size_t got = ggml_quantize_chunk(type, x, dst, 0, rows, n, im);
            status(got == rs * rows ? 0 : 2);
            writen(dst, rs * rows);
            free(x); free(im); free(dst);
        } else if (cmd == 'T') {
            const struct ggml_type_traits_cpu *tc = ggml_get_type_traits_cpu(type);
            enum ggml_type vt = tc->vec_dot_type;
            uint8_t *w = (uint8_t *)malloc(rs);
            float *x = (float *)malloc(sizeof(float) * n);
            uint8_t *q = (uint8_t *)malloc(ggml_row_size(vt, n));
            if (!readn(w, rs) || !readn(x, sizeof(float) * n)) return 1;
            ggml_get_type_traits_cpu(vt)->from_float(x, q, n);
            float s = 0, sink = 0;
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            for (uint32_t i = 0; i < rows; i++) {
                tc->vec_dot(n, &s, 0, w, 0, q, 0, 1);
                sink += s;
            }
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / rows;
            status(sink == sink ? 0 : 0);
            writen(&ns, 8);
            free(w); free(x); free(q);
        } else if (cmd == 'G' && type == GGML_TYPE_Q2_K && rows % 8 == 0) {
            uint8_t *w = (uint8_t *)malloc(rs * rows);
            uint8_t *packed = (uint8_t *)malloc(rs * rows);
            float *x = (float *)malloc(sizeof(float) * n * 4);
            float *out = (float *)malloc(sizeof(float) * rows * 4);
            size_t qrs = ggml_row_size(GGML_TYPE_Q8_K, n);
            uint8_t *q = (uint8_t *)malloc(qrs * 4);
            if (!readn(w, rs * rows) || !readn(x, sizeof(float) * n * 4)) return 1;
            struct ggml_tensor t;
            memset(&t, 0, sizeof t);
            t.type = type;
            t.ne[0] = n; t.ne[1] = rows; t.ne[2] = 1; t.ne[3] = 1;
            t.nb[0] = 1; t.nb[1] = rs; t.nb[2] = rs * rows; t.nb[3] = rs * rows;
            t.data = packed;
            int err = ggml::cpu::repack::repack<block_q2_K, 8, 8>(&t, w, rs * rows);
            ggml_quantize_mat_q8_K_4x8(x, q, n);
            ggml::cpu::repack::gemm<block_q2_K, 8, 8, GGML_TYPE_Q8_K>(n, out, rows, packed, q, 4, rows);
            status(err == 0 ? 0 : 3);
            writen(out, sizeof(float) * rows * 4);
            for (int i = 0; i < 4; i++) {
                ggml_get_type_traits_cpu(GGML_TYPE_Q8_K)->from_float(x + (size_t) i * n, q, n);
                ggml::cpu::repack::gemv<block_q2_K, 8, 8, GGML_TYPE_Q8_K>(n, out + (size_t) i * rows, rows, packed, q, 1, rows);
            }
            writen(out, sizeof(float) * rows * 4);
            free(w); free(packed); free(x); free(out); free(q);
        } else if (cmd == 'M' && flags >= 1) {
            uint32_t m = flags;
            size_t mem = rs * rows + sizeof(float) * (size_t) n * m + sizeof(float) * (size_t) rows * m + (64u << 20);
            struct ggml_init_params ip = { mem, NULL, false };
            struct ggml_context *ctx = ggml_init(ip);
            struct ggml_tensor *w = ggml_new_tensor_2d(ctx, type, n, rows);
            struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n, m);
            if (!readn(w->data, rs * rows) || !readn(x->data, sizeof(float) * n * m)) return 1;
            struct ggml_tensor *y = ggml_mul_mat(ctx, w, x);
            struct ggml_cgraph *gf = ggml_new_graph(ctx);
            ggml_build_forward_expand(gf, y);
            enum ggml_status st = ggml_graph_compute_with_ctx(ctx, gf, 1);
            status(st == GGML_STATUS_SUCCESS ? 0 : 4);
            writen(y->data, sizeof(float) * rows * m);
            ggml_free(ctx);
        } else if (cmd == 'R' && (type == GGML_TYPE_IQ4_NL || type == GGML_TYPE_Q4_K) && rows % 8 == 0) {
            enum ggml_type vt = type == GGML_TYPE_Q4_K ? GGML_TYPE_Q8_K : GGML_TYPE_Q8_0;
            uint8_t *w = (uint8_t *)malloc(rs * rows);
            uint8_t *packed = (uint8_t *)malloc(rs * rows);
            float *x = (float *)malloc(sizeof(float) * n);
            float *out = (float *)malloc(sizeof(float) * rows);
            uint8_t *q = (uint8_t *)malloc(ggml_row_size(vt, n));
            if (!readn(w, rs * rows) || !readn(x, sizeof(float) * n)) return 1;
            struct ggml_tensor t;
            memset(&t, 0, sizeof t);
            t.type = type;
            t.ne[0] = n; t.ne[1] = rows; t.ne[2] = 1; t.ne[3] = 1;
            t.nb[0] = 1; t.nb[1] = rs; t.nb[2] = rs * rows; t.nb[3] = rs * rows;
            t.data = packed;
            int err;
            ggml_get_type_traits_cpu(vt)->from_float(x, q, n);
            if (type == GGML_TYPE_Q4_K) {
                err = ggml::cpu::repack::repack<block_q4_K, 8, 8>(&t, w, rs * rows);
                ggml::cpu::repack::gemv<block_q4_K, 8, 8, GGML_TYPE_Q8_K>(n, out, rows, packed, q, 1, rows);
            } else {
                err = ggml::cpu::repack::repack<block_iq4_nl, 8, 8>(&t, w, rs * rows);
                ggml::cpu::repack::gemv<block_iq4_nl, 8, 8, GGML_TYPE_Q8_0>(n, out, rows, packed, q, 1, rows);
            }
            status(err == 0 ? 0 : 3);
            writen(out, sizeof(float) * rows);
            free(w); free(packed); free(x); free(out); free(q);
        } else {
            fprintf(stderr, "oracle: unknown command %u\n", cmd);
            return 1;
        }
        fflush(stdout);
    }
    return 0;
}
