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
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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
#if defined(__POPCNT__) && (defined(__GNUC__) || defined(__clang__))
    return (uint32_t)__builtin_popcount(x);
#else   /* without the instruction __builtin_popcount is a library call */
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
    /* ends[d] = lanes of exactly d words, nend[d] their number; the masks
     * shrink with depth: mask[i] = lanes with W_k > i = mask[i + 1] |
     * ends[i + 1], and start[i + 1] - start[i] is its popcount. */
    uint32_t ends[WP_LANE_MAX_WORDS + 1];
    uint8_t nend[WP_LANE_MAX_WORDS + 1], nact[WP_LANE_MAX_WORDS];
    memset(ends, 0, (depth + 1) * sizeof ends[0]);
    memset(nend, 0, depth + 1);
    for (int k = 0; k < WP_LANES; k++) {
        ends[W[k]] |= 1u << k;
        nend[W[k]]++;
    }
    uint32_t m = 0, n = 0;
    for (uint32_t i = depth; i-- > 0;) {
        m |= ends[i + 1];
        n += nend[i + 1];
        g->mask[i] = m;
        nact[i] = (uint8_t)n;
    }
    uint32_t acc = 0;
    for (uint32_t i = 0; i < depth; i++) {
        g->start[i] = acc;
        acc += nact[i];
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
 * The tile's groups are first split back into one contiguous run of words
 * per lane, lane after lane, each word stored in big-endian byte order (most
 * significant byte first), so that a lane's bits are a plain MSB-first byte
 * string: any 8-byte load at byte pos / 8, byte-swapped on a little-endian
 * host and shifted left by pos % 8, gives the lane's next 57 or more bits.
 * One such refill serves K = 5 codes at L = 11 (5 x 11 = 55 bits; an
 * instantiation with a constant shift), K = 3 at any other L <= 15; it
 * needs no branch and no per-lane bit count, only the lane's bit position
 * pos (absolute, in bits from the start of the split words), advanced after
 * the K codes by the count a sentinel bit gives (FAST_REFILL). Full groups
 * are split 4 x 4 words at a time with SSE2 where the compiler has it.
 *
 * Each code is one serial chain (peek, table load, shift by its length), so
 * lanes are decoded in lockstep, FAST_GROUP at a time, to keep several
 * table loads in flight. Symbols go to a small on-stack block (constant
 * offsets, no per-lane row pointers) and are copied to out row by row.
 *
 * Bounds: lanes lie back to back, so a lane that reads past its own words
 * reads the next lane's (or the zeroed pad after the last lane). That does
 * not change any result: a code that ends within the lane's words does not
 * depend on the bits after it, and a lane whose codes run past its words is
 * corrupt (lane_close) whatever those bits are. After each row every lane's
 * position is checked against the end of its words, so within a row a lane
 * runs at most w x L bits (3840) past its end, plus the 8-byte load:
 * SPLIT_PAD words of zeros after the last lane cover that.
 *
 * A peek that starts with no code (entry 0, possible only for an incomplete
 * code) has length 0: its lane stops advancing, and the checked variant
 * (used whenever the table has such entries) fails the tile afterwards. The
 * table is canonical, so its invalid peeks are the top ones: it has any iff
 * its last entry is 0.
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

#define SPLIT_PAD 128   /* words: >= (256 x 15 bits) / 32 + 2 */
#define FAST_GROUP 8    /* lanes decoded in lockstep (4: slower, 16: spills) */

/* The tile's words lane after lane: lane k's W_k words at base[k]. */
typedef struct {
    uint32_t base[WP_LANES + 1];   /* base[32] = the tile's size          */
    uint32_t w[WP_LANES * WP_LANE_MAX_WORDS + SPLIT_PAD];
} lane_split;

#if defined(__GNUC__) || defined(__clang__)
#define LANES_INLINE static inline __attribute__((always_inline))
#else
#define LANES_INLINE static inline
#endif

static inline int host_is_le(void)
{
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
    return __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
#else
    const uint16_t one = 1;
    return *(const uint8_t *)&one;
#endif
}

static inline uint32_t bswap32(uint32_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_bswap32(x);
#else
    return x >> 24 | (x >> 8 & 0xff00u) | (x << 8 & 0xff0000u) | x << 24;
#endif
}

static inline uint64_t bswap64(uint64_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_bswap64(x);
#else
    return (uint64_t)bswap32((uint32_t)x) << 32 | bswap32((uint32_t)(x >> 32));
#endif
}

/* A word as stored in the split: its bytes most significant first. */
static inline uint32_t to_be32(uint32_t x)
{
    return host_is_le() ? bswap32(x) : x;
}

/* The 64 bits at byte p of a big-endian byte string, first byte on top. */
static inline uint64_t load_be64(const uint8_t *p)
{
    uint64_t x;
    memcpy(&x, p, sizeof x);
    return host_is_le() ? bswap64(x) : x;
}

#if defined(__SSE2__)
/* Four words of each of four lanes: rows r0..r3 hold depths i..i+3 of
 * lanes k..k+3; stores lane k+j's words i..i+3, byte-swapped, at d[j]. */
static inline void split_4x4(__m128i r0, __m128i r1, __m128i r2, __m128i r3, uint32_t *d0,
                             uint32_t *d1, uint32_t *d2, uint32_t *d3)
{
    __m128i t0 = _mm_unpacklo_epi32(r0, r1), t1 = _mm_unpackhi_epi32(r0, r1);
    __m128i t2 = _mm_unpacklo_epi32(r2, r3), t3 = _mm_unpackhi_epi32(r2, r3);
    __m128i c[4] = {_mm_unpacklo_epi64(t0, t2), _mm_unpackhi_epi64(t0, t2),
                    _mm_unpacklo_epi64(t1, t3), _mm_unpackhi_epi64(t1, t3)};
    uint32_t *d[4] = {d0, d1, d2, d3};
    for (int j = 0; j < 4; j++) {
        __m128i x = c[j];
        if (host_is_le()) {   /* bytes of each 16-bit half, then the halves */
            x = _mm_or_si128(_mm_slli_epi16(x, 8), _mm_srli_epi16(x, 8));
            x = _mm_shufflehi_epi16(_mm_shufflelo_epi16(x, 0xb1), 0xb1);
        }
        _mm_storeu_si128((__m128i *)d[j], x);
    }
}
#endif

static void split_lanes(const tile_view *v, lane_split *ls)
{
    uint32_t acc = 0;
    for (int k = 0; k < WP_LANES; k++) {
        ls->base[k] = acc;
        acc += v->W[k];
    }
    ls->base[WP_LANES] = acc;
    const uint32_t *p = v->tw;
    uint32_t i = 0;
    /* Groups with all 32 lanes: word k of group i is lane k's word i. */
#if defined(__SSE2__)
    for (; i + 4 <= v->g.depth && v->g.mask[i + 3] == UINT32_MAX; i += 4, p += 4 * WP_LANES)
        for (int k = 0; k < WP_LANES; k += 4)
            split_4x4(_mm_loadu_si128((const __m128i *)(p + k)),
                      _mm_loadu_si128((const __m128i *)(p + WP_LANES + k)),
                      _mm_loadu_si128((const __m128i *)(p + 2 * WP_LANES + k)),
                      _mm_loadu_si128((const __m128i *)(p + 3 * WP_LANES + k)),
                      ls->w + ls->base[k] + i, ls->w + ls->base[k + 1] + i,
                      ls->w + ls->base[k + 2] + i, ls->w + ls->base[k + 3] + i);
#endif
    for (; i < v->g.depth && v->g.mask[i] == UINT32_MAX; i++, p += WP_LANES)
        for (int k = 0; k < WP_LANES; k++)
            ls->w[ls->base[k] + i] = to_be32(p[k]);
    for (; i < v->g.depth; i++)
        for (uint32_t m = v->g.mask[i]; m; m &= m - 1)
            ls->w[ls->base[lowest_bit(m)] + i] = to_be32(*p++);
    memset(ls->w + acc, 0, SPLIT_PAD * sizeof ls->w[0]);
}

static inline int ctz64(uint64_t x)   /* x != 0 */
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int k = 0;
    while (!(x & 1)) {
        x >>= 1;
        k++;
    }
    return k;
#endif
}

/* A lane's next bits, MSB first, with a sentinel 1 in bit 0: bit 0 lies
 * past the 57 bits one refill guarantees, and the codes of one refill take
 * at most 57 bits, so after they have shifted buf left by n bits in all, n
 * is the count of its trailing zeros. */
#define FAST_REFILL(j) (buf[j] = load_be64(bytes + (pos[j] >> 3)) << (pos[j] & 7) | 1)
#define FAST_ADVANCE(j) (pos[j] += (uint64_t)ctz64(buf[j]))

/* Tiles are usually decoded in order: ask for the words after this tile
 * (as many as it has, within the payload) while it decodes. */
static inline void prefetch_next(const uint32_t *words, uint64_t nwords, uint64_t from, uint32_t n)
{
#if defined(__GNUC__) || defined(__clang__)
    uint64_t to = from + n < nwords ? from + n : nwords;
    for (uint64_t i = from; i < to; i += 16)
        __builtin_prefetch(words + i);
#else
    (void)words, (void)nwords, (void)from, (void)n;
#endif
}

/* One code of a lane: table lookup on the top L bits of its buffer. */
#define FAST_STEP(j, dst, CHECK)                                                                   \
    do {                                                                                           \
        uint32_t e_ = entry[buf[j] >> drop];                                                       \
        (dst) = (uint8_t)e_;                                                                       \
        if (CHECK)                                                                                 \
            bad |= e_ == 0;                                                                        \
        buf[j] <<= e_ >> 8;                                                                        \
    } while (0)

#if defined(__GNUC__) && !defined(__clang__)
#define FAST_UNROLL _Pragma("GCC unroll 16")
#else
#define FAST_UNROLL
#endif

/* Lanes k0 .. k0 + FAST_GROUP - 1, each of two full rows of w symbols, in
 * lockstep, K codes per refill (K x L <= 56). drop = 64 - L (a constant in
 * the common instantiation). Returns WP_LANES_OK or WP_LANES_ECORRUPT;
 * pos_out[j] gets lane k0 + j's position in bits from the start of its
 * words. */
LANES_INLINE int decode_group(const lane_split *ls, int k0, uint32_t w, const uint16_t *entry,
                              int drop, int K, int CHECK, uint8_t (*blk)[2][WP_TILE_WEIGHTS],
                              uint64_t *pos_out)
{
    const uint8_t *bytes = (const uint8_t *)ls->w;
    uint64_t pos[FAST_GROUP], buf[FAST_GROUP];
    unsigned bad = 0;
    for (int j = 0; j < FAST_GROUP; j++)
        pos[j] = (uint64_t)ls->base[k0 + j] * 32;
    for (int r = 0; r < 2; r++) {
        uint32_t c = 0;
        for (; c + (uint32_t)K <= w; c += (uint32_t)K) {
            FAST_UNROLL
            for (int j = 0; j < FAST_GROUP; j++)
                FAST_REFILL(j);
            FAST_UNROLL
            for (int q = 0; q < K; q++) {
                FAST_UNROLL
                for (int j = 0; j < FAST_GROUP; j++)
                    FAST_STEP(j, blk[j][r][c + (uint32_t)q], CHECK);
            }
            FAST_UNROLL
            for (int j = 0; j < FAST_GROUP; j++)
                FAST_ADVANCE(j);
        }
        if (c < w) {   /* the last w % K codes of the row */
            FAST_UNROLL
            for (int j = 0; j < FAST_GROUP; j++)
                FAST_REFILL(j);
            FAST_UNROLL
            for (int q = 0; q < K; q++) {
                if (c + (uint32_t)q < w) {
                    FAST_UNROLL
                    for (int j = 0; j < FAST_GROUP; j++)
                        FAST_STEP(j, blk[j][r][c + (uint32_t)q], CHECK);
                }
            }
            FAST_UNROLL
            for (int j = 0; j < FAST_GROUP; j++)
                FAST_ADVANCE(j);
        }
        /* Bound the next row's reads (see above). */
        for (int j = 0; j < FAST_GROUP; j++)
            if (pos[j] > (uint64_t)ls->base[k0 + j + 1] * 32)
                return WP_LANES_ECORRUPT;
    }
    if (bad)
        return WP_LANES_ECORRUPT;
    for (int j = 0; j < FAST_GROUP; j++)
        pos_out[j] = pos[j] - (uint64_t)ls->base[k0 + j] * 32;
    return WP_LANES_OK;
}

/* The instantiations: L = 11 exactly (wpack's limit: a constant shift, 5
 * codes per refill), any L with a complete code (3 per refill), and the
 * checked one for tables with peeks that start with no code. */
static int decode_group_l11(const lane_split *ls, int k0, uint32_t w, const uint16_t *entry, int drop,
                            uint8_t (*blk)[2][WP_TILE_WEIGHTS], uint64_t *pos)
{
    (void)drop;
    return decode_group(ls, k0, w, entry, 64 - 11, 5, 0, blk, pos);
}

static int decode_group_any(const lane_split *ls, int k0, uint32_t w, const uint16_t *entry, int drop,
                            uint8_t (*blk)[2][WP_TILE_WEIGHTS], uint64_t *pos)
{
    return decode_group(ls, k0, w, entry, drop, 3, 0, blk, pos);
}

static int decode_group_checked(const lane_split *ls, int k0, uint32_t w, const uint16_t *entry,
                                int drop, uint8_t (*blk)[2][WP_TILE_WEIGHTS], uint64_t *pos)
{
    return decode_group(ls, k0, w, entry, drop, 3, 1, blk, pos);
}

/* One lane of nrows rows, written straight to out (rows of partial tiles).
 * *pos_out as in decode_group. */
static int decode_lane(const lane_split *ls, int k, uint32_t nrows, uint32_t w,
                       const uint16_t *entry, int L, uint8_t *out, uint64_t out_stride,
                       uint64_t *pos_out)
{
    const uint8_t *bytes = (const uint8_t *)ls->w;
    const int drop = 64 - L, K = 57 / L;
    const uint64_t end = (uint64_t)ls->base[k + 1] * 32;
    uint64_t pos = (uint64_t)ls->base[k] * 32;
    for (uint32_t r = 0; r < nrows; r++) {
        uint8_t *row = out + (2 * (uint64_t)k + r) * out_stride;
        for (uint32_t c = 0; c < w;) {
            uint64_t buf = load_be64(bytes + (pos >> 3)) << (pos & 7);
            for (int q = 0; q < K && c < w; q++, c++) {
                uint32_t e = entry[buf >> drop];
                if (!e)
                    return WP_LANES_ECORRUPT;
                row[c] = (uint8_t)e;
                buf <<= e >> 8;
                pos += e >> 8;
            }
        }
        if (pos > end)
            return WP_LANES_ECORRUPT;
    }
    *pos_out = pos - (uint64_t)ls->base[k] * 32;
    return WP_LANES_OK;
}

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
    const int L = lut->max_len, drop = 64 - L;
    const uint16_t *entry = lut->entry;
    const int complete = entry[(1u << L) - 1] != 0;   /* no peek without a code */
    uint64_t pos[WP_LANES];
    lane_split ls;              /* 31 KiB on the stack; sum W_k + SPLIT_PAD words are written */
    split_lanes(&v, &ls);
    prefetch_next(words, nwords, offsets[t + 1], v.g.size);
    uint8_t blk[FAST_GROUP][2][WP_TILE_WEIGHTS];

    int k = 0;
    /* Groups of FAST_GROUP lanes that all hold two full rows. */
    for (; k + FAST_GROUP <= WP_LANES && lane_rows(&v, k + FAST_GROUP - 1) == 2; k += FAST_GROUP) {
        rc = !complete ? decode_group_checked(&ls, k, v.w, entry, drop, blk, pos + k)
             : L == 11 ? decode_group_l11(&ls, k, v.w, entry, drop, blk, pos + k)
                       : decode_group_any(&ls, k, v.w, entry, drop, blk, pos + k);
        if (rc)
            return rc;
        for (int j = 0; j < FAST_GROUP; j++)
            for (uint32_t r = 0; r < 2; r++)
                memcpy(out + (2 * (uint64_t)(k + j) + r) * out_stride, blk[j][r], v.w);
    }
    /* The rest one lane at a time (a tile with fewer than 64 rows). */
    for (; k < WP_LANES; k++)
        if ((rc = decode_lane(&ls, k, lane_rows(&v, k), v.w, entry, L, out, out_stride, pos + k)))
            return rc;

    for (k = 0; k < WP_LANES; k++)
        if ((rc = lane_close(&v, k, pos[k])) != 0)
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
