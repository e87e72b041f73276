// ggml's own dequantization speed, for scripts/bench-ggml.sh: times dequantize_row_* from the
// ggml-quants.c of the llama-cpp-python sdist over 64 MiB of blocks per type, prints MB/s of
// input, and writes the same blocks as a one-tensor GGUF for the other contestants. The blocks
// are weight-like: normal values (a spread that varies by row) quantized by ggml's own
// quantize_row_*_ref, so scales and codes are distributed as in a real checkpoint.
//
// usage: ggml_dequant OUT_DIR
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "ggml-common.h"
#include "ggml-quants.h"
#include "ggml-impl.h"

// The parts of ggml.c that ggml-quants.c links against, unused by dequantization.
void ggml_abort(const char *file, int line, const char *fmt, ...) {
    fprintf(stderr, "ggml_abort at %s:%d (%s)\n", file, line, fmt);
    abort();
}
size_t ggml_row_size(enum ggml_type type, int64_t ne) { (void)type; (void)ne; abort(); }
const char *ggml_type_name(enum ggml_type type) { (void)type; return "?"; }
size_t ggml_type_size(enum ggml_type type) { (void)type; abort(); }

typedef void (*dequant_fn)(const void *, float *, int64_t);

static void deq_f16(const void *x, float *y, int64_t k) {
    const ggml_fp16_t *h = x;
    for (int64_t i = 0; i < k; i++) y[i] = GGML_FP16_TO_FP32(h[i]);
}
static void deq_bf16(const void *x, float *y, int64_t k) {
    const uint16_t *h = x;
    for (int64_t i = 0; i < k; i++) {
        uint32_t u = (uint32_t)h[i] << 16;
        memcpy(&y[i], &u, 4);
    }
}
static void deq_f32(const void *x, float *y, int64_t k) { memcpy(y, x, (size_t)k * 4); }

typedef void (*quant_fn)(const float *, void *, int64_t);

static void q_f16(const float *x, void *y, int64_t k) {
    ggml_fp16_t *h = y;
    for (int64_t i = 0; i < k; i++) h[i] = GGML_FP32_TO_FP16(x[i]);
}
static void q_bf16(const float *x, void *y, int64_t k) {
    uint16_t *h = y;
    for (int64_t i = 0; i < k; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        h[i] = (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
    }
}
static void q_f32(const float *x, void *y, int64_t k) { memcpy(y, x, (size_t)k * 4); }

struct type { const char *name; int id, block_elems, block_bytes; dequant_fn f; quant_fn q; };

static const struct type TYPES[] = {
    {"Q4_K", 12, 256, sizeof(block_q4_K), (dequant_fn)dequantize_row_q4_K, (quant_fn)quantize_row_q4_K_ref},
    {"Q8_0", 8, 32, sizeof(block_q8_0), (dequant_fn)dequantize_row_q8_0, (quant_fn)quantize_row_q8_0_ref},
    {"Q6_K", 14, 256, sizeof(block_q6_K), (dequant_fn)dequantize_row_q6_K, (quant_fn)quantize_row_q6_K_ref},
    {"IQ4_XS", 23, 256, sizeof(block_iq4_xs), (dequant_fn)dequantize_row_iq4_xs, (quant_fn)quantize_row_iq4_xs_ref},
    {"MXFP4", 39, 32, sizeof(block_mxfp4), (dequant_fn)dequantize_row_mxfp4, (quant_fn)quantize_row_mxfp4_ref},
    {"F16", 1, 1, 2, deq_f16, q_f16},
    {"BF16", 30, 1, 2, deq_bf16, q_bf16},
    {"F32", 0, 1, 4, deq_f32, q_f32},
};

/// A standard normal sample (Box-Muller over xorshift).
static double normal(uint64_t *s) {
    double u[2];
    for (int i = 0; i < 2; i++) {
        *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
        u[i] = ((*s >> 11) + 0.5) / 9007199254740992.0;
    }
    return sqrt(-2.0 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void put_u32(FILE *f, uint32_t v) { fwrite(&v, 4, 1, f); }
static void put_u64(FILE *f, uint64_t v) { fwrite(&v, 8, 1, f); }

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]); return 2; }
    const size_t want = 64u << 20;
    for (size_t t = 0; t < sizeof TYPES / sizeof TYPES[0]; t++) {
        const struct type *ty = &TYPES[t];
        const int64_t row = 4096;
        size_t blocks_per_row = row / ty->block_elems;
        size_t rows = want / (blocks_per_row * ty->block_bytes);
        size_t nbytes = rows * blocks_per_row * ty->block_bytes;
        int64_t elems = (int64_t)rows * row;
        uint8_t *data = malloc(nbytes);
        float *out = malloc((size_t)elems * 4);
        // 256 distinct weight-like rows, quantized once and repeated.
        uint64_t s = 0x9e3779b97f4a7c15ull;
        size_t distinct = rows < 256 ? rows : 256, row_bytes = blocks_per_row * ty->block_bytes;
        float *x = malloc((size_t)row * 4);
        for (size_t r = 0; r < distinct; r++) {
            double spread = 0.01 + 0.04 * (double)(r % 16) / 16.0;
            for (int64_t i = 0; i < row; i++) x[i] = (float)(spread * normal(&s));
            ty->q(x, data + r * row_bytes, row);
        }
        for (size_t r = distinct; r < rows; r++) memcpy(data + r * row_bytes, data + (r % distinct) * row_bytes, row_bytes);
        free(x);
        double best = 1e9;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = now();
            ty->f(data, out, elems);
            double dt = now() - t0;
            if (dt < best) best = dt;
        }
        volatile float sink = out[elems / 2];
        (void)sink;
        printf("%s %.0f\n", ty->name, nbytes / best / 1e6);
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.gguf", argv[1], ty->name);
        FILE *f = fopen(path, "wb");
        fwrite("GGUF", 1, 4, f);
        put_u32(f, 3); put_u64(f, 1); put_u64(f, 0);
        put_u64(f, 1); fwrite("w", 1, 1, f);
        put_u32(f, 2); put_u64(f, (uint64_t)row); put_u64(f, rows);
        put_u32(f, (uint32_t)ty->id); put_u64(f, 0);
        long at = ftell(f);
        for (long pad = (32 - at % 32) % 32; pad > 0; pad--) fputc(0, f);
        fwrite(data, 1, nbytes, f);
        fclose(f);
        free(data); free(out);
    }
    return 0;
}
