// ggml's own dequantization speed, for scripts/bench-ggml.sh: times dequantize_row_* from the
// ggml-quants.c of the llama-cpp-python sdist over 64 MiB of blocks per type, and writes the
// same blocks as a one-tensor GGUF for the other contestants. The blocks are weight-like: normal
// values (a spread that varies by row) quantized by ggml's own quantize_row_*_ref, so scales and
// codes are distributed as in a real checkpoint.
//
// Prints per type, in MB/s of input (best of 3 each): ggml's dequantization alone; the plain
// exact histogram built on it (each 4096-value row dequantized into cache, then each value
// counted into the 65,536 buckets of its top 16 bits, as ours counts); and mapping the file's
// cached bytes (mmap, page tables filled, unmapped), which any reader in place pays.
//
// usage: ggml_dequant OUT_DIR [TYPE...] (every type when none is named)
// GGML_DEQUANT_ROWS=n: n rows of 4096 values per type instead of 64 MiB; GGML_DEQUANT_VALUES=1:
// ggml's dequantized values too, as raw f32 (tests/fixtures/make_ggml_blocks.py reads them).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>

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

// The i-quants whose quantization needs ggml's grids set up, and (2-bit and 1-bit) an
// importance matrix: equal weights, as llama-quantize's default without one.
static const float *equal_weights(int64_t k) {
    static float w[4096];
    for (int64_t i = 0; i < k && i < 4096; i++) w[i] = 1.0f;
    return w;
}
static void q_iq2_xxs(const float *x, void *y, int64_t k) { iq2xs_init_impl(GGML_TYPE_IQ2_XXS); quantize_iq2_xxs(x, y, 1, k, equal_weights(k)); }
static void q_iq2_xs(const float *x, void *y, int64_t k) { iq2xs_init_impl(GGML_TYPE_IQ2_XS); quantize_iq2_xs(x, y, 1, k, equal_weights(k)); }
static void q_iq2_s(const float *x, void *y, int64_t k) { iq2xs_init_impl(GGML_TYPE_IQ2_S); quantize_iq2_s(x, y, 1, k, equal_weights(k)); }
static void q_iq3_xxs(const float *x, void *y, int64_t k) { iq3xs_init_impl(256); quantize_iq3_xxs(x, y, 1, k, equal_weights(k)); }
static void q_iq3_s(const float *x, void *y, int64_t k) { iq3xs_init_impl(512); quantize_iq3_s(x, y, 1, k, equal_weights(k)); }
static void q_iq1_s(const float *x, void *y, int64_t k) { iq2xs_init_impl(GGML_TYPE_IQ1_S); quantize_iq1_s(x, y, 1, k, equal_weights(k)); }
static void q_iq1_m(const float *x, void *y, int64_t k) { iq2xs_init_impl(GGML_TYPE_IQ1_M); quantize_iq1_m(x, y, 1, k, equal_weights(k)); }

#define BLOCK(NAME, ID, ELEMS, T, LOWER) \
    {NAME, ID, ELEMS, sizeof(block_##T), (dequant_fn)dequantize_row_##LOWER, (quant_fn)quantize_row_##LOWER##_ref}
#define IQ(NAME, ID, T) {NAME, ID, QK_K, sizeof(block_##T), (dequant_fn)dequantize_row_##T, q_##T}

// The headline types first; then every other block type ggml dequantizes.
static const struct type TYPES[] = {
    BLOCK("Q4_K", 12, QK_K, q4_K, q4_K),
    BLOCK("Q8_0", 8, QK8_0, q8_0, q8_0),
    BLOCK("Q6_K", 14, QK_K, q6_K, q6_K),
    BLOCK("IQ4_XS", 23, QK_K, iq4_xs, iq4_xs),
    BLOCK("MXFP4", 39, QK_MXFP4, mxfp4, mxfp4),
    {"F16", 1, 1, 2, deq_f16, q_f16},
    {"BF16", 30, 1, 2, deq_bf16, q_bf16},
    {"F32", 0, 1, 4, deq_f32, q_f32},
    BLOCK("Q4_0", 2, QK4_0, q4_0, q4_0),
    BLOCK("Q4_1", 3, QK4_1, q4_1, q4_1),
    BLOCK("Q5_0", 6, QK5_0, q5_0, q5_0),
    BLOCK("Q5_1", 7, QK5_1, q5_1, q5_1),
    BLOCK("Q2_K", 10, QK_K, q2_K, q2_K),
    BLOCK("Q3_K", 11, QK_K, q3_K, q3_K),
    BLOCK("Q5_K", 13, QK_K, q5_K, q5_K),
    BLOCK("Q8_K", 15, QK_K, q8_K, q8_K),
    BLOCK("IQ4_NL", 20, QK4_NL, iq4_nl, iq4_nl),
    BLOCK("NVFP4", 40, QK_NVFP4, nvfp4, nvfp4),
    BLOCK("Q1_0", 41, QK1_0, q1_0, q1_0),
    BLOCK("Q2_0", 42, QK2_0, q2_0, q2_0),
    BLOCK("TQ1_0", 34, QK_K, tq1_0, tq1_0),
    BLOCK("TQ2_0", 35, QK_K, tq2_0, tq2_0),
    IQ("IQ2_XXS", 16, iq2_xxs),
    IQ("IQ2_XS", 17, iq2_xs),
    IQ("IQ2_S", 22, iq2_s),
    IQ("IQ3_XXS", 18, iq3_xxs),
    IQ("IQ3_S", 21, iq3_s),
    IQ("IQ1_S", 19, iq1_s),
    IQ("IQ1_M", 29, iq1_m),
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

/// Dequantize `rows` rows of `row` values a row at a time into `y` (one row, in cache), counting
/// each value into `fine` by its top 16 bits.
static void dequantize_and_count(dequant_fn f, const uint8_t *x, size_t row_bytes, size_t rows, int64_t row, float *y,
                                 uint64_t *fine) {
    for (size_t r = 0; r < rows; r++) {
        f(x + r * row_bytes, y, row);
        for (int64_t i = 0; i < row; i++) {
            uint32_t u;
            memcpy(&u, &y[i], 4);
            fine[u >> 16]++;
        }
    }
}


/// Seconds to map `path` (`n` bytes, cached), fill its page tables and unmap it; -1 if it can't.
static double map_seconds(const char *path, size_t n);

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

// A one-tensor GGUF header ("w", rows x row of type `id`), padded to 32 bytes: its length.
static size_t gguf_header(uint8_t *h, int id, int64_t row, size_t rows) {
    size_t n = 0;
#define PUT(v) do { __typeof__(v) v_ = (v); memcpy(h + n, &v_, sizeof v_); n += sizeof v_; } while (0)
    memcpy(h, "GGUF", 4); n = 4;
    PUT((uint32_t)3); PUT((uint64_t)1); PUT((uint64_t)0);
    PUT((uint64_t)1); h[n++] = 'w';
    PUT((uint32_t)2); PUT((uint64_t)row); PUT((uint64_t)rows);
    PUT((uint32_t)id); PUT((uint64_t)0);
#undef PUT
    while (n % 32) h[n++] = 0;
    return n;
}

// Whether `name` is among the types asked for (all when none is named).
static int wanted(const char *name, int argc, char **argv) {
    if (argc < 3) return 1;
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], name)) return 1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s OUT_DIR [TYPE...]\n", argv[0]); return 2; }
    const size_t want = 64u << 20;
    for (size_t t = 0; t < sizeof TYPES / sizeof TYPES[0]; t++) {
        const struct type *ty = &TYPES[t];
        if (!wanted(ty->name, argc, argv)) continue;
        const int64_t row = 4096;
        size_t blocks_per_row = row / ty->block_elems;
        size_t rows = want / (blocks_per_row * ty->block_bytes);
        // GGML_DEQUANT_ROWS=n writes small tensors (the test fixtures of tests/ggml_blocks.rs).
        if (getenv("GGML_DEQUANT_ROWS")) rows = (size_t)atol(getenv("GGML_DEQUANT_ROWS"));
        size_t nbytes = rows * blocks_per_row * ty->block_bytes;
        int64_t elems = (int64_t)rows * row;
        uint8_t *data = malloc(nbytes);
        float *out = malloc((size_t)elems * 4);
        uint8_t header[128];
        size_t hlen = gguf_header(header, ty->id, row, rows);
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.gguf", argv[1], ty->name);
        // The file of an earlier run is read back (i-quants take seconds to quantize).
        FILE *f = fopen(path, "rb");
        uint8_t old[128];
        int reuse = f && fread(old, 1, hlen, f) == hlen && !memcmp(old, header, hlen) && fread(data, 1, nbytes, f) == nbytes;
        if (f) fclose(f);
        if (!reuse) {
            // 256 distinct weight-like rows, quantized once and repeated.
            uint64_t s = 0x9e3779b97f4a7c15ull;
            size_t distinct = rows < 256 ? rows : 256, row_bytes = blocks_per_row * ty->block_bytes;
            float *x = malloc((size_t)row * 4);
            for (size_t r = 0; r < distinct; r++) {
                double spread = 0.01 + 0.04 * (double)(r % 16) / 16.0;
                for (int64_t i = 0; i < row; i++) x[i] = (float)(spread * normal(&s));
                ty->q(x, data + r * row_bytes, row);
            }
            for (size_t r = distinct; r < rows; r++)
                memcpy(data + r * row_bytes, data + (r % distinct) * row_bytes, row_bytes);
            free(x);
            f = fopen(path, "wb");
            fwrite(header, 1, hlen, f);
            fwrite(data, 1, nbytes, f);
            fclose(f);
        }
        double best = 1e9;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = now();
            ty->f(data, out, elems);
            double dt = now() - t0;
            if (dt < best) best = dt;
        }
        volatile float sink = out[elems / 2];
        (void)sink;
        static uint64_t fine[1 << 16];
        float row_out[4096];
        size_t row_bytes = blocks_per_row * ty->block_bytes;
        double best_count = 1e9, best_map = 1e9;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = now();
            dequantize_and_count(ty->f, data, row_bytes, rows, row, row_out, fine);
            double dt = now() - t0;
            if (dt < best_count) best_count = dt;
            double m = map_seconds(path, hlen + nbytes);
            if (m >= 0 && m < best_map) best_map = m;
        }
        volatile uint64_t fine_sink = fine[0x3c00];
        (void)fine_sink;
        // GGML_DEQUANT_VALUES=1 also writes ggml's dequantized values, as raw f32 (TYPE.f32).
        if (getenv("GGML_DEQUANT_VALUES")) {
            snprintf(path, sizeof path, "%s/%s.f32", argv[1], ty->name);
            f = fopen(path, "wb");
            fwrite(out, 4, (size_t)elems, f);
            fclose(f);
        }
        printf("%s %.0f %.0f %.0f\n", ty->name, nbytes / best / 1e6, nbytes / best_count / 1e6,
               best_map < 1e9 ? (hlen + nbytes) / best_map / 1e6 : 0.0);
        fflush(stdout);
        free(data); free(out);
    }
    return 0;
}

static double map_seconds(const char *path, size_t n) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    double t0 = now();
    void *p = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) { close(fd); return -1; }
    // A byte of each page read, as ours does: each fault maps the pages around it.
    volatile const uint8_t *bytes = p;
    for (size_t i = 0; i < n; i += 4096) (void)bytes[i];
    munmap(p, n);
    double dt = now() - t0;
    close(fd);
    return dt;
}
