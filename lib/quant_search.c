/* quant_search.c - scale searches of ggml-quants.c, re-expressed (see
 * quant_search.h). Every float expression keeps llama.cpp's operand order:
 * a*b*c is (a*b)*c, integer codes enter products as floats. */
#include "quant_search.h"

#include "blocks.h"

#include <math.h>
#include <string.h>

int wp_nearest_int(float f)
{
    float v = f + 12582912.f;          /* 1.5 * 2^23: the integer lands in the mantissa */
    int32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

int wp_best_index_int8(int n, const int8_t *val, float x)
{
    if (x <= val[0]) return 0;
    if (x >= val[n - 1]) return n - 1;
    int lo = 0, hi = n - 1;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (x < val[mid]) hi = mid; else lo = mid;
    }
    return x - val[hi - 1] < val[hi] - x ? hi - 1 : hi;
}

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

float wp_search_symmetric(int n, int nmax, const float *x, const float *w, int8_t *L, float *iscale_out)
{
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++) {
        float ax = fabsf(x[i]);
        if (ax > amax) { amax = ax; max = x[i]; }
    }
    if (amax < WP_GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        *iscale_out = 0;
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = clampi(wp_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        float wi = w ? w[i] : x[i] * x[i];
        sumlx += wi * x[i] * l;
        suml2 += wi * l * l;
    }
    *iscale_out = iscale;
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0)
            continue;
        float trial = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = clampi(wp_nearest_int(trial * x[i]), -nmax, nmax - 1);
            float wi = w ? w[i] : x[i] * x[i];
            sumlx += wi * x[i] * l;
            suml2 += wi * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++)
                L[i] = (int8_t)(nmax + clampi(wp_nearest_int(trial * x[i]), -nmax, nmax - 1));
            *iscale_out = trial;
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

float wp_search_q3(int n, int nmax, const float *x, int8_t *L)
{
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++) {
        float ax = fabsf(x[i]);
        if (ax > amax) { amax = ax; max = x[i]; }
    }
    if (amax < WP_GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = clampi(wp_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)l;
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for (int pass = 0; pass < 5; pass++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];
            if (slx > 0) {
                float sl2 = suml2 - w * L[i] * L[i];
                int nl = clampi(wp_nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (nl != L[i]) {
                    slx += w * x[i] * nl;
                    sl2 += w * nl * nl;
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)nl; sumlx = slx; suml2 = sl2;
                        changed++;
                    }
                }
            }
        }
        if (!changed)
            break;
    }
    for (int i = 0; i < n; i++)
        L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

float wp_search_minmax(int n, int nmax, const float *x, const float *w, uint8_t *L, float *the_min,
                       float rmin, float rdelta, int nstep, int use_mad, float *iscale_out, float *min0)
{
    uint8_t Laux[256];
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0)
        min = 0;
    if (max <= min) {
        memset(L, 0, (size_t)n);
        *the_min = -min;
        *iscale_out = 0;
        *min0 = min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    *iscale_out = iscale;
    *min0 = min;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)clampi(wp_nearest_int(iscale * (x[i] - min)), 0, nmax);
        float diff = scale * L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += w[i] * diff;
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }
    for (int is = 0; is <= nstep; is++) {
        /* min may have moved to an earlier trial's best: the trial steps
         * then round around that min, as llama.cpp does */
        float trial = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = clampi(wp_nearest_int(trial * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t)l;
            sum_l += w[i] * l;
            sum_l2 += w[i] * l * l;
            sum_xl += w[i] * l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float err = 0;
            for (int i = 0; i < n; i++) {
                float diff = this_scale * Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                err += w[i] * diff;
            }
            if (err < best_error) {
                memcpy(L, Laux, (size_t)n);
                *iscale_out = trial;
                *min0 = min;
                best_error = err;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

float wp_search_positive(int n, int nmax, const float *x, uint8_t *L, const float *w)
{
    float max = 0;
    for (int i = 0; i < n; i++)
        max = max > x[i] ? max : x[i];
    if (max < WP_GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = nmax / max;
    for (int i = 0; i < n; i++)
        L[i] = (uint8_t)wp_nearest_int(iscale * x[i]);
    float scale = 1 / iscale;
    float best_mse = 0;
    for (int i = 0; i < n; i++) {
        float diff = x[i] - scale * L[i];
        best_mse += w[i] * diff * diff;
    }
    for (int is = -4; is <= 4; is++) {
        if (is == 0)
            continue;
        float trial = (0.1f * is + nmax) / max;
        float tscale = 1 / trial;
        float mse = 0;
        for (int i = 0; i < n; i++) {
            int l = wp_nearest_int(trial * x[i]);
            l = l < nmax ? l : nmax;
            float diff = x[i] - tscale * l;
            mse += w[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = trial;
        }
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = wp_nearest_int(iscale * x[i]);
        l = l < nmax ? l : nmax;
        L[i] = (uint8_t)l;
        sumlx += w[i] * x[i] * l;
        suml2 += w[i] * l * l;
    }
    for (int pass = 0; pass < 5; pass++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float slx = sumlx - w[i] * x[i] * L[i];
            float sl2 = suml2 - w[i] * L[i] * L[i];
            if (slx > 0 && sl2 > 0) {
                int nl = wp_nearest_int(x[i] * sl2 / slx);
                nl = nl < nmax ? nl : nmax;
                if (nl != L[i]) {
                    slx += w[i] * x[i] * nl;
                    sl2 += w[i] * nl * nl;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (uint8_t)nl; sumlx = slx; suml2 = sl2;
                        changed++;
                    }
                }
            }
        }
        if (!changed)
            break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

float wp_search_iq4(int n, const float *x, const float *w, int ntry)
{
    const int8_t *v = wp_kvalues_iq4nl;
    float amax = 0, max = 0;
    for (int j = 0; j < n; j++) {
        float ax = fabsf(x[j]);
        if (ax > amax) { amax = ax; max = x[j]; }
    }
    if (amax < WP_GROUP_MAX_EPS)
        return 0;
    float d = ntry > 0 ? -max / v[0] : max / v[0];
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < n; j++) {
        float q = v[wp_best_index_int8(16, v, id * x[j])];
        sumqx += w[j] * q * x[j];
        sumq2 += w[j] * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int t = -ntry; t <= ntry; t++) {
        id = (t + v[0]) / max;
        sumqx = sumq2 = 0;
        for (int j = 0; j < n; j++) {
            float q = v[wp_best_index_int8(16, v, id * x[j])];
            sumqx += w[j] * q * x[j];
            sumq2 += w[j] * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}
