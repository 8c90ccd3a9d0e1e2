/* imatrix.c - llama-imatrix files (see imatrix.h): GGUF, read with
 * gguf_file.h, and the legacy imatrix.dat, read here.  Source of the formats
 * and of the importance computation: llama.cpp common/imatrix-loader.cpp
 * common_imatrix_load() and common_imatrix_load_legacy(), and
 * tools/quantize/quantize.cpp load_imatrix() (pinned llama.cpp). */
#include "imatrix.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_type.h"
#include "gguf_file.h"
#include "stream.h"
#include "text.h"

static int ifail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* An F32 tensor of the file, kept until its partner is seen. */
struct part {
    char   *base;   /* name without the suffix */
    int     is_sum; /* 1: .in_sum2, 0: .counts */
    int64_t ne0, nelem;
    float  *v;
};

static int part_cmp(const void *a, const void *b)
{
    const struct part *x = a, *y = b;
    int c = strcmp(x->base, y->base);
    return c ? c : y->is_sum - x->is_sum; /* in_sum2 first */
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const wp_imatrix_entry *)a)->name, ((const wp_imatrix_entry *)b)->name);
}

/* The strings of a GGUF array-of-string value (payload as gguf_file.h keeps
 * it: u32 element type, u64 count, then u64 length + bytes per string). */
static int read_datasets(const wp_record *r, wp_imatrix *im)
{
    if (r->type != WP_GGUF_ARRAY || r->payload_len < 12 || rd32(r->payload) != WP_GGUF_STRING)
        return -1;
    uint64_t n = rd64(r->payload + 4), off = 12;
    if (n > r->payload_len / 8)
        return -1;
    im->datasets = calloc(n ? n : 1, sizeof *im->datasets);
    if (!im->datasets)
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        if (r->payload_len - off < 8)
            return -1;
        uint64_t len = rd64(r->payload + off);
        off += 8;
        if (len > r->payload_len - off)
            return -1;
        char *s = malloc(len + 1);
        if (!s)
            return -1;
        memcpy(s, r->payload + off, len);
        s[len] = '\0';
        off += len;
        im->datasets[im->n_datasets++] = s;
    }
    return 0;
}

static void free_parts(struct part *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(p[i].base);
        free(p[i].v);
    }
    free(p);
}

/* The GGUF file at path (common_imatrix_load's GGUF branch). */
static int load_gguf(const char *path, wp_imatrix *im, char *err, size_t errlen)
{
    char gerr[1024];
    wp_gguf_in *g = wp_gguf_open(path, gerr, sizeof gerr);
    if (!g)
        return ifail(err, errlen, "%s", gerr);

    struct part *parts = NULL;
    size_t np = 0, cap = 0;
    int has_ds = 0, has_cc = 0, has_cs = 0, k, rc = -1;
    char arch[256] = "";   /* general.architecture: a model's */
    wp_record r;
    wp_record_init(&r);
    while ((k = wp_gguf_next(g, &r)) > 0) {
        if (r.kind == WP_REC_KV) {
            if (!strcmp(r.name, "imatrix.datasets")) {
                if (read_datasets(&r, im)) {
                    ifail(err, errlen, "%s: imatrix.datasets is not an array of strings", path);
                    goto out;
                }
                has_ds = 1;
            } else if (!strcmp(r.name, WP_IMATRIX_KEY_CHUNK_COUNT) || !strcmp(r.name, "imatrix.chunk_size")) {
                if (r.type != WP_GGUF_U32 || r.payload_len != 4) {
                    ifail(err, errlen, "%s: %s is not a u32", path, r.name);
                    goto out;
                }
                if (!strcmp(r.name, WP_IMATRIX_KEY_CHUNK_COUNT)) {
                    im->chunk_count = rd32(r.payload);
                    has_cc = 1;
                } else {
                    im->chunk_size = rd32(r.payload);
                    has_cs = 1;
                }
            }
            if (!strcmp(r.name, "general.architecture") && r.type == WP_GGUF_STRING && r.payload_len >= 8) {
                const uint64_t l = rd64(r.payload);
                if (l < sizeof arch && 8 + l <= r.payload_len) {
                    memcpy(arch, r.payload + 8, l);
                    arch[l] = 0;
                }
            }
            continue;
        }
        if (r.kind != WP_REC_TENSOR)
            continue;
        /* the key/values all come before the first tensor: a file without llama-imatrix's is
           refused there, not after reading every tensor (a model given as the imatrix read a
           7B model's 14 GB to say so), and a model is named (MODEL and IMATRIX swapped said
           "missing imatrix metadata": a note's left alone) */
        if (!has_ds || !has_cc || !has_cs)
            break;
        size_t nl = strlen(r.name);
        const int kind = wp_imatrix_tensor_kind(r.name);   /* ".in_sum2" alone: the entry "" */
        int is_sum = kind == 1, is_cnt = kind == 2;
        if (!is_sum && !is_cnt)
            continue;
        if (r.type != WP_F32) {
            ifail(err, errlen, "%s: tensor %s is %s, not F32", path, r.name, wp_ggml_type_name(r.type));
            goto out;
        }
        if (np == cap) {
            cap = cap ? 2 * cap : 64;
            struct part *q = realloc(parts, cap * sizeof *q);
            if (!q) {
                ifail(err, errlen, "%s: out of memory", path);
                goto out;
            }
            parts = q;
        }
        struct part *p = &parts[np];
        memset(p, 0, sizeof *p);
        p->is_sum = is_sum;
        p->ne0 = r.ne[0];
        p->nelem = wp_record_nelem(&r);
        p->base = strndup(r.name, nl - (is_sum ? 8 : 7));
        p->v = malloc((size_t)(p->nelem ? p->nelem : 1) * sizeof(float));
        np++;
        if (!p->base || !p->v || r.payload_len != (uint64_t)p->nelem * 4) {
            ifail(err, errlen, "%s: tensor %s: out of memory or bad size", path, r.name);
            goto out;
        }
        for (int64_t i = 0; i < p->nelem; i++) {
            union { uint32_t u; float f; } u = {rd32(r.payload + 4 * i)};
            p->v[i] = u.f;
        }
    }
    if (k < 0) {
        ifail(err, errlen, "%s", wp_gguf_error(g));
        goto out;
    }
    /* llama-quantize's load_imatrix refuses GGUF files without these */
    /* (one with some of llama-imatrix's keys is a damaged imatrix, not a model: a breaker's find) */
    if (!has_ds && !has_cc && !has_cs && arch[0]) {
        ifail(err, errlen, "%s: a model (general.architecture %s), not an importance matrix (llama-imatrix -m "
              "MODEL -f TEXT makes one)", path, arch);
        goto out;
    }
    if (!has_ds || !has_cc || !has_cs) {
        ifail(err, errlen, "%s: missing imatrix metadata (imatrix.datasets, chunk_count, chunk_size): not a llama-imatrix file",
              path);
        goto out;
    }
    if (np == 0) {
        ifail(err, errlen, "%s: no imatrix entries (no *.in_sum2 tensors)", path);
        goto out;
    }

    qsort(parts, np, sizeof *parts, part_cmp);
    im->e = calloc(np, sizeof *im->e);
    if (!im->e) {
        ifail(err, errlen, "%s: out of memory", path);
        goto out;
    }
    for (size_t i = 0; i < np;) {
        struct part *s = &parts[i], *c = i + 1 < np ? &parts[i + 1] : NULL;
        if (!s->is_sum || !c || c->is_sum || strcmp(s->base, c->base)) {
            ifail(err, errlen, "%s: mismatched sums and counts for %s", path, s->base);
            goto out;
        }
        if (c->nelem < 1 || s->nelem % c->nelem != 0) {
            ifail(err, errlen, "%s: %s: %lld sums do not divide into %lld matrices", path, s->base,
                  (long long)s->nelem, (long long)c->nelem);
            goto out;
        }
        wp_imatrix_entry *e = &im->e[im->n++];
        e->name = s->base;
        s->base = NULL;
        e->n_mat = c->nelem;
        e->cols = s->nelem / c->nelem;
        e->sum2 = s->v;
        e->counts = c->v;
        s->v = c->v = NULL;
        e->importance = malloc((size_t)(s->nelem ? s->nelem : 1) * sizeof(float));
        if (!e->importance) {
            ifail(err, errlen, "%s: out of memory", path);
            goto out;
        }
        for (int64_t m = 0; m < e->n_mat; m++) {
            if (!isfinite(e->counts[m]) || e->counts[m] < -0.5f) {
                ifail(err, errlen, "%s: %s: bad count %g", path, e->name, (double)e->counts[m]);
                goto out;
            }
            /* common_imatrix_load: counts[j] = std::lround(float);
             * load_imatrix: e = sums / (float)counts[j], or 1 for a zero count */
            const float count = (float)lroundf(e->counts[m]);
            for (int64_t j = 0; j < e->cols; j++)
                e->importance[m * e->cols + j] = count > 0.0f ? e->sum2[m * e->cols + j] / count : 1.0f;
        }
        i += 2;
    }
    qsort(im->e, (size_t)im->n, sizeof *im->e, entry_cmp);
    rc = 0;
out:
    wp_record_free(&r);
    wp_gguf_close(g);
    free_parts(parts, np);
    if (rc)
        wp_imatrix_free(im);
    return rc;
}

/* ---- legacy imatrix.dat (common_imatrix_load_legacy) ------------------- */

/* The bytes of a legacy file, and how far the reader is. */
struct cursor {
    const uint8_t *p;
    size_t         len, off;
};

static size_t cur_left(const struct cursor *c) { return c->len - c->off; }

/* The next i32: 1 when its 4 bytes were all there.  Else 0, with the bytes
 * there were as the low bytes of *v, and the cursor at the end, as
 * std::istream::read leaves an int32_t that was 0 before the read. */
static int take_i32(struct cursor *c, int32_t *v)
{
    size_t k = cur_left(c) < 4 ? cur_left(c) : 4;
    uint8_t b[4] = {0, 0, 0, 0};
    memcpy(b, c->p + c->off, k);
    c->off += k;
    uint32_t u = rd32(b);
    memcpy(v, &u, sizeof *v);
    return k == 4;
}

/* A name from the file for a message: control bytes as '?', cut to 48. */
static const char *shown(const char *s, char *buf, size_t n)
{
    size_t i = 0;
    for (; s[i] && i + 1 < n && i < 48; i++)
        buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    buf[i] = '\0';
    if (s[i] && n > 52)
        strcpy(buf + i, "...");
    return buf;
}

/* All of f (its first `got` bytes already read into head) into a buffer
 * grown with what is actually read, never sized by a count in the file.
 * NULL on a read error or out of memory, with one line in err. */
static uint8_t *slurp(FILE *f, const char *path, const uint8_t *head, size_t got, size_t *len, char *err,
                      size_t errlen)
{
    size_t cap = 1 << 16, n = got;
    uint8_t *b = malloc(cap);
    if (!b) {
        ifail(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    memcpy(b, head, got);
    for (;;) {
        if (n == cap) {
            uint8_t *q = cap <= SIZE_MAX / 2 ? realloc(b, 2 * cap) : NULL;
            if (!q) {
                free(b);
                ifail(err, errlen, "%s: out of memory", path);
                return NULL;
            }
            b = q;
            cap *= 2;
        }
        size_t k = fread(b + n, 1, cap - n, f);
        n += k;
        if (k == 0)
            break;
    }
    if (ferror(f)) {
        free(b);
        ifail(err, errlen, "%s: read error: %s", path, strerror(errno));
        return NULL;
    }
    *len = n;
    return b;
}

/* An entry as read, with its place in the file (the later of two equal
 * names wins). */
struct lentry {
    wp_imatrix_entry e;
    size_t           pos;
};

static int lentry_cmp(const void *a, const void *b)
{
    const struct lentry *x = a, *y = b;
    int c = strcmp(x->e.name, y->e.name);
    return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

static void free_entry(wp_imatrix_entry *e)
{
    free(e->name);
    free(e->sum2);
    free(e->counts);
    free(e->importance);
}

/* The legacy file in b (len bytes; see imatrix.h for the layout), as
 * common_imatrix_load_legacy reads it and quantize.cpp load_imatrix turns
 * it into importance. */
static int load_legacy(const char *path, const uint8_t *b, size_t len, wp_imatrix *im, char *err, size_t errlen)
{
    struct cursor c = {b, len, 0};
    struct lentry *es = NULL;
    size_t ne = 0, cap = 0;
    char nb[64], pre[4200];
    int32_t n_entries = 0, rc = -1;
    im->legacy = 1;
    snprintf(pre, sizeof pre, "%s: not GGUF, so read as a legacy imatrix.dat", path);
    if (!take_i32(&c, &n_entries)) {
        ifail(err, errlen, "%s: %zu bytes, shorter than its 4-byte entry count", pre, len);
        goto out;
    }
    if (n_entries < 1) {
        ifail(err, errlen, "%s: no entries (entry count %d)", pre, n_entries);
        goto out;
    }
    for (int32_t i = 0; i < n_entries; i++) {
        int32_t nlen, ncall, nval;
        if (!take_i32(&c, &nlen)) {
            ifail(err, errlen, "%s: entry %d of %d: the file ends before its name length", pre, i + 1, n_entries);
            goto out;
        }
        if (nlen < 0 || (size_t)nlen > cur_left(&c)) {
            ifail(err, errlen, "%s: entry %d of %d: name length %d %s (%zu bytes left)", pre, i + 1, n_entries, nlen,
                  nlen < 0 ? "is negative" : "runs past the end of the file", cur_left(&c));
            goto out;
        }
        if (ne == cap) {
            cap = cap ? 2 * cap : 64;
            struct lentry *q = realloc(es, cap * sizeof *q);
            if (!q) {
                ifail(err, errlen, "%s: out of memory", path);
                goto out;
            }
            es = q;
        }
        struct lentry *le = &es[ne];
        memset(le, 0, sizeof *le);
        le->pos = ne;
        /* std::string{ name_as_vec.data() }: up to the first NUL */
        le->e.name = strndup((const char *)c.p + c.off, (size_t)nlen);
        if (!le->e.name) {
            ifail(err, errlen, "%s: out of memory", path);
            goto out;
        }
        ne++;
        c.off += (size_t)nlen;
        if (!take_i32(&c, &ncall) || !take_i32(&c, &nval)) {
            ifail(err, errlen, "%s: entry %d of %d (%s): the file ends before its call and value counts", pre, i + 1,
                  n_entries, shown(le->e.name, nb, sizeof nb));
            goto out;
        }
        if (nval < 1 || (size_t)nval > cur_left(&c) / 4) {
            ifail(err, errlen, "%s: entry %d of %d (%s): value count %d %s (%zu bytes left)", pre, i + 1, n_entries,
                  shown(le->e.name, nb, sizeof nb), nval, nval < 1 ? "is not positive" : "runs past the end of the file",
                  cur_left(&c));
            goto out;
        }
        wp_imatrix_entry *e = &le->e;
        e->cols = nval;
        e->n_mat = 1;
        e->sum2 = malloc((size_t)nval * sizeof(float));
        e->importance = malloc((size_t)nval * sizeof(float));
        e->counts = malloc(sizeof(float));
        if (!e->sum2 || !e->importance || !e->counts) {
            ifail(err, errlen, "%s: out of memory", path);
            goto out;
        }
        e->counts[0] = (float)ncall;
        for (int32_t j = 0; j < nval; j++) {
            union { uint32_t u; float f; } u = {rd32(c.p + c.off + 4 * (size_t)j)};
            e->sum2[j] = u.f;
            /* load_imatrix, legacy: e[i] = sums[i] / ncall (an int64_t, so a
             * float division) where ncall > 0, else sums[i] */
            e->importance[j] = ncall > 0 ? u.f / (float)ncall : u.f;
        }
        c.off += 4 * (size_t)nval;
    }
    /* the optional trailer, read as far as it goes; the rest is ignored */
    if (cur_left(&c) > 0) {
        int32_t n_calls = 0, dlen = 0;
        int whole = take_i32(&c, &n_calls);
        memcpy(&im->chunk_count, &n_calls, sizeof n_calls);
        if (whole && take_i32(&c, &dlen) && dlen > 0 && (size_t)dlen <= cur_left(&c)) {
            im->datasets = malloc(sizeof *im->datasets);
            if (!im->datasets || !(im->datasets[0] = strndup((const char *)c.p + c.off, (size_t)dlen))) {
                ifail(err, errlen, "%s: out of memory", path);
                goto out;
            }
            im->n_datasets = 1;
        }
    }

    /* one entry per name, the later one of equal names */
    qsort(es, ne, sizeof *es, lentry_cmp);
    im->e = calloc(ne, sizeof *im->e);
    if (!im->e) {
        ifail(err, errlen, "%s: out of memory", path);
        goto out;
    }
    for (size_t i = 0; i < ne; i++) {
        if (i + 1 < ne && !strcmp(es[i].e.name, es[i + 1].e.name))
            continue;
        im->e[im->n++] = es[i].e;
        memset(&es[i].e, 0, sizeof es[i].e);
    }
    rc = 0;
out:
    for (size_t i = 0; i < ne; i++)
        free_entry(&es[i].e);
    free(es);
    return rc;
}

int wp_imatrix_load(const char *path, wp_imatrix *im, char *err, size_t errlen)
{
    memset(im, 0, sizeof *im);
    FILE *f = fopen(path, "rb");
    if (!f)
        return ifail(err, errlen, "%s: %s", path, strerror(errno));
    uint8_t head[8];
    size_t got = fread(head, 1, sizeof head, f);
    if (wp_gguf_magic(head, got)) {
        fclose(f);
        int rc = load_gguf(path, im, err, errlen);
        if (rc)
            wp_imatrix_free(im);
        return rc;
    }
    if (got == 8 && !memcmp(head, WP_STREAM_MAGIC, 8)) {
        fclose(f);
        /* Hessians named (they were "a wpack stream": a new user's trial) */
        return ifail(err, errlen, wp_file_is_hessians(path)
                                      ? "%s: Hessians (hessian's output), not an imatrix: they go to gptq --hessian"
                                      : "%s: a wpack stream, not an imatrix (llama-imatrix writes GGUF or imatrix.dat)", path);
    }
    size_t len = 0;
    uint8_t *b = NULL;
    if (ferror(f))
        ifail(err, errlen, "%s: read error: %s", path, strerror(errno));
    else
        b = slurp(f, path, head, got, &len, err, errlen);
    fclose(f);
    if (!b)
        return -1;
    int rc = load_legacy(path, b, len, im, err, errlen);
    /* a text given as the imatrix: named, where the legacy reader said "entry 1 of 1953064036:
       name length 544108393 runs past the end of the file" (a new user's trial) */
    if (rc && wp_text_like(b, len < 4096 ? len : 4096))
        ifail(err, errlen, "%s: a text, not an importance matrix (llama-imatrix writes one, GGUF or imatrix.dat; "
                           "GPTQ's Hessians of a text: hessian -f)", path);
    free(b);
    if (rc)
        wp_imatrix_free(im);
    return rc;
}

int wp_imatrix_tensor_kind(const char *name)
{
    const size_t nl = strlen(name);
    return nl >= 8 && !strcmp(name + nl - 8, ".in_sum2") ? 1 : nl >= 7 && !strcmp(name + nl - 7, ".counts") ? 2 : 0;
}

int wp_imatrix_dat_head(const uint8_t *head, size_t n)
{
    if (n < 8)
        return 0;
    const uint32_t n_entries = rd32(head), name_len = rd32(head + 4);
    if (n_entries < 1 || n_entries > (1u << 20) || name_len < 1 || name_len > 4096 || 8 + (size_t)name_len > n)
        return 0;
    for (uint32_t k = 0; k < name_len; k++)
        if (head[8 + k] <= 0x20 || head[8 + k] >= 0x7f)
            return 0;
    return 1;
}

const wp_imatrix_entry *wp_imatrix_find(const wp_imatrix *im, const char *name)
{
    int lo = 0, hi = im->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(im->e[mid].name, name);
        if (c == 0)
            return &im->e[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

void wp_imatrix_free(wp_imatrix *im)
{
    for (int i = 0; i < im->n; i++) {
        free(im->e[i].name);
        free(im->e[i].sum2);
        free(im->e[i].counts);
        free(im->e[i].importance);
    }
    free(im->e);
    for (int i = 0; i < im->n_datasets; i++)
        free(im->datasets[i]);
    free(im->datasets);
    memset(im, 0, sizeof *im);
}

int wp_imatrix_check(const wp_imatrix *im, const char *path, char *err, size_t n)
{
    for (int i = 0; i < im->n; i++) {
        const wp_imatrix_entry *e = &im->e[i];
        for (int64_t j = 0; j < e->cols * e->n_mat; j++) {
            if (!isfinite(e->importance[j]))
                return ifail(err, n,
                             "%s: imatrix entry %s has a non-finite importance (%g at %lld): llama-quantize "
                             "refuses such a file",
                             path, e->name, (double)e->importance[j], (long long)j);
            if (e->importance[j] < 0.0f)
                return ifail(err, n,
                             "%s: imatrix entry %s has a negative importance (%g at %lld): importance is a "
                             "mean of squared activations",
                             path, e->name, (double)e->importance[j], (long long)j);
        }
    }
    return 0;
}

int wp_imatrix_fit(const wp_imatrix *im, const char *path, const char *name, int64_t ne0, int64_t n_mat, int lenient,
                   const wp_imatrix_entry **out, char *msg, size_t n)
{
    const wp_imatrix_entry *e = wp_imatrix_find(im, name);
    *out = NULL;
    if (!e)
        return 0;
    /* a legacy entry has only a value count: llama-quantize (llama-quant.cpp) takes it when it
       equals ne[0] x ne[2] */
    if (im->legacy ? e->cols * e->n_mat == ne0 * n_mat : e->cols == ne0 && e->n_mat == n_mat) {
        *out = e;
        return 0;
    }
    /* said as columns (and experts): "(64 x 1) does not fit the tensor (512 x 1)" read as a
       tensor of 512 x 1 for a 512 x 512 matrix (a fresh user's find) */
    char ent[64], ten[64];
    snprintf(ten, sizeof ten, "%lld long%s", (long long)ne0, n_mat > 1 ? " x " : "");
    if (n_mat > 1)
        snprintf(ten + strlen(ten), sizeof ten - strlen(ten), "%lld experts", (long long)n_mat);
    /* llama-quantize quantizes the token embedding without an entry that does not fit (it
       always misfits, llama-quant.cpp says) */
    if (lenient) {
        snprintf(msg, n,
                 "%s: imatrix entry %s does not fit the tensor: the entry has %lld values, the tensor's rows "
                 "are %s: quantized without it, as llama-quantize does",
                 path, name, (long long)(e->cols * e->n_mat), ten);
        return 1;
    }
    /* (an imatrix.dat holds a count of values alone, read as columns: a review) */
    if (im->legacy)
        snprintf(ent, sizeof ent, "%lld values", (long long)(e->cols * e->n_mat));
    else
        snprintf(ent, sizeof ent, "%lld columns%s", (long long)e->cols, e->n_mat > 1 ? " x " : "");
    if (!im->legacy && e->n_mat > 1)
        snprintf(ent + strlen(ent), sizeof ent - strlen(ent), "%lld experts", (long long)e->n_mat);
    snprintf(msg, n, "%s: imatrix entry %s does not fit the tensor: the entry has %s, the tensor's rows are %s",
             path, name, ent, ten);
    return -1;
}

int wp_imatrix_kvs(const wp_imatrix *im, const char *path, wp_record kv[4])
{
    char s[128];
    int k = 0;
    snprintf(s, sizeof s, "%s", path);
    if (wp_gguf_kv_set(&kv[k++], "quantize.imatrix.file", s, 0))
        return -1;
    if (im->n_datasets > 0) {
        snprintf(s, sizeof s, "%s", im->datasets[0]);
        if (wp_gguf_kv_set(&kv[k++], "quantize.imatrix.dataset", s, 0))
            return -1;
    }
    if (wp_gguf_kv_set(&kv[k++], "quantize.imatrix.entries_count", NULL, (uint32_t)im->n))
        return -1;
    /* load_imatrix returns chunk_count as an int32; recorded when > 0 */
    if ((int32_t)im->chunk_count > 0 && wp_gguf_kv_set(&kv[k++], "quantize.imatrix.chunks_count", NULL, im->chunk_count))
        return -1;
    return k;
}
