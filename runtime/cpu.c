/* cpu.c - the CPU reference of the runner's kernels (see wprun.h). */
#include "wprun.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocks.h"
#include "half.h"
#include "huffman.h"
#include "rowmap.h"

static int fail(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}

/* Faults a test build injects, so that the tests see wprun --verify catch a wrong result
 * (tests/runtime.bats): build/tools/wprun-fault is wprun compiled with -DWR_TEST_FAULT,
 * where WR_TEST_FAULT=NAME in the environment makes one result come out wrong: "ref",
 * "fast" or "device", a byte of that decoder's restore; "transcode", a palette index;
 * "fused" and "twin", output 0 of those GEMVs, moved by 1e-3 of the largest output (the
 * twin's alike). bin/wprun has none: fault() is 0 there. */
#ifdef WR_TEST_FAULT
static int fault(const char *name)
{
    const char *e = getenv("WR_TEST_FAULT");
    return e && !strcmp(e, name);
}
#else
#define fault(name) 0
#endif

/* The fault of a GEMV's outputs y[0 .. n-1]: y[0] moved by 1e-3 of the largest |y|. */
static void fault_y(float *y, size_t n)
{
    float most = 0;
    for (size_t i = 0; i < n; i++)
        most = fabsf(y[i]) > most ? fabsf(y[i]) : most;
    y[0] += 1e-3f * most;
}

int wr_lane_depth(const wr_matrix *m)
{
    uint32_t d = 1;
    for (uint64_t i = 0; i < 32 * m->v.n_tiles; i++)
        if (m->v.lane_words[i] > d)
            d = m->v.lane_words[i];
    return (int)(d < WP_LANE_MAX_WORDS ? d : WP_LANE_MAX_WORDS);
}

int wr_lut_build(const wr_matrix *m, uint32_t *lut)
{
    const int pal = m->kind == WR_EXP && m->s.palette_n;
    if (m->huf.L < 1 || m->huf.L > WR_LUT_MAX_BITS)
        return -1;
    for (uint32_t p = 0; p < (1u << m->huf.L); p++)
        lut[p] = wr_lut_entry(&m->huf, p, pal ? m->s.palette : NULL, pal ? m->s.n_palette : 0);
    return 0;
}

void wr_lut_values(const wr_matrix *m, uint32_t *lut)
{
    if (m->kind != WR_Q)
        return;
    const wr_geom g = wr_geom_of(m->type);
    const uint8_t zero[32] = {0};
    const wr_scale z = wr_sub_scale(m->type, zero, 0);   /* c(q) = q - z.off, or kv[q] when z.nl */
    for (uint32_t p = 0; p < (1u << m->huf.L); p++)
        lut[p] = wr_lut_codes(lut[p], g.bits, g.wps, z.off, z.nl);
}

int wr_dev_decode_tile(const wr_matrix *m, const uint32_t *lut, uint64_t t, uint8_t *out)
{
    static uint32_t sw[WP_LANE_MAX_WORDS * 32];   /* the warp's staged words, [i * 32 + k] */
    const wp_coded_view *v = &m->v;
    const uint32_t o0 = v->offsets[t], o1 = v->offsets[t + 1];
    const int span_ok = o0 <= o1 && o1 <= v->n_words;
    const uint32_t span = span_ok ? o1 - o0 : 0;
    const uint32_t *tw = v->words + (span_ok ? o0 : 0);
    uint32_t W[32], D = 0, G = 0;
    int bad = !span_ok;
    for (int k = 0; k < 32; k++) {
        W[k] = v->lane_words[t * 32 + (uint64_t)k];
        bad |= W[k] > WP_LANE_MAX_WORDS;
        if (W[k] > WP_LANE_MAX_WORDS)
            W[k] = WP_LANE_MAX_WORDS;
        D = W[k] > D ? W[k] : D;
    }
    for (uint32_t i = 0; i < D; i++) {   /* lane_open<true>: one ballot a group */
        uint32_t mask = 0, n = 0;
        for (int k = 0; k < 32; k++)
            mask |= (uint32_t)(W[k] > i) << k;
        for (int k = 0; k < 32; k++)
            if (W[k] > i) {
                uint32_t j = wr_group_word(G, mask, (unsigned)k);
                sw[i * 32 + (uint32_t)k] = j < span ? tw[j] : 0;
                n++;
            }
        G += n;
    }
    bad |= G != span;
    uint64_t r0, c0;
    uint32_t h, w;
    wp_lanes_tile_rect(&v->shape, t, &r0, &c0, &h, &w);
    const int L = m->huf.L, pal = m->kind == WR_EXP && m->s.palette_n;
    for (uint32_t k = 0; k < 32; k++) {
        const uint32_t Wk = bad ? 0 : W[k];
        wr_bits b;
        wr_bits_init(&b);
        uint32_t flags = 0;
        for (uint32_t r = 2 * k; r < h && r < 2 * k + 2; r++)
            for (uint32_t c = 0; c < w; c++) {
                if (c % 2 == 0 && wr_bits_low(&b))   /* lane_at: a fill check every second symbol */
                    wr_bits_push(&b, b.next < Wk ? sw[b.next * 32 + k] : 0);
                const uint32_t e = wr_bits_take(&b, lut, L);
                flags |= e;
                out[r * 256 + c] = (uint8_t)(e >> 24);
            }
        if ((flags & (WR_LUT_BAD | (pal ? WR_LUT_PAL0 | WR_LUT_PAL1 : 0))) || wr_bits_close(&b, Wk))
            bad = 1;
    }
    return bad ? -1 : 0;
}

/* A tile decoder: lib's reference (limit tables) or fast (lookup) decoder,
 * or the kernels' decode (WR_DEC_DEVICE). */
typedef struct {
    const wr_matrix *m;
    int mode;
    wp_huf_table tab;
    wp_huf_lut *lut;
    uint32_t *dlut;
} tile_dec;

static void dec_close(tile_dec *d)
{
    free(d->lut);
    free(d->dlut);
    d->lut = NULL;
    d->dlut = NULL;
}

/* -1, with nothing left to close, when m's code table is bad or memory runs out. */
static int dec_open(tile_dec *d, const wr_matrix *m, int mode)
{
    d->m = m;
    d->mode = mode;
    d->lut = NULL;
    d->dlut = NULL;
    int rc;
    if (mode == WR_DEC_LIMITS)
        rc = wp_huf_table_init(&d->tab, m->v.lengths, 256, m->v.max_len);
    else if (mode == WR_DEC_DEVICE)
        rc = (d->dlut = malloc(sizeof(uint32_t) << WR_LUT_MAX_BITS)) ? wr_lut_build(m, d->dlut) : -1;
    else
        rc = (d->lut = malloc(sizeof *d->lut)) ? wp_huf_lut_init(d->lut, m->v.lengths, 256, m->v.max_len) : -1;
    if (rc)   /* (the fused GEMV and the transcode left the table allocated: a reviewer's find) */
        dec_close(d);
    return rc;
}

/* Decode tile t into buf (stride 256). */
static int dec_tile(tile_dec *d, uint64_t t, uint8_t *buf)
{
    const wp_coded_view *v = &d->m->v;
    if (d->mode == WR_DEC_DEVICE)
        return wr_dev_decode_tile(d->m, d->dlut, t, buf);
    int rc = d->mode == WR_DEC_LIMITS
                 ? wp_lanes_decode_tile_ref(v->words, v->n_words, v->offsets, v->lane_words, &v->shape, &d->tab, t, buf, 256)
                 : wp_lanes_decode_tile(v->words, v->n_words, v->offsets, v->lane_words, &v->shape, d->lut, t, buf, 256);
    return rc == WP_LANES_OK ? 0 : -1;
}

/* Tile t's rectangle and its decoded symbols in buf (stride 256); -1 with a
 * message naming the matrix and tile when its lanes are corrupt. */
static int next_tile(tile_dec *d, uint64_t t, uint8_t *buf, uint64_t *r0, uint64_t *c0, uint32_t *h, uint32_t *w,
                     char *err, size_t errlen)
{
    wp_lanes_tile_rect(&d->m->v.shape, t, r0, c0, h, w);
    if (dec_tile(d, t, buf))
        return fail(err, errlen, "%s: tile %llu: corrupt lanes", d->m->name, (unsigned long long)t);
    return 0;
}

/* Weight values of one tile row of a WR_Q matrix: row `row`, weight columns
 * c0w .. c0w + nw - 1 (whole blocks), codes q[0..nw). */
static void q_row_values(const wr_matrix *m, uint64_t row, uint64_t c0w, int nw, const uint8_t *q, float *val)
{
    const wr_geom *g = &m->dg;
    uint64_t bpr = (uint64_t)m->cols / (uint64_t)g->n;
    for (int jb = 0; jb < nw / g->n; jb++) {
        const uint8_t *side = m->aux.payload + (row * bpr + c0w / (uint64_t)g->n + (uint64_t)jb) * (uint64_t)g->side;
        for (int s = 0; s < g->n / g->sub_n; s++) {
            wr_scale sc = wr_sub_scale((int)m->type, side, s);
            for (int i = 0; i < g->sub_n; i++) {
                int w = jb * g->n + s * g->sub_n + i;
                val[w] = wr_value(&sc, q[w]);
            }
        }
    }
}

/* Element bits of weight (row, col) of a WR_EXP matrix (BF16, F16 or F32)
 * from its exponent (the decoded symbol's palette entry or exponent field),
 * its raw sign+mantissa bits, or its verbatim group. *bad set on a palette
 * index without an entry. */
static uint32_t exp_weight(const wr_matrix *m, uint64_t row, uint64_t col, const uint8_t *rowsym, uint64_t c0s, int *bad)
{
    const struct wp_bf16_split *s = &m->s;
    const uint64_t i = row * (uint64_t)m->cols + col;
    if (s->palette_n) {
        const uint64_t gi = col / (uint64_t)s->group;
        if (wp_bf16_verbatim(s, (int64_t)row, (int64_t)gi)) {
            /* verbatim: the group's bytes, after the row's earlier verbatim groups */
            uint64_t before = 0;
            for (uint64_t k = 0; k < gi; k++)
                before += (uint64_t)wp_bf16_verbatim(s, (int64_t)row, (int64_t)k);
            const uint64_t es = m->type == WP_F32 ? 4 : 2;
            const uint8_t *p = s->vbytes + m->vrow[row] + es * (before * (uint64_t)s->group + col - gi * (uint64_t)s->group);
            return es == 4 ? (uint32_t)wr_rd16(p) | (uint32_t)wr_rd16(p + 2) << 16 : wr_rd16(p);
        }
        int idx = (rowsym[col / 2 - c0s] >> (4 * (col % 2))) & 15;
        if (idx >= s->n_palette)
            *bad = 1;
        return wr_float_rebuild((int)m->type, s->palette[idx], wr_raw_get(s->raw, i, s->raw_bits));
    }
    return wr_float_rebuild((int)m->type, rowsym[col - c0s], wr_raw_get(s->raw, i, s->raw_bits));
}

/* Values (and element bits) of one tile row of a WR_EXP matrix: weights
 * c0w .. c0w+nw-1. */
static int exp_row_values(const wr_matrix *m, uint64_t row, uint64_t c0s, const uint8_t *rowsym, int nw, float *val,
                          uint32_t *bits)
{
    int bad = 0;
    uint64_t c0w = m->s.palette_n ? 2 * c0s : c0s;
    for (int j = 0; j < nw; j++) {
        uint32_t b = exp_weight(m, row, c0w + (uint64_t)j, rowsym, c0s, &bad);
        if (val)
            val[j] = wr_float_value((int)m->type, b);
        if (bits)
            bits[j] = b;
    }
    return bad ? -1 : 0;
}

/* Weights in tile row of a tile with w symbols starting at symbol c0. */
static int tile_weights(const wr_matrix *m, uint64_t c0, uint32_t w)
{
    if (m->kind == WR_Q)
        return (int)w * m->dg.wps;
    if (m->s.palette_n) {
        int64_t end = 2 * (int64_t)(c0 + w);
        if (end > m->cols)
            end = m->cols;
        return (int)(end - 2 * (int64_t)c0);
    }
    return (int)w;
}

int wr_cpu_restore(const wr_matrix *m, int mode, uint8_t *out, char *err, size_t errlen)
{
    tile_dec d;
    if (m->stored)
        return fail(err, errlen, "%s: stored fixed-width, not lane-coded: no lanes to decode", m->name);
    if (dec_open(&d, m, mode))
        return fail(err, errlen, "%s: bad code table", m->name);
    static uint8_t buf[64 * 256];
    uint8_t q[256];
    uint32_t bits[256];
    for (uint64_t t = 0; t < m->v.n_tiles; t++) {
        uint64_t r0, c0;
        uint32_t h, w;
        if (next_tile(&d, t, buf, &r0, &c0, &h, &w, err, errlen)) {
            dec_close(&d);
            return -1;
        }
        int nw = tile_weights(m, c0, w);
        for (uint32_t r = 0; r < h; r++) {
            uint64_t row = r0 + r;
            if (m->kind == WR_Q) {
                const wr_geom *g = &m->dg;
                uint64_t bpr = (uint64_t)m->cols / (uint64_t)g->n, c0w = c0 * (uint64_t)g->wps;
                wr_unpack(buf + 256 * r, g->bits, g->wps, nw, q);
                for (int jb = 0; jb < nw / g->n; jb++) {
                    uint64_t b = row * bpr + c0w / (uint64_t)g->n + (uint64_t)jb;
                    wp_block_assemble((int)m->type, m->aux.payload + b * (uint64_t)g->side, q + jb * g->n,
                                 out + b * (uint64_t)g->bytes);
                }
            } else {
                if (exp_row_values(m, row, c0, buf + 256 * r, nw, NULL, bits)) {
                    dec_close(&d);
                    return fail(err, errlen, "%s: palette index without an entry", m->name);
                }
                uint64_t c0w = m->s.palette_n ? 2 * c0 : c0;
                const uint64_t es = m->type == WP_F32 ? 4 : 2;
                for (int j = 0; j < nw; j++) {
                    uint8_t *o = out + es * (row * (uint64_t)m->cols + c0w + (uint64_t)j);
                    wp_wr16(o, (uint16_t)bits[j]);
                    if (es == 4)
                        wp_wr16(o + 2, (uint16_t)(bits[j] >> 16));
                }
            }
        }
    }
    dec_close(&d);
    if (fault(mode == WR_DEC_LIMITS ? "ref" : mode == WR_DEC_TABLE ? "fast" : "device"))
        out[0] ^= 1;
    return 0;
}

int wr_cpu_gemv_fused(const wr_matrix *m, const float *x, int batch, float *y, char *err, size_t errlen)
{
    if (m->stored)
        return fail(err, errlen, "%s: stored fixed-width, not lane-coded: the twin alone runs it", m->name);
    double *acc = calloc((size_t)(batch * m->rows) + 1, sizeof *acc);
    tile_dec d;
    if (!acc)
        return fail(err, errlen, "out of memory");
    if (dec_open(&d, m, WR_DEC_TABLE)) {   /* (said "out of memory": a reviewer's find) */
        free(acc);
        return fail(err, errlen, "%s: bad code table", m->name);
    }
    static uint8_t buf[64 * 256];
    uint8_t q[256];
    float val[256];
    int rc = 0;
    for (uint64_t t = 0; t < m->v.n_tiles && rc == 0; t++) {
        uint64_t r0, c0;
        uint32_t h, w;
        if ((rc = next_tile(&d, t, buf, &r0, &c0, &h, &w, err, errlen)) != 0)
            break;
        int nw = tile_weights(m, c0, w);
        uint64_t c0w = m->kind == WR_Q ? c0 * (uint64_t)m->dg.wps : m->s.palette_n ? 2 * c0 : c0;
        for (uint32_t r = 0; r < h; r++) {
            uint64_t row = r0 + r;
            if (m->kind == WR_Q) {
                wr_unpack(buf + 256 * r, m->dg.bits, m->dg.wps, nw, q);
                q_row_values(m, row, c0w, nw, q, val);
            } else if (exp_row_values(m, row, c0, buf + 256 * r, nw, val, NULL)) {
                rc = fail(err, errlen, "%s: palette index without an entry", m->name);
                break;
            }
            for (int b = 0; b < batch; b++) {
                const float *xb = x + (uint64_t)b * (uint64_t)m->cols + c0w;
                float part = 0;
                for (int j = 0; j < nw; j++)
                    part += val[j] * xb[j];
                acc[(uint64_t)b * (uint64_t)m->rows + row] += part;
            }
        }
    }
    dec_close(&d);
    for (int64_t i = 0; i < batch * m->rows; i++)
        y[i] = (float)acc[i];
    free(acc);
    if (rc == 0 && fault("fused"))
        fault_y(y, (size_t)(batch * m->rows));
    return rc;
}

int64_t wr_palette_stride(const wr_matrix *m) { return (m->cols + 7) / 8 * 4; }

int wr_palette_pair(const wr_matrix *m)
{
    return m->kind == WR_EXP && m->type == WP_BF16 && m->s.palette_n;
}

int wr_palette_ok(const wr_matrix *m)
{
    return wr_palette_pair(m) && m->s.n_palette > 0 && m->s.palette[0] != 0xFF;
}

int wr_palette_index(const wr_matrix *m, const uint8_t *fixed, uint8_t *idx)
{
    const struct wp_bf16_split *s = &m->s;
    if (!wr_palette_pair(m))
        return -1;
    /* the pair symbols of bf16.h, split again from the restored bytes: the same
       palette comes back, verbatim groups' slots hold index 0 */
    struct wp_bf16_split t;
    memset(&t, 0, sizeof t);
    int rc = -1;
    if (wp_bf16_split(&t, WP_BF16, fixed, m->rows, m->cols, s->palette_n, s->group) == 0 &&
        t.n_palette == s->n_palette && !memcmp(t.palette, s->palette, (size_t)s->n_palette) &&
        t.sym_per_row <= wr_palette_stride(m)) {
        const int64_t st = wr_palette_stride(m);
        memset(idx, 0, (size_t)(st * m->rows));
        for (int64_t r = 0; r < m->rows; r++)
            memcpy(idx + r * st, t.sym + r * t.sym_per_row, (size_t)t.sym_per_row);
        rc = 0;
    }
    wp_bf16_split_free(&t);
    return rc;
}

int64_t wr_palette_fix_stride(const wr_matrix *m) { return (m->s.group + 7) / 8 * 8; }

int wr_palette_ahead_env(void)
{
    const char *e = getenv("WPRUN_PALETTE_AHEAD");
    if (!e || !*e)
        return 0;
    return !strcmp(e, "1") ? 1 : !strcmp(e, "2") ? 2 : -1;
}

int wr_palette_fix(const wr_matrix *m, const uint8_t *fixed, uint32_t *vcol, float *delta)
{
    const struct wp_bf16_split *s = &m->s;
    if (!wr_palette_pair(m) || s->n_palette < 1)
        return -1;
    const int64_t st = wr_palette_fix_stride(m);
    uint64_t v = 0;
    for (int64_t r = 0; r < m->rows; r++)
        for (int64_t gi = 0; gi < s->groups_per_row; gi++) {
            if (!wp_bf16_verbatim(s, r, gi))
                continue;
            const int64_t c0 = gi * s->group, len = m->cols - c0 < s->group ? m->cols - c0 : s->group;
            vcol[v] = (uint32_t)c0;
            float *d = delta + v * (uint64_t)st;
            for (int64_t t = 0; t < st; t++) {
                d[t] = 0.0f;
                if (t >= len)
                    continue;
                const uint64_t i = (uint64_t)(r * m->cols + c0 + t);
                const float w = wp_bf16_to_f32(wr_rd16(fixed + 2 * i));
                const float wp = wr_float_value(WP_BF16, wr_float_rebuild(WP_BF16, s->palette[0],
                                                                          wr_raw_get(s->raw, i, s->raw_bits)));
                d[t] = w - wp;
            }
            v++;
        }
    return v == (uint64_t)s->n_verbatim ? 0 : -1;
}

int wr_cpu_transcode(const wr_matrix *m, uint8_t *idx, char *err, size_t errlen)
{
    if (!wr_palette_pair(m))
        return fail(err, errlen, "%s: transcode needs a palette-pair BF16 matrix", m->name);
    const int64_t st = wr_palette_stride(m);
    tile_dec d;
    if (dec_open(&d, m, WR_DEC_TABLE))
        return fail(err, errlen, "%s: bad code table", m->name);
    static uint8_t buf[64 * 256];
    memset(idx, 0, (size_t)(st * m->rows));
    for (uint64_t t = 0; t < m->v.n_tiles; t++) {
        uint64_t r0, c0;
        uint32_t h, w;
        if (next_tile(&d, t, buf, &r0, &c0, &h, &w, err, errlen)) {
            dec_close(&d);
            return -1;
        }
        for (uint32_t r = 0; r < h; r++)
            memcpy(idx + (r0 + r) * (uint64_t)st + c0, buf + 256 * r, w);
    }
    dec_close(&d);
    if (fault("transcode"))
        idx[0] ^= 1;
    return 0;
}

int wr_cpu_gemv_palette(const wr_matrix *m, const uint8_t *idx, const float *x, int batch, float *y, char *err,
                        size_t errlen)
{
    if (!wr_palette_pair(m))
        return fail(err, errlen, "%s: the palette GEMV needs a palette-pair BF16 matrix", m->name);
    const int64_t st = wr_palette_stride(m);
    int bad = 0;
    for (int64_t row = 0; row < m->rows; row++) {
        const uint8_t *rowsym = idx + row * st;   /* pair j of the row at byte j */
        for (int b = 0; b < batch; b++) {
            const float *xb = x + (uint64_t)b * (uint64_t)m->cols;
            double a = 0;
            for (int64_t c0 = 0; c0 < m->cols; c0 += 256) {
                float part = 0;
                for (int64_t c = c0; c < m->cols && c < c0 + 256; c++)
                    part += wr_float_value(WP_BF16, exp_weight(m, (uint64_t)row, (uint64_t)c, rowsym, 0, &bad)) * xb[c];
                a += part;
            }
            y[(uint64_t)b * (uint64_t)m->rows + (uint64_t)row] = (float)a;
        }
    }
    return bad ? fail(err, errlen, "%s: palette index without an entry", m->name) : 0;
}

/* Float value of element i of a floating-point tensor. */
static float float_at(uint32_t type, const uint8_t *data, uint64_t i)
{
    if (type == WP_BF16)
        return wp_bf16_to_f32(wr_rd16(data + 2 * i));
    if (type == WP_F16)
        return wp_fp16_to_f32(wr_rd16(data + 2 * i));
    float f;
    memcpy(&f, data + 4 * i, 4);
    return f;
}

int wr_cpu_gemv_fixed(const wr_matrix *m, const uint8_t *data, const float *x, int batch, float *y)
{
    float val[256];
    uint8_t side[32];
    double acc[64];   /* a row's sums; a batch above 64 allocates them, once */
    double *a = batch <= 64 ? acc : malloc((size_t)batch * sizeof *a);
    if (!a)
        return -1;
    for (int64_t row = 0; row < m->rows; row++) {
        memset(a, 0, (size_t)batch * sizeof *a);
        for (int64_t c0 = 0; c0 < m->cols; c0 += 256) {
            int nw = (int)(m->cols - c0 < 256 ? m->cols - c0 : 256);
            if (m->kind == WR_Q) {
                const wr_geom *g = &m->dg;
                for (int jb = 0; jb < nw / g->n; jb++) {
                    const uint8_t *blk = data + ((uint64_t)row * (uint64_t)(m->cols / g->n) + (uint64_t)(c0 / g->n + jb)) *
                                                    (uint64_t)g->bytes;
                    wp_block_side_get((int)m->type, blk, side);
                    for (int s = 0; s < g->n / g->sub_n; s++) {
                        wr_scale sc = wr_sub_scale((int)m->type, side, s);
                        for (int i = 0; i < g->sub_n; i++) {
                            int wi = s * g->sub_n + i;
                            val[jb * g->n + wi] = wr_value(&sc, wp_block_code((int)m->type, blk, wi));
                        }
                    }
                }
            } else {
                for (int j = 0; j < nw; j++)
                    val[j] = float_at(m->type, data, (uint64_t)(row * m->cols + c0 + j));
            }
            for (int b = 0; b < batch; b++) {
                const float *xb = x + (uint64_t)b * (uint64_t)m->cols + (uint64_t)c0;
                float part = 0;
                for (int j = 0; j < nw; j++)
                    part += val[j] * xb[j];
                a[b] += part;
            }
        }
        for (int b = 0; b < batch; b++)
            y[(uint64_t)b * (uint64_t)m->rows + (uint64_t)row] = (float)a[b];
    }
    if (a != acc)
        free(a);
    if (fault("twin"))
        fault_y(y, (size_t)(batch * m->rows));
    return 0;
}

int wr_ref_gemv64(const wr_matrix *m, const uint8_t *data, const float *x, int batch, double *y, double *yabs)
{
    float *w = malloc((size_t)m->cols * sizeof *w + 1);
    if (!w)
        return -1;
    size_t row_bytes = m->kind == WR_Q ? (size_t)(m->cols / m->g.bi.n) * (size_t)m->g.bi.block_bytes : 0;
    for (int64_t row = 0; row < m->rows; row++) {
        if (m->kind == WR_Q)
            wp_dequantize_row((int)m->type, data + (size_t)row * row_bytes, w, m->cols);
        else
            for (int64_t c = 0; c < m->cols; c++)
                w[c] = float_at(m->type, data, (uint64_t)(row * m->cols + c));
        for (int b = 0; b < batch; b++) {
            const float *xb = x + (uint64_t)b * (uint64_t)m->cols;
            double s = 0, a = 0;
            for (int64_t c = 0; c < m->cols; c++) {
                s += (double)w[c] * (double)xb[c];
                a += fabs((double)w[c] * (double)xb[c]);
            }
            y[(uint64_t)b * (uint64_t)m->rows + (uint64_t)row] = s;
            if (yabs)
                yabs[(uint64_t)b * (uint64_t)m->rows + (uint64_t)row] = a;
        }
    }
    free(w);
    return 0;
}

double wr_relerr(const float *y, const double *ref, size_t n) { return wr_relerr_abs(y, ref, NULL, n, 0); }

int wr_relerr_overflow(float y, double ref, double yabs)
{
    return isfinite(ref) && !(yabs <= FLT_MAX) && !isfinite(y);   /* a float sum of such products may be Inf or NaN */
}

double wr_relerr_abs(const float *y, const double *ref, const double *yabs, size_t n, int64_t cols)
{
    double num = 0, den = 0;
    for (size_t i = 0; yabs && cols > 0 && i < n; i++)   /* the floor: the largest sum in float's range */
        if (yabs[i] <= FLT_MAX && yabs[i] / sqrt((double)cols) > den)
            den = yabs[i] / sqrt((double)cols);
    for (size_t i = 0; i < n; i++) {
        if (yabs && wr_relerr_overflow(y[i], ref[i], yabs[i]))
            continue;
        if (!isfinite(ref[i])) {   /* an Inf or NaN weight: y must be the same Inf, or a NaN */
            const int same = isnan(ref[i]) ? isnan(y[i]) : (double)y[i] == ref[i];
            if (!same)
                num = INFINITY;
            continue;
        }
        double e = fabs((double)y[i] - ref[i]), a = fabs(ref[i]);
        if (e > num || e != e)
            num = e != e ? INFINITY : e;
        if (a > den)
            den = a;
    }
    return den > 0 ? num / den : num;
}

void wr_make_x(float *x, size_t n, uint64_t seed, int bf16)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
    if (!s)
        s = 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        double u = (double)(s >> 11) / 9007199254740992.0;     /* [0, 1) */
        float v = (float)((0.25 + u) * ((s >> 3) & 1 ? -1 : 1));
        x[i] = bf16 ? wp_bf16_to_f32(wp_f32_to_bf16(v)) : v;
    }
}

void wr_cpu_gather(const wr_matrix *m, const float *y, int batch, float *y_all)
{
    for (int b = 0; b < batch; b++)
        for (int64_t r = 0; r < m->rows_all; r++)
            y_all[(size_t)b * (size_t)m->rows_all + (size_t)r] =
                y[(size_t)b * (size_t)m->rows + wp_rowmap_row(&m->rowmap, (uint64_t)r)];
}
