/* test_blocks.c - lib/blocks.c and lib/half.c against the reference
 * libggml-base: unpack -> pack gives the same bytes, side data + codes
 * restore the block, and our dequantizer equals dequantize_row_* and
 * type_traits.to_float bit for bit. */
#include "blocks.h"
#include "ggml_type.h"
#include "half.h"
#include "tap.h"

#include <gguf.h>   /* pulls in the reference ggml.h (ggml_quantize_chunk ...) */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* reference dequantizers (ggml-quants.h is not installed) */
void dequantize_row_q4_0(const void *x, float *y, int64_t k);
void dequantize_row_q4_1(const void *x, float *y, int64_t k);
void dequantize_row_q5_0(const void *x, float *y, int64_t k);
void dequantize_row_q5_1(const void *x, float *y, int64_t k);
void dequantize_row_q8_0(const void *x, float *y, int64_t k);
void dequantize_row_iq4_nl(const void *x, float *y, int64_t k);
void dequantize_row_q2_K(const void *x, float *y, int64_t k);
void dequantize_row_q3_K(const void *x, float *y, int64_t k);
void dequantize_row_q4_K(const void *x, float *y, int64_t k);
void dequantize_row_q5_K(const void *x, float *y, int64_t k);
void dequantize_row_q6_K(const void *x, float *y, int64_t k);
void dequantize_row_iq4_xs(const void *x, float *y, int64_t k);

typedef void (*deq_fn)(const void *, float *, int64_t);
static const struct { int type; deq_fn deq; } types[] = {
    {WP_Q4_0, dequantize_row_q4_0},   {WP_Q4_1, dequantize_row_q4_1},
    {WP_Q5_0, dequantize_row_q5_0},   {WP_Q5_1, dequantize_row_q5_1},
    {WP_Q8_0, dequantize_row_q8_0},   {WP_IQ4_NL, dequantize_row_iq4_nl},
    {WP_Q2_K, dequantize_row_q2_K},   {WP_Q3_K, dequantize_row_q3_K},
    {WP_Q4_K, dequantize_row_q4_K},   {WP_Q5_K, dequantize_row_q5_K},
    {WP_Q6_K, dequantize_row_q6_K},   {WP_IQ4_XS, dequantize_row_iq4_xs},
};
#define NTYPES (int)(sizeof types / sizeof types[0])

/* ---- deterministic realistic weights: Student-t(3) entries, per-row scale
 * spread, a few outlier columns */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd32(void) { return (uint32_t)(tap_xorshift(&rng) >> 32); }
static double unif(void) { return (rnd32() + 0.5) / 4294967296.0; }
static double gauss(void) { return sqrt(-2 * log(unif())) * cos(6.283185307179586 * unif()); }
static double student3(void)
{
    double c = 0;
    for (int i = 0; i < 3; i++) { double g = gauss(); c += g * g; }
    return gauss() / sqrt(c / 3);
}

static void make_matrix(float *x, int rows, int n)
{
    int outl[3] = {(int)(rnd32() % n), (int)(rnd32() % n), (int)(rnd32() % n)};
    for (int r = 0; r < rows; r++) {
        double rs = 0.02 * exp(0.5 * gauss());
        for (int c = 0; c < n; c++) {
            double v = rs * student3();
            if (c == outl[0] || c == outl[1] || c == outl[2])
                v *= 20;
            x[(size_t)r * n + c] = (float)v;
        }
    }
}

static void make_imatrix(float *w, int n)
{
    for (int c = 0; c < n; c++)
        w[c] = (float)(exp(1.5 * gauss()) * 1e-2);
}

/* Checks on a buffer of nblk reference blocks: pack(unpack(b)) == b, side +
 * codes restore b, our dequant == reference dequant and to_float. */
static int check_blocks(int type, deq_fn deq, const uint8_t *blk, int nblk, int *deq_ok)
{
    wp_block_info info;
    wp_block_info_get(type, &info);
    uint8_t out[512], side[64], codes[256];
    wp_block_parts p;
    int ok = 1;
    for (int i = 0; i < nblk; i++) {
        const uint8_t *b = blk + (size_t)i * info.block_bytes;
        wp_block_unpack(type, b, &p);
        for (int j = 0; j < p.n; j++)
            if (p.q[j] >= (1 << info.code_bits)) ok = 0;
        memset(out, 0x5a, sizeof out);
        wp_block_pack(type, &p, out);
        if (memcmp(out, b, (size_t)info.block_bytes)) ok = 0;
        wp_block_get_side(type, b, side);
        wp_block_get_codes(type, b, codes);
        memset(out, 0xa5, sizeof out);
        wp_block_put_side(type, side, out);
        wp_block_put_codes(type, codes, out);
        if (memcmp(out, b, (size_t)info.block_bytes)) ok = 0;
    }
    size_t k = (size_t)nblk * info.n;
    float *y0 = malloc(k * sizeof *y0), *y1 = malloc(k * sizeof *y1), *y2 = malloc(k * sizeof *y2);
    wp_dequantize_row(type, blk, y0, (int64_t)k);
    deq(blk, y1, (int64_t)k);
    ggml_get_type_traits((enum ggml_type)type)->to_float(blk, y2, (int64_t)k);
    *deq_ok = !memcmp(y0, y1, k * sizeof *y0) && !memcmp(y0, y2, k * sizeof *y0);
    free(y0); free(y1); free(y2);
    return ok;
}

static void test_half(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float a = wp_fp16_to_f32((uint16_t)h), b = ggml_fp16_to_fp32((ggml_fp16_t)h);
        if (memcmp(&a, &b, 4)) bad++;
    }
    CHECK(bad == 0, "fp16 -> f32 equals ggml for all 65536 patterns (%d differ)", bad);

    bad = 0;
    for (int i = 0; i < (1 << 21); i++) {
        uint32_t u = rnd32();
        if (i & 1) u = (u & 0x80000000u) | (0x33000000u + u % 0x14800000u); /* fp16 range */
        float f; memcpy(&f, &u, 4);
        if (wp_f32_to_fp16(f) != ggml_fp32_to_fp16(f)) bad++;
        ggml_bf16_t rb = ggml_fp32_to_bf16(f);
        if (wp_f32_to_bf16(f) != rb.bits) bad++;
        float a = wp_bf16_to_f32((uint16_t)u), b = ggml_bf16_to_fp32((ggml_bf16_t){(uint16_t)u});
        if (memcmp(&a, &b, 4)) bad++;
    }
    const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 65504.0f, 65519.99f, 65520.0f,
                             5.96e-8f, 2.98e-8f, 2.9802322e-8f, 6.1035156e-05f, 1e-30f, -1e-45f};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        if (wp_f32_to_fp16(special[i]) != ggml_fp32_to_fp16(special[i])) bad++;
    CHECK(bad == 0, "f32 -> fp16, f32 <-> bf16 equal ggml on 2M random + special values (%d differ)", bad);
}

/* Every ggml type: wpack's geometry table equals the reference's (name, block
 * size, bytes per block, quantized or not); names parse back case-insensitively;
 * row sizes are whole blocks, a partial block is refused (0). */
static void test_geometry(void)
{
    int bad = 0, n = 0;
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        enum ggml_type gt = (enum ggml_type)t;
        const int64_t b = ggml_blck_size(gt);
        if (b == 0) {   /* a removed type: wpack knows no such type either */
            if (wp_ggml_blck_size((uint32_t)t) != 0 || wp_ggml_type_name((uint32_t)t) != NULL)
                bad++;
            continue;
        }
        n++;
        const char *name = wp_ggml_type_name((uint32_t)t);
        if (!name || strcasecmp(name, ggml_type_name(gt)) || wp_ggml_blck_size((uint32_t)t) != b ||
            wp_ggml_type_size((uint32_t)t) != ggml_type_size(gt) ||
            wp_ggml_is_quantized((uint32_t)t) != (int)ggml_is_quantized(gt) ||
            wp_ggml_type_from_name(ggml_type_name(gt)) != t ||
            wp_ggml_row_size((uint32_t)t, 3 * b) != ggml_row_size(gt, 3 * b) ||
            (b > 1 && wp_ggml_row_size((uint32_t)t, 3 * b + 1) != 0)) {
            printf("# type %d (%s): ours %s %d %zu, ggml %s %lld %zu\n", t, ggml_type_name(gt), name ? name : "-",
                   wp_ggml_blck_size((uint32_t)t), wp_ggml_type_size((uint32_t)t), ggml_type_name(gt),
                   (long long)b, ggml_type_size(gt));
            bad++;
        }
    }
    CHECK(bad == 0 && n > 30, "the type table equals ggml's for all %d types (%d differ)", n, bad);
    CHECK(wp_ggml_type_name(GGML_TYPE_COUNT) == NULL && wp_ggml_blck_size(GGML_TYPE_COUNT) == 0 &&
              wp_ggml_type_size(GGML_TYPE_COUNT) == 0 && wp_ggml_type_from_name("Q9_9") == -1,
          "past the last type and unknown names: no type");
}

int main(void)
{
    test_half();
    test_geometry();

    const int rows = 8, n = 1024;
    float *x = malloc(sizeof(float) * rows * n), *imat = malloc(sizeof(float) * n);
    uint8_t *q = malloc((size_t)rows * n * 2);
    make_matrix(x, rows, n);
    make_imatrix(imat, n);

    for (int t = 0; t < NTYPES; t++) {
        int type = types[t].type, deq_ok;
        const char *name = wp_ggml_type_name((uint32_t)type);
        wp_block_info info;
        CHECK(wp_block_info_get(type, &info) == 0 && info.block_bytes == (int)ggml_type_size((enum ggml_type)type)
              && info.n == (int)ggml_blck_size((enum ggml_type)type), "%s: info matches ggml geometry", name);
        int nblk = rows * n / info.n;
        ggml_quantize_init((enum ggml_type)type);

        /* realistic, reference path and imatrix path */
        for (int im = 0; im < 2; im++) {
            ggml_quantize_chunk((enum ggml_type)type, x, q, 0, rows, n, im ? imat : NULL);
            int ok = check_blocks(type, types[t].deq, q, nblk, &deq_ok);
            CHECK(ok, "%s%s: unpack/pack and side+codes restore %d quantized blocks", name, im ? " imatrix" : "", nblk);
            CHECK(deq_ok, "%s%s: dequantize equals dequantize_row and to_float", name, im ? " imatrix" : "");
        }

        /* random bytes (d kept finite so the float compare is meaningful) */
        uint8_t *rb = malloc((size_t)64 * info.block_bytes);
        for (int i = 0; i < 64 * info.block_bytes; i++) rb[i] = (uint8_t)rnd32();
        for (int i = 0; i < 64; i++) {
            uint8_t *b = rb + (size_t)i * info.block_bytes;
            wp_block_parts p;
            wp_block_unpack(type, b, &p);
            p.d = wp_f32_to_fp16((float)(gauss() * 1e-3));
            if (info.has_min) p.dmin = wp_f32_to_fp16((float)(gauss() * 1e-3));
            wp_block_pack(type, &p, b);
        }
        int ok = check_blocks(type, types[t].deq, rb, 64, &deq_ok);
        CHECK(ok && deq_ok, "%s: 64 random-byte blocks round-trip and dequantize equal", name);
        free(rb);

        /* edge cases: all zero, denormal only, one huge outlier */
        float e[256 * 3];
        memset(e, 0, sizeof e);
        for (int i = 0; i < 256; i++) {
            e[256 + i] = (float)((i % 7) - 3) * 1e-40f;
            e[512 + i] = (float)(gauss() * 1e-3);
        }
        e[512 + 77] = 3e4f;
        int fin = 1;
        for (int r = 0; r < 3; r++) {
            ggml_quantize_chunk((enum ggml_type)type, e + 256 * r, q, 0, 1, 256, NULL);
            ok &= check_blocks(type, types[t].deq, q, 256 / info.n, &deq_ok);
            ok &= deq_ok;
            for (int i = 0; i < 256 / info.n; i++) {
                wp_block_parts p;
                wp_block_unpack(type, q + (size_t)i * info.block_bytes, &p);
                if (!isfinite(wp_fp16_to_f32(p.d)) || !isfinite(wp_fp16_to_f32(p.dmin))) fin = 0;
            }
        }
        CHECK(ok, "%s: zero, denormal and outlier blocks round-trip and dequantize equal", name);
        CHECK(fin, "%s: zero, denormal and outlier blocks have finite d, dmin", name);
    }

    wp_block_parts p;
    uint8_t b[256] = {0};
    CHECK(wp_block_unpack(WP_F16, b, &p) == -1 && wp_block_pack(WP_IQ2_XS, &p, b) == -1
          && wp_dequantize_row(WP_Q4_K, b, (float *)b, 100) == -1, "unsupported types and bad lengths are refused");

    free(x); free(imat); free(q);
    return tap_done();
}
