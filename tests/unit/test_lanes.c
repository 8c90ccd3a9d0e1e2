/*
 * test_lanes.c - tiles and lanes of a coded matrix (lib/lanes.c).
 *
 * Round trips through both decoders on short, tall and ragged shapes, a
 * hand-checked byte layout, tiles decoded alone among garbage, and corrupt
 * or truncated input (every single-bit flip of a small matrix).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "huffman.h"
#include "lanes.h"
#include "tap.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

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
    uint64_t nwords, ntiles;
} coded;

static int encode(const uint8_t *m, const wp_lanes_shape *s, const uint8_t *len, coded *c)
{
    c->ntiles = wp_lanes_ntiles(s);
    c->offsets = malloc((c->ntiles + 1) * sizeof *c->offsets);
    int rc = wp_lanes_encode(m, s, len, NULL, 0, c->offsets, &c->nwords);
    if (rc)
        return rc;
    c->words = malloc(c->nwords * sizeof *c->words + 4);
    return wp_lanes_encode(m, s, len, c->words, c->nwords, c->offsets, &c->nwords);
}

static void coded_free(coded *c)
{
    free(c->words);
    free(c->offsets);
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
    CHECK(rc == WP_LANES_OK && c.ntiles == tr * tc && c.nwords == 32ull * c.offsets[c.ntiles] &&
              c.nwords * 32 >= bits,
          "%llu x %llu weights (%s): encoded, %llu tiles, %llu words for %llu bits of codes",
          (unsigned long long)rows, (unsigned long long)weights, wps == 2 ? "4-bit pairs" : "6-bit codes",
          (unsigned long long)c.ntiles, (unsigned long long)c.nwords, (unsigned long long)bits);

    uint8_t *ref = malloc(n + 1), *fast = malloc(n + 1);
    memset(ref, 0xee, n + 1);
    memset(fast, 0xdd, n + 1);
    int rr = wp_lanes_decode(c.words, c.nwords, c.offsets, &s, len, WP_HUF_LEN, 1, ref);
    int rf = wp_lanes_decode(c.words, c.nwords, c.offsets, &s, len, WP_HUF_LEN, 0, fast);
    CHECK(rr == WP_LANES_OK && memcmp(ref, m, n) == 0, "  reference decoder (limit compare) restores every symbol");
    CHECK(rf == WP_LANES_OK && memcmp(fast, m, n) == 0, "  fast decoder (lookup table) restores every symbol");

    /* Tiles alone: every other tile's words replaced by garbage. */
    wp_huf_table tab;
    wp_huf_lut *lut = malloc(sizeof *lut);
    wp_huf_table_init(&tab, len, 256, WP_HUF_LEN);
    wp_huf_lut_init(lut, len, 256, WP_HUF_LEN);
    uint64_t pick[3] = {0, c.ntiles / 2, c.ntiles - 1};
    int alone = 1;
    uint32_t *junk = malloc(c.nwords * sizeof *junk + 4);
    uint8_t *tile = malloc(64 * 256);
    for (int p = 0; p < 3; p++) {
        uint64_t t = pick[p], r0, c0;
        uint32_t h, w;
        wp_lanes_tile_rect(&s, t, &r0, &c0, &h, &w);
        for (uint64_t i = 0; i < c.nwords; i++)
            junk[i] = (uint32_t)rng();
        uint64_t a = 32ull * c.offsets[t], b = 32ull * c.offsets[t + 1];
        memcpy(junk + a, c.words + a, (b - a) * sizeof *junk);
        for (int dec = 0; dec < 2; dec++) {
            memset(tile, 0xcc, 64 * 256);
            rc = dec ? wp_lanes_decode_tile(junk, c.nwords, c.offsets, &s, lut, t, tile, w)
                     : wp_lanes_decode_tile_ref(junk, c.nwords, c.offsets, &s, &tab, t, tile, w);
            if (rc != WP_LANES_OK)
                alone = 0;
            for (uint32_t r = 0; r < h; r++)
                if (memcmp(tile + (uint64_t)r * w, m + (r0 + r) * s.row_sym + c0, w))
                    alone = 0;
        }
    }
    CHECK(alone, "  tiles %llu, %llu, %llu decode alone (both decoders) among garbage words",
          (unsigned long long)pick[0], (unsigned long long)pick[1], (unsigned long long)pick[2]);
    free(tile);
    free(junk);
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
    uint32_t words[64], off[2];
    uint64_t nw = 0;
    int rc = wp_lanes_encode(m, &s, len, words, 64, off, &nw);
    CHECK(rc == 0 && nw == 32 && off[0] == 0 && off[1] == 1, "3 x 3 matrix: one tile of depth 1 (32 words)");
    /* lane 0: 10 11 0 | 0 10 10 = 1011001010, left-justified */
    CHECK(words[0] == 0xB2800000u, "  word 0 = lane 0 = 1011001010... = 0xB2800000 (got 0x%08X)", words[0]);
    /* lane 1: 11 11 11 */
    CHECK(words[1] == 0xFC000000u, "  word 1 = lane 1 = 111111... = 0xFC000000 (got 0x%08X)", words[1]);
    int zero = 1;
    for (int k = 2; k < 32; k++)
        zero &= words[k] == 0;
    CHECK(zero, "  words 2..31 (lanes without rows) are zero");

    /* 2 rows x 20 symbols of "11": lane 0 needs 80 bits = 3 words, depth 3. */
    uint8_t m2[40];
    memset(m2, 2, sizeof m2);
    wp_lanes_shape s2 = {2, 20, 256};
    rc = wp_lanes_encode(m2, &s2, len, words, 64, off, &nw);
    CHECK(rc == WP_LANES_ESPACE && nw == 96, "2 x 20 symbols of 2 bits: 96 words needed, 64 too few (ESPACE)");
    uint32_t big[96];
    rc = wp_lanes_encode(m2, &s2, len, big, 96, off, &nw);
    CHECK(rc == 0 && off[1] == 3 && big[0] == 0xFFFFFFFFu && big[32] == 0xFFFFFFFFu && big[64] == 0xFFFF0000u &&
              big[1] == 0 && big[33] == 0 && big[65] == 0,
          "  lane 0 word i at 32*i: FFFFFFFF FFFFFFFF FFFF0000; lane 1 zero");

    /* Two tiles across: 1 row x 300 symbols, tile_sym 256. */
    uint8_t m3[300];
    memset(m3, 0, sizeof m3);
    m3[256] = 1;
    wp_lanes_shape s3 = {1, 300, 256};
    uint32_t w3[10 * 32], off3[3];
    rc = wp_lanes_encode(m3, &s3, len, w3, 10 * 32, off3, &nw);
    CHECK(rc == 0 && off3[1] == 8 && off3[2] == 10 && nw == 320 && w3[7 * 32] == 0 && w3[8 * 32] == 0x80000000u &&
              w3[9 * 32] == 0,
          "  1 x 300 zeros (1 bit each) but a 1 at 256: tiles of depth 8 and 2, tile 1 starts 10...");
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
    CHECK(rc == 0 && len[0x77] == 1 && c.offsets[1] == 8 && c.offsets[2] == 12,
          "one-symbol 65 x 256-weight matrix: 1 bit a symbol, depths 8 (256 bits/lane) and 4");
    CHECK(wp_lanes_decode(c.words, c.nwords, c.offsets, &s, len, 11, 1, out) == 0 && !memcmp(out, m, sizeof out) &&
              wp_lanes_decode(c.words, c.nwords, c.offsets, &s, len, 11, 0, out) == 0 && !memcmp(out, m, sizeof out),
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
    CHECK(rc == 0 && all8 && c.nwords == 64 * 32, "all 256 pair symbols, equally often: 8 bits each, 64 groups");
    CHECK(wp_lanes_decode(c.words, c.nwords, c.offsets, &u, len, 11, 1, ou) == 0 && !memcmp(ou, mu, 64 * 128) &&
              wp_lanes_decode(c.words, c.nwords, c.offsets, &u, len, 11, 0, ou) == 0 && !memcmp(ou, mu, 64 * 128),
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
    CHECK(wp_lanes_decode(c.words, c.nwords, c.offsets, &u, len, 11, 1, ou) == 0 && !memcmp(ou, mu, 64 * 128) &&
              wp_lanes_decode(c.words, c.nwords, c.offsets, &u, len, 11, 0, ou) == 0 && !memcmp(ou, mu, 64 * 128),
          "  both decoders restore it");
    mu[5] = 200;
    uint64_t nw;
    CHECK(wp_lanes_encode(mu, &u, len, NULL, 0, c.offsets, &nw) == WP_LANES_ENOCODE,
          "a symbol without a code: ENOCODE");
    coded_free(&c);
    free(mu);
    free(ou);

    /* Empty matrix. */
    wp_lanes_shape e = {0, 128, 128};
    uint32_t off[1] = {7};
    uint64_t nwe = 9;
    CHECK(wp_lanes_encode(NULL, &e, len, NULL, 0, off, &nwe) == 0 && off[0] == 0 && nwe == 0 &&
              wp_lanes_decode(NULL, 0, off, &e, len, 11, 0, NULL) == 0,
          "0-row matrix: no tiles, 0 words, decodes");
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
            int rr = wp_lanes_decode(c.words, c.nwords, c.offsets, &s, len, 11, 1, a);
            int rf = wp_lanes_decode(c.words, c.nwords, c.offsets, &s, len, 11, 0, b);
            if (rr != rf || (rr != WP_LANES_OK && rr != WP_LANES_ECORRUPT) || (rr == 0 && memcmp(a, b, 200)))
                agree = 0;
            if (rr == WP_LANES_OK) {
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

    CHECK(wp_lanes_decode(c.words, c.nwords - 1, c.offsets, &s, len, 11, 0, a) == WP_LANES_ECORRUPT &&
              wp_lanes_decode(c.words, c.nwords - 1, c.offsets, &s, len, 11, 1, a) == WP_LANES_ECORRUPT,
          "truncated payload (one word short): ECORRUPT");
    wp_huf_table tab;
    wp_huf_table_init(&tab, len, 256, 11);
    CHECK(wp_lanes_decode_tile_ref(c.words, c.nwords - 32, c.offsets, &s, &tab, 0, a, 40) == WP_LANES_ECORRUPT,
          "tile decoded alone from a payload shorter than its offsets: ECORRUPT");
    uint32_t saved = c.offsets[1];
    c.offsets[1] = saved + 1;
    CHECK(wp_lanes_decode(c.words, c.nwords, c.offsets, &s, len, 11, 0, a) == WP_LANES_ECORRUPT,
          "offset past the payload: ECORRUPT");
    uint64_t longer = c.nwords + 32;
    uint32_t *pad = calloc(longer, sizeof *pad);
    memcpy(pad, c.words, c.nwords * sizeof *pad);
    CHECK(wp_lanes_decode(pad, longer, c.offsets, &s, len, 11, 0, a) == WP_LANES_ECORRUPT &&
              wp_lanes_decode(pad, longer, c.offsets, &s, len, 11, 1, a) == WP_LANES_ECORRUPT,
          "tile depth one group deeper than its longest lane (zero words): ECORRUPT");
    free(pad);
    c.offsets[1] = 0;
    CHECK(wp_lanes_decode(c.words, c.nwords, c.offsets, &s, len, 11, 1, a) == WP_LANES_ECORRUPT,
          "tile of depth 0: ECORRUPT");
    c.offsets[1] = UINT32_MAX;
    CHECK(wp_lanes_decode_tile_ref(c.words, c.nwords, c.offsets, &s, &tab, 0, a, 40) == WP_LANES_ECORRUPT,
          "offset 2^32-1 groups: ECORRUPT, nothing read");
    c.offsets[1] = saved;
    CHECK(wp_lanes_decode_tile_ref(c.words, c.nwords, c.offsets, &s, &tab, 0, a, 39) == WP_LANES_EINVAL &&
              wp_lanes_decode_tile_ref(c.words, c.nwords, c.offsets, &s, &tab, 1, a, 40) == WP_LANES_EINVAL,
          "out_stride below the tile width or a tile past the end: EINVAL");

    uint8_t badlen[256];
    memcpy(badlen, len, 256);
    for (int i = 0; i < 256; i++)
        if (!badlen[i]) {
            badlen[i] = 1;
            break;
        }
    CHECK(wp_lanes_decode(c.words, c.nwords, c.offsets, &s, badlen, 11, 0, a) == WP_LANES_ECORRUPT,
          "a length table with Kraft sum > 1: ECORRUPT");

    /* Garbage payloads: random words under valid offsets. */
    int safe = 1;
    for (int trial = 0; trial < 300; trial++) {
        for (uint64_t i = 0; i < c.nwords; i++)
            c.words[i] = trial & 1 ? (uint32_t)rng() : (uint32_t)(rng() & rng() & rng());
        int rr = wp_lanes_decode(c.words, c.nwords, c.offsets, &s, len, 11, 1, a);
        int rf = wp_lanes_decode(c.words, c.nwords, c.offsets, &s, len, 11, 0, b);
        if (rr != rf || (rr != WP_LANES_OK && rr != WP_LANES_ECORRUPT))
            safe = 0;
    }
    CHECK(safe, "300 random payloads: both decoders agree, OK or ECORRUPT, no crash");
    coded_free(&c);
    free(m);
}

int main(void)
{
    test_geometry();
    test_layout();
    test_shapes();
    test_special_matrices();
    test_corrupt();
    return tap_done();
}
