/*
 * test_lanes.c - tiles and lanes of a coded matrix (lib/lanes.c).
 *
 * Round trips through both decoders on short, tall and ragged shapes, a
 * hand-checked byte layout, the ragged interleave against an independent
 * construction from per-lane bit streams, tiles decoded alone among
 * garbage, corrupt or truncated input (every single-bit flip of a small
 * matrix's words and lane counts, bad offsets and lane counts, random
 * garbage), and the size of the layout on realistic matrices against the
 * Huffman bits and against the old padded layout (TAP comments), the fast
 * decoder's lockstep paths (full tiles at L = 8, 11, 13, 15, an incomplete
 * code, bit flips, lane-count transfers, random payloads), plus the
 * fast decoder's speed on a 4096 x 4096 matrix (comment only).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "huffman.h"
#include "lanes.h"
#include "tap.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t rng(void) { return tap_xorshift(&rng_state); }

/* A bell-shaped code of `bits` bits (sum of four uniform draws). */
static unsigned bell(int bits)
{
    unsigned m = (1u << bits) - 1, s = 0;
    for (int i = 0; i < 4; i++)
        s += (unsigned)(rng() >> 40) % (m + 1);
    return (s + 2) / 4;
}

/* rows x row_sym symbols: pairs of 4-bit codes (wps = 2) or 6-bit codes. */
static uint8_t *make_matrix(uint64_t rows, uint64_t row_sym, int wps)
{
    uint8_t *m = malloc(rows * row_sym + 1);
    for (uint64_t i = 0; i < rows * row_sym; i++)
        m[i] = wps == 2 ? (uint8_t)(bell(4) << 4 | bell(4)) : (uint8_t)bell(6);
    return m;
}

static void lengths_of(const uint8_t *m, uint64_t n, uint8_t *len)
{
    uint64_t c[256] = {0};
    for (uint64_t i = 0; i < n; i++)
        c[m[i]]++;
    wp_huf_lengths(c, 256, WP_HUF_LEN, len);
}

typedef struct {
    uint32_t *words;
    uint32_t *offsets;
    uint8_t *lane_words;
    uint64_t nwords, ntiles;
} coded;

static int encode(const uint8_t *m, const wp_lanes_shape *s, const uint8_t *len, coded *c)
{
    c->ntiles = wp_lanes_ntiles(s);
    c->offsets = malloc((c->ntiles + 1) * sizeof *c->offsets);
    c->lane_words = malloc(c->ntiles ? 32 * c->ntiles : 1);
    c->words = NULL;
    int rc = wp_lanes_encode(m, s, len, NULL, 0, c->offsets, c->lane_words, &c->nwords);
    if (rc)
        return rc;
    c->words = malloc(c->nwords ? c->nwords * sizeof *c->words : 1);   /* exact: ASan sees over-reads */
    return wp_lanes_encode(m, s, len, c->words, c->nwords, c->offsets, c->lane_words, &c->nwords);
}

static void coded_free(coded *c)
{
    free(c->words);
    free(c->offsets);
    free(c->lane_words);
}

static int decode(const coded *c, const wp_lanes_shape *s, const uint8_t *len, int reference, uint8_t *out)
{
    return wp_lanes_decode(c->words, c->nwords, c->offsets, c->lane_words, s, len, WP_HUF_LEN, reference, out);
}

/* Words of the old padded layout (every lane padded to its tile's deepest
 * lane, whole 128-byte groups), from the lane counts. */
static uint64_t padded_words(const coded *c)
{
    uint64_t n = 0;
    for (uint64_t t = 0; t < c->ntiles; t++) {
        unsigned d = 0;
        for (int k = 0; k < 32; k++)
            if (c->lane_words[32 * t + k] > d)
                d = c->lane_words[32 * t + k];
        n += 32ull * d;
    }
    return n;
}

/* Round trip one shape through both decoders, and three tiles alone. */
static void round_trip(uint64_t rows, uint64_t weights, int wps)
{
    wp_lanes_shape s = {rows, weights / wps, (uint32_t)(WP_TILE_WEIGHTS / wps)};
    uint64_t n = s.rows * s.row_sym;
    uint8_t *m = make_matrix(s.rows, s.row_sym, wps), len[256];
    lengths_of(m, n, len);
    coded c;
    int rc = encode(m, &s, len, &c);
    uint64_t tr = (rows + 63) / 64, tc = (s.row_sym + s.tile_sym - 1) / s.tile_sym;
    uint64_t bits = 0;
    for (uint64_t i = 0; i < n; i++)
        bits += len[m[i]];
    CHECK(rc == WP_LANES_OK && c.ntiles == tr * tc && c.nwords == c.offsets[c.ntiles] &&
              c.nwords * 32 >= bits && c.nwords * 32 < bits + 32ull * 32 * c.ntiles,
          "%llu x %llu weights (%s): encoded, %llu tiles, %llu words for %llu bits of codes",
          (unsigned long long)rows, (unsigned long long)weights, wps == 2 ? "4-bit pairs" : "6-bit codes",
          (unsigned long long)c.ntiles, (unsigned long long)c.nwords, (unsigned long long)bits);

    uint8_t *ref = malloc(n + 1), *fast = malloc(n + 1);
    memset(ref, 0xee, n + 1);
    memset(fast, 0xdd, n + 1);
    int rr = decode(&c, &s, len, 1, ref);
    int rf = decode(&c, &s, len, 0, fast);
    CHECK(rr == WP_LANES_OK && memcmp(ref, m, n) == 0, "  reference decoder (limit compare) restores every symbol");
    CHECK(rf == WP_LANES_OK && memcmp(fast, m, n) == 0, "  fast decoder (lookup table) restores every symbol");

    /* Tiles alone: every other tile's words and lane counts replaced by
     * garbage. */
    wp_huf_table tab;
    wp_huf_lut *lut = malloc(sizeof *lut);
    wp_huf_table_init(&tab, len, 256, WP_HUF_LEN);
    wp_huf_lut_init(lut, len, 256, WP_HUF_LEN);
    uint64_t pick[3] = {0, c.ntiles / 2, c.ntiles - 1};
    int alone = 1;
    uint32_t *junk = malloc(c.nwords * sizeof *junk + 4);
    uint8_t *junk_lw = malloc(32 * c.ntiles);
    uint8_t *tile = malloc(64 * 256);
    for (int p = 0; p < 3; p++) {
        uint64_t t = pick[p], r0, c0;
        uint32_t h, w;
        wp_lanes_tile_rect(&s, t, &r0, &c0, &h, &w);
        for (uint64_t i = 0; i < c.nwords; i++)
            junk[i] = (uint32_t)rng();
        for (uint64_t i = 0; i < 32 * c.ntiles; i++)
            junk_lw[i] = (uint8_t)rng();
        uint64_t a = c.offsets[t], b = c.offsets[t + 1];
        memcpy(junk + a, c.words + a, (b - a) * sizeof *junk);
        memcpy(junk_lw + 32 * t, c.lane_words + 32 * t, 32);
        for (int dec = 0; dec < 2; dec++) {
            memset(tile, 0xcc, 64 * 256);
            rc = dec ? wp_lanes_decode_tile(junk, c.nwords, c.offsets, junk_lw, &s, lut, t, tile, w)
                     : wp_lanes_decode_tile_ref(junk, c.nwords, c.offsets, junk_lw, &s, &tab, t, tile, w);
            if (rc != WP_LANES_OK)
                alone = 0;
            for (uint32_t r = 0; r < h; r++)
                if (memcmp(tile + (uint64_t)r * w, m + (r0 + r) * s.row_sym + c0, w))
                    alone = 0;
        }
    }
    CHECK(alone, "  tiles %llu, %llu, %llu decode alone (both decoders) among garbage words and lane counts",
          (unsigned long long)pick[0], (unsigned long long)pick[1], (unsigned long long)pick[2]);
    free(tile);
    free(junk);
    free(junk_lw);
    free(lut);
    free(ref);
    free(fast);
    free(m);
    coded_free(&c);
}

static void test_shapes(void)
{
    static const uint64_t rows[] = {1, 63, 64, 65};
    static const uint64_t weights[] = {32, 256, 288, 4096};
    for (int wps = 2; wps >= 1; wps--)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                round_trip(rows[i], weights[j], wps);
    round_trip(130, 4096, 2);
    round_trip(129, 544, 1);
}

static void test_geometry(void)
{
    wp_lanes_shape s = {65, 144, 128};          /* 65 rows x 288 weights as pairs */
    uint64_t r0, c0;
    uint32_t h, w;
    CHECK(wp_lanes_ntiles(&s) == 4, "65 x 288 weights as pairs: 2 x 2 tiles");
    CHECK(wp_lanes_tile_rect(&s, 1, &r0, &c0, &h, &w) == 0 && r0 == 0 && c0 == 128 && h == 64 && w == 16,
          "  tile 1: rows 0..63, symbols 128..143 (h 64, w 16)");
    CHECK(wp_lanes_tile_rect(&s, 2, &r0, &c0, &h, &w) == 0 && r0 == 64 && c0 == 0 && h == 1 && w == 128,
          "  tile 2: row 64, symbols 0..127 (h 1, w 128)");
    CHECK(wp_lanes_tile_rect(&s, 3, &r0, &c0, &h, &w) == 0 && h == 1 && w == 16, "  tile 3: h 1, w 16");
    CHECK(wp_lanes_tile_rect(&s, 4, &r0, &c0, &h, &w) == WP_LANES_EINVAL, "  tile 4 does not exist");
    wp_lanes_shape bad = {1, 1, 257}, zero = {0, 4096, 256};
    CHECK(!wp_lanes_shape_ok(&bad) && wp_lanes_ntiles(&bad) == 0, "tile_sym 257 is not a shape");
    CHECK(wp_lanes_shape_ok(&zero) && wp_lanes_ntiles(&zero) == 0, "0 rows: a valid shape with no tiles");
    /* 2^32 x 2^31 symbols, 2^63 > 2^62: no shape (untested before: a mutation test's find) */
    wp_lanes_shape huge = {1ull << 32, 1ull << 31, 128};
    CHECK(!wp_lanes_shape_ok(&huge) && wp_lanes_ntiles(&huge) == 0, "2^32 rows x 2^31 symbols is not a shape");
}

/* The byte layout, by hand. Code: symbol 0 = "0", 1 = "10", 2 = "11". */
static void test_layout(void)
{
    uint8_t len[256] = {0};
    len[0] = 1;
    len[1] = 2;
    len[2] = 2;
    /* 3 rows x 3 symbols: lane 0 = rows 0 and 1, lane 1 = row 2. */
    const uint8_t m[9] = {1, 2, 0, 0, 1, 1, 2, 2, 2};
    wp_lanes_shape s = {3, 3, 256};
    uint32_t words[64], off[3];
    uint8_t lw[64];
    uint64_t nw = 0;
    memset(lw, 0xee, sizeof lw);
    int rc = wp_lanes_encode(m, &s, len, words, 64, off, lw, &nw);
    int rest0 = 1;
    for (int k = 2; k < 32; k++)
        rest0 &= lw[k] == 0;
    CHECK(rc == 0 && nw == 2 && off[0] == 0 && off[1] == 2 && lw[0] == 1 && lw[1] == 1 && rest0,
          "3 x 3 matrix: one tile, lane counts 1 1 0..0, 2 words (no padding words)");
    /* lane 0: 10 11 0 | 0 10 10 = 1011001010, left-justified */
    CHECK(words[0] == 0xB2800000u, "  word 0 = lane 0 = 1011001010... = 0xB2800000 (got 0x%08X)", words[0]);
    /* lane 1: 11 11 11 */
    CHECK(words[1] == 0xFC000000u, "  word 1 = lane 1 = 111111... = 0xFC000000 (got 0x%08X)", words[1]);

    /* 2 rows x 20 symbols of "11": lane 0 needs 80 bits = 3 words. */
    uint8_t m2[40];
    memset(m2, 2, sizeof m2);
    wp_lanes_shape s2 = {2, 20, 256};
    rc = wp_lanes_encode(m2, &s2, len, words, 2, off, lw, &nw);
    CHECK(rc == WP_LANES_ESPACE && nw == 3 && lw[0] == 3 && lw[1] == 0,
          "2 x 20 symbols of 2 bits: 3 words needed, 2 too few (ESPACE), counts still set");
    rc = wp_lanes_encode(m2, &s2, len, words, 3, off, lw, &nw);
    CHECK(rc == 0 && off[1] == 3 && words[0] == 0xFFFFFFFFu && words[1] == 0xFFFFFFFFu && words[2] == 0xFFFF0000u,
          "  one active lane: its words are consecutive, FFFFFFFF FFFFFFFF FFFF0000");

    /* 4 rows x 20: lane 0 = 40 x "11" (3 words), lane 1 = 20 x "10" then
     * 20 x "0" (60 bits, 2 words): groups [L0 L1] [L0 L1] [L0]. */
    uint8_t m4[80];
    memset(m4, 2, 40);
    memset(m4 + 40, 1, 20);
    memset(m4 + 60, 0, 20);
    wp_lanes_shape s4 = {4, 20, 256};
    rc = wp_lanes_encode(m4, &s4, len, words, 64, off, lw, &nw);
    CHECK(rc == 0 && nw == 5 && off[1] == 5 && lw[0] == 3 && lw[1] == 2 && lw[2] == 0 && words[0] == 0xFFFFFFFFu &&
              words[1] == 0xAAAAAAAAu && words[2] == 0xFFFFFFFFu && words[3] == 0xAA000000u &&
              words[4] == 0xFFFF0000u,
          "lanes of 3 and 2 words: FFFFFFFF AAAAAAAA | FFFFFFFF AA000000 | FFFF0000");

    /* Two tiles across: 1 row x 300 symbols, tile_sym 256. */
    uint8_t m3[300];
    memset(m3, 0, sizeof m3);
    m3[256] = 1;
    wp_lanes_shape s3 = {1, 300, 256};
    uint32_t w3[16];
    rc = wp_lanes_encode(m3, &s3, len, w3, 16, off, lw, &nw);
    CHECK(rc == 0 && off[1] == 8 && off[2] == 10 && nw == 10 && lw[0] == 8 && lw[32] == 2 && lw[33] == 0 &&
              w3[7] == 0 && w3[8] == 0x80000000u && w3[9] == 0,
          "1 x 300 zeros (1 bit each) but a 1 at 256: tiles of 8 and 2 words, tile 1 starts 10..., offsets in words");
}

/* ---- an independent construction of the layout --------------------------
 * Per-lane bit streams written one bit at a time, then interleaved by the
 * definition of lanes.h: group i = word i of every lane with W_k > i, in
 * increasing k. */

typedef struct {
    uint32_t w[32][WP_LANE_MAX_WORDS + 1];
    uint32_t nbits[32];
} lane_set;

static void put_bit(lane_set *ls, int k, int bit)
{
    uint32_t n = ls->nbits[k]++;
    if (n % 32 == 0)
        ls->w[k][n / 32] = 0;
    ls->w[k][n / 32] |= (uint32_t)bit << (31 - n % 32);
}

/* Appends the tile's ragged interleave to out; returns its words. */
static uint64_t interleave(const lane_set *ls, const uint8_t W[32], uint32_t *out)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < WP_LANE_MAX_WORDS; i++)
        for (int k = 0; k < 32; k++)
            if (W[k] > i)
                out[n++] = ls->w[k][i];
    return n;
}

/* Splits tile words back into lanes with counts W. */
static void deinterleave(const uint32_t *tw, const uint8_t W[32], lane_set *ls)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < WP_LANE_MAX_WORDS; i++)
        for (int k = 0; k < 32; k++)
            if (W[k] > i)
                ls->w[k][i] = tw[n++];
}

static int check_independent(const uint8_t *m, const wp_lanes_shape *s, const uint8_t *len)
{
    uint16_t codes[256];
    wp_huf_codes(len, 256, codes);
    coded c;
    if (encode(m, s, len, &c))
        return 0;
    lane_set *ls = malloc(sizeof *ls);
    uint32_t *mine = malloc(c.nwords * 4 + 4);
    uint64_t n = 0;
    int ok = c.offsets[0] == 0;
    for (uint64_t t = 0; t < c.ntiles; t++) {
        uint64_t r0, c0;
        uint32_t h, w;
        wp_lanes_tile_rect(s, t, &r0, &c0, &h, &w);
        memset(ls->nbits, 0, sizeof ls->nbits);
        for (uint32_t r = 0; r < h; r++)
            for (uint32_t col = 0; col < w; col++) {
                uint8_t sy = m[(r0 + r) * s->row_sym + c0 + col];
                for (int b = len[sy] - 1; b >= 0; b--)
                    put_bit(ls, (int)r / 2, codes[sy] >> b & 1);
            }
        uint8_t W[32];
        for (int k = 0; k < 32; k++)
            W[k] = (uint8_t)((ls->nbits[k] + 31) / 32);
        ok &= !memcmp(W, c.lane_words + 32 * t, 32);
        if (n + interleave(ls, W, mine + n) > c.nwords)
            return 0;
        n += interleave(ls, W, mine + n);
        ok &= c.offsets[t + 1] == n;
    }
    ok &= n == c.nwords && !memcmp(mine, c.words, n * 4);
    free(mine);
    free(ls);
    coded_free(&c);
    return ok;
}

static void test_independent(void)
{
    /* Row r draws from a distribution that depends on r, so lanes differ
     * in length and the groups shrink at many depths. */
    static const struct { uint64_t rows, row_sym; uint32_t tile_sym; } sh[] = {
        {64, 128, 128}, {65, 40, 128}, {130, 300, 256}, {7, 256, 256}, {64, 1, 1}};
    int all = 1;
    for (int q = 0; q < 5; q++) {
        wp_lanes_shape s = {sh[q].rows, sh[q].row_sym, sh[q].tile_sym};
        uint64_t n = s.rows * s.row_sym;
        uint8_t *m = malloc(n), len[256];
        for (uint64_t i = 0; i < n; i++) {
            uint64_t r = i / s.row_sym;
            m[i] = (uint8_t)(rng() % 4 < r % 4 ? bell(6) : rng() % 3);
        }
        lengths_of(m, n, len);
        all &= check_independent(m, &s, len);
        free(m);
    }
    CHECK(all, "5 shapes with lanes of many lengths: words, lane counts and offsets equal an independent "
               "bit-by-bit construction of the ragged interleave");
}

static void test_special_matrices(void)
{
    /* One-symbol matrix: 1 bit per symbol. */
    wp_lanes_shape s = {65, 128, 128};
    uint8_t *m = malloc(65 * 128), len[256], out[65 * 128];
    memset(m, 0x77, 65 * 128);
    lengths_of(m, 65 * 128, len);
    coded c;
    int rc = encode(m, &s, len, &c);
    CHECK(rc == 0 && len[0x77] == 1 && c.offsets[1] == 256 && c.offsets[2] == 260 && c.lane_words[0] == 8 &&
              c.lane_words[32] == 4 && c.lane_words[33] == 0,
          "one-symbol 65 x 256-weight matrix: 1 bit a symbol, 32 lanes of 8 words, then one lane of 4");
    CHECK(decode(&c, &s, len, 1, out) == 0 && !memcmp(out, m, sizeof out) && decode(&c, &s, len, 0, out) == 0 &&
              !memcmp(out, m, sizeof out),
          "  both decoders restore it");
    coded_free(&c);
    free(m);

    /* All 256 pair symbols, uniform: 8 bits each. */
    wp_lanes_shape u = {64, 128, 128};
    uint8_t *mu = malloc(64 * 128), *ou = malloc(64 * 128);
    for (int i = 0; i < 64 * 128; i++)
        mu[i] = (uint8_t)(i * 37 + i / 128);
    lengths_of(mu, 64 * 128, len);
    rc = encode(mu, &u, len, &c);
    int all8 = 1;
    for (int i = 0; i < 256; i++)
        all8 &= len[i] == 8;
    CHECK(rc == 0 && all8 && c.nwords == 64 * 32, "all 256 pair symbols, equally often: 8 bits each, 64 x 32 words");
    CHECK(decode(&c, &u, len, 1, ou) == 0 && !memcmp(ou, mu, 64 * 128) && decode(&c, &u, len, 0, ou) == 0 &&
              !memcmp(ou, mu, 64 * 128),
          "  both decoders restore it");
    coded_free(&c);

    /* A 2^-20 symbol forces 11-bit codes; the table comes from a larger
     * histogram than the matrix, as when one table codes many tiles. */
    uint64_t h[256] = {0};
    for (int i = 0; i < 20; i++)
        h[i] = (uint64_t)1 << (19 - i);
    h[20] = 1;
    wp_huf_lengths(h, 256, 11, len);
    for (int i = 0; i < 64 * 128; i++)
        mu[i] = (uint8_t)(i % 97 == 0 ? 20 : i % 13 == 0 ? 19 : bell(2));
    rc = encode(mu, &u, len, &c);
    CHECK(rc == 0 && len[20] == 11 && len[19] == 11, "matrix with the 2^-20 symbol (11-bit codes) encoded");
    CHECK(decode(&c, &u, len, 1, ou) == 0 && !memcmp(ou, mu, 64 * 128) && decode(&c, &u, len, 0, ou) == 0 &&
              !memcmp(ou, mu, 64 * 128),
          "  both decoders restore it");
    mu[5] = 200;
    uint64_t nw;
    CHECK(wp_lanes_encode(mu, &u, len, NULL, 0, c.offsets, c.lane_words, &nw) == WP_LANES_ENOCODE,
          "a symbol without a code: ENOCODE");
    CHECK(wp_lanes_encode(mu, &u, len, NULL, 0, c.offsets, NULL, &nw) == WP_LANES_EINVAL,
          "encode without a lane-count array: EINVAL");
    coded_free(&c);

    /* Longest possible lane: 2 x 256 symbols of 15-bit codes = 240 words. */
    uint8_t l15[256];
    for (int i = 0; i < 15; i++)
        l15[i] = (uint8_t)(i + 1);
    l15[15] = 15;
    memset(l15 + 16, 0, 240);
    wp_lanes_shape s15 = {2, 256, 256};
    uint8_t *m15 = malloc(512), *o15 = malloc(512);
    memset(m15, 15, 512);
    rc = encode(m15, &s15, l15, &c);
    CHECK(rc == 0 && c.lane_words[0] == WP_LANE_MAX_WORDS && c.nwords == WP_LANE_MAX_WORDS &&
              wp_lanes_decode(c.words, c.nwords, c.offsets, c.lane_words, &s15, l15, 15, 1, o15) == 0 &&
              !memcmp(o15, m15, 512) &&
              wp_lanes_decode(c.words, c.nwords, c.offsets, c.lane_words, &s15, l15, 15, 0, o15) == 0 &&
              !memcmp(o15, m15, 512),
          "2 rows x 256 symbols of 15-bit codes: one lane of 240 words (the limit), both decoders restore it");
    coded_free(&c);
    free(m15);
    free(o15);
    free(mu);
    free(ou);

    /* Empty matrix. */
    wp_lanes_shape e = {0, 128, 128};
    uint32_t off[1] = {7};
    uint8_t lw0[1];
    uint64_t nwe = 9;
    CHECK(wp_lanes_encode(NULL, &e, len, NULL, 0, off, lw0, &nwe) == 0 && off[0] == 0 && nwe == 0 &&
              wp_lanes_decode(NULL, 0, off, lw0, &e, len, 11, 0, NULL) == 0,
          "0-row matrix: no tiles, 0 words, decodes");
}

/* Both decoders on (words, offsets, lane counts): their results, -99 if
 * they disagree (result or symbols). */
static int both(const uint32_t *words, uint64_t nwords, const uint32_t *off, const uint8_t *lw,
                const wp_lanes_shape *s, const uint8_t *len, uint8_t *a, uint8_t *b, uint64_t n)
{
    int rr = wp_lanes_decode(words, nwords, off, lw, s, len, 11, 1, a);
    int rf = wp_lanes_decode(words, nwords, off, lw, s, len, 11, 0, b);
    if (rr != rf || (rr == 0 && memcmp(a, b, n)))
        return -99;
    return rr;
}

/* Re-encode the (single) tile of c from edited lanes: counts W, lanes ls. */
static uint64_t rebuild(const lane_set *ls, const uint8_t W[32], uint32_t *words, uint32_t *off, uint8_t *lw)
{
    uint64_t n = interleave(ls, W, words);
    memcpy(lw, W, 32);
    off[0] = 0;
    off[1] = (uint32_t)n;
    return n;
}

/* Corrupt input: never a crash, both decoders agree, a payload that still
 * decodes gives a different matrix (the coding is canonical). */
static void test_corrupt(void)
{
    wp_lanes_shape s = {5, 40, 128};            /* 5 rows x 80 weights as pairs */
    uint8_t *m = make_matrix(5, 40, 2), len[256], a[200], b[200];
    lengths_of(m, 200, len);
    coded c;
    encode(m, &s, len, &c);
    int agree = 1, changed = 1, nerr = 0, nok = 0;
    for (uint64_t i = 0; i < c.nwords; i++) {
        for (int bit = 0; bit < 32; bit++) {
            c.words[i] ^= 1u << bit;
            int r = both(c.words, c.nwords, c.offsets, c.lane_words, &s, len, a, b, 200);
            if (r != WP_LANES_OK && r != WP_LANES_ECORRUPT)
                agree = 0;
            if (r == WP_LANES_OK) {
                nok++;
                if (!memcmp(a, m, 200))
                    changed = 0;
            } else {
                nerr++;
            }
            c.words[i] ^= 1u << bit;
        }
    }
    CHECK(agree, "every single-bit flip of a %llu-word payload: both decoders give the same result",
          (unsigned long long)c.nwords);
    CHECK(changed, "  no flip decodes to the original matrix (%d rejected, %d decode to another)", nerr, nok);
    int allbad = 1;
    for (int i = 0; i < 32; i++)
        for (int bit = 0; bit < 8; bit++) {
            c.lane_words[i] ^= (uint8_t)(1u << bit);
            allbad &= both(c.words, c.nwords, c.offsets, c.lane_words, &s, len, a, b, 200) == WP_LANES_ECORRUPT;
            c.lane_words[i] ^= (uint8_t)(1u << bit);
        }
    CHECK(allbad, "every single-bit flip of the 32 lane counts: ECORRUPT from both decoders");

    CHECK(both(c.words, c.nwords - 1, c.offsets, c.lane_words, &s, len, a, b, 200) == WP_LANES_ECORRUPT,
          "truncated payload (one word short): ECORRUPT");
    wp_huf_table tab;
    wp_huf_table_init(&tab, len, 256, 11);
    CHECK(wp_lanes_decode_tile_ref(c.words, c.nwords - 1, c.offsets, c.lane_words, &s, &tab, 0, a, 40) ==
              WP_LANES_ECORRUPT,
          "tile decoded alone from a payload shorter than its offsets: ECORRUPT");
    uint32_t saved = c.offsets[1];
    c.offsets[1] = saved + 1;
    CHECK(both(c.words, c.nwords, c.offsets, c.lane_words, &s, len, a, b, 200) == WP_LANES_ECORRUPT,
          "offset past the payload: ECORRUPT");
    uint32_t *pad = calloc(c.nwords + 1, sizeof *pad);
    memcpy(pad, c.words, c.nwords * sizeof *pad);
    CHECK(both(pad, c.nwords + 1, c.offsets, c.lane_words, &s, len, a, b, 200) == WP_LANES_ECORRUPT,
          "offsets one word longer than the lane counts (zero word appended): ECORRUPT");
    free(pad);
    c.offsets[1] = 0;
    CHECK(both(c.words, c.nwords, c.offsets, c.lane_words, &s, len, a, b, 200) == WP_LANES_ECORRUPT,
          "tile of 0 words: ECORRUPT");
    c.offsets[1] = UINT32_MAX;
    CHECK(wp_lanes_decode_tile_ref(c.words, c.nwords, c.offsets, c.lane_words, &s, &tab, 0, a, 40) ==
              WP_LANES_ECORRUPT,
          "offset 2^32-1 words: ECORRUPT, nothing read");
    c.offsets[1] = saved;
    CHECK(wp_lanes_decode_tile_ref(c.words, c.nwords, c.offsets, c.lane_words, &s, &tab, 0, a, 39) ==
                  WP_LANES_EINVAL &&
              wp_lanes_decode_tile_ref(c.words, c.nwords, c.offsets, c.lane_words, &s, &tab, 1, a, 40) ==
                  WP_LANES_EINVAL &&
              wp_lanes_decode_tile_ref(c.words, c.nwords, c.offsets, NULL, &s, &tab, 0, a, 40) == WP_LANES_EINVAL &&
              wp_lanes_decode(c.words, c.nwords, c.offsets, NULL, &s, len, 11, 0, a) == WP_LANES_EINVAL,
          "out_stride below the tile width, a tile past the end or no lane counts: EINVAL");

    /* Edited lanes, offsets and lane counts kept consistent: only the
     * canonical-form rules can reject them. */
    lane_set *ls = malloc(sizeof *ls), *e = malloc(sizeof *e);
    uint8_t W[32], W2[32];
    memcpy(W, c.lane_words, 32);
    deinterleave(c.words, W, ls);
    uint32_t *ew = calloc(32 * WP_LANE_MAX_WORDS + 8, 4), eoff[2];
    uint8_t elw[32];
    uint64_t en;
    /* lanes 0, 1: rows 0-1, 2-3; lane 2: row 4; lanes 3..31: no rows */
    en = rebuild(ls, W, ew, eoff, elw);
    CHECK(en == c.nwords && !memcmp(ew, c.words, en * 4) &&
              both(ew, en, eoff, elw, &s, len, a, b, 200) == 0 && !memcmp(a, m, 200),
          "lanes split and re-interleaved by the test give the encoder's payload back");

    memcpy(W2, W, 32);
    *e = *ls;
    e->w[0][W2[0]++] = 0;
    en = rebuild(e, W2, ew, eoff, elw);
    CHECK(both(ew, en, eoff, elw, &s, len, a, b, 200) == WP_LANES_ECORRUPT,
          "a lane one zero word longer than needed (counts, offsets consistent): ECORRUPT");

    memcpy(W2, W, 32);
    *e = *ls;
    e->w[3][0] = 0;
    W2[3] = 1;
    en = rebuild(e, W2, ew, eoff, elw);
    CHECK(both(ew, en, eoff, elw, &s, len, a, b, 200) == WP_LANES_ECORRUPT,
          "a lane without rows given one zero word: ECORRUPT");

    memcpy(W2, W, 32);
    *e = *ls;
    W2[2] = 0;
    en = rebuild(e, W2, ew, eoff, elw);
    CHECK(both(ew, en, eoff, elw, &s, len, a, b, 200) == WP_LANES_ECORRUPT,
          "a lane with a row given no words: ECORRUPT");

    memcpy(W2, W, 32);
    *e = *ls;
    e->w[0][W2[0]++] = 0;
    W2[1]--;
    en = rebuild(e, W2, ew, eoff, elw);
    CHECK(en == c.nwords && both(ew, en, eoff, elw, &s, len, a, b, 200) == WP_LANES_ECORRUPT,
          "a word moved from lane 1's count to lane 0's (same total): ECORRUPT");

    memcpy(W2, W, 32);
    *e = *ls;
    e->w[2][W2[2] - 1] |= 1u;   /* lowest bit of the last word: padding unless the lane fills it */
    en = rebuild(e, W2, ew, eoff, elw);
    int r = both(ew, en, eoff, elw, &s, len, a, b, 200);
    int lastbit = r == WP_LANES_ECORRUPT || (r == WP_LANES_OK && memcmp(a, m, 200));
    CHECK(lastbit, "a set padding bit at the end of lane 2: ECORRUPT (or another matrix if no padding)");

    memcpy(W2, W, 32);
    W2[0] = WP_LANE_MAX_WORDS + 1;
    W2[1] = 0;
    W2[2] = 0;
    for (int k = 3; k < 32; k++)
        W2[k] = 0;
    memset(e, 0, sizeof *e);
    en = rebuild(e, W2, ew, eoff, elw);
    CHECK(both(ew, en, eoff, elw, &s, len, a, b, 200) == WP_LANES_ECORRUPT,
          "a lane count of 241 words: ECORRUPT");

    uint8_t badlen[256];
    memcpy(badlen, len, 256);
    for (int i = 0; i < 256; i++)
        if (!badlen[i]) {
            badlen[i] = 1;
            break;
        }
    CHECK(wp_lanes_decode(c.words, c.nwords, c.offsets, c.lane_words, &s, badlen, 11, 0, a) == WP_LANES_ECORRUPT,
          "a length table with Kraft sum > 1: ECORRUPT");

    /* Garbage payloads: random words under valid offsets and counts. */
    int safe = 1;
    for (int trial = 0; trial < 300; trial++) {
        for (uint64_t i = 0; i < c.nwords; i++)
            c.words[i] = trial & 1 ? (uint32_t)rng() : (uint32_t)(rng() & rng() & rng());
        int rr = both(c.words, c.nwords, c.offsets, c.lane_words, &s, len, a, b, 200);
        if (rr != WP_LANES_OK && rr != WP_LANES_ECORRUPT)
            safe = 0;
    }
    CHECK(safe, "300 random payloads: both decoders agree, OK or ECORRUPT, no crash");

    /* Garbage lane counts with offsets matching their sum and random words. */
    safe = 1;
    int passed_counts = 0;
    for (int trial = 0; trial < 2000; trial++) {
        for (int k = 0; k < 32; k++) {
            unsigned v = (unsigned)rng();
            W2[k] = (uint8_t)(trial % 4 == 0 ? v : k < 3 ? 1 + v % 12 : (v % 16 == 0 ? v % 3 : 0));
        }
        uint64_t sum = 0;
        for (int k = 0; k < 32; k++)
            sum += W2[k];
        uint32_t *gw = malloc(sum ? sum * 4 : 1);   /* exactly sum words */
        for (uint64_t i = 0; i < sum; i++)
            gw[i] = trial & 1 ? (uint32_t)rng() : (uint32_t)(rng() & rng() & rng());
        eoff[0] = 0;
        eoff[1] = (uint32_t)sum;
        int rr = both(gw, sum, eoff, W2, &s, len, a, b, 200);
        free(gw);
        if (rr != WP_LANES_OK && rr != WP_LANES_ECORRUPT)
            safe = 0;
        int counts_ok = 1;
        for (int k = 0; k < 32; k++)
            counts_ok &= (W2[k] == 0) == (k >= 3) && W2[k] <= WP_LANE_MAX_WORDS;
        passed_counts += counts_ok;
    }
    CHECK(safe, "2000 random lane counts (%d plausible) over random words: both decoders agree, no crash",
          passed_counts);
    free(ew);
    free(ls);
    free(e);
    coded_free(&c);
    free(m);
}

/* ---- the fast decoder's lockstep paths --------------------------------- */

/* Both decoders at length limit L; -99 if they disagree. */
static int both_l(const coded *c, const wp_lanes_shape *s, const uint8_t *len, int L, uint8_t *a, uint8_t *b,
                  uint64_t n)
{
    int rr = wp_lanes_decode(c->words, c->nwords, c->offsets, c->lane_words, s, len, L, 1, a);
    int rf = wp_lanes_decode(c->words, c->nwords, c->offsets, c->lane_words, s, len, L, 0, b);
    if (rr != rf || (rr == 0 && memcmp(a, b, n)))
        return -99;
    return rr;
}

/* flips random single bits of c's words (each undone after); 1 if both
 * decoders agree on every one. *nbad counts the ECORRUPT ones. */
static int flips_agree(coded *c, const wp_lanes_shape *s, const uint8_t *len, int L, uint8_t *a, uint8_t *b,
                       uint64_t n, int trials, int *nbad)
{
    int agree = 1;
    *nbad = 0;
    for (int t = 0; t < trials; t++) {
        uint64_t i = rng() % c->nwords;
        uint32_t bit = 1u << (rng() % 32);
        c->words[i] ^= bit;
        int r = both_l(c, s, len, L, a, b, n);
        c->words[i] ^= bit;
        agree &= r == WP_LANES_OK || r == WP_LANES_ECORRUPT;
        *nbad += r == WP_LANES_ECORRUPT;
    }
    return agree;
}

/* Tiles of 64 rows go through the fast decoder's lockstep groups (at L = 11
 * its own instantiation, at other L the generic one, with an incomplete
 * code the checked one); partial tiles through its one-lane path. */
static void test_fast_paths(void)
{
    /* 96 x 456 weights as pairs: tiles 64 x 128, 64 x 100, 32 x 128, 32 x 100. */
    wp_lanes_shape s = {96, 228, 128};
    const uint64_t n = 96 * 228;
    uint8_t *m = make_matrix(96, 228, 2), len[256], *a = malloc(n), *b = malloc(n);
    uint64_t cnt[256] = {0};
    for (uint64_t i = 0; i < n; i++)
        cnt[m[i]]++;
    static const int Ls[4] = {11, 8, 13, 15};
    for (int li = 0; li < 4; li++) {
        int L = Ls[li], nbad;
        coded c;
        int ok = wp_huf_lengths(cnt, 256, L, len) == 0 && encode(m, &s, len, &c) == 0;
        ok = ok && both_l(&c, &s, len, L, a, b, n) == WP_LANES_OK && !memcmp(b, m, n);
        CHECK(ok, "96 x 456 weights, L = %d: both decoders restore the matrix", L);
        int agree = flips_agree(&c, &s, len, L, a, b, n, 1500, &nbad);
        CHECK(agree && nbad > 0, "  1500 random bit flips: both decoders agree (%d ECORRUPT)", nbad);
        coded_free(&c);
    }

    /* An incomplete code: 16 symbols of 5 bits (Kraft sum 1/2). */
    for (uint64_t i = 0; i < n; i++)
        m[i] = (uint8_t)(rng() % 16);
    memset(len, 0, 256);
    memset(len, 5, 16);
    coded c;
    int nbad, ok = encode(m, &s, len, &c) == 0 && both_l(&c, &s, len, 11, a, b, n) == WP_LANES_OK &&
                   !memcmp(b, m, n);
    CHECK(ok, "incomplete code (16 symbols x 5 bits): both decoders restore the matrix");
    int agree = flips_agree(&c, &s, len, 11, a, b, n, 1500, &nbad);
    CHECK(agree && nbad > 0, "  1500 random bit flips (peeks without a code): both agree (%d ECORRUPT)", nbad);
    coded_free(&c);

    /* One full tile: words moved between lane counts (the sum kept), up to
     * a lane of one word whose codes run far past it. */
    wp_lanes_shape s1 = {64, 128, 128};
    const uint64_t n1 = 64 * 128;
    uint8_t *m1 = make_matrix(64, 128, 2);
    lengths_of(m1, n1, len);
    encode(m1, &s1, len, &c);
    uint8_t W[32];
    memcpy(W, c.lane_words, 32);
    agree = 1;
    int nok = 0;
    for (int t = 0; t < 400; t++) {
        int k1 = (int)(rng() % 32), k2 = (int)(rng() % 32);
        int d = t < 32 ? W[k1] - 1 : (int)(rng() % 4) + 1;
        memcpy(c.lane_words, W, 32);
        if (t < 32)
            k1 = t, k2 = (t + 1) % 32;
        if (k1 == k2 || W[k1] <= d || W[k2] + d > WP_LANE_MAX_WORDS)
            continue;
        c.lane_words[k1] = (uint8_t)(W[k1] - d);
        c.lane_words[k2] = (uint8_t)(W[k2] + d);
        int r = both_l(&c, &s1, len, 11, a, b, n1);
        agree &= r == WP_LANES_ECORRUPT || r == WP_LANES_OK;
        nok += r == WP_LANES_OK;
    }
    CHECK(agree && nok == 0, "64 x 256 weights: 400 lane-count transfers (lane k cut to one word, ...): both "
                             "decoders agree, ECORRUPT");
    memcpy(c.lane_words, W, 32);
    agree = 1;
    for (int t = 0; t < 300; t++) {
        for (uint64_t i = 0; i < c.nwords; i++)
            c.words[i] = t & 1 ? (uint32_t)rng() : (uint32_t)(rng() & rng() & rng());
        int r = both_l(&c, &s1, len, 11, a, b, n1);
        agree &= r == WP_LANES_ECORRUPT || r == WP_LANES_OK;
    }
    CHECK(agree, "  300 random payloads under its lane counts: both decoders agree");
    coded_free(&c);
    free(m1);
    free(m);
    free(a);
    free(b);

    /* A partial tile's one-lane path at L = 9, nearly every code 9 bits long: a buffer refill
       holds >= 57 bits, 6 codes; 7 (64 / 9) read past it (only L = 11 tested it, where
       57 / 11 = 64 / 11: a mutation test's find) */
    wp_lanes_shape s2 = {2, 256, 256};
    uint8_t m2[512], a2[512], b2[512];
    for (int i = 0; i < 256; i++)
        cnt[i] = 1 + 50 * (i % 7 == 0);
    for (int i = 0; i < 512; i++)
        m2[i] = (uint8_t)rng();
    int ok2 = wp_huf_lengths(cnt, 256, 9, len) == 0 && encode(m2, &s2, len, &c) == 0 &&
              both_l(&c, &s2, len, 9, a2, b2, 512) == WP_LANES_OK && !memcmp(b2, m2, 512);
    CHECK(ok2, "2 x 256 weights of 9-bit codes, L = 9: both decoders restore the matrix");
    coded_free(&c);
}

/* What a bundle cannot hold, refused before any decode: a lane of more than
 * WP_LANE_MAX_WORDS words whose counts agree with the offsets (the lane groups'
 * arrays overran the stack), and a first offset other than 0. Untested before
 * (a mutation test's finds). */
static void test_limits(void)
{
    wp_lanes_shape s = {64, 128, 128};
    uint8_t *m = make_matrix(64, 128, 2), len[256], a[64 * 128], b[64 * 128];
    lengths_of(m, 64 * 128, len);
    coded c;
    int ok = encode(m, &s, len, &c) == 0;
    /* lane 0 made 255 words long, the words it gains appended (zeros) */
    const uint64_t more = 255u - c.lane_words[0];
    uint32_t *w = calloc(c.nwords + more, sizeof *w);
    memcpy(w, c.words, c.nwords * sizeof *w);
    const uint8_t keep = c.lane_words[0];
    c.lane_words[0] = 255;
    c.offsets[1] += (uint32_t)more;
    CHECK(ok && wp_lanes_decode(w, c.nwords + more, c.offsets, c.lane_words, &s, len, 11, 1, a) == WP_LANES_ECORRUPT &&
              wp_lanes_decode(w, c.nwords + more, c.offsets, c.lane_words, &s, len, 11, 0, b) == WP_LANES_ECORRUPT,
          "a lane of 255 words (above %d), the offsets agreeing: ECORRUPT from both decoders", WP_LANE_MAX_WORDS);
    c.lane_words[0] = keep;
    c.offsets[1] -= (uint32_t)more;
    /* one word put before the payload, every offset moved on by it */
    w[0] = 0xDEADBEEFu;
    memcpy(w + 1, c.words, c.nwords * sizeof *w);
    uint32_t off[2] = {c.offsets[0] + 1, c.offsets[1] + 1};
    CHECK(ok && both(w, c.nwords + 1, off, c.lane_words, &s, len, a, b, sizeof a) == WP_LANES_ECORRUPT,
          "a first offset of 1 (a word before the payload): ECORRUPT from both decoders");
    CHECK(ok && both(w + 1, c.nwords, c.offsets, c.lane_words, &s, len, a, b, sizeof a) == WP_LANES_OK &&
              !memcmp(b, m, sizeof b),
          "  the same payload from offset 0 decodes");
    free(w);
    coded_free(&c);
    free(m);
}

/* ---- size: ragged layout against the Huffman bits and the padded one ---- */

/* A peaked symbol: a 4-bit code (pairs) or a 6-bit one drawn from a
 * discretised Laplace-like distribution around the middle, as quantized
 * weights are. */
static unsigned peaked(int bits)
{
    int mid = 1 << (bits - 1), m = (1 << bits) - 1;
    double u = (double)((rng() >> 11) + 1) / 9007199254740993.0;  /* (0, 1] */
    double x = -log(u) * (bits == 4 ? 1.6 : 5.0);
    int v = mid + ((rng() & 1) ? (int)x : -(int)x - 1);
    return (unsigned)(v < 0 ? 0 : v > m ? m : v);
}

static void overhead(const char *what, uint64_t rows, uint64_t weights, int wps)
{
    wp_lanes_shape s = {rows, weights / wps, (uint32_t)(WP_TILE_WEIGHTS / wps)};
    uint64_t n = s.rows * s.row_sym;
    uint8_t *m = malloc(n), len[256];
    uint64_t cnt[256] = {0};
    for (uint64_t i = 0; i < n; i++) {
        m[i] = wps == 2 ? (uint8_t)(peaked(4) << 4 | peaked(4)) : (uint8_t)peaked(6);
        cnt[m[i]]++;
    }
    wp_huf_lengths(cnt, 256, WP_HUF_LEN, len);
    coded c;
    int rc = encode(m, &s, len, &c);
    uint64_t bits = wp_huf_coded_bits(cnt, len, 256), N = c.ntiles;
    double huf = (double)bits / 8, ent = wp_huf_entropy(cnt, 256) * (double)n / 8;
    double ragged = 4.0 * (double)c.nwords + 32.0 * (double)N + 4.0 * (double)(N + 1);
    double padded = 4.0 * (double)padded_words(&c) + 4.0 * (double)(N + 1);
    double meta = 4.0 * (double)(N + 1) + 32.0 * (double)N;
    uint8_t *o = malloc(n);
    int back = rc == 0 && decode(&c, &s, len, 0, o) == 0 && !memcmp(o, m, n);
    printf("# %s: %llu symbols, entropy %.0f B, Huffman %.0f B (%.3f bits/weight)\n", what, (unsigned long long)n,
           ent, huf, 8 * huf / (double)(rows * weights));
    printf("#   ragged: payload %.0f B (+%.3f%% over Huffman bits) + counts/offsets %.0f B = %.0f B (+%.3f%%)\n",
           4.0 * (double)c.nwords, 100 * (4.0 * (double)c.nwords / huf - 1), meta, ragged,
           100 * (ragged / huf - 1));
    printf("#   padded (old): payload %.0f B + offsets %.0f B = %.0f B (+%.3f%% over Huffman bits)\n",
           4.0 * (double)padded_words(&c), 4.0 * (double)(N + 1), padded, 100 * (padded / huf - 1));
    CHECK(back && ragged <= 1.01 * huf + meta + 128,
          "%s: ragged payload + lane counts + offsets <= 1.01 x Huffman bits + counts + offsets + 128 "
          "(%.0f <= %.0f), %.2f%% smaller than padded",
          what, ragged, 1.01 * huf + meta + 128, 100 * (1 - ragged / padded));
    free(o);
    free(m);
    coded_free(&c);
}

static void test_overhead(void)
{
    overhead("256 x 4096 weights, peaked 4-bit pairs", 256, 4096, 2);
    overhead("256 x 4096 weights, peaked 6-bit codes", 256, 4096, 1);
}

static void test_speed(void)
{
    wp_lanes_shape s = {4096, 2048, 128};
    uint64_t n = s.rows * s.row_sym;
    uint8_t *m = malloc(n), len[256], *o = malloc(n);
    uint64_t cnt[256] = {0};
    for (uint64_t i = 0; i < n; i++) {
        m[i] = (uint8_t)(peaked(4) << 4 | peaked(4));
        cnt[m[i]]++;
    }
    wp_huf_lengths(cnt, 256, WP_HUF_LEN, len);
    coded c;
    int rc = encode(m, &s, len, &c);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rf = decode(&c, &s, len, 0, o);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("# fast decoder: 4096 x 4096 weights (%llu pair symbols) in %.3f s: %.1f M symbols/s, %.1f M weights/s\n",
           (unsigned long long)n, sec, (double)n / sec / 1e6, 2.0 * (double)n / sec / 1e6);
    CHECK(rc == 0 && rf == 0 && !memcmp(o, m, n), "4096 x 4096 pair matrix: fast decoder restores it");
    coded_free(&c);
    free(m);
    free(o);
}

int main(void)
{
    test_geometry();
    test_layout();
    test_independent();
    test_shapes();
    test_special_matrices();
    test_corrupt();
    test_fast_paths();
    test_limits();
    test_overhead();
    test_speed();
    return tap_done();
}
