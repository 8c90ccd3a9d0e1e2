/* test_quantize.c - lib/quantize.c, gptq(1)'s step for one tensor: each way
 * a tensor is made (RTN, RTN with an imatrix slice per expert, the
 * LazyWeights choice without a Hessian, GPTQ with a factor, a factor not
 * positive definite, a conversion, a requantization) gives the blocks of the
 * quantizer it stands for, byte for byte, and bad values are refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocks.h"
#include "ggml_type.h"
#include "gptq.h"
#include "half.h"
#include "quantize.h"
#include "rtn.h"
#include "tap.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return ((rng >> 11) + 0.5) / 9007199254740992.0;
}

/* A tensor record of type (F32, F16 or BF16) holding the floats w (ne0 x ne1 x ne2). */
static void tensor(wp_record *r, uint32_t type, const float *w, int64_t ne0, int64_t ne1, int64_t ne2)
{
    wp_record_init(r);
    r->kind = WP_REC_TENSOR;
    r->type = type;
    r->n_dims = ne2 > 1 ? 3 : 2;
    r->ne[0] = ne0, r->ne[1] = ne1, r->ne[2] = ne2, r->ne[3] = 1;
    wp_record_set_name(r, "blk.0.ffn_up.weight");
    const int64_t n = ne0 * ne1 * ne2;
    uint8_t *p = wp_record_alloc(r, (uint64_t)n * (type == WP_F32 ? 4 : 2));
    for (int64_t k = 0; k < n; k++) {
        if (type == WP_F32)
            memcpy(p + 4 * k, &w[k], 4);
        else
            wp_wr16(p + 2 * k, type == WP_F16 ? wp_f32_to_fp16(w[k]) : wp_f32_to_bf16(w[k]));
    }
}

/* factor_of for the experts' test: expert 0's factor from the H at user, none
 * for expert 1, an error for any later one; counts the calls */
static int factor_calls;
static int expert_factor(void *user, int64_t m, wp_gptq_factor **f, char *err, size_t n)
{
    factor_calls++;
    if (m == 0)
        return wp_gptq_factor_make(user, 256, NULL, f, err, n) < 0 ? -1 : 0;
    if (m == 1)
        return 0;
    snprintf(err, n, "no factor for expert %lld", (long long)m);
    return -1;
}

/* Whether r is of type with payload the len bytes at want. */
static int holds(const wp_record *r, uint32_t type, const uint8_t *want, size_t len)
{
    return r->type == type && r->payload_len == len && !memcmp(r->payload, want, len);
}

int main(void)
{
    const int64_t ne0 = 256, ne1 = 8, n = ne0 * ne1;
    float *w = malloc(sizeof(float) * n * 2), *wf16 = malloc(sizeof(float) * n * 2);
    for (int64_t k = 0; k < 2 * n; k++) {
        const double u = urand() - 0.5;
        w[k] = (float)(u * u * u * 0.4 + (k % ne0 == 7 ? 0.3 : 0));   /* heavy tails, an outlier column */
        wf16[k] = wp_fp16_to_f32(wp_f32_to_fp16(w[k]));
    }
    uint8_t *want = malloc(4 * (size_t)n * 2 + 64);
    char err[512];
    wp_gptq_opts go;
    wp_gptq_opts_default(&go);
    wp_quantize_info qi;
    wp_record r;

    /* RTN of F16: llama.cpp's RTN of the widened values */
    tensor(&r, WP_F16, w, ne0, ne1, 1);
    wp_quantize_job job = {WP_Q4_K, NULL, NULL, &go, NULL, NULL};
    size_t len = wp_rtn_quantize(WP_Q4_K, wf16, want, ne1, ne0, NULL);
    CHECK(wp_quantize_tensor(&r, &job, &qi, err, sizeof err) == 0 && holds(&r, WP_Q4_K, want, len) &&
              !strcmp(qi.how, "rtn") && qi.rounded == 1 && qi.not_pd == 0,
          "F16 to Q4_K: RTN's bytes of the widened values, said rtn and rounded");
    wp_record_free(&r);

    /* an expert tensor (2 matrices): each with its own importance slice */
    float *iw = malloc(sizeof(float) * ne0 * 2);
    for (int64_t k = 0; k < 2 * ne0; k++)
        iw[k] = (float)(0.1 + urand() * (k < ne0 ? 1 : 10));
    tensor(&r, WP_F32, w, ne0, ne1, 2);
    job = (wp_quantize_job){WP_Q6_K, iw, NULL, &go, NULL, NULL};
    const size_t half = wp_rtn_quantize(WP_Q6_K, w, want, ne1, ne0, iw);
    wp_rtn_quantize(WP_Q6_K, w + n, want + half, ne1, ne0, iw + ne0);
    CHECK(wp_quantize_tensor(&r, &job, &qi, err, sizeof err) == 0 && holds(&r, WP_Q6_K, want, 2 * half),
          "two experts to Q6_K: each RTN'd with its own importance slice");
    wp_record_free(&r);

    /* γ and c without a Hessian: wp_gptq_quantize with H = I */
    wp_gptq_opts lazy = go;
    lazy.gamma = 1;
    lazy.widen = 1.25;
    tensor(&r, WP_F32, w, ne0, ne1, 1);
    job = (wp_quantize_job){WP_Q8_0, NULL, NULL, &lazy, NULL, NULL};
    int ok = wp_gptq_quantize(WP_Q8_0, w, ne1, ne0, NULL, NULL, &lazy, want, NULL, err, sizeof err) == 0;
    len = wp_ggml_row_size(WP_Q8_0, ne0) * (size_t)ne1;
    CHECK(ok && wp_quantize_tensor(&r, &job, &qi, err, sizeof err) == 0 && holds(&r, WP_Q8_0, want, len) &&
              !strcmp(qi.how, "rtn+lazy") && qi.rounded == 1,
          "--gamma --widen 1.25 without a Hessian: GPTQ's code choice with H = I, said rtn+lazy");
    wp_record_free(&r);

    /* GPTQ with a factor: wp_gptq_quantize's bytes with that H */
    double *H = calloc((size_t)(ne0 * ne0), sizeof *H);
    for (int t = 0; t < 300; t++) {
        double x[256], base = urand() - 0.5;
        for (int64_t c = 0; c < ne0; c++)
            x[c] = 0.6 * base + (urand() - 0.5);
        for (int64_t i = 0; i < ne0; i++)
            for (int64_t j = 0; j < ne0; j++)
                H[i * ne0 + j] += x[i] * x[j];
    }
    wp_gptq_factor *f = NULL;
    ok = wp_gptq_factor_make(H, ne0, &go, &f, err, sizeof err) == 0;
    ok &= wp_gptq_quantize(WP_Q4_K, w, ne1, ne0, H, NULL, &go, want, NULL, err, sizeof err) == 0;
    tensor(&r, WP_F32, w, ne0, ne1, 1);
    job = (wp_quantize_job){WP_Q4_K, NULL, f, &go, NULL, NULL};
    len = wp_ggml_row_size(WP_Q4_K, ne0) * (size_t)ne1;
    CHECK(ok && wp_quantize_tensor(&r, &job, &qi, err, sizeof err) == 0 && holds(&r, WP_Q4_K, want, len) &&
              !strcmp(qi.how, "gptq") && qi.rounded == 0,
          "GPTQ with the Hessian's factor: wp_gptq_quantize's bytes, said gptq, nothing rounded");
    wp_record_free(&r);
    wp_gptq_factor_free(f);

    /* experts, each its own factor (factor_of): expert 0 GPTQ with H, expert 1 none (RTN) */
    ok = wp_gptq_quantize(WP_Q4_K, w, ne1, ne0, H, NULL, &go, want, NULL, err, sizeof err) == 0;
    len = wp_ggml_row_size(WP_Q4_K, ne0) * (size_t)ne1;
    ok &= wp_rtn_quantize(WP_Q4_K, w + n, want + len, ne1, ne0, NULL) == len;
    tensor(&r, WP_F32, w, ne0, ne1, 2);
    job = (wp_quantize_job){WP_Q4_K, NULL, NULL, &go, expert_factor, H};
    factor_calls = 0;
    CHECK(ok && wp_quantize_tensor(&r, &job, &qi, err, sizeof err) == 0 && holds(&r, WP_Q4_K, want, 2 * len) &&
              factor_calls == 2 && qi.gptq == 1 && qi.rounded == 1,
          "two experts: the first GPTQ's bytes with its own factor, the second (no factor) RTN's; 1 by GPTQ");
    wp_record_free(&r);
    float *w3 = malloc(sizeof(float) * n * 3);
    memcpy(w3, w, sizeof(float) * n * 2);
    memcpy(w3 + 2 * n, w, sizeof(float) * n);
    tensor(&r, WP_F32, w3, ne0, ne1, 3);
    factor_calls = 0;
    CHECK(wp_quantize_tensor(&r, &job, &qi, err, sizeof err) == -1 && !strcmp(err, "no factor for expert 2") &&
              factor_calls == 3 && qi.gptq == 1,
          "factor_of's error stops the tensor, said as it said it: %s", err);
    wp_record_free(&r);
    free(w3);
    job = (wp_quantize_job){WP_Q4_K, NULL, NULL, &go, expert_factor, H};
    tensor(&r, WP_F32, w, ne0, ne1, 1);
    factor_calls = 0;
    CHECK(wp_quantize_tensor(&r, &job, &qi, err, sizeof err) == 0 && factor_calls == 1 && qi.gptq == 1 &&
              !strcmp(qi.how, "gptq"),
          "one matrix: factor_of asked for matrix 0, GPTQ");
    wp_record_free(&r);

    /* a factor not positive definite: RTN instead, said */
    for (int64_t i = 0; i < ne0; i++)
        for (int64_t j = 0; j < ne0; j++)
            H[i * ne0 + j] = i == j ? 1.0 : 1000.0;
    f = NULL;
    ok = wp_gptq_factor_make(H, ne0, &go, &f, err, sizeof err) == WP_GPTQ_NOT_PD;
    tensor(&r, WP_F32, w, ne0, ne1, 1);
    job = (wp_quantize_job){WP_Q4_K, NULL, f, &go, NULL, NULL};
    len = wp_rtn_quantize(WP_Q4_K, w, want, ne1, ne0, NULL);
    CHECK(ok && wp_quantize_tensor(&r, &job, &qi, err, sizeof err) == 0 && holds(&r, WP_Q4_K, want, len) &&
              !strcmp(qi.how, "rtn") && qi.not_pd == 1 && qi.rounded == 1 && qi.damp_used > 0.01,
          "an indefinite Hessian: RTN's bytes, not_pd and the damping tried last said");
    wp_record_free(&r);
    wp_gptq_factor_free(f);

    /* a conversion, and a requantization (Q8_0 read back as ggml dequantizes it) */
    tensor(&r, WP_BF16, w, ne0, ne1, 1);
    job = (wp_quantize_job){WP_F16, NULL, NULL, &go, NULL, NULL};
    for (int64_t k = 0; k < n; k++)
        wp_wr16(want + 2 * k, wp_f32_to_fp16(wp_bf16_to_f32(wp_f32_to_bf16(w[k]))));
    CHECK(wp_quantize_tensor(&r, &job, &qi, err, sizeof err) == 0 && holds(&r, WP_F16, want, 2 * (size_t)n) &&
              !strcmp(qi.how, "convert") && qi.rounded == 0,
          "BF16 to F16: each value converted, said convert");
    wp_record_free(&r);
    uint8_t *q8 = malloc(wp_ggml_row_size(WP_Q8_0, ne0) * (size_t)ne1);
    float *back = malloc(sizeof(float) * n);
    wp_rtn_quantize(WP_Q8_0, w, q8, ne1, ne0, NULL);
    wp_dequantize_row(WP_Q8_0, q8, back, n);
    len = wp_rtn_quantize(WP_Q4_0, back, want, ne1, ne0, NULL);
    tensor(&r, WP_F32, w, ne0, ne1, 1);
    r.type = WP_Q8_0;
    memcpy(r.payload, q8, wp_ggml_row_size(WP_Q8_0, ne0) * (size_t)ne1);
    r.payload_len = wp_ggml_row_size(WP_Q8_0, ne0) * (size_t)ne1;
    job = (wp_quantize_job){WP_Q4_0, NULL, NULL, &go, NULL, NULL};
    CHECK(wp_quantize_tensor(&r, &job, &qi, err, sizeof err) == 0 && holds(&r, WP_Q4_0, want, len),
          "Q8_0 to Q4_0: the blocks dequantized, then RTN");
    wp_record_free(&r);

    /* refusals */
    w[ne0 + 2] = NAN;
    tensor(&r, WP_F32, w, ne0, ne1, 1);
    job = (wp_quantize_job){WP_Q4_K, NULL, NULL, &go, NULL, NULL};
    CHECK(wp_quantize_tensor(&r, &job, &qi, err, sizeof err) == -1 &&
              !strcmp(err, "non-finite value nan at row 1, column 2") && r.payload == NULL,
          "a NaN: %s", err);
    wp_record_free(&r);
    w[ne0 + 2] = 0.5f;
    tensor(&r, WP_F32, w, 64, n / 64, 1);
    CHECK(wp_quantize_tensor(&r, &job, &qi, err, sizeof err) == -1 && !strcmp(err, "row length 64 does not fit Q4_K"),
          "rows of 64 to Q4_K: %s", err);
    wp_record_free(&r);
    w[3] = 1e20f;
    tensor(&r, WP_F32, w, ne0, ne1, 1);
    job = (wp_quantize_job){WP_Q6_K, NULL, NULL, &go, NULL, NULL};
    CHECK(wp_quantize_tensor(&r, &job, &qi, err, sizeof err) == -1 && strstr(err, "is too large for Q6_K") &&
              qi.rounded == 0,
          "a weight of 1e20: %s", err);
    wp_record_free(&r);

    /* a record and a job made by hand (a library user's trial: a NULL go crashed, a short
       payload was read past its end, an unknown type was "(null)", c 0.5 and a NaN
       importance went through RTN unsaid, a KV record was "row length 1 ...") */
    w[3] = 0.1f;
    tensor(&r, WP_F32, w, ne0, ne1, 1);
    job = (wp_quantize_job){WP_Q8_0, NULL, NULL, NULL, NULL, NULL};
    len = wp_rtn_quantize(WP_Q8_0, w, want, ne1, ne0, NULL);
    CHECK(wp_quantize_tensor(&r, &job, &qi, err, sizeof err) == 0 && holds(&r, WP_Q8_0, want, len),
          "go NULL: the default options (RTN's bytes)");
    wp_record_free(&r);
    tensor(&r, WP_F32, w, ne0, ne1, 1);
    r.payload_len -= 4;
    CHECK(wp_quantize_tensor(&r, &job, &qi, err, sizeof err) == -1 &&
              strstr(err, "payload bytes, but F32 256 x 8 needs 8192"),
          "a payload 4 bytes short: %s", err);
    wp_record_free(&r);
    tensor(&r, WP_F32, w, ne0, ne1, 1);
    job.to = 999;
    CHECK(wp_quantize_tensor(&r, &job, &qi, err, sizeof err) == -1 && !strcmp(err, "unknown ggml type 999"), "%s", err);
    r.kind = WP_REC_KV;
    job.to = WP_Q8_0;
    CHECK(wp_quantize_tensor(&r, &job, &qi, err, sizeof err) == -1 && !strcmp(err, "not a tensor record (kind 2)"),
          "%s", err);
    r.kind = WP_REC_TENSOR;
    wp_gptq_opts half_c = go;
    half_c.widen = 0.5;
    job = (wp_quantize_job){WP_Q8_0, NULL, NULL, &half_c, NULL, NULL};
    CHECK(wp_quantize_tensor(&r, &job, &qi, err, sizeof err) == -1 && !strcmp(err, "widen must be at least 1"), "%s",
          err);
    wp_record_free(&r);
    tensor(&r, WP_F32, w, ne0, ne1, 1);
    iw[3] = NAN;
    job = (wp_quantize_job){WP_Q4_K, iw, NULL, &go, NULL, NULL};
    CHECK(wp_quantize_tensor(&r, &job, &qi, err, sizeof err) == -1 &&
              !strcmp(err, "non-finite importance nan at 3 (importances are means of squared activations)"),
          "%s", err);
    wp_record_free(&r);
    free(w), free(wf16), free(want), free(iw), free(H), free(q8), free(back);
    return tap_done();
}
