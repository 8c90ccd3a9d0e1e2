/* hessians.c - GPTQ's Hessian records (see hessians.h). */
#include "hessians.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_type.h"

int wp_hessian_head(wp_record *r, const char *name, int64_t cols, int64_t n_expert, int64_t n_tokens,
                    const char *text_hash, int64_t ctx, int64_t chunks)
{
    r->kind = WP_REC_HESSIAN;
    r->type = WP_F64;
    r->n_dims = n_expert > 1 ? 3 : 2;
    r->ne[0] = r->ne[1] = cols;
    r->ne[2] = n_expert;
    return wp_record_set_name(r, name) || wp_attr_set_i64(r, "n_tokens", n_tokens) ||
                   wp_attr_set(r, "text_hash", text_hash) || wp_attr_set_i64(r, "ctx", ctx) ||
                   wp_attr_set_i64(r, "chunks", chunks)
               ? -1
               : 0;
}

const char *wp_hessian_fit_problem(const char *rec, int64_t ne0, int64_t ne1, uint32_t type, uint64_t payload_len,
                                   const char *tensor, int64_t cols, char *buf, size_t n)
{
    if (ne0 != cols || ne1 != cols) {
        snprintf(buf, n, "Hessian '%s' is %" PRId64 "x%" PRId64 ", tensor %s has %" PRId64 " columns", rec, ne0, ne1,
                 tensor, cols);
        return buf;
    }
    const uint64_t es = type == WP_F64 ? 8 : type == WP_F32 ? 4 : 0;
    if (!es || payload_len != (uint64_t)(cols * cols) * es) {
        snprintf(buf, n, "Hessian '%s': type must be F64 or F32 with %" PRId64 " values", rec, cols * cols);
        return buf;
    }
    return NULL;
}

double *wp_hessian_take(wp_record *r, int *zero, char *err, size_t n)
{
    const int64_t c = r->ne[0];
    const uint64_t k_all = (uint64_t)(c * c);
    if (r->borrowed) {   /* a mapping's bytes (wp_record_map_at): H is a buffer of its own */
        uint8_t *p = malloc(r->payload_len ? (size_t)r->payload_len : 1);
        if (!p) {
            snprintf(err, n, "out of memory (Hessian %" PRId64 "x%" PRId64 ")", c, c);
            return NULL;
        }
        memcpy(p, r->payload, (size_t)r->payload_len);
        r->payload = p;
        r->payload_cap = r->payload_len;
        r->borrowed = 0;
    }
    /* F32 values widen in place, from the last down: value k lands at 8k, at or past the 4k
     * it is read from and the still unread values below it (a copy beside it doubled the
     * peak: 2 x 969 MB for an 11008-wide ffn_down) */
    if (r->type == WP_F32) {
        if (!wp_record_alloc(r, k_all * 8)) {
            snprintf(err, n, "out of memory (Hessian %" PRId64 "x%" PRId64 ")", c, c);
            return NULL;
        }
        for (uint64_t k = k_all; k-- > 0;) {
            float f;
            memcpy(&f, r->payload + 4 * k, 4);
            const double d = f;
            memcpy(r->payload + 8 * k, &d, 8);
        }
        r->type = WP_F64;
    }
    double *H = (double *)(void *)r->payload;   /* malloc'd, so aligned for doubles */
    int z = 1;   /* a zero H: every column dead, and GPTQ (gptq.py's rule) would zero the matrix */
    for (uint64_t k = 0; k < k_all; k++) {
        if (!isfinite(H[k])) {
            snprintf(err, n, "non-finite Hessian entry at (%" PRId64 ", %" PRId64 ")", (int64_t)k / c,
                     (int64_t)k % c);
            return NULL;
        }
        z &= H[k] == 0;
    }
    /* a diagonal entry of X^T X is a sum of squares: a negative one is no Hessian (damping
     * let a negated one through as a near-identity, and GPTQ ran on it without a word) */
    for (int64_t k = 0; k < c; k++)
        if (H[k * c + k] < 0) {
            snprintf(err, n, "negative Hessian diagonal entry %g at (%" PRId64 ", %" PRId64 "): X^T X has none",
                     H[k * c + k], k, k);
            return NULL;
        }
    r->payload = NULL;
    r->payload_len = r->payload_cap = 0;
    *zero = z;
    return H;
}
