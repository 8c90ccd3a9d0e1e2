/*
 * lanes.c - tiles and lanes of a Huffman-coded matrix (layout in lanes.h).
 *
 * Layers: tile geometry; the encoder (a size pass that fills the offsets,
 * then a pass that writes each lane's bits into its interleaved words); the
 * reference decoder (L-bit peek against per-length limits, as the hardware
 * unit does); the fast decoder (lookup table on the peek, 64-bit buffer);
 * the whole-matrix decoder. Both decoders share the tile checks and the
 * padding checks, so they accept exactly the same inputs.
 */
#include "lanes.h"

#include <stdlib.h>
#include <string.h>

/* ---- tile geometry ----------------------------------------------------- */

int wp_lanes_shape_ok(const wp_lanes_shape *s)
{
    if (!s || s->tile_sym < 1 || s->tile_sym > 256)
        return 0;
    if (s->rows && s->row_sym > ((uint64_t)1 << 62) / s->rows)
        return 0;
    return 1;
}

static uint64_t tile_cols(const wp_lanes_shape *s)
{
    return (s->row_sym + s->tile_sym - 1) / s->tile_sym;
}

uint64_t wp_lanes_ntiles(const wp_lanes_shape *s)
{
    if (!wp_lanes_shape_ok(s))
        return 0;
    return (s->rows + WP_TILE_ROWS - 1) / WP_TILE_ROWS * tile_cols(s);
}

int wp_lanes_tile_rect(const wp_lanes_shape *s, uint64_t t, uint64_t *row0,
                       uint64_t *col0, uint32_t *h, uint32_t *w)
{
    if (t >= wp_lanes_ntiles(s))
        return WP_LANES_EINVAL;
    uint64_t tc = tile_cols(s);
    uint64_t r0 = t / tc * WP_TILE_ROWS, c0 = t % tc * s->tile_sym;
    uint64_t hh = s->rows - r0, ww = s->row_sym - c0;
    *row0 = r0;
    *col0 = c0;
    *h = (uint32_t)(hh < WP_TILE_ROWS ? hh : WP_TILE_ROWS);
    *w = (uint32_t)(ww < s->tile_sym ? ww : s->tile_sym);
    return WP_LANES_OK;
}

/* ---- encoder ----------------------------------------------------------- */

/* Bits of lane k of a tile whose top-left symbol is at tile[0] (row stride
 * S); -1 if a symbol has no code. */
static int64_t lane_bits(const uint8_t *tile, uint64_t S, uint32_t h, uint32_t w,
                         int k, const uint8_t *lengths)
{
    int64_t bits = 0;
    for (uint32_t r = 2 * (uint32_t)k; r < h && r < 2 * (uint32_t)k + 2; r++) {
        const uint8_t *row = tile + r * S;
        for (uint32_t c = 0; c < w; c++) {
            if (!lengths[row[c]])
                return -1;
            bits += lengths[row[c]];
        }
    }
    return bits;
}

int wp_lanes_encode(const uint8_t *sym, const wp_lanes_shape *s, const uint8_t lengths[256],
                    uint32_t *words, uint64_t cap_words, uint32_t *offsets, uint64_t *nwords)
{
    if (!wp_lanes_shape_ok(s) || !lengths || !offsets || !nwords)
        return WP_LANES_EINVAL;
    uint16_t codes[256];
    if (wp_huf_codes(lengths, 256, codes) != 0)
        return WP_LANES_EINVAL;
    const uint64_t N = wp_lanes_ntiles(s), S = s->row_sym;
    if (N && !sym)
        return WP_LANES_EINVAL;

    /* Pass 1: tile depths, hence offsets and the payload size. */
    uint64_t groups = 0;
    offsets[0] = 0;
    for (uint64_t t = 0; t < N; t++) {
        uint64_t r0, c0;
        uint32_t h, w;
        wp_lanes_tile_rect(s, t, &r0, &c0, &h, &w);
        const uint8_t *tile = sym + r0 * S + c0;
        uint32_t depth = 0;
        for (int k = 0; k < WP_LANES; k++) {
            int64_t bits = lane_bits(tile, S, h, w, k, lengths);
            if (bits < 0)
                return WP_LANES_ENOCODE;
            uint32_t nw = (uint32_t)((bits + 31) / 32);
            if (nw > depth)
                depth = nw;
        }
        groups += depth;
        if (groups > UINT32_MAX)
            return WP_LANES_EINVAL;
        offsets[t + 1] = (uint32_t)groups;
    }
    *nwords = groups * WP_LANES;
    if (!words)
        return WP_LANES_OK;
    if (cap_words < *nwords)
        return WP_LANES_ESPACE;

    /* Pass 2: each lane's codes, MSB first, into words 32*i + k of its tile. */
    for (uint64_t t = 0; t < N; t++) {
        uint64_t r0, c0;
        uint32_t h, w;
        wp_lanes_tile_rect(s, t, &r0, &c0, &h, &w);
        const uint8_t *tile = sym + r0 * S + c0;
        uint32_t *tw = words + (uint64_t)offsets[t] * WP_LANES;
        memset(tw, 0, (uint64_t)(offsets[t + 1] - offsets[t]) * WP_LANES * sizeof *tw);
        for (int k = 0; k < WP_LANES; k++) {
            uint64_t acc = 0;    /* pending bits in the low nacc bits */
            int nacc = 0;
            uint32_t i = 0;      /* next word of the lane */
            for (uint32_t r = 2 * (uint32_t)k; r < h && r < 2 * (uint32_t)k + 2; r++) {
                const uint8_t *row = tile + r * S;
                for (uint32_t c = 0; c < w; c++) {
                    acc = (acc << lengths[row[c]]) | codes[row[c]];
                    nacc += lengths[row[c]];
                    if (nacc >= 32) {
                        nacc -= 32;
                        tw[(uint64_t)i++ * WP_LANES + k] = (uint32_t)(acc >> nacc);
                    }
                }
            }
            if (nacc)
                tw[(uint64_t)i * WP_LANES + k] = (uint32_t)(acc << (32 - nacc));
        }
    }
    return WP_LANES_OK;
}

/* ---- decoders: shared checks ------------------------------------------- */

/* A tile located and checked: its words, depth and size. */
typedef struct {
    const uint32_t *tw;  /* the tile's payload: D * 32 words           */
    uint32_t depth;      /* D: words per lane                           */
    uint32_t h, w;       /* rows, symbols per row                       */
} tile_view;

static int tile_open(const uint32_t *words, uint64_t nwords, const uint32_t *offsets,
                     const wp_lanes_shape *s, uint64_t t, uint64_t out_stride, tile_view *v)
{
    uint64_t r0, c0;
    if (!offsets || wp_lanes_tile_rect(s, t, &r0, &c0, &v->h, &v->w) != 0 || out_stride < v->w)
        return WP_LANES_EINVAL;
    uint32_t o0 = offsets[t], o1 = offsets[t + 1];
    if (o1 <= o0 || (uint64_t)o1 * WP_LANES > nwords || !words)
        return WP_LANES_ECORRUPT;          /* every tile has depth >= 1 */
    v->tw = words + (uint64_t)o0 * WP_LANES;
    v->depth = o1 - o0;
    return WP_LANES_OK;
}

/* Word i of lane k, zero past the tile's depth. */
static inline uint32_t lane_word(const tile_view *v, int k, uint64_t i)
{
    return i < v->depth ? v->tw[i * WP_LANES + k] : 0;
}

/* After a lane's last code ends at bit pos: the rest of its last word and
 * all its later words must be zero, and pos must lie within the depth. Sets
 * *used to the words the lane's codes occupy. */
static int lane_close(const tile_view *v, int k, uint64_t pos, uint32_t *used)
{
    if (pos > (uint64_t)v->depth * 32)
        return WP_LANES_ECORRUPT;
    uint64_t i = pos / 32;
    if (pos % 32) {
        if (lane_word(v, k, i) & (UINT32_MAX >> (pos % 32)))
            return WP_LANES_ECORRUPT;
        i++;
    }
    *used = (uint32_t)i;
    for (; i < v->depth; i++)
        if (v->tw[i * WP_LANES + k])
            return WP_LANES_ECORRUPT;
    return WP_LANES_OK;
}

/* Rows of the tile in lane k: 0, 1 or 2. */
static inline uint32_t lane_rows(const tile_view *v, int k)
{
    uint32_t r = 2 * (uint32_t)k;
    return r >= v->h ? 0 : (v->h - r >= 2 ? 2 : 1);
}

/* ---- reference decoder: peek L bits, compare against limits ------------- */

int wp_lanes_decode_tile_ref(const uint32_t *words, uint64_t nwords, const uint32_t *offsets,
                             const wp_lanes_shape *s, const wp_huf_table *tab, uint64_t t,
                             uint8_t *out, uint64_t out_stride)
{
    tile_view v;
    int rc = tile_open(words, nwords, offsets, s, t, out_stride, &v);
    if (rc)
        return rc;
    if (!tab || tab->max_len < 1 || tab->max_len > WP_HUF_MAX_LEN || !out)
        return WP_LANES_EINVAL;
    const int L = tab->max_len;
    const uint64_t end = (uint64_t)v.depth * 32;
    uint32_t deepest = 0;
    for (int k = 0; k < WP_LANES; k++) {
        uint64_t pos = 0;        /* bit position in the lane */
        uint32_t nrows = lane_rows(&v, k);
        for (uint32_t r = 0; r < nrows; r++) {
            uint8_t *row = out + (2 * (uint64_t)k + r) * out_stride;
            for (uint32_t c = 0; c < v.w; c++) {
                uint64_t i = pos / 32;
                uint64_t two = (uint64_t)lane_word(&v, k, i) << 32 | lane_word(&v, k, i + 1);
                uint32_t peek = (uint32_t)((two << (pos % 32)) >> (64 - L));
                int len, sy = wp_huf_decode_peek(tab, peek, &len);
                if (sy < 0)
                    return WP_LANES_ECORRUPT;
                pos += (uint64_t)len;
                if (pos > end)
                    return WP_LANES_ECORRUPT;
                row[c] = (uint8_t)sy;
            }
        }
        uint32_t used;
        if ((rc = lane_close(&v, k, pos, &used)) != 0)
            return rc;
        if (used > deepest)
            deepest = used;
    }
    return deepest == v.depth ? WP_LANES_OK : WP_LANES_ECORRUPT;
}

/* ---- fast decoder: lookup table on the peek ----------------------------
 *
 * Each lane keeps a 64-bit buffer of its next bits, MSB-aligned, refilled a
 * word at a time; one table lookup on the top L bits gives symbol and code
 * length. A lane is one serial chain (the next peek waits for this length),
 * so lanes are decoded four at a time, interleaved, for instruction-level
 * parallelism. A peek that is no code sets a flag instead of branching out;
 * its lane then stops advancing and the flag fails the tile afterwards.
 */

typedef struct {
    uint64_t buf;        /* next bits of the lane, MSB-aligned */
    int nbits;           /* valid bits in buf                  */
    uint64_t next;       /* next word to load                  */
    uint64_t pos;        /* bits consumed                      */
} lane_reader;

static inline uint8_t lane_step(lane_reader *lr, const tile_view *v, int k, const uint16_t *entry,
                                int drop, unsigned *bad)
{
    if (lr->nbits < 32) {
        lr->buf |= (uint64_t)lane_word(v, k, lr->next++) << (32 - lr->nbits);
        lr->nbits += 32;
    }
    uint16_t e = entry[lr->buf >> drop];
    int len = e >> 8;
    *bad |= e == 0;
    lr->buf <<= len;
    lr->nbits -= len;
    lr->pos += (uint64_t)len;
    return (uint8_t)e;
}

#define FAST_GROUP 4 /* the loop below is written out for 4 */

int wp_lanes_decode_tile(const uint32_t *words, uint64_t nwords, const uint32_t *offsets,
                         const wp_lanes_shape *s, const wp_huf_lut *lut, uint64_t t,
                         uint8_t *out, uint64_t out_stride)
{
    tile_view v;
    int rc = tile_open(words, nwords, offsets, s, t, out_stride, &v);
    if (rc)
        return rc;
    if (!lut || lut->max_len < 1 || lut->max_len > WP_HUF_MAX_LEN || !out)
        return WP_LANES_EINVAL;
    const int drop = 64 - lut->max_len;
    const uint16_t *entry = lut->entry;
    unsigned bad = 0;
    lane_reader lr[WP_LANES];
    memset(lr, 0, sizeof lr);

    int k = 0;
    /* Groups of four lanes that all hold two full rows. */
    for (; k + FAST_GROUP <= WP_LANES && lane_rows(&v, k + FAST_GROUP - 1) == 2; k += FAST_GROUP) {
        for (uint32_t r = 0; r < 2; r++) {
            uint8_t *row = out + (2 * (uint64_t)k + r) * out_stride;
            const uint64_t step = 2 * out_stride;   /* row 2(k+1)+r is two rows down */
            for (uint32_t c = 0; c < v.w; c++) {
                row[c] = lane_step(&lr[k], &v, k, entry, drop, &bad);
                row[step + c] = lane_step(&lr[k + 1], &v, k + 1, entry, drop, &bad);
                row[2 * step + c] = lane_step(&lr[k + 2], &v, k + 2, entry, drop, &bad);
                row[3 * step + c] = lane_step(&lr[k + 3], &v, k + 3, entry, drop, &bad);
            }
        }
    }
    /* The rest one lane at a time (a tile with fewer than 64 rows). */
    for (; k < WP_LANES; k++) {
        uint32_t nrows = lane_rows(&v, k);
        for (uint32_t r = 0; r < nrows; r++) {
            uint8_t *row = out + (2 * (uint64_t)k + r) * out_stride;
            for (uint32_t c = 0; c < v.w; c++)
                row[c] = lane_step(&lr[k], &v, k, entry, drop, &bad);
        }
    }
    if (bad)
        return WP_LANES_ECORRUPT;

    /* Bits past the depth read as zeros, so overrunning it is caught here. */
    uint32_t deepest = 0;
    for (k = 0; k < WP_LANES; k++) {
        uint32_t used;
        if ((rc = lane_close(&v, k, lr[k].pos, &used)) != 0)
            return rc;
        if (used > deepest)
            deepest = used;
    }
    return deepest == v.depth ? WP_LANES_OK : WP_LANES_ECORRUPT;
}

/* ---- whole matrix ------------------------------------------------------ */

int wp_lanes_decode(const uint32_t *words, uint64_t nwords, const uint32_t *offsets,
                    const wp_lanes_shape *s, const uint8_t lengths[256], int max_len,
                    int reference, uint8_t *out)
{
    if (!wp_lanes_shape_ok(s) || !offsets || !lengths || max_len < 1 || max_len > WP_HUF_MAX_LEN)
        return WP_LANES_EINVAL;
    const uint64_t N = wp_lanes_ntiles(s);
    if (wp_huf_validate(lengths, 256, max_len) != 0)
        return WP_LANES_ECORRUPT;
    if (offsets[0] != 0 || (uint64_t)offsets[N] * WP_LANES != nwords)
        return WP_LANES_ECORRUPT;
    for (uint64_t t = 0; t < N; t++)
        if (offsets[t + 1] < offsets[t])
            return WP_LANES_ECORRUPT;
    if (N == 0)
        return WP_LANES_OK;
    if (!out)
        return WP_LANES_EINVAL;

    wp_huf_table tab;
    wp_huf_lut *lut = NULL;
    if (reference) {
        wp_huf_table_init(&tab, lengths, 256, max_len);
    } else {
        if (!(lut = malloc(sizeof *lut)))
            return WP_LANES_EINVAL;
        wp_huf_lut_init(lut, lengths, 256, max_len);
    }
    int rc = WP_LANES_OK;
    for (uint64_t t = 0; t < N && rc == WP_LANES_OK; t++) {
        uint64_t r0, c0;
        uint32_t h, w;
        wp_lanes_tile_rect(s, t, &r0, &c0, &h, &w);
        uint8_t *dst = out + r0 * s->row_sym + c0;
        rc = reference ? wp_lanes_decode_tile_ref(words, nwords, offsets, s, &tab, t, dst, s->row_sym)
                       : wp_lanes_decode_tile(words, nwords, offsets, s, lut, t, dst, s->row_sym);
    }
    free(lut);
    return rc;
}
