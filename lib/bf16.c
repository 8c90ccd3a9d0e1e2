/*
 * bf16.c - lossless exponent / sign+mantissa split of BF16, F16 and F32
 * weights (Unweight's palette + verbatim groups; DFloat11 for palette 0).
 * Layout and rationale: bf16.h.
 */
#include "bf16.h"
#include "huffman.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- field geometry ---------------------------------------------------- */

struct geom {
    int bytes;     /* element size */
    int exp_bits;  /* exponent width */
    int man_bits;  /* mantissa width */
    int raw_bits;  /* 1 + man_bits */
};

static int geom_of(uint32_t type, struct geom *g)
{
    switch (type) {
    case WP_BF16: *g = (struct geom){2, 8, 7, 8}; return 0;
    case WP_F16:  *g = (struct geom){2, 5, 10, 11}; return 0;
    case WP_F32:  *g = (struct geom){4, 8, 23, 24}; return 0;
    default: return WP_BF16_ETYPE;
    }
}

int wp_bf16_fields(uint32_t type, int *exp_bits, int *raw_bits)
{
    struct geom g;
    if (geom_of(type, &g))
        return WP_BF16_ETYPE;
    if (exp_bits)
        *exp_bits = g.exp_bits;
    if (raw_bits)
        *raw_bits = g.raw_bits;
    return g.bytes;
}

static inline uint32_t load(const uint8_t *p, int bytes)
{
    if (bytes == 2)
        return (uint32_t)p[0] | (uint32_t)p[1] << 8;
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static inline void store(uint8_t *p, int bytes, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    if (bytes == 4) {
        p[2] = (uint8_t)(v >> 16);
        p[3] = (uint8_t)(v >> 24);
    }
}

static inline uint32_t exp_of(const struct geom *g, uint32_t v)
{
    return (v >> g->man_bits) & ((1u << g->exp_bits) - 1);
}

static inline uint32_t raw_of(const struct geom *g, uint32_t v)
{
    uint32_t sign = v >> (g->bytes * 8 - 1);
    return sign << g->man_bits | (v & ((1u << g->man_bits) - 1));
}

static inline uint32_t assemble(const struct geom *g, uint32_t e, uint32_t raw)
{
    uint32_t sign = raw >> g->man_bits;
    return sign << (g->bytes * 8 - 1) | e << g->man_bits |
           (raw & ((1u << g->man_bits) - 1));
}

/* ---- LSB-first bit packing of the raw field ------------------------------ */

struct bitw { uint8_t *p; uint64_t acc; int n; };

static inline void bitw_put(struct bitw *w, uint32_t v, int bits)
{
    w->acc |= (uint64_t)v << w->n;
    w->n += bits;
    while (w->n >= 8) {
        *w->p++ = (uint8_t)w->acc;
        w->acc >>= 8;
        w->n -= 8;
    }
}

static inline void bitw_flush(struct bitw *w)
{
    if (w->n > 0)
        *w->p++ = (uint8_t)w->acc;
    w->acc = 0;
    w->n = 0;
}

struct bitr { const uint8_t *p; uint64_t acc; int n; };

static inline uint32_t bitr_get(struct bitr *r, int bits)
{
    while (r->n < bits) {
        r->acc |= (uint64_t)*r->p++ << r->n;
        r->n += 8;
    }
    uint32_t v = (uint32_t)(r->acc & ((1ull << bits) - 1));
    r->acc >>= bits;
    r->n -= bits;
    return v;
}

/* ---- sizes with overflow checks ------------------------------------------ */

static int mul_ok(size_t a, size_t b, size_t *out)
{
    if (a && b > SIZE_MAX / a)
        return 0;
    *out = a * b;
    return 1;
}

/* Element count and raw byte count of a shape; 0 on overflow. */
static int shape_sizes(const struct geom *g, int64_t n_rows, int64_t n_cols,
                       size_t *n, size_t *raw_bytes)
{
    if (n_rows < 0 || n_cols < 0)
        return 0;
    if ((uint64_t)n_rows > SIZE_MAX || (uint64_t)n_cols > SIZE_MAX)
        return 0;
    size_t cnt, bytes, bits;
    if (!mul_ok((size_t)n_rows, (size_t)n_cols, &cnt))
        return 0;
    if (!mul_ok(cnt, (size_t)g->bytes, &bytes))
        return 0;
    if (!mul_ok(cnt, (size_t)g->raw_bits, &bits))
        return 0;
    *n = cnt;
    *raw_bytes = bits / 8 + (bits % 8 != 0);
    return 1;
}

/* ---- histogram, entropy, palette ----------------------------------------- */

int wp_bf16_exp_histogram(uint32_t type, const void *data, size_t n,
                          uint64_t hist[256])
{
    struct geom g;
    if (geom_of(type, &g))
        return WP_BF16_ETYPE;
    if (!hist || (n && !data))
        return WP_BF16_EARG;
    memset(hist, 0, 256 * sizeof hist[0]);
    const uint8_t *p = data;
    for (size_t i = 0; i < n; i++)
        hist[exp_of(&g, load(p + i * g.bytes, g.bytes))]++;
    return 0;
}

double wp_bf16_entropy(const uint64_t *hist, int n_bins) { return wp_huf_entropy(hist, n_bins); }

int wp_bf16_palette(const uint64_t hist[256], int n,
                    uint8_t palette[WP_BF16_PALETTE_MAX])
{
    if (n < 0 || n > WP_BF16_PALETTE_MAX || !hist || (n && !palette))
        return WP_BF16_EARG;
    uint8_t taken[256] = {0};
    int k = 0;
    for (; k < n; k++) {
        int best = -1;
        for (int e = 0; e < 256; e++)  /* strict > keeps the smaller e on ties */
            if (hist[e] && !taken[e] && (best < 0 || hist[e] > hist[best]))
                best = e;
        if (best < 0)
            break;
        taken[best] = 1;
        palette[k] = (uint8_t)best;
    }
    return k;
}

/* ---- split --------------------------------------------------------------- */

void wp_bf16_split_free(struct wp_bf16_split *s)
{
    if (!s)
        return;
    free(s->sym);
    free(s->raw);
    free(s->vmap);
    free(s->vbytes);
    memset(s, 0, sizeof *s);
}

/* malloc that never returns NULL for a valid zero-size request. */
static void *xalloc(size_t n, int zero)
{
    return zero ? calloc(n ? n : 1, 1) : malloc(n ? n : 1);
}

int wp_bf16_split(struct wp_bf16_split *out, uint32_t type, const void *data,
                  int64_t n_rows, int64_t n_cols, int palette_n, int64_t group)
{
    if (!out)
        return WP_BF16_EARG;
    memset(out, 0, sizeof *out);
    struct geom g;
    if (geom_of(type, &g))
        return WP_BF16_ETYPE;
    if (palette_n < 0 || palette_n > WP_BF16_PALETTE_MAX)
        return WP_BF16_EARG;
    if (palette_n > 0 && group < 1)
        return WP_BF16_EARG;
    size_t n, raw_bytes;
    if (n_rows < 0 || n_cols < 0)
        return WP_BF16_EARG;
    if (!shape_sizes(&g, n_rows, n_cols, &n, &raw_bytes))
        return WP_BF16_ENOMEM;
    if (n && !data)
        return WP_BF16_EARG;

    const uint8_t *src = data;
    out->type = type;
    out->n_rows = n_rows;
    out->n_cols = n_cols;
    out->exp_bits = g.exp_bits;
    out->raw_bits = g.raw_bits;
    out->palette_n = palette_n;
    out->group = palette_n ? group : 0;

    wp_bf16_exp_histogram(type, data, n, out->hist);

    /* raw: every weight, fixed position */
    out->raw_bytes = raw_bytes;
    out->raw = xalloc(raw_bytes, 0);
    if (!out->raw)
        return WP_BF16_ENOMEM;
    if (g.raw_bits == 8) {
        for (size_t i = 0; i < n; i++)
            out->raw[i] = (uint8_t)raw_of(&g, load(src + i * g.bytes, g.bytes));
    } else {
        struct bitw w = {out->raw, 0, 0};
        for (size_t i = 0; i < n; i++)
            bitw_put(&w, raw_of(&g, load(src + i * g.bytes, g.bytes)), g.raw_bits);
        bitw_flush(&w);
    }

    if (palette_n == 0) {  /* DFloat11: one exponent byte a weight */
        out->sym_per_row = n_cols;
        out->n_sym = n;
        out->sym = xalloc(n, 0);
        if (!out->sym)
            return WP_BF16_ENOMEM;
        for (size_t i = 0; i < n; i++)
            out->sym[i] = (uint8_t)exp_of(&g, load(src + i * g.bytes, g.bytes));
        out->vmap = xalloc(0, 1);
        out->vbytes = xalloc(0, 0);
        if (!out->vmap || !out->vbytes)
            return WP_BF16_ENOMEM;
        return 0;
    }

    /* Unweight palette mode */
    out->n_palette = wp_bf16_palette(out->hist, palette_n, out->palette);
    int idx[256];
    for (int e = 0; e < 256; e++)
        idx[e] = -1;
    for (int k = 0; k < out->n_palette; k++)
        idx[out->palette[k]] = k;

    size_t nr = (size_t)n_rows, nc = (size_t)n_cols, gs = (size_t)group;
    size_t gpr = nc / gs + (nc % gs != 0), n_groups, spr = nc / 2 + (nc & 1);
    if (!mul_ok(nr, gpr, &n_groups) || !mul_ok(nr, spr, &out->n_sym))
        return WP_BF16_ENOMEM;
    out->groups_per_row = (int64_t)gpr;
    out->sym_per_row = (int64_t)spr;
    out->vmap_bytes = n_groups / 8 + (n_groups % 8 != 0);
    out->vmap = xalloc(out->vmap_bytes, 1);
    out->sym = xalloc(out->n_sym, 1);
    if (!out->vmap || !out->sym)
        return WP_BF16_ENOMEM;

    /* pass 1: flag groups holding an exponent outside the palette */
    size_t n_verb = 0, verb_bytes = 0;
    for (size_t r = 0; r < nr; r++) {
        const uint8_t *row = src + r * nc * g.bytes;
        for (size_t gi = 0; gi < gpr; gi++) {
            size_t c0 = gi * gs, c1 = c0 + gs < nc ? c0 + gs : nc;
            for (size_t c = c0; c < c1; c++) {
                if (idx[exp_of(&g, load(row + c * g.bytes, g.bytes))] < 0) {
                    size_t bit = r * gpr + gi;
                    out->vmap[bit / 8] |= (uint8_t)(1u << (bit % 8));
                    n_verb++;
                    verb_bytes += (c1 - c0) * g.bytes;
                    break;
                }
            }
        }
    }
    out->n_verbatim = (int64_t)n_verb;
    out->vbytes_len = verb_bytes;
    out->vbytes = xalloc(verb_bytes, 0);
    if (!out->vbytes)
        return WP_BF16_ENOMEM;

    /* pass 2: pair symbols (index 0 in verbatim slots) and verbatim bytes */
    uint8_t *vb = out->vbytes;
    for (size_t r = 0; r < nr; r++) {
        const uint8_t *row = src + r * nc * g.bytes;
        uint8_t *srow = out->sym + r * spr;
        for (size_t gi = 0; gi < gpr; gi++) {
            size_t c0 = gi * gs, c1 = c0 + gs < nc ? c0 + gs : nc;
            if (wp_bf16_verbatim(out, (int64_t)r, (int64_t)gi)) {
                memcpy(vb, row + c0 * g.bytes, (c1 - c0) * g.bytes);
                vb += (c1 - c0) * g.bytes;
                continue;  /* slots stay 0 (calloc) */
            }
            for (size_t c = c0; c < c1; c++) {
                unsigned k = (unsigned)idx[exp_of(&g, load(row + c * g.bytes, g.bytes))];
                srow[c / 2] |= (uint8_t)(k << (4 * (c & 1)));
            }
        }
    }
    return 0;
}

/* ---- join ------------------------------------------------------------------ */

int wp_bf16_join(const struct wp_bf16_split *s, void *dst)
{
    if (!s)
        return WP_BF16_EARG;
    struct geom g;
    if (geom_of(s->type, &g))
        return WP_BF16_ETYPE;
    if (s->exp_bits != g.exp_bits || s->raw_bits != g.raw_bits)
        return WP_BF16_ECORRUPT;
    size_t n, raw_bytes;
    if (s->n_rows < 0 || s->n_cols < 0 ||
        !shape_sizes(&g, s->n_rows, s->n_cols, &n, &raw_bytes))
        return WP_BF16_ECORRUPT;
    if (n && !dst)
        return WP_BF16_EARG;
    if (s->raw_bytes != raw_bytes || (raw_bytes && !s->raw))
        return WP_BF16_ECORRUPT;
    if (s->palette_n < 0 || s->palette_n > WP_BF16_PALETTE_MAX)
        return WP_BF16_ECORRUPT;
    uint32_t emax = 1u << g.exp_bits;
    uint8_t *out = dst;
    const uint8_t *sym = s->sym;

    /* raw padding bits of the last byte must be 0 (canonical form) */
    size_t raw_bits_total = n * (size_t)g.raw_bits;
    if (raw_bits_total % 8 && (s->raw[raw_bytes - 1] >> (raw_bits_total % 8)))
        return WP_BF16_ECORRUPT;

    if (s->palette_n == 0) {
        if (s->sym_per_row != s->n_cols || s->n_sym != n || (n && !sym))
            return WP_BF16_ECORRUPT;
        if (s->n_verbatim != 0 || s->vbytes_len != 0 || s->n_palette != 0 || s->vmap_bytes != 0 ||
            s->group != 0)
            return WP_BF16_ECORRUPT;
        for (int k = 0; k < WP_BF16_PALETTE_MAX; k++)
            if (s->palette[k])   /* no palette: its 16 bytes are 0 */
                return WP_BF16_ECORRUPT;
        for (size_t i = 0; i < n; i++)
            if (sym[i] >= emax)
                return WP_BF16_ECORRUPT;
        struct bitr r = {s->raw, 0, 0};
        for (size_t i = 0; i < n; i++) {
            uint32_t raw = g.raw_bits == 8 ? s->raw[i] : bitr_get(&r, g.raw_bits);
            store(out + i * g.bytes, g.bytes, assemble(&g, sym[i], raw));
        }
        return 0;
    }

    /* palette mode: check the parts' geometry */
    if (s->n_palette < 0 || s->n_palette > s->palette_n || s->group < 1)
        return WP_BF16_ECORRUPT;
    if (n && s->n_palette == 0)
        return WP_BF16_ECORRUPT;
    uint8_t seen[256] = {0};
    for (int k = 0; k < WP_BF16_PALETTE_MAX; k++) {
        if (k < s->n_palette ? s->palette[k] >= emax || seen[s->palette[k]]++ : s->palette[k] != 0)
            return WP_BF16_ECORRUPT;   /* distinct entries, and past n_palette 0 */
    }
    size_t nr = (size_t)s->n_rows, nc = (size_t)s->n_cols, gs = (size_t)s->group;
    size_t gpr = nc / gs + (nc % gs != 0), spr = nc / 2 + (nc & 1), n_groups, n_sym;
    if (!mul_ok(nr, gpr, &n_groups) || !mul_ok(nr, spr, &n_sym))
        return WP_BF16_ECORRUPT;
    if (s->groups_per_row != (int64_t)gpr || s->sym_per_row != (int64_t)spr ||
        s->n_sym != n_sym || (n_sym && !sym))
        return WP_BF16_ECORRUPT;
    if (s->vmap_bytes != n_groups / 8 + (n_groups % 8 != 0) ||
        (s->vmap_bytes && !s->vmap))
        return WP_BF16_ECORRUPT;
    if (n_groups % 8 && (s->vmap[s->vmap_bytes - 1] >> (n_groups % 8)))
        return WP_BF16_ECORRUPT;
    /* verbatim count and byte length must agree with the bitmap */
    size_t n_verb = 0, verb_bytes = 0;
    for (size_t r = 0; r < nr; r++)
        for (size_t gi = 0; gi < gpr; gi++) {
            if (wp_bf16_verbatim(s, (int64_t)r, (int64_t)gi)) {
                size_t c0 = gi * gs, c1 = c0 + gs < nc ? c0 + gs : nc;
                n_verb++;
                verb_bytes += (c1 - c0) * g.bytes;
            }
        }
    if ((size_t)s->n_verbatim != n_verb || s->n_verbatim < 0 ||
        s->vbytes_len != verb_bytes || (verb_bytes && !s->vbytes))
        return WP_BF16_ECORRUPT;
    /* odd rows: pad nibble must be 0 */
    if (nc & 1)
        for (size_t r = 0; r < nr; r++)
            if (sym[r * spr + spr - 1] >> 4)
                return WP_BF16_ECORRUPT;

    /* decode; on WP_BF16_ECORRUPT dst may be partly written (discard it).
       The record must be the split's own (wp_bf16_split of the restored
       weights gives it back): a verbatim group holds an exponent outside the
       palette, and the palette is wp_bf16_palette of the exponents' counts.
       The runtime's load-time palette indices split the weights again, and a
       record that restored exactly but was not the split's (n_palette one
       higher, a needless verbatim group) gave other indices than its own. */
    int in_pal[256] = {0};
    for (int k = 0; k < s->n_palette; k++)
        in_pal[s->palette[k]] = 1;
    uint64_t hist[256] = {0}, icount[WP_BF16_PALETTE_MAX] = {0};
    const uint8_t *vb = s->vbytes;
    struct bitr rr = {s->raw, 0, 0};
    for (size_t r = 0; r < nr; r++) {
        uint8_t *row = out + r * nc * g.bytes;
        const uint8_t *srow = sym + r * spr;
        for (size_t gi = 0; gi < gpr; gi++) {
            size_t c0 = gi * gs, c1 = c0 + gs < nc ? c0 + gs : nc;
            if (wp_bf16_verbatim(s, (int64_t)r, (int64_t)gi)) {
                int outside = 0;
                for (size_t c = c0; c < c1; c++) {
                    if ((srow[c / 2] >> (4 * (c & 1))) & 15)
                        return WP_BF16_ECORRUPT;  /* slot must be index 0 */
                    uint32_t raw = bitr_get(&rr, g.raw_bits);
                    uint32_t v = load(vb + (c - c0) * g.bytes, g.bytes);
                    if (raw != raw_of(&g, v))
                        return WP_BF16_ECORRUPT;  /* raw copy disagrees */
                    const uint32_t e = exp_of(&g, v);
                    hist[e]++;
                    outside |= !in_pal[e];
                }
                if (!outside)
                    return WP_BF16_ECORRUPT;  /* every exponent in the palette: not verbatim */
                memcpy(row + c0 * g.bytes, vb, (c1 - c0) * g.bytes);
                vb += (c1 - c0) * g.bytes;
                continue;
            }
            for (size_t c = c0; c < c1; c++) {
                unsigned k = (srow[c / 2] >> (4 * (c & 1))) & 15;
                if ((int)k >= s->n_palette)
                    return WP_BF16_ECORRUPT;
                icount[k]++;
                uint32_t raw = bitr_get(&rr, g.raw_bits);
                store(row + c * g.bytes, g.bytes, assemble(&g, s->palette[k], raw));
            }
        }
    }
    for (int k = 0; k < s->n_palette; k++)
        hist[s->palette[k]] += icount[k];
    uint8_t p[WP_BF16_PALETTE_MAX];
    if (wp_bf16_palette(hist, s->palette_n, p) != s->n_palette || memcmp(p, s->palette, (size_t)s->n_palette))
        return WP_BF16_ECORRUPT;  /* not the palette the split picks from these weights */
    return 0;
}

/* ---- statistics ------------------------------------------------------------ */

int wp_bf16_stats(const struct wp_bf16_split *s, struct wp_bf16_stats *st)
{
    if (!s || !st)
        return WP_BF16_EARG;
    memset(st, 0, sizeof *st);
    uint64_t n = 0;
    for (int e = 0; e < 256; e++) {
        n += s->hist[e];
        st->n_exponents += s->hist[e] != 0;
    }
    st->n_weights = n;
    st->h_exp = wp_bf16_entropy(s->hist, 256);
    st->limit = s->raw_bits + st->h_exp;
    uint64_t sh[256] = {0};
    for (size_t i = 0; i < s->n_sym; i++)
        sh[s->sym[i]]++;
    st->h_sym = wp_bf16_entropy(sh, 256);
    st->h_sym_per_weight = n ? st->h_sym * (double)s->n_sym / (double)n : 0;
    if (s->palette_n == 0) {
        st->palette_cover = 1;
        return 0;
    }
    uint64_t groups = (uint64_t)s->n_rows * (uint64_t)s->groups_per_row, cover = 0;
    st->verbatim_frac = groups ? (double)s->n_verbatim / (double)groups : 0;
    int bytes = wp_bf16_fields(s->type, NULL, NULL);
    st->verbatim_weight_frac =
        n && bytes > 0 ? (double)(s->vbytes_len / (size_t)bytes) / (double)n : 0;
    for (int k = 0; k < s->n_palette; k++)
        cover += s->hist[s->palette[k]];
    st->palette_cover = n ? (double)cover / (double)n : 1;
    return 0;
}

const char *wp_bf16_strerror(int err)
{
    switch (err) {
    case WP_BF16_OK: return "ok";
    case WP_BF16_ETYPE: return "bf16: type is not BF16, F16 or F32";
    case WP_BF16_EARG: return "bf16: bad argument (shape, palette > 16, group < 1)";
    case WP_BF16_ENOMEM: return "bf16: out of memory or size overflow";
    case WP_BF16_ECORRUPT: return "bf16: split parts are inconsistent (corrupt)";
    default: return "bf16: unknown error";
    }
}
