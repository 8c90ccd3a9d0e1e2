/* rtn.c - llama.cpp's round-to-nearest quantizers, byte-exact (see rtn.h).
 *
 * Each choose_* function follows one quantize_row_* of ggml-quants.c: the
 * same scale search (lib/quant_search.c), the same fp16 rounding of d and
 * dmin, the same quantization of sub-block scales; then it records the final
 * rounding rule per sub-block, and wp_rtn_code applies it. Block bit layouts
 * are left to lib/block_layout.h (through lib/blocks.c). */
#include "rtn.h"

#include "ggml_type.h"
#include "half.h"
#include "par.h"
#include "quant_search.h"

#include <float.h>
#include <math.h>
#include <string.h>

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The integer llama.cpp's 32-weight reference quantizers get from
 * (int8_t)v / (uint8_t)v on x86-64: truncation toward zero, and 0 for NaN,
 * +-inf and |v| >= 2^31 (cvttss2si's 0x80000000, low byte 0), which is what
 * a block with a subnormal d (inverse scale inf) gets. Beyond what RTN can
 * produce, values are clamped rather than wrapped. */
static inline int x86_trunc(float v)
{
    if (!(v > -2147483648.f && v < 2147483648.f))
        return 0;
    return v >= 127.f ? 127 : v <= -128.f ? -128 : (int)v;
}

/* (int8_t)v then MIN(max, .), limited to 0 .. max. */
static inline int trunc_code(float v, int max)
{
    return clampi(x86_trunc(v), 0, max);
}

/* Q8_0's code of x at inverse step mul: quantize_row_q8_0_ref's roundf, stored + 128. */
static inline int code_q8_0(float mul, float x)
{
    const float v = x * mul;
    if (!(fabsf(v) < 8388608.f))   /* 2^23 and up, inf, NaN: as they are */
        return 128 + x86_trunc(roundf(v));
    /* roundf inline: halves away from zero; v - (float)i is exact below 2^23 (the libm call
       took a sixth of Q8_0's time) */
    int i = (int)v;
    const float f = v - (float)i;
    i += (f >= 0.5f) - (f <= -0.5f);
    return 128 + (i >= 127 ? 127 : i <= -128 ? -128 : i);
}

float wp_rtn_row_sigma2(const float *row, int64_t n)
{
    float sum = 0;
    for (int64_t j = 0; j < n; j++)
        sum += row[j] * row[j];
    return sum / n;
}

/* Max |x| and the signed value reaching it (first one on ties). */
static void absmax(const float *x, int n, float *amax, float *max)
{
    *amax = 0;
    *max = 0;
    for (int j = 0; j < n; j++)
        if (*amax < fabsf(x[j])) {
            *amax = fabsf(x[j]);
            *max = x[j];
        }
}

/* ---- 32-weight blocks, reference path (quantize_row_q{4,5}_{0,1}_ref, q8_0) */

/* Q4_0 (nmax 8) and Q5_0 (nmax 16): d = max / -nmax. */
static void choose_q_0_ref(const float *x, int nmax, wp_rtn_scales *s)
{
    float amax, max;
    absmax(x, 32, &amax, &max);
    const float d = max / -nmax;
    s->mul[0] = d ? 1.0f / d : 0.0f;
    s->p.d = wp_f32_to_fp16(d);
}

/* Q4_1 (levels 15) and Q5_1 (31): d = (max - min) / levels, m = min. */
static void choose_q_1_ref(const float *x, int levels, wp_rtn_scales *s)
{
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < 32; j++) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
    }
    const float d = (max - min) / levels;
    s->mul[0] = d ? 1.0f / d : 0.0f;
    s->off[0] = min;
    s->p.d = wp_f32_to_fp16(d);
    s->p.dmin = wp_f32_to_fp16(min);
}

static void choose_q8_0(const float *x, wp_rtn_scales *s)
{
    float amax = 0;
    for (int j = 0; j < 32; j++) {
        float a = fabsf(x[j]);
        amax = amax > a ? amax : a;
    }
    const float d = amax / 127;
    s->mul[0] = d ? 1.0f / d : 0.0f;
    s->p.d = wp_f32_to_fp16(d);
}

/* ---- 32-weight blocks, imatrix path (quantize_row_q{4,5}_{0,1}_impl):
 * error weights qw * sqrt(sigma2 + x^2), sigma2 over the whole row. */
static void importance(const float *x, const float *qw, float sigma2, int n, float *w)
{
    for (int j = 0; j < n; j++)
        w[j] = qw[j] * sqrtf(sigma2 + x[j] * x[j]);
}

static void choose_q_0_imatrix(const float *x, const float *qw, float sigma2, int nmax, wp_rtn_scales *s)
{
    float w[32], iscale;
    int8_t L[32];
    importance(x, qw, sigma2, 32, w);
    const float d = wp_search_symmetric(32, nmax, x, w, L, &iscale);
    s->p.d = wp_f32_to_fp16(d);
    s->mul[0] = iscale;
    s->fixed[0] = iscale == 0;
    for (int j = 0; j < 32; j++)
        s->p.q[j] = (uint8_t)L[j];
}

static void choose_q_1_imatrix(const float *x, const float *qw, float sigma2, int nmax, wp_rtn_scales *s)
{
    float w[32], min, iscale, min0;
    importance(x, qw, sigma2, 32, w);
    const float d = wp_search_minmax(32, nmax, x, w, s->p.q, &min, -0.9f, 0.05f, 36, 0, &iscale, &min0);
    s->p.d = wp_f32_to_fp16(d);
    s->p.dmin = wp_f32_to_fp16(-min);
    s->mul[0] = iscale;
    s->off[0] = min0;
    s->fixed[0] = iscale == 0;
}

/* ---- IQ4_NL / IQ4_XS (quantize_row_iq4_nl_impl with ntry 7, as
 * quantize_iq4_nl and quantize_iq4_xs call it, with or without imatrix). */
static void iq4_weights(const float *x, const float *qw, float sigma2, float *w)
{
    for (int j = 0; j < 32; j++)
        w[j] = qw ? qw[j] * sqrtf(sigma2 + x[j] * x[j]) : x[j] * x[j];
}

static void choose_iq4_nl(const float *x, const float *qw, wp_rtn_scales *s)
{
    float sigma2 = 0, w[32];
    for (int j = 0; j < 32; j++)
        sigma2 += x[j] * x[j];
    sigma2 *= 2.f / 32;
    iq4_weights(x, qw, sigma2, w);
    const float d = wp_search_iq4(32, x, w, 7);
    s->p.d = wp_f32_to_fp16(d);
    s->mul[0] = d ? 1 / d : 0;
}

static void choose_iq4_xs(const float *x, const float *qw, wp_rtn_scales *s)
{
    float sigma2 = 0, w[32], scales[8];
    for (int j = 0; j < 256; j++)
        sigma2 += x[j] * x[j];
    sigma2 *= 2.f / 256;
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < 8; ib++) {
        iq4_weights(x + 32 * ib, qw ? qw + 32 * ib : NULL, sigma2, w);
        scales[ib] = wp_search_iq4(32, x + 32 * ib, w, 7);
        if (fabsf(scales[ib]) > amax_scale) {
            amax_scale = fabsf(scales[ib]);
            max_scale = scales[ib];
        }
    }
    const float d = -max_scale / 32;
    s->p.d = wp_f32_to_fp16(d);
    const float id = d ? 1 / d : 0.f;
    for (int ib = 0; ib < 8; ib++) {
        int l = clampi(wp_nearest_int(id * scales[ib]), -32, 31);
        const float dl = d * l;
        s->mul[ib] = dl ? 1 / dl : 0.f;
        s->p.sc[ib] = (int16_t)(l + 32);
    }
}

/* ---- K-quants with mins: Q2_K (16 x 16), Q4_K / Q5_K (8 x 32) */

/* After d, dmin, sc, mn are set: llama.cpp's requantization rule
 * code = round((x + dmin*mn) / (d*sc)), kept search codes when d*sc == 0. */
static void kmin_rule(wp_rtn_scales *s, int nsub)
{
    const float d = wp_fp16_to_f32(s->p.d), dmin = wp_fp16_to_f32(s->p.dmin);
    for (int j = 0; j < nsub; j++) {
        s->div[j] = d * s->p.sc[j];
        s->off[j] = dmin * s->p.mn[j];
        s->fixed[j] = !s->div[j];
    }
}

static void choose_q2_k(const float *x, const float *qw, wp_rtn_scales *s)
{
    float scales[16], mins[16], w[16], iscale, min0;
    uint8_t byte[16];
    if (!qw) {
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < 16; j++) {
            for (int l = 0; l < 16; l++)
                w[l] = fabsf(x[16 * j + l]);
            scales[j] = wp_search_minmax(16, 3, x + 16 * j, w, s->p.q + 16 * j, &mins[j],
                                         -0.5f, 0.1f, 15, 1, &iscale, &min0);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        if (max_scale > 0) {
            const float is = 15.f / max_scale;
            for (int j = 0; j < 16; j++)
                byte[j] = (uint8_t)wp_nearest_int(is * scales[j]);
            s->p.d = wp_f32_to_fp16(max_scale / 15.f);
        } else {
            memset(byte, 0, sizeof byte);
            s->p.d = wp_f32_to_fp16(0.f);
        }
        if (max_min > 0) {
            const float im = 15.f / max_min;
            for (int j = 0; j < 16; j++)
                byte[j] |= (uint8_t)(wp_nearest_int(im * mins[j]) << 4);
            s->p.dmin = wp_f32_to_fp16(max_min / 15.f);
        } else {
            s->p.dmin = wp_f32_to_fp16(0.f);
        }
    } else {
        float sumx2 = 0, sw[16];
        uint8_t Ls[16], Lm[16];
        for (int j = 0; j < 256; j++)
            sumx2 += x[j] * x[j];
        const float sigma2 = sumx2 / 256;
        for (int j = 0; j < 16; j++) {
            importance(x + 16 * j, qw + 16 * j, sigma2, 16, w);
            sw[j] = 0;
            for (int l = 0; l < 16; l++)
                sw[j] += w[l];
            scales[j] = wp_search_minmax(16, 3, x + 16 * j, w, s->p.q + 16 * j, &mins[j],
                                         -0.9f, 0.05f, 36, 0, &iscale, &min0);
        }
        const float dm = wp_search_positive(16, 15, scales, Ls, sw);
        const float mm = wp_search_positive(16, 15, mins, Lm, sw);
        s->p.d = wp_f32_to_fp16(dm);
        s->p.dmin = wp_f32_to_fp16(mm);
        for (int j = 0; j < 16; j++)
            byte[j] = (uint8_t)(Ls[j] | (Lm[j] << 4));
    }
    for (int j = 0; j < 16; j++) {
        s->p.sc[j] = byte[j] & 15;
        s->p.mn[j] = byte[j] >> 4;
    }
    kmin_rule(s, 16);
}

/* Q4_K (nmax 15) and Q5_K (nmax 31). */
static void choose_q45_k(const float *x, const float *qw, int nmax, wp_rtn_scales *s)
{
    float scales[8], mins[8], w[32], iscale, min0;
    if (!qw) {
        const float rmin = nmax == 15 ? -1.f : -0.5f;
        const int nstep = nmax == 15 ? 20 : 15;
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < 8; j++) {
            const float *xs = x + 32 * j;
            float sum_x2 = 0;
            for (int l = 0; l < 32; l++)
                sum_x2 += xs[l] * xs[l];
            const float av_x = sqrtf(sum_x2 / 32);
            for (int l = 0; l < 32; l++)
                w[l] = av_x + fabsf(xs[l]);
            scales[j] = wp_search_minmax(32, nmax, xs, w, s->p.q + 32 * j, &mins[j],
                                         rmin, 0.1f, nstep, 0, &iscale, &min0);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
        const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
        for (int j = 0; j < 8; j++) {
            uint8_t ls = (uint8_t)wp_nearest_int(inv_scale * scales[j]);
            uint8_t lm = (uint8_t)wp_nearest_int(inv_min * mins[j]);
            s->p.sc[j] = ls < 63 ? ls : 63;
            s->p.mn[j] = lm < 63 ? lm : 63;
        }
        s->p.d = wp_f32_to_fp16(max_scale / 63.f);
        s->p.dmin = wp_f32_to_fp16(max_min / 63.f);
    } else {
        float sum_x2 = 0, sw[8];
        uint8_t Ls[8], Lm[8];
        for (int l = 0; l < 256; l++)
            sum_x2 += x[l] * x[l];
        const float sigma2 = 2 * sum_x2 / 256;
        for (int j = 0; j < 8; j++) {
            importance(x + 32 * j, qw + 32 * j, sigma2, 32, w);
            float sumw = 0;
            for (int l = 0; l < 32; l++)
                sumw += w[l];
            sw[j] = sumw;
            scales[j] = wp_search_minmax(32, nmax, x + 32 * j, w, s->p.q + 32 * j, &mins[j],
                                         -0.9f, 0.05f, 36, 0, &iscale, &min0);
        }
        const float d_block = wp_search_positive(8, 63, scales, Ls, sw);
        const float m_block = wp_search_positive(8, 63, mins, Lm, sw);
        if (nmax == 31) {               /* Q5_K clamps to 63 */
            for (int j = 0; j < 8; j++) {
                s->p.sc[j] = Ls[j] < 63 ? Ls[j] : 63;
                s->p.mn[j] = Lm[j] < 63 ? Lm[j] : 63;
            }
        } else {                        /* Q4_K packs the bytes as they are */
            wp_k4_scales_from_bytes(Ls, Lm, s->p.sc, s->p.mn);
        }
        s->p.d = wp_f32_to_fp16(d_block);
        s->p.dmin = wp_f32_to_fp16(m_block);
    }
    kmin_rule(s, 8);
}

/* ---- symmetric K-quants: Q3_K, Q6_K (16 x 16) */

/* code = round(x / (d*sc')) + nmax with sc' the signed sub-block scale. */
static void ksym_rule(wp_rtn_scales *s, int bias)
{
    const float d = wp_fp16_to_f32(s->p.d);
    for (int j = 0; j < 16; j++) {
        s->div[j] = d * (s->p.sc[j] - bias);
        s->fixed[j] = !s->div[j];
    }
}

static void choose_q3_k(const float *x, const float *qw, wp_rtn_scales *s)
{
    float scales[16];
    int8_t L[256];
    if (!qw) {
        float max_scale = 0, amax = 0;
        for (int j = 0; j < 16; j++) {
            scales[j] = wp_search_q3(16, 4, x + 16 * j, L + 16 * j);
            if (fabsf(scales[j]) > amax) {
                amax = fabsf(scales[j]);
                max_scale = scales[j];
            }
        }
        if (max_scale) {
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < 16; j++) {
                int8_t l = (int8_t)wp_nearest_int(iscale * scales[j]);
                s->p.sc[j] = (int16_t)(clampi(l, -32, 31) + 32);
            }
            s->p.d = wp_f32_to_fp16(1 / iscale);
        } else {
            s->p.d = wp_f32_to_fp16(0.f);
        }
    } else {
        float sum_x2 = 0, w[16], sw[16], iscale;
        int8_t Ls[16];
        for (int j = 0; j < 256; j++)
            sum_x2 += x[j] * x[j];
        const float sigma2 = 2 * sum_x2 / 256;
        for (int j = 0; j < 16; j++) {
            importance(x + 16 * j, qw + 16 * j, sigma2, 16, w);
            float sumw = 0;
            for (int l = 0; l < 16; l++)
                sumw += w[l];
            sw[j] = sumw;
            scales[j] = wp_search_symmetric(16, 4, x + 16 * j, w, L + 16 * j, &iscale);
        }
        const float d_block = wp_search_symmetric(16, 32, scales, sw, Ls, &iscale);
        for (int j = 0; j < 16; j++)
            s->p.sc[j] = Ls[j];
        s->p.d = wp_f32_to_fp16(d_block);
    }
    for (int j = 0; j < 256; j++)
        s->p.q[j] = (uint8_t)L[j];
    ksym_rule(s, 32);
}

static void choose_q6_k(const float *x, const float *qw, wp_rtn_scales *s)
{
    float scales[16], iscale;
    int8_t L[256];
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < 16; ib++) {
        scales[ib] = wp_search_symmetric(16, 32, x + 16 * ib, qw ? qw + 16 * ib : NULL, L + 16 * ib, &iscale);
        if (fabsf(scales[ib]) > max_abs_scale) {
            max_abs_scale = fabsf(scales[ib]);
            max_scale = scales[ib];
        }
    }
    if (max_abs_scale < WP_GROUP_MAX_EPS) {     /* llama.cpp zeroes the block */
        s->p.d = wp_f32_to_fp16(0.f);
        memset(s->fixed, 1, sizeof s->fixed);
        return;
    }
    const float is = -128.f / max_scale;
    s->p.d = wp_f32_to_fp16(1 / is);
    for (int ib = 0; ib < 16; ib++) {
        int l = wp_nearest_int(is * scales[ib]);
        s->p.sc[ib] = (int8_t)(l < 127 ? l : 127);
    }
    for (int j = 0; j < 256; j++)
        s->p.q[j] = (uint8_t)L[j];
    ksym_rule(s, 0);
}

int wp_rtn_choose(int type, const float *x, const float *qw, float row_sigma2, wp_rtn_scales *s)
{
    wp_block_info info;
    if (wp_block_info_get(type, &info))
        return -1;
    if (info.n == 32) {
        /* what a 32-weight block's rules read (sub-block 0, no sc/mn); the whole struct's
           550 bytes zeroed for every 34-byte Q8_0 block took a third of its time */
        memset(s->p.q, 0, 32);
        s->p.d = s->p.dmin = 0;
        memset(s->p.sc, 0, sizeof s->p.sc);
        memset(s->p.mn, 0, sizeof s->p.mn);
        s->mul[0] = s->div[0] = s->off[0] = 0;
        s->fixed[0] = 0;
    } else {
        memset(s, 0, sizeof *s);
    }
    s->type = type;
    s->p.n = info.n;
    if (type == WP_Q8_0)
        qw = NULL;
    s->imatrix = qw != NULL;
    switch (type) {
    case WP_Q4_0: if (qw) choose_q_0_imatrix(x, qw, row_sigma2, 8, s); else choose_q_0_ref(x, 8, s); break;
    case WP_Q5_0: if (qw) choose_q_0_imatrix(x, qw, row_sigma2, 16, s); else choose_q_0_ref(x, 16, s); break;
    case WP_Q4_1: if (qw) choose_q_1_imatrix(x, qw, row_sigma2, 15, s); else choose_q_1_ref(x, 15, s); break;
    case WP_Q5_1: if (qw) choose_q_1_imatrix(x, qw, row_sigma2, 31, s); else choose_q_1_ref(x, 31, s); break;
    case WP_Q8_0: choose_q8_0(x, s); break;
    case WP_IQ4_NL: choose_iq4_nl(x, qw, s); break;
    case WP_IQ4_XS: choose_iq4_xs(x, qw, s); break;
    case WP_Q2_K: choose_q2_k(x, qw, s); break;
    case WP_Q3_K: choose_q3_k(x, qw, s); break;
    case WP_Q4_K: choose_q45_k(x, qw, 15, s); break;
    case WP_Q5_K: choose_q45_k(x, qw, 31, s); break;
    case WP_Q6_K: choose_q6_k(x, qw, s); break;
    }
    if (type == WP_Q8_0)   /* (the loop through wp_rtn_code's switch: a fifth of Q8_0's time) */
        for (int i = 0; i < 32; i++)
            s->p.q[i] = (uint8_t)code_q8_0(s->mul[0], x[i]);
    else
        for (int i = 0; i < info.n; i++)
            s->p.q[i] = (uint8_t)wp_rtn_code(s, i, x[i]);
    return 0;
}

int wp_rtn_code(const wp_rtn_scales *s, int i, float x)
{
    const int sub = s->p.n == 32 ? 0 : (s->type == WP_Q2_K || s->type == WP_Q3_K || s->type == WP_Q6_K) ? i / 16 : i / 32;
    if (s->fixed[sub])
        return s->p.q[i];
    const float mul = s->mul[sub], div = s->div[sub], off = s->off[sub];
    switch (s->type) {
    case WP_Q4_0:
        return s->imatrix ? 8 + clampi(wp_nearest_int(mul * x), -8, 7) : trunc_code(x * mul + 8.5f, 15);
    case WP_Q5_0:
        return s->imatrix ? 16 + clampi(wp_nearest_int(mul * x), -16, 15) : trunc_code(x * mul + 16.5f, 31);
    case WP_Q4_1:
        return s->imatrix ? clampi(wp_nearest_int(mul * (x - off)), 0, 15) : trunc_code((x - off) * mul + 0.5f, 15);
    case WP_Q5_1:
        return s->imatrix ? clampi(wp_nearest_int(mul * (x - off)), 0, 31) : trunc_code((x - off) * mul + 0.5f, 31);
    case WP_Q8_0:
        return code_q8_0(mul, x);
    case WP_IQ4_NL:
    case WP_IQ4_XS:
        return wp_best_index_int8(16, wp_kvalues_iq4nl, mul * x);
    case WP_Q2_K: return clampi(wp_nearest_int((x + off) / div), 0, 3);
    case WP_Q4_K: return clampi(wp_nearest_int((x + off) / div), 0, 15);
    case WP_Q5_K: return clampi(wp_nearest_int((x + off) / div), 0, 31);
    case WP_Q3_K: return 4 + clampi(wp_nearest_int(x / div), -4, 3);
    case WP_Q6_K: return 32 + clampi(wp_nearest_int(x / div), -32, 31);
    }
    return 0;
}

int wp_rtn_scales_from_parts(int type, const wp_block_parts *p, wp_rtn_scales *s)
{
    wp_block_info info;
    if (wp_block_info_get(type, &info))
        return -1;
    memset(s, 0, sizeof *s);
    s->type = type;
    s->p = *p;
    s->p.n = info.n;
    s->imatrix = 1;                  /* 32-weight types: the round-to-nearest rules */
    const float d = wp_fp16_to_f32(p->d);
    switch (type) {
    case WP_Q4_0: case WP_Q5_0: case WP_Q8_0: case WP_IQ4_NL:
        s->mul[0] = d ? 1 / d : 0;
        s->fixed[0] = !d;
        break;
    case WP_Q4_1: case WP_Q5_1:
        s->mul[0] = d ? 1 / d : 0;
        s->off[0] = wp_fp16_to_f32(p->dmin);
        s->fixed[0] = !d;
        break;
    case WP_IQ4_XS:
        for (int ib = 0; ib < 8; ib++) {
            const float dl = d * (p->sc[ib] - 32);
            s->mul[ib] = dl ? 1 / dl : 0;
            s->fixed[ib] = !dl;
        }
        break;
    case WP_Q2_K: kmin_rule(s, 16); break;
    case WP_Q4_K: case WP_Q5_K: kmin_rule(s, 8); break;
    case WP_Q3_K: ksym_rule(s, 32); break;
    case WP_Q6_K: ksym_rule(s, 0); break;
    }
    return 0;
}

int wp_rtn_block(int type, const float *x, const float *qw, float row_sigma2, void *blk)
{
    wp_rtn_scales s;
    if (wp_rtn_choose(type, x, qw, row_sigma2, &s))
        return -1;
    return wp_block_pack(type, &s.p, blk);
}

size_t wp_rtn_quantize(int type, const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                       const float *imatrix)
{
    wp_block_info info;
    if (wp_block_info_get(type, &info) || n_per_row <= 0 || n_per_row % info.n)
        return 0;
    const int row_sigma = imatrix && (type == WP_Q4_0 || type == WP_Q4_1 || type == WP_Q5_0 || type == WP_Q5_1);
    uint8_t *out = dst;
    for (int64_t r = 0; r < nrows; r++) {
        const float *row = src + r * n_per_row;
        const float sigma2 = row_sigma ? wp_rtn_row_sigma2(row, n_per_row) : 0;
        for (int64_t b = 0; b < n_per_row / info.n; b++) {
            wp_rtn_block(type, row + b * info.n, imatrix ? imatrix + b * info.n : NULL, sigma2, out);
            out += info.block_bytes;
        }
    }
    return (size_t)(out - (uint8_t *)dst);
}

typedef struct {
    int type;
    const float *src, *imatrix;
    uint8_t *dst;
    int64_t n_per_row;
    size_t row_bytes;
} rtn_job;

static void rtn_rows(void *p, int64_t lo, int64_t hi, int part)
{
    const rtn_job *j = p;
    (void)part;
    wp_rtn_quantize(j->type, j->src + lo * j->n_per_row, j->dst + (size_t)lo * j->row_bytes, hi - lo,
                    j->n_per_row, j->imatrix);
}

size_t wp_rtn_quantize_threads(int type, const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                               const float *imatrix, int threads)
{
    wp_block_info info;
    if (wp_block_info_get(type, &info) || n_per_row <= 0 || n_per_row % info.n)
        return 0;
    rtn_job j = {type, src, imatrix, dst, n_per_row, (size_t)(n_per_row / info.n) * info.block_bytes};
    wp_par_rows(threads, nrows, rtn_rows, &j);
    return (size_t)nrows * j.row_bytes;
}
