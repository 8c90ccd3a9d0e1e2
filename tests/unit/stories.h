/*
 * stories.h - the stories260K model for the unit tests that read real
 * weights (test_gptq, test_gptq_ref): its F32 GGUF under WPACK_DATA
 * (default ../shared/data), one tensor of it as floats, and a 64 × 256 GPTQ
 * problem made of it. Header-only.
 */
#ifndef WPACK_STORIES_H
#define WPACK_STORIES_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_file.h"
#include "stream.h"

/* Open stories260K-f32.gguf; NULL with a one-line message in err if it
 * cannot be read. */
static inline wp_gguf_in *stories_open(char *err, size_t errlen)
{
    char path[4096];
    const char *data = getenv("WPACK_DATA") ? getenv("WPACK_DATA") : "../shared/data";
    snprintf(path, sizeof path, "%s/models/stories260K/stories260K-f32.gguf", data);
    return wp_gguf_open(path, err, errlen);
}

/* Tensor `name` of model m as ne0 × ne1 floats (malloc'd; ne1 = 1 for a
 * vector), or NULL (ne0 = ne1 = 0) if m lacks it or it is not F32. */
static inline float *stories_tensor(wp_gguf_in *m, const char *name, int64_t *ne0, int64_t *ne1)
{
    wp_record r;
    wp_record_init(&r);
    float *f = NULL;
    *ne0 = *ne1 = 0;
    if (m && wp_gguf_read_tensor(m, name, &r) == 1 && r.type == WP_F32 && (f = malloc(r.payload_len + 1))) {
        memcpy(f, r.payload, r.payload_len);
        *ne0 = r.ne[0];
        *ne1 = r.n_dims > 1 ? r.ne[1] : 1;
    }
    wp_record_free(&r);
    return f;
}

/* stories260K's 64 × 256 problem: W (64 rows) = blk.0..3.attn_q side by side,
 * H (256 × 256) = XᵀX, X row t = tokens t..t+3's embeddings RMS-normed with
 * blk.0.attn_norm (full rank: 509 rows). Returns H (malloc'd), W (malloc'd)
 * in *Wout; NULL if the model lacks a tensor. */
static inline double *stories_problem(wp_gguf_in *model, float **Wout)
{
    int64_t d, nv, a, b;
    float *E = stories_tensor(model, "token_embd.weight", &d, &nv);
    float *g = stories_tensor(model, "blk.0.attn_norm.weight", &a, &b);
    if (!E || !g)
        return NULL;
    const int64_t n = 4 * d;
    double *H = calloc((size_t)(n * n), sizeof *H), *x = malloc((size_t)n * sizeof *x);
    for (int64_t t = 0; t + 3 < nv; t++) {
        for (int k = 0; k < 4; k++) {
            const float *e = E + (t + k) * d;
            double ss = 0;
            for (int64_t j = 0; j < d; j++)
                ss += (double)e[j] * e[j];
            for (int64_t j = 0; j < d; j++)
                x[k * d + j] = e[j] / sqrt(ss / d + 1e-5) * g[j];
        }
        for (int64_t i = 0; i < n; i++)   /* H upper and lower: x's outer product */
            for (int64_t j = 0; j < n; j++)
                H[i * n + j] += x[i] * x[j];
    }
    float *W = malloc((size_t)(d * n) * sizeof *W);
    for (int k = 0; k < 4; k++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%d.attn_q.weight", k);
        float *q = stories_tensor(model, name, &a, &b);
        for (int64_t r = 0; r < d; r++)
            for (int64_t c = 0; c < d; c++)
                W[r * n + k * d + c] = q[r * d + c];
        free(q);
    }
    free(E);
    free(g);
    free(x);
    *Wout = W;
    return H;
}

#endif
