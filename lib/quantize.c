/* quantize.c - one weight tensor into ggml blocks (see quantize.h). */
#include "quantize.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocks.h"
#include "ggml_type.h"
#include "half.h"
#include "rtn.h"

/* err = the phrase fmt; returns 1 (a failure). */
static int fail(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return 1;
}

/* r's nel values as floats, taking r's payload (r keeps none): F32 as it is,
 * F16/BF16 widened in place from the last value down (value k lands at 4k,
 * at or past the 2k it is read from and the unread values below it; a float
 * copy beside the source bytes was 3 times an F16 tensor at the peak), a
 * block type dequantized into a buffer of its own (ggml's to_float). NULL
 * with err on a failure, or a non-finite value. */
static float *input_floats(wp_record *r, int64_t nel, char *err, size_t n)
{
    const uint32_t from = r->type;
    float *f;
    if (!wp_ggml_is_float(from)) {
        f = malloc((size_t)nel * 4 + 1);
        if (!f) {
            snprintf(err, n, "out of memory");
            return NULL;
        }
        if (wp_dequantize_row((int)from, r->payload, f, nel)) {
            snprintf(err, n, "cannot dequantize %s", wp_ggml_type_name(from));
            free(f);
            return NULL;
        }
        if (!r->borrowed)
            free(r->payload);
    } else {
        if (from != WP_F32 && !wp_record_alloc(r, (uint64_t)nel * 4)) {
            snprintf(err, n, "out of memory");
            return NULL;
        }
        f = (float *)(void *)r->payload;
        if (from != WP_F32)
            for (int64_t k = nel - 1; k >= 0; k--)
                f[k] = from == WP_F16 ? wp_fp16_to_f32(wp_rd16(r->payload + 2 * k))
                                      : wp_bf16_to_f32(wp_rd16(r->payload + 2 * k));
    }
    r->payload = NULL;
    r->payload_len = r->payload_cap = 0;
    for (int64_t k = 0; k < nel; k++)
        if (!isfinite(f[k])) {
            snprintf(err, n, "non-finite value %g at row %lld, column %lld", (double)f[k],
                     (long long)(k / r->ne[0]), (long long)(k % r->ne[0]));
            free(f);
            return NULL;
        }
    return f;
}

/* Matrix by matrix (n_mat of mrows x ne0 floats at f, their importance slices
 * of ne0) into block type `to` at dst (rsz bytes a row). */
static int quantize_matrices(const wp_quantize_job *job, const float *f, int64_t n_mat, int64_t mrows, int64_t ne0,
                             size_t rsz, uint8_t *dst, wp_quantize_info *info, char *err, size_t n)
{
    const int to = job->to;
    const wp_gptq_opts *go = job->go;
    const int lazy = go->gamma || go->widen > 1 || go->lambda > 0;
    for (int64_t m = 0; m < n_mat; m++) {
        const float *src = f + m * mrows * ne0;
        uint8_t *d = dst + (size_t)(m * mrows) * rsz;
        const float *qw = job->importance ? job->importance + m * ne0 : NULL;
        wp_gptq_factor *own = NULL;   /* matrix m's own factor (job->factor_of) */
        if (!job->factor && job->factor_of && job->factor_of(job->user, m, &own, err, n))
            return -1;
        const wp_gptq_factor *fac = job->factor ? job->factor : own;
        if (fac) {
            /* the floats (this tensor's own copy) are scratch: GPTQ works in them, memory
               stays near one tensor plus its Hessian */
            wp_gptq_info gi;
            wp_gptq_opts gc = *go;
            gc.consume = 1;
            const int k = wp_gptq_quantize_factored(to, src, mrows, ne0, fac, qw, &gc, d, &gi, err, n);
            wp_gptq_factor_free(own);
            if (k < 0)
                return -1;
            if (k != WP_GPTQ_NOT_PD) {
                info->how = "gptq";
                info->gptq++;
                continue;
            }
            info->not_pd = 1;
            info->damp_used = gi.damp_used;
        }
        info->rounded = 1;
        if (lazy) {
            if (wp_gptq_quantize(to, src, mrows, ne0, NULL, qw, go, d, NULL, err, n))
                return -1;
            info->how = "rtn+lazy";
            continue;
        }
        if (wp_rtn_quantize_threads(to, src, d, mrows, ne0, qw, go->threads) != rsz * (size_t)mrows) {
            snprintf(err, n, "RTN failed");
            return -1;
        }
        /* (with an imatrix, importances as large as 3e38 overflow it too) */
        if (wp_gptq_check_blocks(to, d, mrows * (ne0 / wp_ggml_blck_size((uint32_t)to))) >= 0) {
            snprintf(err, n, "a block scale does not fit fp16 (weights too large for %s%s)",
                     wp_ggml_type_name((uint32_t)to), qw ? ", or importances too large in its imatrix entry" : "");
            return -1;
        }
        info->how = "rtn";
    }
    return 0;
}

float *wp_quantize_read(wp_record *r, int type, char *err, size_t n)
{
    const uint32_t to = (uint32_t)type;
    char why[160];
    /* a record made by hand is checked as the stream reader checks one (a library user's
       trial: a short payload was read past its end, a KV record was "row length 1 ...") */
    if (r->kind != WP_REC_TENSOR) {
        fail(err, n, "not a tensor record (kind %u)", r->kind);
        return NULL;
    }
    if (!wp_ggml_type_name(r->type) || !wp_ggml_type_name(to)) {
        fail(err, n, "unknown ggml type %d", (int)(!wp_ggml_type_name(r->type) ? r->type : to));
        return NULL;
    }
    if (r->n_dims < 1 || r->ne[0] < 1 || wp_tensor_payload_problem(r, why, sizeof why)) {
        fail(err, n, "%s", r->n_dims < 1 || r->ne[0] < 1 ? "no rows to quantize" : why);
        return NULL;
    }
    const int64_t ne0 = r->ne[0], nel = wp_record_nelem(r), rows = nel / ne0;
    float *f = input_floats(r, nel, err, n);
    if (!f)
        return NULL;
    int bad = 0;
    if (!wp_ggml_row_size(to, ne0))
        bad = fail(err, n, "row length %lld does not fit %s", (long long)ne0, wp_ggml_type_name(to));
    else if (wp_ggml_is_float(to))
        bad = 0;
    else if (!wp_gptq_supported((int)to))
        bad = fail(err, n, "type %s is not supported by gptq", wp_ggml_type_name(to));
    /* (RTN does not check: one weight of 1e20 zeroed its Q6_K block, unsaid) */
    else if (wp_gptq_check_weights((int)to, f, rows, ne0, err, n))
        bad = 1;
    if (bad) {
        free(f);
        return NULL;
    }
    return f;
}

int wp_quantize_write(wp_record *r, float *f, const wp_quantize_job *job, wp_quantize_info *info, char *err, size_t n)
{
    const uint32_t to = (uint32_t)job->to;
    const int64_t ne0 = r->ne[0], nel = wp_record_nelem(r), rows = nel / ne0;
    const int64_t n_mat = r->n_dims >= 3 ? nel / (ne0 * r->ne[1]) : 1;   /* one matrix an ne[2] slice */
    *info = (wp_quantize_info){"convert", 0, 0, 0, 0};
    /* options as wp_gptq_quantize takes them: NULL the defaults, c < 1 or a negative λ refused
       (the RTN path, which reads neither, took them unsaid: a library user's trial) */
    wp_gptq_opts def;
    wp_gptq_opts_default(&def);
    wp_quantize_job jb = *job;
    jb.go = job->go ? job->go : &def;
    const char *bad_opt = !(jb.go->widen >= 1) ? "widen must be at least 1"
                        : !(jb.go->lambda >= 0) ? "lambda must be 0 or more"
                        : !(jb.go->damp >= 0) ? "damping must be 0 or more"
                                              : NULL;
    char why[160] = "";
    if (bad_opt)
        snprintf(why, sizeof why, "%s", bad_opt);
    for (int64_t k = 0; !why[0] && job->importance && !wp_ggml_is_float(to) && k < ne0 * n_mat; k++)
        if (!isfinite(job->importance[k]) || job->importance[k] < 0)
            snprintf(why, sizeof why, "%s importance %g at %lld (importances are means of squared activations)",
                     isfinite(job->importance[k]) ? "negative" : "non-finite", (double)job->importance[k],
                     (long long)k);
    if (why[0]) {
        free(f);
        fail(err, n, "%s", why);
        return -1;
    }
    job = &jb;
    const size_t rsz = wp_ggml_row_size(to, ne0);
    uint8_t *dst = malloc(rsz * (size_t)rows + 1);
    int bad = 0;
    if (!dst)
        bad = fail(err, n, "out of memory");
    else if (to == WP_F32)
        memcpy(dst, f, (size_t)nel * 4);
    else if (to == WP_F16 || to == WP_BF16)
        for (int64_t k = 0; k < nel; k++)
            wp_wr16(dst + 2 * k, to == WP_F16 ? wp_f32_to_fp16(f[k]) : wp_f32_to_bf16(f[k]));
    else
        bad = quantize_matrices(job, f, n_mat, rows / n_mat, ne0, rsz, dst, info, err, n) != 0;
    free(f);
    if (bad) {
        free(dst);
        return -1;
    }
    r->type = to;
    r->payload = dst;
    r->payload_len = r->payload_cap = rsz * (size_t)rows;
    return 0;
}

int wp_quantize_tensor(wp_record *r, const wp_quantize_job *job, wp_quantize_info *info, char *err, size_t n)
{
    *info = (wp_quantize_info){"convert", 0, 0, 0, 0};
    float *f = wp_quantize_read(r, job->to, err, n);
    return f ? wp_quantize_write(r, f, job, info, err, n) : -1;
}
