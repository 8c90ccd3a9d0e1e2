/* bundle.c - CODED record payloads and tensor restoration (see bundle.h). */
#include "bundle.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "codes.h"
#include "ggml_type.h"
#include "huffman.h"
#include "rowmap.h"
#include "zpack.h"

#include <xxhash.h>

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void say(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
}

int wp_attr_set_hash(wp_record *r, const char *key, const void *data, uint64_t len)
{
    char hex[17];
    snprintf(hex, sizeof hex, "%08x", (unsigned)XXH32(len ? data : "", (size_t)len, 0));
    return wp_attr_set(r, key, hex);
}

int wp_attr_check_hash(const wp_record *r, const char *key, const void *data, uint64_t len)
{
    char want[32], hex[17];
    if (!wp_attr_str(r, key, want, sizeof want))
        return 1;
    snprintf(hex, sizeof hex, "%08x", (unsigned)XXH32(len ? data : "", (size_t)len, 0));
    return strcmp(want, hex) ? -1 : 0;
}

/* Bytes before the lane words: code lengths, offsets, lane counts, padding. */
static uint64_t offsets_end(uint64_t n_tiles)
{
    uint64_t e = WP_CODED_TABLE_BYTES + 4 * (n_tiles + 1) + (uint64_t)WP_LANES * n_tiles;
    return (e + WP_CODED_HEAD_ALIGN - 1) / WP_CODED_HEAD_ALIGN * WP_CODED_HEAD_ALIGN;
}

int wp_coded_encode(wp_record *r, const uint8_t *sym, const wp_lanes_shape *shape,
                    const uint8_t lengths[256], int max_len, char *err, size_t errlen)
{
    uint64_t n = wp_lanes_ntiles(shape), nwords = 0;
    if (!wp_lanes_shape_ok(shape) || wp_huf_validate(lengths, 256, max_len)) {
        say(err, errlen, "bad shape or code lengths");
        return -1;
    }
    uint32_t *offsets = malloc((n + 1) * sizeof *offsets);
    uint8_t *lane_words = malloc(n ? WP_LANES * n : 1);
    if (!offsets || !lane_words) {
        say(err, errlen, "out of memory");
        free(offsets);
        free(lane_words);
        return -1;
    }
    int rc = wp_lanes_encode(sym, shape, lengths, NULL, 0, offsets, lane_words, &nwords);
    if (rc != WP_LANES_OK && rc != WP_LANES_ESPACE) {
        say(err, errlen, rc == WP_LANES_ENOCODE ? "a symbol has no code in the table" : "cannot encode lanes");
        free(offsets);
        free(lane_words);
        return -1;
    }
    uint64_t head = offsets_end(n), len = head + 4 * nwords;
    uint8_t *p = wp_record_alloc(r, len);
    if (!p) {
        say(err, errlen, "out of memory for %" PRIu64 " bytes", len);
        free(offsets);
        free(lane_words);
        return -1;
    }
    memset(p, 0, (size_t)head);
    for (int s = 0; s < 256; s++)
        p[s / 2] |= (uint8_t)((lengths[s] & 15) << (s % 2 ? 4 : 0));
    /* Words and offsets are stored little-endian: this code assumes a
     * little-endian host (x86-64, ARM64), as the GPU runner does. */
    uint32_t *words = (uint32_t *)(p + head);
    rc = wp_lanes_encode(sym, shape, lengths, words, nwords, offsets, lane_words, &nwords);
    memcpy(p + WP_CODED_TABLE_BYTES, offsets, 4 * (n + 1));
    memcpy(p + WP_CODED_TABLE_BYTES + 4 * (n + 1), lane_words, (size_t)(WP_LANES * n));
    free(offsets);
    free(lane_words);
    if (rc != WP_LANES_OK) {
        say(err, errlen, "cannot encode lanes");
        return -1;
    }
    r->kind = WP_REC_CODED;
    /* (their failures, out of memory, were dropped: a record without them returned 0) */
    if (wp_attr_set_i64(r, "row_sym", (int64_t)shape->row_sym) || wp_attr_set_i64(r, "tile_sym", shape->tile_sym) ||
        wp_attr_set_i64(r, "max_len", max_len) || wp_attr_set_i64(r, "n_tiles", (int64_t)n)) {
        say(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* Whether count attribute key of r, where it is given, is want (its shape's):
 * 0, or -1 with "record 'NAME': KEY VALUE but its shape has WANT[unit]" in err
 * (a value that is no count, -1 included, is not want). */
static int count_attr_is(const wp_record *r, const char *key, uint64_t want, const char *unit, char *err,
                         size_t errlen)
{
    int64_t v = 0;
    const int k = wp_attr_int(r, key, &v);
    if (k == 0 || (k == 1 && v >= 0 && (uint64_t)v == want))
        return 0;
    size_t vl = 0;
    const char *val = wp_attr_find(r, key, &vl);
    say(err, errlen, "record '%s': %s %.*s but its shape has %" PRIu64 "%s", r->name, key, (int)(vl > 24 ? 24 : vl),
        val, want, unit);
    return -1;
}

int wp_coded_view_get(const wp_record *r, wp_coded_view *v, char *err, size_t errlen)
{
    memset(v, 0, sizeof *v);
    int64_t row_sym = wp_attr_i64(r, "row_sym", -1), tile_sym = wp_attr_i64(r, "tile_sym", -1);
    int64_t max_len = wp_attr_i64(r, "max_len", -1), nelem = wp_record_nelem(r);
    if (r->kind != WP_REC_CODED || row_sym < 0 || tile_sym < 1 || tile_sym > 256 ||
        max_len < 1 || max_len > WP_HUF_MAX_LEN || r->n_dims < 1) {
        say(err, errlen, "record '%s': not a valid coded record (attributes)", r->name);
        return -1;
    }
    v->shape.rows = r->ne[0] ? (uint64_t)(nelem / r->ne[0]) : 0;
    v->shape.row_sym = (uint64_t)row_sym;
    v->shape.tile_sym = (uint32_t)tile_sym;
    v->max_len = (int)max_len;
    if (!wp_lanes_shape_ok(&v->shape)) {
        say(err, errlen, "record '%s': bad coded shape", r->name);
        return -1;
    }
    v->n_tiles = wp_lanes_ntiles(&v->shape);
    /* the attribute a hardware decoder may size its reads by (the offsets' and lane counts'
       spans) must be the shape's count: verify passed one that disagreed (a breaker's find) */
    if (count_attr_is(r, "n_tiles", v->n_tiles, " tiles", err, errlen))
        return -1;
    /* (n_tiles bounded first so that the head size cannot wrap around) */
    uint64_t head = v->n_tiles < r->payload_len / (4 + WP_LANES) ? offsets_end(v->n_tiles) : UINT64_MAX;
    if (r->payload_len < head || (r->payload_len - head) % 4) {
        say(err, errlen, "record '%s': coded payload of %" PRIu64 " bytes is too short", r->name, r->payload_len);
        return -1;
    }
    for (int s = 0; s < 256; s++)
        v->lengths[s] = (uint8_t)((r->payload[s / 2] >> (s % 2 ? 4 : 0)) & 15);
    if (wp_huf_validate(v->lengths, 256, v->max_len)) {
        say(err, errlen, "record '%s': invalid code lengths", r->name);
        return -1;
    }
    v->offsets = (const uint32_t *)(r->payload + WP_CODED_TABLE_BYTES);
    v->lane_words = r->payload + WP_CODED_TABLE_BYTES + 4 * (v->n_tiles + 1);
    v->words = (const uint32_t *)(r->payload + head);
    v->n_words = (r->payload_len - head) / 4;
    v->table_bytes = head;
    for (uint64_t i = WP_CODED_TABLE_BYTES + 4 * (v->n_tiles + 1) + WP_LANES * v->n_tiles; i < head; i++)
        if (r->payload[i]) {
            say(err, errlen, "record '%s': nonzero padding after the offsets", r->name);
            return -1;
        }
    if (rd32((const uint8_t *)v->offsets) != 0 ||
        (uint64_t)rd32((const uint8_t *)(v->offsets + v->n_tiles)) != v->n_words) {
        say(err, errlen, "record '%s': tile offsets do not cover the payload", r->name);
        return -1;
    }
    /* every code is at least a bit long: fewer words are corrupt, and the
       readers that allocate the symbols (or the tensor) from the shape
       would allocate up to 455 bytes per payload byte for nothing */
    uint64_t n_sym = v->shape.rows * v->shape.row_sym;
    if (v->n_words < n_sym / 32 + (n_sym % 32 != 0)) {
        say(err, errlen, "record '%s': %" PRIu64 " lane words cannot hold %" PRIu64 " symbols", r->name, v->n_words,
            n_sym);
        return -1;
    }
    return 0;
}

int wp_coded_decode(const wp_coded_view *v, int reference, uint8_t *sym, char *err, size_t errlen)
{
    int rc = wp_lanes_decode(v->words, v->n_words, v->offsets, v->lane_words, &v->shape, v->lengths,
                             v->max_len, reference, sym);
    if (rc != WP_LANES_OK) {
        say(err, errlen, "%s decoder: %s", reference ? "reference" : "fast",
            rc == WP_LANES_ECORRUPT ? "corrupt lanes" : "bad coded matrix");
        return -1;
    }
    return 0;
}

/* ---- exponent-coded floats ------------------------------------------------ */

static int set_shape_name(wp_record *r, unsigned kind, const wp_record *t)
{
    r->kind = (uint16_t)kind;
    r->type = t->type;
    r->n_dims = t->n_dims;
    memcpy(r->ne, t->ne, sizeof t->ne);
    free(r->attrs);
    r->attrs = NULL;
    return wp_record_set_name(r, t->name);
}

uint32_t wp_bf16_tile_sym(const struct wp_bf16_split *s)
{
    return s->palette_n ? 128 : 256;
}

int wp_q_records(const wp_codes_geom *g, const wp_record *t, wp_record *side, wp_record *sym)
{
    if (t->payload_len != g->block_len || set_shape_name(side, WP_REC_SIDE, t) ||
        set_shape_name(sym, WP_REC_SYMBOLS, t) || !wp_record_alloc(side, g->side_len) ||
        !wp_record_alloc(sym, g->n_sym))
        return -1;
    wp_codes_split(g, t->payload, sym->payload, side->payload);
    int64_t off = wp_attr_i64(t, "offset", -1);
    if (off >= 0)
        wp_attr_set_i64(sym, "offset", off);
    wp_attr_set(sym, "codec", "q");
    wp_attr_set_hash(sym, "xxh32", t->payload, t->payload_len);
    wp_attr_set_i64(sym, "row_sym", (int64_t)g->row_sym);
    wp_attr_set_i64(sym, "tile_sym", g->tile_sym);
    wp_attr_set_i64(sym, "n_weights", wp_record_nelem(t));
    return sym->attrs_lost ? -1 : 0;
}

/* ---- code tables: HIST and TABLE ------------------------------------------ */

/* set r up as a 256-entry record of kind `kind` for the matrix of t: its name and type */
static int head_256(wp_record *r, unsigned kind, const wp_record *t, uint64_t bytes)
{
    r->kind = (uint16_t)kind;
    r->type = t->type;
    r->n_dims = 1;
    for (int d = 0; d < WP_MAX_DIMS; d++)
        r->ne[d] = 1;
    r->ne[0] = 256;
    free(r->attrs);
    r->attrs = NULL;
    return wp_record_set_name(r, t->name) || !wp_record_alloc(r, bytes) ? -1 : 0;
}

int wp_hist_record(wp_record *h, const wp_record *t, const uint64_t hist[256], uint64_t n_sym, int64_t n_weights)
{
    if (head_256(h, WP_REC_HIST, t, WP_HIST_BYTES))
        return -1;
    for (int s = 0; s < 256; s++)
        for (int b = 0; b < 8; b++)
            h->payload[8 * s + b] = (uint8_t)(hist[s] >> 8 * b);
    wp_attr_set_i64(h, "n_symbols", (int64_t)n_sym);
    wp_attr_set_i64(h, "n_weights", n_weights);
    wp_attr_set_f64(h, "entropy", wp_huf_entropy(hist, 256));
    return h->attrs_lost ? -1 : 0;
}

int wp_hist_counts(const wp_record *h, uint64_t hist[256])
{
    if (h->payload_len != WP_HIST_BYTES)
        return -1;
    for (int s = 0; s < 256; s++) {
        uint64_t v = 0;
        for (int b = 7; b >= 0; b--)
            v = v << 8 | h->payload[8 * s + b];
        hist[s] = v;
    }
    return 0;
}

int wp_table_record(wp_record *t, const wp_record *h, const uint8_t lengths[256], int max_len, uint64_t coded_bits)
{
    if (head_256(t, WP_REC_TABLE, h, WP_TABLE_BYTES))
        return -1;
    memcpy(t->payload, lengths, WP_TABLE_BYTES);
    wp_attr_set_i64(t, "max_len", max_len);
    wp_attr_set_i64(t, "coded_bits", (int64_t)coded_bits);
    return t->attrs_lost ? -1 : 0;
}

int wp_bf16_records(const struct wp_bf16_split *s, const wp_record *t, wp_record *raw, wp_record *sym)
{
    struct wp_bf16_stats st;
    uint64_t len = WP_BF16_PALETTE_MAX + s->vmap_bytes + s->vbytes_len + s->raw_bytes;
    if (set_shape_name(raw, WP_REC_RAW, t) || set_shape_name(sym, WP_REC_SYMBOLS, t) ||
        !wp_record_alloc(raw, len) || !wp_record_alloc(sym, s->n_sym))
        return -1;
    uint8_t *p = raw->payload;
    memcpy(p, s->palette, WP_BF16_PALETTE_MAX);
    p += WP_BF16_PALETTE_MAX;
    if (s->vmap_bytes)
        memcpy(p, s->vmap, s->vmap_bytes);
    p += s->vmap_bytes;
    if (s->vbytes_len)
        memcpy(p, s->vbytes, s->vbytes_len);
    p += s->vbytes_len;
    if (s->raw_bytes)
        memcpy(p, s->raw, s->raw_bytes);
    if (s->n_sym)
        memcpy(sym->payload, s->sym, s->n_sym);
    wp_attr_set_i64(raw, "palette_n", s->palette_n);
    wp_attr_set_i64(raw, "n_palette", s->n_palette);
    wp_attr_set_i64(raw, "group", s->group);
    wp_attr_set_i64(raw, "n_verbatim", s->n_verbatim);
    wp_attr_set_i64(raw, "vmap_bytes", (int64_t)s->vmap_bytes);
    wp_attr_set_i64(raw, "vbytes_len", (int64_t)s->vbytes_len);
    int64_t off = wp_attr_i64(t, "offset", -1);
    if (off >= 0)
        wp_attr_set_i64(sym, "offset", off);
    wp_attr_set(sym, "codec", "exp");
    /* the original bytes' hash, when t carries them (a caller may pass only
     * the name and shape) */
    int eb, rb, es = wp_bf16_fields(t->type, &eb, &rb);
    if (es > 0 && t->payload && t->payload_len == (uint64_t)(s->n_rows * s->n_cols) * (uint64_t)es)
        wp_attr_set_hash(sym, "xxh32", t->payload, t->payload_len);
    wp_attr_set_i64(sym, "row_sym", s->sym_per_row);
    wp_attr_set_i64(sym, "tile_sym", wp_bf16_tile_sym(s));
    wp_attr_set_i64(sym, "n_weights", s->n_rows * s->n_cols);
    if (wp_bf16_stats(s, &st) == 0) {
        wp_attr_set_f64(sym, "h_exp", st.h_exp);
        wp_attr_set_f64(sym, "limit", st.limit);
        wp_attr_set_f64(sym, "verbatim_frac", st.verbatim_frac);
    }
    return 0;
}

int wp_bf16_from_records(const wp_record *raw, uint32_t type, int64_t rows, int64_t cols, struct wp_bf16_split *s)
{
    int exp_bits, raw_bits;
    if (wp_bf16_fields(type, &exp_bits, &raw_bits) <= 0 || rows < 0 || cols < 0 ||
        (cols && rows > (INT64_C(1) << 40) / cols))
        return -1;
    s->type = type;
    s->n_rows = rows;
    s->n_cols = cols;
    s->exp_bits = exp_bits;
    s->raw_bits = raw_bits;
    int64_t pn = wp_attr_i64(raw, "palette_n", -1), np = wp_attr_i64(raw, "n_palette", -1);
    int64_t group = wp_attr_i64(raw, "group", -1), nv = wp_attr_i64(raw, "n_verbatim", -1);
    int64_t vmap_bytes = wp_attr_i64(raw, "vmap_bytes", -1), vbytes_len = wp_attr_i64(raw, "vbytes_len", -1);
    /* each part bounded by the payload (at most 2^40 bytes) before any sum */
    if (pn < 0 || pn > WP_BF16_PALETTE_MAX || np < 0 || np > pn || group < 0 || group > (INT64_C(1) << 30) ||
        (pn && group < 1) || nv < 0 || vmap_bytes < 0 || vbytes_len < 0 || raw->payload_len < WP_BF16_PALETTE_MAX ||
        (uint64_t)vmap_bytes > raw->payload_len || (uint64_t)vbytes_len > raw->payload_len ||
        WP_BF16_PALETTE_MAX + (uint64_t)vmap_bytes + (uint64_t)vbytes_len > raw->payload_len)
        return -1;
    s->palette_n = (int)pn;
    s->n_palette = (int)np;
    s->group = group;
    s->n_verbatim = nv;
    s->sym_per_row = pn ? (cols + 1) / 2 : cols;
    s->n_sym = (size_t)(rows * s->sym_per_row);
    s->groups_per_row = pn ? (cols + group - 1) / group : 0;
    if (nv > rows * s->groups_per_row)
        return -1;
    memcpy(s->palette, raw->payload, WP_BF16_PALETTE_MAX);
    s->vmap = raw->payload + WP_BF16_PALETTE_MAX;
    s->vmap_bytes = (size_t)vmap_bytes;
    s->vbytes = s->vmap + vmap_bytes;
    s->vbytes_len = (size_t)vbytes_len;
    s->raw = s->vbytes + vbytes_len;
    s->raw_bytes = (size_t)(raw->payload_len - WP_BF16_PALETTE_MAX - (uint64_t)vmap_bytes - (uint64_t)vbytes_len);
    return 0;
}

/* ---- compressed and shared records --------------------------------------- */

static void put32le(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i); }
static void put64le(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> 8 * i); }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static int copy_head(const wp_record *r, unsigned kind, wp_record *out)
{
    out->kind = (uint16_t)kind;
    out->type = r->type;
    out->n_dims = r->n_dims;
    memcpy(out->ne, r->ne, sizeof r->ne);
    free(out->attrs);
    out->attrs = strdup(r->attrs ? r->attrs : "");
    out->attrs_lost = r->attrs_lost;
    return !out->attrs || wp_record_set_name(out, r->name ? r->name : "") ? -1 : 0;
}

int wp_z_wrap(const wp_record *r, unsigned group, int level, wp_record *z)
{
    size_t zl;
    uint8_t *p = wp_zpack(r->payload_len ? r->payload : (const uint8_t *)"", (size_t)r->payload_len,
                          group ? group : 1, level, &zl);
    if (!p || copy_head(r, WP_REC_Z, z) || !wp_record_alloc(z, zl)) {
        free(p);
        return -1;
    }
    memcpy(z->payload, p, zl);
    free(p);
    /* (their failures were dropped: a record that cannot be unwrapped returned 0) */
    return wp_attr_set_i64(z, "z_of", r->kind) || wp_attr_set_i64(z, "z_len", (int64_t)r->payload_len) ||
                   wp_attr_set_i64(z, "z_group", group ? group : 1)
               ? -1
               : 0;
}

int wp_kvpack_add(uint8_t **buf, size_t *len, const wp_record *kv)
{
    size_t nl = strlen(kv->name), need = *len + 4 + nl + 4 + 8 + (size_t)kv->payload_len;
    uint8_t *p = realloc(*buf, need);
    if (!p)
        return -1;
    uint8_t *e = p + *len;
    put32le(e, (uint32_t)nl);
    memcpy(e + 4, kv->name, nl);
    put32le(e + 4 + nl, kv->type);
    put64le(e + 8 + nl, kv->payload_len);
    if (kv->payload_len)
        memcpy(e + 16 + nl, kv->payload, (size_t)kv->payload_len);
    *buf = p;
    *len = need;
    return 0;
}

int wp_kvpack_finish(const uint8_t *buf, size_t len, uint64_t n_kv, int level, wp_record *out)
{
    size_t zl;
    uint8_t *p = wp_zpack(len ? buf : (const uint8_t *)"", len, 1, level, &zl);
    if (!p)
        return -1;
    out->kind = WP_REC_KVPACK;
    out->type = 0;
    out->n_dims = 0;
    for (int i = 0; i < WP_MAX_DIMS; i++)
        out->ne[i] = 1;
    free(out->attrs);
    out->attrs = NULL;
    if (wp_record_set_name(out, "") || !wp_record_alloc(out, zl)) {
        free(p);
        return -1;
    }
    memcpy(out->payload, p, zl);
    free(p);
    wp_attr_set_i64(out, "n_kv", (int64_t)n_kv);
    wp_attr_set_i64(out, "z_len", (int64_t)len);
    return 0;
}

int wp_ref_make(const wp_record *t, const char *same_as, wp_record *out)
{
    if (copy_head(t, WP_REC_REF, out) || !wp_record_alloc(out, 0))
        return -1;
    free(out->attrs);
    out->attrs = NULL;
    int64_t off = wp_attr_i64(t, "offset", -1);
    if (off >= 0 && wp_attr_set_i64(out, "offset", off))
        return -1;   /* (dropped: a reference without its offset) */
    char h[32];
    if (wp_attr_str(t, "xxh32", h, sizeof h) && wp_attr_set(out, "xxh32", h))
        return -1;
    return wp_attr_set(out, "same_as", same_as);
}

/* ---- restoring tensors -------------------------------------------------- */

struct wp_restore {
    wp_record held;     /* SIDE or RAW waiting for its symbols */
    int       holding;
    wp_record out;      /* the restored tensor */
    uint8_t  *sym;
    uint64_t  sym_cap;
    wp_record *queue;   /* records a KVPACK expanded to */
    uint64_t  nqueue, next;
    FILE     *src;      /* the bundle, for REF records */
    char      src_path[512];
    int       src_copy;   /* src is a zstd frame's content decompressed to a file */
    wp_index  ix;
    int       have_ix;
    uint64_t  side_len;
    wp_record rowmap;   /* a row map waiting for its tensor */
    int       have_rowmap;
    int       ignore_rowmaps;   /* resolving a REF: it names the distinct rows */
    wp_record full;     /* a tensor expanded through its row map */
    char      err[512];
};

wp_restore *wp_restore_new(void)
{
    wp_restore *rs = calloc(1, sizeof *rs);
    if (rs) {
        wp_record_init(&rs->held);
        wp_record_init(&rs->out);
        wp_record_init(&rs->rowmap);
        wp_record_init(&rs->full);
    }
    return rs;
}

static void drop_queue(wp_restore *rs)
{
    for (uint64_t i = 0; i < rs->nqueue; i++)
        wp_record_free(&rs->queue[i]);
    free(rs->queue);
    rs->queue = NULL;
    rs->nqueue = rs->next = 0;
}

void wp_restore_source(wp_restore *rs, FILE *f, const char *path)
{
    rs->src = f;
    rs->src_copy = 0;
    snprintf(rs->src_path, sizeof rs->src_path, "%s", path);
}

void wp_restore_source_decompressed(wp_restore *rs, FILE *f, const char *path)
{
    wp_restore_source(rs, f, path);
    rs->src_copy = 1;
}

wp_record *wp_restore_more(wp_restore *rs)
{
    return rs->next < rs->nqueue ? &rs->queue[rs->next++] : NULL;
}

void wp_restore_free(wp_restore *rs)
{
    if (!rs)
        return;
    drop_queue(rs);
    if (rs->have_ix)
        wp_index_free(&rs->ix);
    wp_record_free(&rs->rowmap);
    wp_record_free(&rs->full);
    wp_record_free(&rs->held);
    wp_record_free(&rs->out);
    free(rs->sym);
    free(rs);
}

int wp_restore_pending(const wp_restore *rs) { return rs->holding || rs->have_rowmap; }
uint64_t wp_restore_side_len(const wp_restore *rs) { return rs->side_len; }
const char *wp_restore_error(const wp_restore *rs) { return rs->err; }

static int rfail(wp_restore *rs, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rs->err, sizeof rs->err, fmt, ap);
    va_end(ap);
    return -1;
}

static void swap_records(wp_record *a, wp_record *b)
{
    wp_record t = *a;
    *a = *b;
    *b = t;
}

/* Symbols of a SYMBOLS or CODED record: a pointer to n bytes, rows of row_sym
 * symbols in tiles tile_sym wide (its type's, as histogram and bf16split make
 * them: the attributes that said otherwise restored, and the runtime refused
 * them, a breaker's find). */
static const uint8_t *get_symbols(wp_restore *rs, const wp_record *r, uint64_t n, uint64_t row_sym,
                                  uint32_t tile_sym, int reference)
{
    char err[256];
    if (count_attr_is(r, "n_weights", (uint64_t)wp_record_nelem(r), "", err, sizeof err)) {
        rfail(rs, "%s", err);
        return NULL;
    }
    if (r->kind == WP_REC_SYMBOLS) {
        if (r->payload_len != n) {
            rfail(rs, "record '%s': %" PRIu64 " symbols, expected %" PRIu64, r->name, r->payload_len, n);
            return NULL;
        }
        if (wp_attr_i64(r, "row_sym", -1) != (int64_t)row_sym || wp_attr_i64(r, "tile_sym", -1) != (int64_t)tile_sym) {
            rfail(rs, "record '%s': row_sym or tile_sym is not its type's (%" PRIu64 ", %u)", r->name, row_sym,
                  tile_sym);
            return NULL;
        }
        return r->payload;
    }
    wp_coded_view v;
    if (wp_coded_view_get(r, &v, err, sizeof err)) {
        rfail(rs, "%s", err);
        return NULL;
    }
    if (v.shape.rows * v.shape.row_sym != n || v.shape.row_sym != row_sym) {
        rfail(rs, "record '%s': coded shape does not match the tensor", r->name);
        return NULL;
    }
    if (v.shape.tile_sym != tile_sym) {
        rfail(rs, "record '%s': tiles %u symbols wide, its type's are %u", r->name, v.shape.tile_sym, tile_sym);
        return NULL;
    }
    if (n > rs->sym_cap) {
        uint8_t *p = realloc(rs->sym, (size_t)n);
        if (!p) {
            rfail(rs, "out of memory");
            return NULL;
        }
        rs->sym = p;
        rs->sym_cap = n;
    }
    if (wp_coded_decode(&v, reference, rs->sym, err, sizeof err)) {
        rfail(rs, "record '%s': %s", r->name, err);
        return NULL;
    }
    return rs->sym;
}

/* Quantized tensor from SIDE (held) + symbols. */
static int restore_q(wp_restore *rs, const wp_record *r, int reference)
{
    wp_codes_geom g;
    uint64_t rows = r->ne[0] ? (uint64_t)(wp_record_nelem(r) / r->ne[0]) : 0;
    if (wp_codes_geom_get((int)r->type, r->ne[0], rows, &g))
        return rfail(rs, "record '%s': type %s has no code view", r->name,
                     wp_ggml_type_name(r->type) ? wp_ggml_type_name(r->type) : "?");
    if (rs->held.payload_len != g.side_len)
        return rfail(rs, "record '%s': %" PRIu64 " bytes of side data, expected %" PRIu64, r->name,
                     rs->held.payload_len, g.side_len);
    const uint8_t *sym = get_symbols(rs, r, g.n_sym, g.row_sym, g.tile_sym, reference);
    if (!sym)
        return -1;
    if (!wp_record_alloc(&rs->out, g.block_len))
        return rfail(rs, "out of memory");
    if (wp_codes_join(&g, sym, rs->held.payload, rs->out.payload))
        return rfail(rs, "record '%s': symbol outside the %s alphabet", r->name, wp_ggml_type_name(r->type));
    return 0;
}

/* Floating-point tensor from RAW (held) + exponent symbols. */
static int restore_exp(wp_restore *rs, const wp_record *r, int reference)
{
    struct wp_bf16_split s;
    int exp_bits, raw_bits;
    memset(&s, 0, sizeof s);
    int esize = wp_bf16_fields(r->type, &exp_bits, &raw_bits);
    if (esize <= 0)
        return rfail(rs, "record '%s': exponent coding of a non-float type", r->name);
    if (wp_bf16_from_records(&rs->held, r->type, r->ne[0] ? wp_record_nelem(r) / r->ne[0] : 0, r->ne[0], &s))
        return rfail(rs, "record '%s': bad raw record attributes", r->name);
    const uint8_t *sym = get_symbols(rs, r, s.n_sym, (uint64_t)s.sym_per_row, wp_bf16_tile_sym(&s), reference);
    if (!sym)
        return -1;
    s.sym = (uint8_t *)sym;
    uint64_t bytes = (uint64_t)wp_record_nelem(r) * (uint64_t)esize;
    if (!wp_record_alloc(&rs->out, bytes))
        return rfail(rs, "out of memory");
    int rc = wp_bf16_join(&s, rs->out.payload);
    if (rc)
        return rfail(rs, "record '%s': %s", r->name, wp_bf16_strerror(rc));
    return 0;
}

int wp_record_kind_of(const wp_record *r)
{
    return r->kind == WP_REC_Z ? (int)wp_attr_i64(r, "z_of", -1) : (int)r->kind;
}

int64_t wp_weight_tally_add(wp_weight_tally *t, const wp_record *r)
{
    int of = wp_record_kind_of(r);
    int64_t n = 0;
    if (of == WP_REC_ROWMAP) {
        n = wp_record_nelem(r);
        snprintf(t->rowmap_of, sizeof t->rowmap_of, "%s", r->name ? r->name : "");
    } else if ((of == WP_REC_TENSOR || of == WP_REC_CODED || of == WP_REC_SYMBOLS || of == WP_REC_REF) &&
               strcmp(t->rowmap_of, r->name ? r->name : "")) {
        n = wp_record_nelem(r);
    }
    t->weights += n;
    return n;
}

/* Unwrap a Z record in place (it becomes the record it wraps). */
static int unwrap_z(wp_restore *rs, wp_record *in)
{
    int64_t of = wp_attr_i64(in, "z_of", -1), len = wp_attr_i64(in, "z_len", -1);
    /* absent: 1; present, it must be a count (z_group=x was read as 1 and unbundle wrote wrong
       bytes, exit 0: a breaker's find) */
    int64_t g = wp_attr_find(in, "z_group", NULL) ? wp_attr_i64(in, "z_group", 0) : 1;
    /* only a record with a payload is wrapped: never gguf, ref, zstd or end (a gguf record
     * made of a wrapped one rewrote the GGUF silently), and a kind the stream format knows as
     * it stands (the u16 kind made 65537 a gguf record and 131071 an end record, and a kind
     * of no name was passed on, where a plain record of it is refused) */
    if (of <= 0 || of > 0xffff || !wp_rec_kind_known((unsigned)of) || of == WP_REC_GGUF || of == WP_REC_REF ||
        of == WP_REC_Z || of == WP_REC_END || len < 0 || g < 1 || g > 4096)
        return rfail(rs, "record '%s': bad zstd record attributes", in->name);
    if (wp_zcontent_size(in->payload, (size_t)in->payload_len) != (uint64_t)len)
        return rfail(rs, "record '%s': corrupt zstd payload", in->name);
    uint8_t *p = malloc(len ? (size_t)len : 1);
    if (!p)
        return rfail(rs, "record '%s': out of memory", in->name);
    if (wp_zunpack(in->payload, (size_t)in->payload_len, (unsigned)g, p, (size_t)len)) {
        free(p);
        return rfail(rs, "record '%s': corrupt zstd payload", in->name);
    }
    if (!in->borrowed)
        free(in->payload);
    in->payload = p;
    in->borrowed = 0;
    in->payload_len = in->payload_cap = (uint64_t)len;
    in->kind = (uint16_t)of;
    wp_attr_del(in, "z_of");
    wp_attr_del(in, "z_len");
    wp_attr_del(in, "z_group");
    /* what a reader refuses of a plain tensor record, refused of a restored one (a zstd'd
       tensor of type 99 or of no name came out of unbundle --stream, exit 0: a reviewer's find) */
    char tb[48];
    const char *tp = wp_tensor_head_problem(in, tb, sizeof tb);
    if (tp && in->name && in->name[0])
        return rfail(rs, "record '%s': %s", in->name, tp);
    if (tp)
        return rfail(rs, "an unnamed zstd record: %s", tp);
    /* and its payload: a zstd'd Q4_K of 64 columns came out of unbundle --stream, and ran as "a
       type wprun has no kernel for", exit 0 (a breaker's find) */
    char pb[160];
    if ((tp = wp_tensor_payload_problem(in, pb, sizeof pb)))
        return rfail(rs, "record '%s': %s", in->name, tp);
    return 0;
}

/* Expand a KVPACK into the queue. */
static int expand_kvpack(wp_restore *rs, const wp_record *in)
{
    int64_t n = wp_attr_i64(in, "n_kv", -1), len = wp_attr_i64(in, "z_len", -1);
    if (n < 0 || len < 0 || (uint64_t)n > (uint64_t)len / 16 + 1 ||
        wp_zcontent_size(in->payload, (size_t)in->payload_len) != (uint64_t)len)
        return rfail(rs, "the kvpack record: bad attributes or corrupt zstd payload");
    uint8_t *p = malloc(len ? (size_t)len : 1);
    if (!p)
        return rfail(rs, "the kvpack record: out of memory");
    if (wp_zunpack(in->payload, (size_t)in->payload_len, 1, p, (size_t)len)) {
        free(p);
        return rfail(rs, "the kvpack record: corrupt zstd payload");
    }
    drop_queue(rs);
    rs->queue = calloc(n ? (size_t)n : 1, sizeof *rs->queue);
    if (!rs->queue) {
        free(p);
        return rfail(rs, "the kvpack record: out of memory");
    }
    uint64_t off = 0;
    for (int64_t i = 0; i < n; i++) {
        wp_record *k = &rs->queue[i];
        wp_record_init(k);
        rs->nqueue = (uint64_t)i + 1;
        if ((uint64_t)len - off < 16 || rd32(p + off) > (uint64_t)len - off - 16)
            goto bad;
        uint32_t nl = rd32(p + off);
        uint64_t vl = rd64(p + off + 8 + nl);
        if (vl > (uint64_t)len - off - 16 - nl)
            goto bad;
        char *name = strndup((const char *)p + off + 4, nl);
        if (!name || strlen(name) != nl || wp_record_set_name(k, name) || !wp_record_alloc(k, vl)) {
            free(name);
            goto bad;
        }
        free(name);
        k->kind = WP_REC_KV;
        k->type = rd32(p + off + 4 + nl);
        if (vl)
            memcpy(k->payload, p + off + 16 + nl, (size_t)vl);
        k->attrs = calloc(1, 1);
        off += 16 + nl + vl;
    }
    free(p);
    if (off != (uint64_t)len)
        return rfail(rs, "the kvpack record: %" PRIu64 " trailing bytes", (uint64_t)len - off);
    return 0;
bad:
    free(p);
    return rfail(rs, "the kvpack record: corrupt contents");
}

/* A message without the leading "PATH: " (the caller names the file). */
static const char *strip_path(const char *msg, const char *path)
{
    size_t n = strlen(path);
    return !strncmp(msg, path, n) && msg[n] == ':' && msg[n + 1] == ' ' ? msg + n + 2 : msg;
}

/* Resolve a REF: restore the tensor it names, written before it (in->offset:
 * where the ref's record starts), from the source bundle. */
static int resolve_ref(wp_restore *rs, const wp_record *in)
{
    char same[WP_MAX_NAME + 1], err[512];
    if (!wp_attr_str(in, "same_as", same, sizeof same))
        return rfail(rs, "record '%s': reference without same_as", in->name);
    if (!rs->src)
        return rfail(rs, "record '%s': a shared tensor needs the bundle as a file, not a pipe", in->name);
    if (!rs->have_ix) {
        if ((rs->src_copy ? wp_index_read_decompressed : wp_index_read)(rs->src, rs->src_path, &rs->ix, err,
                                                                         sizeof err))
            return rfail(rs, "%s", strip_path(err, rs->src_path));
        rs->have_ix = 1;
    }
    wp_restore *sub = wp_restore_new();
    wp_record r, *t = NULL;
    if (sub)
        sub->ignore_rowmaps = 1;
    int found = 0;
    wp_record_init(&r);
    for (uint64_t i = 0; sub && i < rs->ix.count && !found; i++) {
        /* an earlier tensor only, as wpack-bundle(5) says: one written after the ref
         * restored (exit 0) whatever bytes it held */
        if (strcmp(rs->ix.e[i].name, same) || rs->ix.e[i].kind == WP_REC_REF || rs->ix.e[i].offset >= in->offset)
            continue;
        if ((rs->src_copy ? wp_record_read_at_decompressed : wp_record_read_at)(rs->src, rs->src_path,
                                                                                 rs->ix.e[i].offset, &r, err,
                                                                                 sizeof err)) {
            rfail(rs, "%s", strip_path(err, rs->src_path));
            break;
        }
        int k = wp_restore_put(sub, &r, 0, &t);
        if (k < 0) {
            rfail(rs, "%s", wp_restore_error(sub));
            break;
        }
        if (k == 1 && t->kind == WP_REC_TENSOR)
            found = 1;
    }
    int rc = -1;
    if (found && t->type == in->type && t->n_dims == in->n_dims && !memcmp(t->ne, in->ne, sizeof in->ne)) {
        if (copy_head(in, WP_REC_TENSOR, &rs->out) || !wp_record_alloc(&rs->out, t->payload_len)) {
            rfail(rs, "out of memory");
        } else {
            memcpy(rs->out.payload, t->payload, (size_t)t->payload_len);
            wp_attr_del(&rs->out, "same_as");
            /* (a ref of a plain tensor has none: its tensor is checked as it is restored) */
            if (wp_attr_check_hash(in, "xxh32", t->payload, t->payload_len) < 0)
                rfail(rs, "record '%s': the shared tensor does not match its recorded hash", in->name);
            else
                rc = 0;
        }
    } else if (!rs->err[0] || found) {
        rfail(rs, "record '%s': the tensor it shares, '%s', is missing or differs in shape", in->name, same);
    }
    wp_record_free(&r);
    wp_restore_free(sub);
    return rc;
}

int wp_record_unwrap(wp_record *r, char *err, size_t errlen)
{
    if (r->kind != WP_REC_Z)
        return 0;
    wp_restore *rs = wp_restore_new();
    if (!rs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const int rc = unwrap_z(rs, r);
    if (rc)
        snprintf(err, errlen, "%s", wp_restore_error(rs));
    wp_restore_free(rs);
    return rc ? -1 : 0;
}

static int restore_put(wp_restore *rs, wp_record *in, int reference, wp_record **out);

const char *wp_codec_problem(const char *codec, unsigned aux_kind, char *buf, size_t n)
{
    const int q = !strcmp(codec, "q"), exp = !strcmp(codec, "exp");
    const unsigned want = q ? WP_REC_SIDE : WP_REC_RAW;
    if ((q || exp) && aux_kind == want)
        return NULL;
    if (!codec[0])
        snprintf(buf, n, "no codec attribute");
    else if (!q && !exp)
        snprintf(buf, n, "unknown codec '%.40s'", codec);
    else
        snprintf(buf, n, "codec '%s' needs %s data before it, not %s data", codec, wp_rec_kind_name(want),
                 wp_rec_kind_name(aux_kind));
    return buf;
}

int wp_restore_put(wp_restore *rs, wp_record *in, int reference, wp_record **out)
{
    if (in->kind == WP_REC_Z && unwrap_z(rs, in))
        return -1;
    if (in->kind == WP_REC_ROWMAP) {
        if (rs->ignore_rowmaps)
            return 0;
        if (rs->have_rowmap || rs->holding)
            return rfail(rs, "record '%s': a row map out of place", in->name);
        swap_records(&rs->rowmap, in);
        rs->have_rowmap = 1;
        return 0;
    }
    int k = restore_put(rs, in, reference, out);
    if (k == 1 && rs->have_rowmap && (*out)->kind == WP_REC_TENSOR) {
        char err[256];
        if (strcmp((*out)->name, rs->rowmap.name))
            return rfail(rs, "record '%s': row map without its tensor", rs->rowmap.name);
        if (wp_rowmap_expand(&rs->rowmap, *out, &rs->full, err, sizeof err))
            return rfail(rs, "%s", err);
        int h = wp_attr_check_hash(&rs->rowmap, "xxh32", rs->full.payload, rs->full.payload_len);
        if (h)
            return rfail(rs, h > 0 ? "record '%s': row map without the xxh32 of its tensor" :
                                     "record '%s': the expanded tensor does not match its recorded hash", rs->rowmap.name);
        rs->have_rowmap = 0;
        *out = &rs->full;
    }
    char st[8];
    if (k == 1 && (*out)->kind == WP_REC_TENSOR && wp_attr_str(*out, "stored", st, sizeof st) && !strcmp(st, "fixed"))
        wp_attr_del(*out, "stored");   /* laneinterleave's mark, not the input's */
    return k;
}

static int restore_put(wp_restore *rs, wp_record *in, int reference, wp_record **out)
{
    char codec[16] = "";
    rs->err[0] = 0;
    drop_queue(rs);
    rs->side_len = 0;
    if (in->kind == WP_REC_Z && unwrap_z(rs, in))
        return -1;
    if (in->kind == WP_REC_KVPACK) {
        if (rs->holding)
            return rfail(rs, "record '%s': %s data without its symbols", rs->held.name,
                         wp_rec_kind_name(rs->held.kind));
        if (expand_kvpack(rs, in))
            return -1;
        *out = wp_restore_more(rs);
        return *out ? 1 : 0;
    }
    if (in->kind == WP_REC_REF) {
        if (rs->holding)
            return rfail(rs, "record '%s': %s data without its symbols", rs->held.name,
                         wp_rec_kind_name(rs->held.kind));
        if (resolve_ref(rs, in))
            return -1;
        *out = &rs->out;
        return 1;
    }
    switch (in->kind) {
    case WP_REC_HIST:
    case WP_REC_TABLE: {   /* said "raw data without its symbols" of histogram's output */
        char why[WP_MAX_NAME + 200];
        wp_rec_not_bundle(in->kind, in->name, why, sizeof why);
        return rfail(rs, "%s", why);
    }
    case WP_REC_SIDE:
    case WP_REC_RAW:
        if (rs->holding)
            return rfail(rs, "record '%s': %s data without its symbols", rs->held.name,
                         wp_rec_kind_name(rs->held.kind));
        swap_records(&rs->held, in);
        rs->holding = 1;
        return 0;
    case WP_REC_SYMBOLS:
    case WP_REC_CODED:
        if (!rs->holding || strcmp(rs->held.name, in->name))
            return rfail(rs, "record '%s': symbols without their side or raw data", in->name);
        wp_attr_str(in, "codec", codec, sizeof codec);
        /* ("unknown codec 'exp' for side data" of a known codec: a breaker's find) */
        char cb[160];
        const char *why = wp_codec_problem(codec, rs->held.kind, cb, sizeof cb);
        if (why)
            return rfail(rs, "record '%s': %s", in->name, why);
        /* the two halves of one tensor (a side record's type, or a coded record's third
           dimension, went unread: a restored GGUF gained a dimension, exit 0; a breaker's find) */
        if (rs->held.type != in->type || rs->held.n_dims != in->n_dims || memcmp(rs->held.ne, in->ne, sizeof in->ne))
            return rfail(rs, "record '%s': its %s data's type or shape is not its symbols'", in->name,
                         wp_rec_kind_name(rs->held.kind));
        if (strcmp(codec, "q") == 0 ? restore_q(rs, in, reference) : restore_exp(rs, in, reference))
            return -1;
        /* required: without it a restore went unchecked, and a changed code table restored
           another tensor, exit 0 (a breaker's find; every writer has set it) */
        int h = wp_attr_check_hash(in, "xxh32", rs->out.payload, rs->out.payload_len);
        if (h)
            return rfail(rs, h > 0 ? "record '%s': no xxh32 of the tensor it restores" :
                                     "record '%s': the restored tensor does not match its recorded hash", in->name);
        rs->holding = 0;
        rs->side_len = rs->held.payload_len;
        rs->out.kind = WP_REC_TENSOR;
        rs->out.type = in->type;
        rs->out.n_dims = in->n_dims;
        memcpy(rs->out.ne, in->ne, sizeof in->ne);
        free(rs->out.attrs);
        rs->out.attrs = NULL;
        if (wp_record_set_name(&rs->out, in->name))
            return rfail(rs, "out of memory");
        int64_t off = wp_attr_i64(in, "offset", -1);
        if (off >= 0)
            wp_attr_set_i64(&rs->out, "offset", off);   /* xxh64 and the codec's attrs stay behind */
        if (!rs->out.attrs)
            rs->out.attrs = calloc(1, 1);
        *out = &rs->out;
        return 1;
    default:
        if (rs->holding)
            return rfail(rs, "record '%s': %s data without its symbols", rs->held.name,
                         wp_rec_kind_name(rs->held.kind));
        *out = in;
        return 1;
    }
}
