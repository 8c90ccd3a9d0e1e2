/*
 * mksynth - write a GGUF of synthetic quantized matrices for the bundle tests.
 *
 * Usage: mksynth OUT.gguf [small|big|floats]
 *
 * Weights are realistic: Student-t(4)-like heavy tails, a few outlier
 * columns, and a per-row scale spread; they are quantized by the reference
 * llama.cpp (ggml_quantize_chunk of the pinned libggml-base), so the blocks
 * are genuine llama.cpp blocks. Shapes cover one row, 63/64/65 rows, row
 * lengths 32, 256, 288 and 4096 (each where the type's block size allows),
 * plus special matrices: "one_symbol" (all codes equal), "all_pairs" (every
 * 8-bit pair symbol of Q4_0 occurs) and "rare" (a Q8_0 matrix of 2^20
 * weights in which one code occurs once: probability 2^-20, forcing the
 * 11-bit length limit) — "big" only.
 *
 * "floats" writes BF16, F16 and F32 matrices instead, for the lossless path:
 * ±0, subnormals, ±Inf, several NaN payloads, every exponent value, a matrix
 * with one exponent only, a row with one rare exponent at position 0 and
 * one at 63, rows of BF16's largest values (their GEMV overflows float), and
 * shapes that are not multiples of 64.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "ggml_type.h"
#include "gguf_file.h"
#include "half.h"
#include "synth.h"


static void realistic(float *w, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++) {
        double s = 0.02 * exp(0.5 * gauss());
        for (int64_t c = 0; c < cols; c++) {
            double v = s * student4();
            if (c % 97 == 13)
                v *= 8; /* outlier columns */
            w[r * cols + c] = (float)v;
        }
    }
}

static wp_gguf_out *out;

static void add(const char *name, int type, int64_t rows, int64_t cols, const float *w)
{
    char err[256];
    wp_record r;
    wp_record_init(&r);
    r.kind = WP_REC_TENSOR;
    r.type = (uint32_t)type;
    r.n_dims = 2;
    r.ne[0] = cols;
    r.ne[1] = rows;
    wp_record_set_name(&r, name);
    size_t bytes = (size_t)rows * ggml_row_size((enum ggml_type)type, cols);
    wp_record_alloc(&r, bytes);
    ggml_quantize_chunk((enum ggml_type)type, w, r.payload, 0, rows, cols, NULL);
    if (wp_gguf_out_add(out, &r) < 0) {
        snprintf(err, sizeof err, "%s", wp_gguf_out_error(out));
        fprintf(stderr, "mksynth: %s\n", err);
        exit(1);
    }
    wp_record_free(&r);
}

static void add_raw(const char *name, int type, int64_t rows, int64_t cols, const void *data)
{
    wp_record r;
    wp_record_init(&r);
    r.kind = WP_REC_TENSOR;
    r.type = (uint32_t)type;
    r.n_dims = 2;
    r.ne[0] = cols;
    r.ne[1] = rows;
    wp_record_set_name(&r, name);
    size_t bytes = (size_t)(rows * cols) * wp_ggml_type_size((uint32_t)type);
    memcpy(wp_record_alloc(&r, bytes), data, bytes);
    if (wp_gguf_out_add(out, &r) < 0) {
        fprintf(stderr, "mksynth: %s\n", wp_gguf_out_error(out));
        exit(1);
    }
    wp_record_free(&r);
}

/* Float matrices with every special value (see the top of the file). */
static void floats(void)
{
    static uint16_t h[300 * 300];
    static uint32_t f[300 * 300];
    /* BF16 and F16: every bit pattern once, at random places among realistic
     * weights (512 x 640), so the matrix still codes smaller than 16 b/w */
    static uint16_t all[512 * 640];
    for (int half = 0; half < 2; half++) {
        for (int i = 0; i < 512 * 640; i++) {
            float v = (float)(0.02 * student4());
            all[i] = half ? wp_f32_to_fp16(v) : wp_f32_to_bf16(v);
        }
        for (int p = 0; p < 65536; p++)
            all[(size_t)p * 5 + (size_t)(urand() * 5)] = (uint16_t)p;
        add_raw(half ? "f16.every_pattern" : "bf16.every_pattern", half ? WP_F16 : WP_BF16, 512, 640, all);
    }
    /* realistic BF16 with specials sprinkled in, shape 67 x 100 */
    static const uint16_t sp[] = {0x0000, 0x8000, 0x0001, 0x807f, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffff, 0x7fa5};
    for (int i = 0; i < 67 * 100; i++) {
        float v = (float)(0.02 * student4());
        uint32_t u;
        memcpy(&u, &v, 4);
        h[i] = (uint16_t)(u >> 16);
        if (i % 97 == 5)
            h[i] = sp[(i / 97) % 10];
    }
    add_raw("bf16.specials_67x100", WP_BF16, 67, 100, h);
    /* one exponent only: all weights in [1, 2) */
    for (int i = 0; i < 64 * 128; i++)
        h[i] = (uint16_t)(0x3f80 | (i & 0x7f));
    add_raw("bf16.one_exponent", WP_BF16, 64, 128, h);
    /* a rare exponent at position 0 of row 3 and at position 63 of row 5 */
    for (int i = 0; i < 8 * 130; i++) {
        float v = (float)(0.02 * student4());
        uint32_t u;
        memcpy(&u, &v, 4);
        h[i] = (uint16_t)(u >> 16);
    }
    h[3 * 130 + 0] = 0x7000;
    h[5 * 130 + 63] = 0x1000;
    add_raw("bf16.rare_exponent", WP_BF16, 8, 130, h);
    /* F32 with specials, 33 x 65 */
    static const uint32_t sp32[] = {0, 0x80000000u, 1, 0x807fffffu, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                    0x7f800001u, 0xffffffffu};
    for (int i = 0; i < 33 * 65; i++) {
        float v = (float)(0.02 * student4());
        memcpy(&f[i], &v, 4);
        if (i % 31 == 7)
            f[i] = sp32[(i / 31) % 9];
    }
    add_raw("f32.specials_33x65", WP_F32, 33, 65, f);
    /* BF16 with one +Inf, -Inf or NaN in every row, 16 x 64: no output of its GEMV is finite */
    static const uint16_t nf[] = {0x7f80, 0xff80, 0x7fc0};
    for (int i = 0; i < 16 * 64; i++) {
        float v = (float)(0.02 * student4());
        uint32_t u;
        memcpy(&u, &v, 4);
        h[i] = i % 64 == 17 ? nf[(i / 64) % 3] : (uint16_t)(u >> 16);
    }
    add_raw("bf16.nonfinite_rows_16x64", WP_BF16, 16, 64, h);
    /* BF16's largest finite values, +- at random, 16 x 64: every output's products overflow a
       float sum (Inf, or NaN from Inf - Inf) where float64 stays finite */
    for (int i = 0; i < 16 * 64; i++)
        h[i] = urand() < 0.5 ? 0x7f7f : 0xff7f;
    add_raw("bf16.largest_16x64", WP_BF16, 16, 64, h);
}

int main(int argc, char **argv)
{
    char err[256];
    if (argc < 2 || argv[1][0] == '-') {   /* (`mksynth --help` wrote a GGUF named --help) */
        fprintf(stderr, "usage: mksynth OUT.gguf [small|big|floats]\n");
        return 2;
    }
    int big = argc > 2 && !strcmp(argv[2], "big");
    if (argc > 2 && !strcmp(argv[2], "floats")) {
        out = wp_gguf_out_new(err, sizeof err);
        floats();
        FILE *f = fopen(argv[1], "wb");
        if (!f || wp_gguf_out_finish(out, f) || fclose(f)) {
            fprintf(stderr, "mksynth: %s: cannot write\n", argv[1]);
            return 1;
        }
        wp_gguf_out_free(out);
        return 0;
    }
    static const int types[] = {WP_Q4_0, WP_Q4_1, WP_Q5_0, WP_Q5_1, WP_Q8_0, WP_IQ4_NL,
                                WP_Q2_K, WP_Q3_K, WP_Q4_K, WP_Q5_K, WP_Q6_K, WP_IQ4_XS};
    static const int64_t rows[] = {1, 63, 64, 65};
    static const int64_t cols[] = {32, 256, 288, 4096};
    out = wp_gguf_out_new(err, sizeof err);
    float *w = malloc(sizeof(float) * 65 * 4096);
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
        ggml_quantize_init((enum ggml_type)types[t]);
        int blck = wp_ggml_blck_size((uint32_t)types[t]);
        for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
            for (size_t j = 0; j < sizeof cols / sizeof *cols; j++) {
                if (cols[j] % blck || (!big && cols[j] == 4096 && rows[i] != 65))
                    continue;
                char name[96];
                snprintf(name, sizeof name, "%s.r%lldx%lld", wp_ggml_type_name((uint32_t)types[t]),
                         (long long)rows[i], (long long)cols[j]);
                realistic(w, rows[i], cols[j]);
                add(name, types[t], rows[i], cols[j], w);
            }
    }
    /* one symbol: every weight equal, every code the same */
    for (int i = 0; i < 64 * 256; i++)
        w[i] = 0.5f;
    add("one_symbol.Q4_0", WP_Q4_0, 64, 256, w);
    add("one_symbol.Q6_K", WP_Q6_K, 64, 256, w);
    /* all 256 pair symbols of Q4_0: a ramp hitting every code next to every code */
    for (int r = 0; r < 64; r++)
        for (int c = 0; c < 256; c++) {
            int k = (r * 256 + c) / 2, q = (c % 2) ? (k / 16) % 16 : k % 16;
            w[r * 256 + c] = (c % 32 == 0) ? -8.0f : (float)(q - 8);
        }
    add("all_pairs.Q4_0", WP_Q4_0, 64, 256, w);
    if (big) {
        /* one code of probability 2^-20 in a Q8_0 matrix of 2^20 weights */
        float *b = malloc(sizeof(float) * 4096 * 256);
        for (int i = 0; i < 4096 * 256; i++)
            b[i] = (float)((i % 32 == 0) ? 127 : ((i * 7) % 61) - 30);
        b[12345] = -127; /* the rare code */
        add("rare.Q8_0", WP_Q8_0, 4096, 256, b);
        free(b);
    }
    FILE *f = fopen(argv[1], "wb");
    if (!f || wp_gguf_out_finish(out, f) || fclose(f)) {
        fprintf(stderr, "mksynth: %s: cannot write\n", argv[1]);
        return 1;
    }
    wp_gguf_out_free(out);
    free(w);
    return 0;
}
