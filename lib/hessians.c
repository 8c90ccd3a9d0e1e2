/* hessians.c - GPTQ's Hessian records (see hessians.h). */
#include "hessians.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_type.h"
#include "names.h"
#include "zframe.h"

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

int wp_hessian_set_weights(wp_record *r, const char *const *names, size_t n_names, char *err, size_t n)
{
    size_t cap = 1, len = 0;
    for (size_t k = 0; k < n_names; k++) {
        /* a comma in a name would split it in two where the list is read (index_records) */
        if (strchr(names[k], ',')) {
            snprintf(err, n, "weight name '%s' holds a comma (weights= could not list it)", names[k]);
            return -1;
        }
        cap += strlen(names[k]) + 1;
    }
    char *list = malloc(cap);
    if (!list) {
        snprintf(err, n, "out of memory");
        return -1;
    }
    list[0] = '\0';
    for (size_t k = 0; k < n_names; k++)
        len += (size_t)snprintf(list + len, cap - len, "%s%s", k ? "," : "", names[k]);
    const int bad = wp_attr_set(r, "weights", list);
    free(list);
    if (bad)
        snprintf(err, n, "out of memory");
    return bad ? -1 : 0;
}

int wp_hessian_set_expert_tokens(wp_record *r, const int64_t *tokens, int64_t n_expert)
{
    size_t cap = (size_t)n_expert * 21 + 1, len = 0;
    char *list = malloc(cap);
    if (!list)
        return -1;
    list[0] = '\0';
    for (int64_t ex = 0; ex < n_expert; ex++)
        len += (size_t)snprintf(list + len, cap - len, "%s%" PRId64, ex ? "," : "", tokens[ex]);
    const int bad = wp_attr_set(r, "expert_tokens", list);
    free(list);
    return bad ? -1 : 0;
}

int64_t wp_hessian_expert_list(const unsigned char *mark, int64_t n_expert, char *buf, size_t n)
{
    int64_t count = 0;
    size_t len = 0;
    int cut = 0;
    if (n)
        buf[0] = '\0';
    for (int64_t e = 0; e < n_expert; e++) {
        if (!mark[e])
            continue;
        /* room kept for ", ..." and " (N of M)" */
        if (!cut && len + 64 < n)
            len += (size_t)snprintf(buf + len, n - len, "%s%" PRId64, count ? ", " : "", e);
        else if (!cut && len + 6 < n) {
            len += (size_t)snprintf(buf + len, n - len, ", ...");
            cut = 1;
        }
        count++;
    }
    if (count && len + 48 < n)
        snprintf(buf + len, n - len, " (%" PRId64 " of %" PRId64 ")", count, n_expert);
    return count;
}

const char *wp_hessian_fit_problem(const char *rec, int64_t ne0, int64_t ne1, int64_t ne2, uint32_t type,
                                   uint64_t payload_len, const char *tensor, int64_t cols, int64_t n_mat, char *buf,
                                   size_t n)
{
    if (ne0 != cols || ne1 != cols) {
        snprintf(buf, n, "Hessian '%s' is %" PRId64 "x%" PRId64 ", tensor %s has %" PRId64 " columns", rec, ne0, ne1,
                 tensor, cols);
        return buf;
    }
    if (ne2 < 0) {
        snprintf(buf, n, "Hessian '%s' has more than 3 dimensions (cols x cols, or cols x cols x experts)", rec);
        return buf;
    }
    if (ne2 != n_mat) {
        if (n_mat == 1)
            snprintf(buf, n, "Hessian '%s' holds %" PRId64 " experts' H, tensor %s is one matrix", rec, ne2, tensor);
        else if (ne2 == 1)
            snprintf(buf, n, "Hessian '%s' is one matrix's H, tensor %s has %" PRId64 " experts", rec, tensor, n_mat);
        else
            snprintf(buf, n, "Hessian '%s' holds %" PRId64 " experts' H, tensor %s has %" PRId64 " experts", rec, ne2,
                     tensor, n_mat);
        return buf;
    }
    const uint64_t es = type == WP_F64 ? 8 : type == WP_F32 ? 4 : 0;
    if (!es || payload_len != (uint64_t)(cols * cols * n_mat) * es) {
        snprintf(buf, n, "Hessian '%s': type must be F64 or F32 with %" PRId64 " values", rec, cols * cols * n_mat);
        return buf;
    }
    return NULL;
}

/* The H count of Hessian record r: its ne[2] (experts) for n_dims 3, 1 for
 * fewer, -1 for more (no Hessian's shape). */
static int64_t h_count(const wp_record *r)
{
    return r->n_dims > 3 ? -1 : r->n_dims == 3 ? r->ne[2] : 1;
}

double *wp_hessian_take(wp_record *r, int *zero, char *err, size_t n)
{
    const int64_t c = r->ne[0], n_h = h_count(r);
    if (n_h < 1 || c < 1 || r->ne[1] != c) {   /* (a caller that skipped wp_hessian_fit_problem) */
        snprintf(err, n, "not a Hessian's shape (n_dims %d, %" PRId64 "x%" PRId64 ")", r->n_dims, c, r->ne[1]);
        return NULL;
    }
    const uint64_t k_all = (uint64_t)(c * c * n_h);
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
    char ex[40] = "";
    for (uint64_t k = 0; k < k_all; k++) {
        if (!isfinite(H[k])) {
            if (n_h > 1)
                snprintf(ex, sizeof ex, ", expert %" PRId64, (int64_t)(k / (uint64_t)(c * c)));
            snprintf(err, n, "non-finite Hessian entry at (%" PRId64 ", %" PRId64 ")%s", (int64_t)(k / (uint64_t)c) % c,
                     (int64_t)(k % (uint64_t)c), ex);
            return NULL;
        }
        z &= H[k] == 0;
    }
    /* a diagonal entry of X^T X is a sum of squares: a negative one is no Hessian (damping
     * let a negated one through as a near-identity, and GPTQ ran on it without a word); a
     * zero one is a column no token touched, whose row and column are zero too (GPTQ counts
     * it dead and zeroes its weights: with entries beside it, a whole matrix was zeroed
     * unsaid, its loss 100 times RTN's: a breaker's find) */
    for (int64_t e = 0; e < n_h; e++) {
        const double *He = H + e * c * c;
        if (n_h > 1)
            snprintf(ex, sizeof ex, ", expert %" PRId64, e);
        for (int64_t k = 0; k < c; k++) {
            if (He[k * c + k] < 0) {
                snprintf(err, n, "negative Hessian diagonal entry %g at (%" PRId64 ", %" PRId64 ")%s: X^T X has none",
                         He[k * c + k], k, k, ex);
                return NULL;
            }
            for (int64_t j = 0; He[k * c + k] == 0 && j < c; j++)
                if (He[k * c + j] != 0 || He[j * c + k] != 0) {
                    const int64_t r0 = He[k * c + j] != 0 ? k : j, c0 = He[k * c + j] != 0 ? j : k;
                    snprintf(err, n, "Hessian entry %g at (%" PRId64 ", %" PRId64 ") beside a zero diagonal entry at "
                             "(%" PRId64 ", %" PRId64 ")%s: X^T X has none", He[r0 * c + c0], r0, c0, k, k, ex);
                    return NULL;
                }
        }
    }
    r->payload = NULL;
    r->payload_len = r->payload_cap = 0;
    *zero = z;
    return H;
}

/* ---- a Hessian file read by weight --------------------------------------- */

struct wp_hessian_file {
    FILE *f;
    char *path;
    wp_hessian_ref *ref;   /* weight, rec: malloc'd */
    size_t n, cap;
    wp_names *index;       /* weight -> its index in ref (a scan of ref per weight and per
                              tensor was quadratic in the tensors) */
};

/* Index weight w (len bytes) to the record r at r->offset. A weight already
 * indexed to another record is an error (the first would win silently: a
 * hand-edited weights= gave blk.1.attn_k layer 0's Hessian); the same record
 * again (its name also in its weights=) is skipped. Returns 0 or -1 (err). */
static int ref_add(wp_hessian_file *hf, const char *w, size_t len, const wp_record *r, int named, char *err,
                   size_t n)
{
    const uint64_t off = r->offset;
    char *weight = strndup(w, len);
    const int64_t i = weight ? wp_names_put(hf->index, weight, (int64_t)hf->n) : -2;
    if (i == -2) {
        free(weight);
        snprintf(err, n, "out of memory");
        return -1;
    }
    if (i >= 0) {
        free(weight);
        if (hf->ref[i].offset == off) {
            hf->ref[i].named |= named;
            return 0;
        }
        snprintf(err, n, "%s: weight %s has two Hessian records (at offsets %" PRIu64 " and %" PRIu64 ")", hf->path,
                 hf->ref[i].weight, hf->ref[i].offset, off);
        return -1;
    }
    if (hf->n == hf->cap) {
        const size_t cap = hf->cap ? 2 * hf->cap : 64;
        wp_hessian_ref *ref = realloc(hf->ref, cap * sizeof *ref);
        if (!ref) {
            free(weight);
            snprintf(err, n, "out of memory");
            return -1;
        }
        hf->ref = ref;
        hf->cap = cap;
    }
    char *rec = strdup(r->name);
    if (!rec) {
        free(weight);
        snprintf(err, n, "out of memory");
        return -1;
    }
    hf->ref[hf->n++] = (wp_hessian_ref){weight, off, rec, r->ne[0], r->ne[1], h_count(r), r->type, r->payload_len, named};
    return 0;
}

/* Index the records of the stream reader rd over hf->f. Returns 0 or -1 (err). */
static int index_records(wp_hessian_file *hf, wp_reader *rd, char *err, size_t n)
{
    wp_record r;
    wp_record_init(&r);
    int k, bad = 0;
    while (!bad && (k = wp_reader_next_header(rd, &r)) > 0) {
        if (r.kind != WP_REC_HESSIAN)
            continue;
        size_t len;
        const char *v = wp_attr_find(&r, "weights", &len);
        bad = ref_add(hf, r.name, strlen(r.name), &r, !v, err, n);
        while (!bad && v && len) {
            size_t l = 0;
            while (l < len && v[l] != ',') l++;
            if (l)
                bad = ref_add(hf, v, l, &r, 1, err, n);
            v += l + (l < len);
            len -= l + (l < len);
        }
    }
    wp_record_free(&r);
    if (bad)
        return -1;
    if (k < 0) {
        snprintf(err, n, "%s", wp_reader_error(rd));
        return -1;
    }
    if (!hf->n) {
        snprintf(err, n, "%s: no Hessian records (make them with hessian --model M --text T -o FILE)", hf->path);
        return -1;
    }
    return 0;
}

int wp_hessian_file_open(const char *path, wp_hessian_file **out, char *err, size_t n)
{
    *out = NULL;
    wp_hessian_file *hf = calloc(1, sizeof *hf);
    if (!hf || !(hf->path = strdup(path)) || !(hf->index = wp_names_new())) {
        wp_hessian_file_close(hf);
        snprintf(err, n, "out of memory");
        return -1;
    }
    /* (said without the reason, as ppl and hessian give it: a fresh user's find) */
    if (!(hf->f = fopen(path, "rb"))) {
        snprintf(err, n, "%s: cannot open Hessian file: %s", path, strerror(errno));
        wp_hessian_file_close(hf);
        return -1;
    }
    /* each Hessian is read at its offset: refused here, before any output, where a pipe or a
     * zstd'd file used to fail at the first Hessian as "not a wpack stream" */
    const char *why = fseeko(hf->f, 0, SEEK_SET)
                          ? "not a seekable file: gptq reads the Hessians by offset (give the file that hessian "
                            "-o wrote)"
                      : wp_zframe_is(hf->f) ? "a zstd-compressed Hessian file: gptq reads the Hessians by offset "
                                              "(zstd -d it first)"
                                            : NULL;
    if (why) {
        snprintf(err, n, "%s: %s", path, why);
        wp_hessian_file_close(hf);
        return -1;
    }
    wp_reader *rd = wp_reader_open(hf->f, path, err, n);
    if (!rd) {
        wp_hessian_file_close(hf);
        return WP_HESSIANS_NOT_STREAM;
    }
    const int bad = index_records(hf, rd, err, n);
    wp_reader_close(rd);
    if (bad) {
        wp_hessian_file_close(hf);
        return -1;
    }
    *out = hf;
    return 0;
}

size_t wp_hessian_file_count(const wp_hessian_file *hf) { return hf->n; }

const wp_hessian_ref *wp_hessian_file_at(const wp_hessian_file *hf, size_t k) { return &hf->ref[k]; }

const wp_hessian_ref *wp_hessian_file_find(const wp_hessian_file *hf, const char *weight)
{
    const int64_t i = wp_names_get(hf->index, weight);
    return i >= 0 ? &hf->ref[i] : NULL;
}

int wp_hessian_file_get(wp_hessian_file *hf, const char *weight, int64_t cols, int64_t n_mat, double **H, char *err,
                        size_t n)
{
    *H = NULL;
    const wp_hessian_ref *h = wp_hessian_file_find(hf, weight);
    if (!h)
        return 0;
    wp_record r;
    wp_record_init(&r);
    if (wp_record_read_at(hf->f, hf->path, h->offset, &r, err, n)) {
        wp_record_free(&r);
        return -1;
    }
    char b[2 * WP_MAX_NAME + 128], e[256];
    const char *why = wp_hessian_fit_problem(r.name, r.ne[0], r.ne[1], h_count(&r), r.type, r.payload_len, weight, cols,
                                             n_mat, b, sizeof b);
    if (why) {
        snprintf(err, n, "%s: %s", hf->path, why);
        wp_record_free(&r);
        return -1;
    }
    /* H is the record's own payload, F32 widened in place (a copy beside it doubled the peak) */
    int zero;
    double *h_all = wp_hessian_take(&r, &zero, e, sizeof e);
    wp_record_free(&r);
    if (!h_all) {
        snprintf(err, n, "%s: tensor %s: %s", hf->path, weight, e);
        return -1;
    }
    if (zero) {
        free(h_all);
        return 1;
    }
    *H = h_all;
    return 0;
}

void wp_hessian_file_close(wp_hessian_file *hf)
{
    if (!hf)
        return;
    if (hf->f)
        fclose(hf->f);
    for (size_t k = 0; k < hf->n; k++) {
        free((char *)hf->ref[k].weight);
        free((char *)hf->ref[k].rec);
    }
    free(hf->ref);
    wp_names_free(hf->index);
    free(hf->path);
    free(hf);
}
