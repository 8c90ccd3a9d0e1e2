/*
 * lanes.c - tiles and lanes of a Huffman-coded matrix (layout in lanes.h).
 *
 * Layers: tile geometry; the group geometry of a tile's ragged interleave
 * (which lanes are active at each depth, where each group starts); the
 * encoder (a size pass that fills the lane counts and offsets, then a pass
 * that writes each lane's bits into its interleaved words); the reference
 * decoder (L-bit peek against per-length limits, as the hardware unit does);
 * the fast decoder (lookup table on the peek, 64-bit buffer); the
 * whole-matrix decoder. Both decoders share the tile checks and the padding
 * checks, so they accept exactly the same inputs.
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

/* ---- group geometry of a tile ------------------------------------------
 *
 * From the 32 lane counts W_k (each <= WP_LANE_MAX_WORDS): mask[i] = lanes
 * with W_k > i, start[i] = words in groups 0..i-1. Word i of lane k is then
 * word start[i] + popcount(mask[i] & ((1 << k) - 1)) of the tile, which is
 * below start[i + 1] (or size), so always inside the tile.
 */

typedef struct {
    uint32_t depth;                        /* D = max_k W_k                 */
    uint32_t size;                         /* sum_k W_k: the tile's words   */
    uint32_t mask[WP_LANE_MAX_WORDS];      /* active lanes of group i       */
    uint32_t start[WP_LANE_MAX_WORDS];     /* first word of group i         */
} tile_groups;

static inline uint32_t popcount32(uint32_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return (uint32_t)__builtin_popcount(x);
#else
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    x = (x + (x >> 4)) & 0x0f0f0f0fu;
    return (x * 0x01010101u) >> 24;
#endif
}

static void groups_init(tile_groups *g, const uint8_t W[WP_LANES])
{
    uint32_t depth = 0;
    for (int k = 0; k < WP_LANES; k++)
        if (W[k] > depth)
            depth = W[k];
    /* ends[d] = lanes of exactly d words; the masks shrink with depth:
     * mask[i] = lanes with W_k > i = mask[i + 1] | ends[i + 1]. */
    uint32_t ends[WP_LANE_MAX_WORDS + 1];
    memset(ends, 0, (depth + 1) * sizeof ends[0]);
    for (int k = 0; k < WP_LANES; k++)
        ends[W[k]] |= 1u << k;
    uint32_t m = 0;
    for (uint32_t i = depth; i-- > 0;) {
        m |= ends[i + 1];
        g->mask[i] = m;
    }
    uint32_t acc = 0;
    for (uint32_t i = 0; i < depth; i++) {
        g->start[i] = acc;
        acc += popcount32(g->mask[i]);
    }
    g->depth = depth;
    g->size = acc;
}

/* Index in the tile of word i (< W_k) of lane k. */
static inline uint32_t group_word(const tile_groups *g, int k, uint32_t i)
{
    return g->start[i] + popcount32(g->mask[i] & ((1u << k) - 1));
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
                    uint32_t *words, uint64_t cap_words, uint32_t *offsets, uint8_t *lane_words,
                    uint64_t *nwords)
{
    if (!wp_lanes_shape_ok(s) || !lengths || !offsets || !lane_words || !nwords)
        return WP_LANES_EINVAL;
    uint16_t codes[256];
    if (wp_huf_codes(lengths, 256, codes) != 0)
        return WP_LANES_EINVAL;
    const uint64_t N = wp_lanes_ntiles(s), S = s->row_sym;
    if (N && !sym)
        return WP_LANES_EINVAL;

    /* Pass 1: lane counts, hence offsets and the payload size. */
    uint64_t total = 0;
    offsets[0] = 0;
    for (uint64_t t = 0; t < N; t++) {
        uint64_t r0, c0;
        uint32_t h, w;
        wp_lanes_tile_rect(s, t, &r0, &c0, &h, &w);
        const uint8_t *tile = sym + r0 * S + c0;
        for (int k = 0; k < WP_LANES; k++) {
            int64_t bits = lane_bits(tile, S, h, w, k, lengths);
            if (bits < 0)
                return WP_LANES_ENOCODE;
            uint64_t nw = ((uint64_t)bits + 31) / 32;
            if (nw > WP_LANE_MAX_WORDS)
                return WP_LANES_EINVAL;
            lane_words[t * WP_LANES + (uint64_t)k] = (uint8_t)nw;
            total += nw;
        }
        if (total > UINT32_MAX)
            return WP_LANES_EINVAL;
        offsets[t + 1] = (uint32_t)total;
    }
    *nwords = total;
    if (!words)
        return WP_LANES_OK;
    if (cap_words < *nwords)
        return WP_LANES_ESPACE;

    /* Pass 2: each lane's codes, MSB first, into its words of the groups. */
    tile_groups g;
    for (uint64_t t = 0; t < N; t++) {
        uint64_t r0, c0;
        uint32_t h, w;
        wp_lanes_tile_rect(s, t, &r0, &c0, &h, &w);
        const uint8_t *tile = sym + r0 * S + c0;
        const uint8_t *W = lane_words + t * WP_LANES;
        uint32_t *tw = words + offsets[t];
        groups_init(&g, W);
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
                        tw[group_word(&g, k, i++)] = (uint32_t)(acc >> nacc);
                    }
                }
            }
            if (nacc)
                tw[group_word(&g, k, i)] = (uint32_t)(acc << (32 - nacc));
        }
    }
    return WP_LANES_OK;
}

/* ---- decoders: shared checks ------------------------------------------- */

/* A tile located and checked: its words, lane counts and size. */
typedef struct {
    const uint32_t *tw;      /* the tile's payload: g.size words         */
    uint32_t h, w;           /* rows, symbols per row                    */
    uint8_t W[WP_LANES];     /* words of each lane                       */
    tile_groups g;
} tile_view;

/* Rows of the tile in lane k: 0, 1 or 2. */
static inline uint32_t lane_rows(const tile_view *v, int k)
{
    uint32_t r = 2 * (uint32_t)k;
    return r >= v->h ? 0 : (v->h - r >= 2 ? 2 : 1);
}

static int tile_open(const uint32_t *words, uint64_t nwords, const uint32_t *offsets,
                     const uint8_t *lane_words, const wp_lanes_shape *s, uint64_t t,
                     uint64_t out_stride, tile_view *v)
{
    uint64_t r0, c0;
    if (!offsets || !lane_words || wp_lanes_tile_rect(s, t, &r0, &c0, &v->h, &v->w) != 0 ||
        out_stride < v->w)
        return WP_LANES_EINVAL;
    uint32_t o0 = offsets[t], o1 = offsets[t + 1];
    if (o1 <= o0 || o1 > nwords || !words)
        return WP_LANES_ECORRUPT;          /* every tile holds >= 1 word */
    uint32_t sum = 0;
    for (int k = 0; k < WP_LANES; k++) {
        uint8_t W = lane_words[t * WP_LANES + (uint64_t)k];
        /* A lane with rows needs >= 1 word, one without rows none. */
        if (W > WP_LANE_MAX_WORDS || (W == 0) != (lane_rows(v, k) == 0))
            return WP_LANES_ECORRUPT;
        v->W[k] = W;
        sum += W;
    }
    if (sum != o1 - o0)
        return WP_LANES_ECORRUPT;
    v->tw = words + o0;
    groups_init(&v->g, v->W);
    return WP_LANES_OK;
}

/* Word i of lane k, zero past the lane's W_k words. */
static inline uint32_t lane_word(const tile_view *v, int k, uint64_t i)
{
    return i < v->W[k] ? v->tw[group_word(&v->g, k, (uint32_t)i)] : 0;
}

/* After a lane's last code ends at bit pos: pos must lie within the lane's
 * W_k words, the rest of its last word must be zero, and W_k must be the
 * minimum ceil(pos / 32). */
static int lane_close(const tile_view *v, int k, uint64_t pos)
{
    if (pos > (uint64_t)v->W[k] * 32)
        return WP_LANES_ECORRUPT;
    if (pos % 32 && (lane_word(v, k, pos / 32) & (UINT32_MAX >> (pos % 32))))
        return WP_LANES_ECORRUPT;
    return (pos + 31) / 32 == v->W[k] ? WP_LANES_OK : WP_LANES_ECORRUPT;
}

/* ---- reference decoder: peek L bits, compare against limits ------------- */

int wp_lanes_decode_tile_ref(const uint32_t *words, uint64_t nwords, const uint32_t *offsets,
                             const uint8_t *lane_words, const wp_lanes_shape *s,
                             const wp_huf_table *tab, uint64_t t, uint8_t *out, uint64_t out_stride)
{
    tile_view v;
    int rc = tile_open(words, nwords, offsets, lane_words, s, t, out_stride, &v);
    if (rc)
        return rc;
    if (!tab || tab->max_len < 1 || tab->max_len > WP_HUF_MAX_LEN || !out)
        return WP_LANES_EINVAL;
    const int L = tab->max_len;
    for (int k = 0; k < WP_LANES; k++) {
        const uint64_t end = (uint64_t)v.W[k] * 32;
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
        if ((rc = lane_close(&v, k, pos)) != 0)
            return rc;
    }
    return WP_LANES_OK;
}

/* ---- fast decoder: lookup table on the peek ----------------------------
 *
 * The tile's groups are first split back into one contiguous word array
 * per lane (walking each group's active-lane mask), so that a refill is a
 * plain load instead of the rank computation of lane_word. Each lane keeps
 * a 64-bit buffer of its next bits, MSB-aligned, refilled a word at a time;
 * one table lookup on the top L bits gives symbol and code length. A lane is
 * one serial chain (the next peek waits for this length), so lanes are
 * decoded four at a time, interleaved, for instruction-level parallelism. A
 * peek that is no code sets a flag instead of branching out; its lane then
 * stops advancing and the flag fails the tile afterwards.
 */

static inline int lowest_bit(uint32_t x)   /* x != 0 */
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctz(x);
#else
    int k = 0;
    while (!(x & 1)) {
        x >>= 1;
        k++;
    }
    return k;
#endif
}

/* The tile's words lane after lane: lane k's W_k words at base[k]. */
typedef struct {
    uint32_t base[WP_LANES];
    uint32_t w[WP_LANES * WP_LANE_MAX_WORDS];
} lane_split;

static void split_lanes(const tile_view *v, lane_split *ls)
{
    uint32_t acc = 0, cur[WP_LANES];
    for (int k = 0; k < WP_LANES; k++) {
        ls->base[k] = cur[k] = acc;
        acc += v->W[k];
    }
    const uint32_t *p = v->tw;
    for (uint32_t i = 0; i < v->g.depth; i++)
        for (uint32_t m = v->g.mask[i]; m; m &= m - 1)
            ls->w[cur[lowest_bit(m)]++] = *p++;
}

typedef struct {
    uint64_t buf;        /* next bits of the lane, MSB-aligned */
    int nbits;           /* valid bits in buf                  */
    uint64_t next;       /* next word to load                  */
    uint64_t pos;        /* bits consumed                      */
} lane_reader;

static inline uint8_t lane_step(lane_reader *lr, const tile_view *v, const lane_split *ls, int k,
                                const uint16_t *entry, int drop, unsigned *bad)
{
    if (lr->nbits < 32) {
        uint64_t i = lr->next++;
        lr->buf |= (uint64_t)(i < v->W[k] ? ls->w[ls->base[k] + i] : 0) << (32 - lr->nbits);
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
                         const uint8_t *lane_words, const wp_lanes_shape *s, const wp_huf_lut *lut,
                         uint64_t t, uint8_t *out, uint64_t out_stride)
{
    tile_view v;
    int rc = tile_open(words, nwords, offsets, lane_words, s, t, out_stride, &v);
    if (rc)
        return rc;
    if (!lut || lut->max_len < 1 || lut->max_len > WP_HUF_MAX_LEN || !out)
        return WP_LANES_EINVAL;
    const int drop = 64 - lut->max_len;
    const uint16_t *entry = lut->entry;
    unsigned bad = 0;
    lane_reader lr[WP_LANES];
    memset(lr, 0, sizeof lr);
    lane_split ls;              /* 30 KiB on the stack; only sum W_k words are written and read */
    split_lanes(&v, &ls);

    int k = 0;
    /* Groups of four lanes that all hold two full rows. */
    for (; k + FAST_GROUP <= WP_LANES && lane_rows(&v, k + FAST_GROUP - 1) == 2; k += FAST_GROUP) {
        for (uint32_t r = 0; r < 2; r++) {
            uint8_t *row = out + (2 * (uint64_t)k + r) * out_stride;
            const uint64_t step = 2 * out_stride;   /* row 2(k+1)+r is two rows down */
            for (uint32_t c = 0; c < v.w; c++) {
                row[c] = lane_step(&lr[k], &v, &ls, k, entry, drop, &bad);
                row[step + c] = lane_step(&lr[k + 1], &v, &ls, k + 1, entry, drop, &bad);
                row[2 * step + c] = lane_step(&lr[k + 2], &v, &ls, k + 2, entry, drop, &bad);
                row[3 * step + c] = lane_step(&lr[k + 3], &v, &ls, k + 3, entry, drop, &bad);
            }
        }
    }
    /* The rest one lane at a time (a tile with fewer than 64 rows). */
    for (; k < WP_LANES; k++) {
        uint32_t nrows = lane_rows(&v, k);
        for (uint32_t r = 0; r < nrows; r++) {
            uint8_t *row = out + (2 * (uint64_t)k + r) * out_stride;
            for (uint32_t c = 0; c < v.w; c++)
                row[c] = lane_step(&lr[k], &v, &ls, k, entry, drop, &bad);
        }
    }
    if (bad)
        return WP_LANES_ECORRUPT;

    /* Bits past a lane's words read as zeros, so overrunning is caught here. */
    for (k = 0; k < WP_LANES; k++)
        if ((rc = lane_close(&v, k, lr[k].pos)) != 0)
            return rc;
    return WP_LANES_OK;
}

/* ---- whole matrix ------------------------------------------------------ */

int wp_lanes_decode(const uint32_t *words, uint64_t nwords, const uint32_t *offsets,
                    const uint8_t *lane_words, const wp_lanes_shape *s, const uint8_t lengths[256],
                    int max_len, int reference, uint8_t *out)
{
    if (!wp_lanes_shape_ok(s) || !offsets || !lengths || max_len < 1 || max_len > WP_HUF_MAX_LEN)
        return WP_LANES_EINVAL;
    const uint64_t N = wp_lanes_ntiles(s);
    if (wp_huf_validate(lengths, 256, max_len) != 0)
        return WP_LANES_ECORRUPT;
    if (offsets[0] != 0 || (uint64_t)offsets[N] != nwords)
        return WP_LANES_ECORRUPT;
    for (uint64_t t = 0; t < N; t++)
        if (offsets[t + 1] < offsets[t])
            return WP_LANES_ECORRUPT;
    if (N == 0)
        return WP_LANES_OK;
    if (!out || !lane_words)
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
        rc = reference ? wp_lanes_decode_tile_ref(words, nwords, offsets, lane_words, s, &tab, t, dst,
                                                  s->row_sym)
                       : wp_lanes_decode_tile(words, nwords, offsets, lane_words, s, lut, t, dst,
                                              s->row_sym);
    }
    free(lut);
    return rc;
}
