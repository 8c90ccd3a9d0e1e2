/*
 * mksynth - write a GGUF of synthetic quantized matrices for the bundle tests.
 *
 * Usage: mksynth OUT.gguf [small|big]
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
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "ggml_type.h"
#include "gguf_file.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double urand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return ((rng >> 11) + 0.5) / 9007199254740992.0;
}
static double gauss(void) { return sqrt(-2 * log(urand())) * cos(6.283185307179586 * urand()); }

/* Student-t with 4 degrees of freedom: heavy tails like trained weights. */
static double student4(void)
{
    double z = gauss(), c = 0;
    for (int i = 0; i < 4; i++) {
        double g = gauss();
        c += g * g;
    }
    return z / sqrt(c / 4);
}

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

int main(int argc, char **argv)
{
    char err[256];
    if (argc < 2) {
        fprintf(stderr, "usage: mksynth OUT.gguf [small|big]\n");
        return 2;
    }
    int big = argc > 2 && !strcmp(argv[2], "big");
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
