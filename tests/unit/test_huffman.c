/*
 * test_huffman.c - length-limited canonical Huffman (lib/huffman.c).
 *
 * Optimality is checked against brute force: every assignment of lengths
 * 1..L to the used symbols of small alphabets, keeping those with Kraft sum
 * <= 1, and the least total coded bits.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "huffman.h"
#include "tap.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) { return tap_xorshift(&rng_state); }

static double kraft(const uint8_t *len, int n)
{
    double k = 0;
    for (int i = 0; i < n; i++)
        if (len[i])
            k += ldexp(1.0, -len[i]);
    return k;
}

static int max_length(const uint8_t *len, int n)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        if (len[i] > m)
            m = len[i];
    return m;
}

/* Least total bits over all length assignments 1..L of the used symbols. */
static uint64_t brute_force(const uint64_t *counts, int n, int L)
{
    int used[8], nu = 0;
    for (int i = 0; i < n; i++)
        if (counts[i])
            used[nu++] = i;
    if (nu == 0)
        return 0;
    if (nu == 1)
        return counts[used[0]];          /* one symbol: length 1 */
    int len[8];
    for (int i = 0; i < nu; i++)
        len[i] = 1;
    uint64_t best = UINT64_MAX;
    for (;;) {
        uint32_t k = 0;
        uint64_t bits = 0;
        for (int i = 0; i < nu; i++) {
            k += 1u << (L - len[i]);
            bits += counts[used[i]] * (uint64_t)len[i];
        }
        if (k <= (1u << L) && bits < best)
            best = bits;
        int i = 0;
        while (i < nu && len[i] == L)
            len[i++] = 1;
        if (i == nu)
            break;
        len[i]++;
    }
    return best;
}

/* Prefix-free: no code is a prefix of another. */
static int prefix_free(const uint8_t *len, const uint16_t *code, int n)
{
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            if (a == b || !len[a] || !len[b] || len[a] > len[b])
                continue;
            if ((code[b] >> (len[b] - len[a])) == code[a])
                return 0;
        }
    return 1;
}

/* Plain (unlimited) Huffman: total coded bits (sum of merged weights) and
 * the tree depth. O(n^2), independent of package-merge. */
static int huffman_unlimited(const uint64_t *counts, int n, uint64_t *bits)
{
    uint64_t w[256];
    int d[256], m = 0;
    for (int i = 0; i < n; i++)
        if (counts[i]) {
            w[m] = counts[i];
            d[m++] = 0;
        }
    *bits = 0;
    while (m > 1) {
        int a = 0, b = 1;
        if (w[b] < w[a]) { a = 1; b = 0; }
        for (int i = 2; i < m; i++) {
            if (w[i] < w[a]) { b = a; a = i; }
            else if (w[i] < w[b]) b = i;
        }
        w[a] += w[b];
        *bits += w[a];
        d[a] = (d[a] > d[b] ? d[a] : d[b]) + 1;
        w[b] = w[m - 1];
        d[b] = d[m - 1];
        m--;
    }
    return m ? d[0] : 0;
}

static void test_vs_huffman(void)
{
    /* Random 256-symbol histograms: where plain Huffman's depth fits in L,
     * package-merge must give the same total; where it does not, no less. */
    for (int L = 11; L <= 15; L += 4) {
        int same = 1, more = 1, nsame = 0, nmore = 0;
        for (int trial = 0; trial < 40; trial++) {
            uint64_t c[256];
            uint8_t len[256];
            int bits = 2 + trial % 30;      /* counts 1 .. 2^bits: deeper trees as bits grows */
            for (int i = 0; i < 256; i++)
                c[i] = 1 + (rng() >> (64 - bits));
            uint64_t hb;
            int depth = huffman_unlimited(c, 256, &hb);
            wp_huf_lengths(c, 256, L, len);
            uint64_t pm = wp_huf_coded_bits(c, len, 256);
            if (depth <= L) {
                same &= pm == hb;
                nsame++;
            } else {
                more &= pm >= hb;
                nmore++;
            }
        }
        CHECK(same && nsame > 0, "L=%d, random 256-symbol histograms, Huffman depth <= L: "
              "package-merge total = Huffman total (%d cases)", L, nsame);
        CHECK(more, "L=%d,   depth > L: package-merge total >= Huffman total (%d cases)", L, nmore);
    }
}

static void test_brute_force(void)
{
    for (int L = 3; L <= 5; L++) {
        for (int n = 2; n <= 7; n++) {
            int ok = 1, kraft_ok = 1, limit_ok = 1, trials = 24;
            for (int trial = 0; trial < trials; trial++) {
                uint64_t counts[8];
                for (int i = 0; i < n; i++) {
                    /* Skewed counts (1 .. 2^20), some symbols unused. */
                    uint64_t r = rng();
                    counts[i] = (r & 7) == 0 ? 0 : 1 + ((r >> 8) & ((1u << (r >> 40) % 21) - 1));
                }
                uint8_t len[8];
                if (wp_huf_lengths(counts, n, L, len) != 0) {
                    ok = 0;
                    continue;
                }
                if (wp_huf_coded_bits(counts, len, n) != brute_force(counts, n, L))
                    ok = 0;
                if (kraft(len, n) > 1.0)
                    kraft_ok = 0;
                for (int i = 0; i < n; i++)
                    if (len[i] > L || (counts[i] == 0) != (len[i] == 0))
                        limit_ok = 0;
            }
            CHECK(ok, "n=%d L=%d: total coded bits equal the brute-force optimum (%d alphabets)", n, L, trials);
            CHECK(kraft_ok && limit_ok, "n=%d L=%d: Kraft sum <= 1, lengths <= L, unused symbols get no code", n, L);
        }
    }
    /* A known case: counts 1,1,2,4,8 unlimited give lengths 4,4,3,2,1 (30 bits);
     * limited to 3 the optimum is 3,3,3,3,1 ... check against brute force. */
    uint64_t c[5] = {1, 1, 2, 4, 8};
    uint8_t len[5];
    wp_huf_lengths(c, 5, 4, len);
    CHECK(len[0] == 4 && len[1] == 4 && len[2] == 3 && len[3] == 2 && len[4] == 1,
          "counts 1,1,2,4,8 with L=4: lengths 4,4,3,2,1 (%d,%d,%d,%d,%d)", len[0], len[1], len[2], len[3], len[4]);
    CHECK(wp_huf_coded_bits(c, len, 5) == 30, "  and 30 coded bits");
    wp_huf_lengths(c, 5, 3, len);
    CHECK(wp_huf_coded_bits(c, len, 5) == brute_force(c, 5, 3) && wp_huf_coded_bits(c, len, 5) == 32,
          "counts 1,1,2,4,8 with L=3: 32 bits, the brute-force optimum (lengths %d,%d,%d,%d,%d)",
          len[0], len[1], len[2], len[3], len[4]);
    /* ties: equally short codes, but the lengths are one function of the counts (huffman.h's
       promise, which checks of the cost alone let go: a mutation test's find) */
    static const struct {
        uint64_t c[6];
        int n, L;
        uint8_t want[6];
    } ties[] = {
        {{1, 1, 1}, 3, 3, {2, 2, 1}},
        {{2, 4, 2, 2, 0}, 5, 4, {2, 2, 2, 2, 0}},
        {{3, 3, 4, 2, 2, 1}, 6, 4, {3, 2, 2, 3, 3, 3}},
    };
    for (size_t t = 0; t < sizeof ties / sizeof *ties; t++) {
        uint8_t got[6] = {0};
        const int rc = wp_huf_lengths(ties[t].c, ties[t].n, ties[t].L, got);
        CHECK(rc == 0 && !memcmp(got, ties[t].want, (size_t)ties[t].n),
              "ties, case %zu: lengths %d,%d,%d,%d,%d,%d", t, got[0], got[1], got[2], got[3], got[4], got[5]);
    }
}

static void test_edge_alphabets(void)
{
    uint64_t c[256] = {0};
    uint8_t len[256];
    memset(len, 9, sizeof len);
    CHECK(wp_huf_lengths(c, 256, 11, len) == 0 && max_length(len, 256) == 0, "empty alphabet: all lengths 0");
    c[77] = 12345;
    memset(len, 9, sizeof len);
    CHECK(wp_huf_lengths(c, 256, 11, len) == 0 && len[77] == 1 && kraft(len, 256) == 0.5,
          "one-symbol alphabet: length 1 for the symbol, 0 elsewhere");
    uint16_t code[256];
    CHECK(wp_huf_codes(len, 256, code) == 0 && code[77] == 0, "  its canonical code is 0");
    wp_huf_table t;
    int l = 0;
    wp_huf_table_init(&t, len, 256, 11);
    CHECK(wp_huf_decode_peek(&t, 0x3ff, &l) == 77 && l == 1 && wp_huf_decode_peek(&t, 0x400, &l) == -1,
          "  peek 0xxxxxxxxxx decodes it in 1 bit, peek 1xxxxxxxxxx is no code");
    c[3] = 1;
    CHECK(wp_huf_lengths(c, 256, 11, len) == 0 && len[77] == 1 && len[3] == 1, "two symbols: lengths 1 and 1");
    const uint64_t three[3] = {1, 2, 3};
    CHECK(wp_huf_lengths(three, 3, 1, len) == -1, "three symbols cannot have L=1: error");
    CHECK(wp_huf_lengths(c, 257, 11, len) == -1 && wp_huf_lengths(c, 256, 16, len) == -1 &&
          wp_huf_lengths(c, 256, 0, len) == -1, "nsym > 256 or L outside 1..15: error");
    uint64_t big[2] = {(uint64_t)1 << 60, 1};
    CHECK(wp_huf_lengths(big, 2, 11, len) == -1, "counts summing past 2^59: error, no overflow");
    uint64_t full[256];
    for (int i = 0; i < 256; i++)
        full[i] = 1;
    CHECK(wp_huf_lengths(full, 256, 8, len) == 0 && max_length(len, 256) == 8 && len[0] == 8 && len[255] == 8,
          "256 equal counts with L=8: all lengths 8");
}

/* Pair symbols of two 4-bit codes with a bell-shaped distribution. */
static void pair_counts(uint64_t *counts)
{
    static const uint64_t code4[16] = {1, 3, 12, 40, 110, 260, 520, 880,
                                       1000, 870, 510, 250, 100, 35, 10, 2};
    for (int a = 0; a < 16; a++)
        for (int b = 0; b < 16; b++)
            counts[a << 4 | b] = code4[a] * code4[b];
}

static void test_pairs(void)
{
    uint64_t c[256];
    uint8_t len[256];
    uint16_t code[256];
    pair_counts(c);
    CHECK(wp_huf_lengths(c, 256, WP_HUF_LEN, len) == 0, "all 256 pair symbols: lengths built");
    int all = 1;
    for (int i = 0; i < 256; i++)
        all &= len[i] >= 1 && len[i] <= 11;
    CHECK(all, "all 256 pair symbols have a code of 1..11 bits (max %d)", max_length(len, 256));
    CHECK(kraft(len, 256) == 1.0, "the code is complete: Kraft sum exactly 1");
    CHECK(wp_huf_validate(len, 256, 11) == 0, "it passes validation");
    double h = wp_huf_entropy(c, 256);
    uint64_t total = 0;
    for (int i = 0; i < 256; i++)
        total += c[i];
    double bps = (double)wp_huf_coded_bits(c, len, 256) / (double)total;
    /* The tails (p down to 2^-24) pay for the 11-bit limit: 0.06 b/symbol here. */
    CHECK(bps >= h && bps < h + 0.12, "L=11: coded bits/symbol %.4f within [H, H + 0.12), H = %.4f", bps, h);
    uint8_t unl[256];
    wp_huf_lengths(c, 256, 15, unl);
    uint64_t hb = 0;
    int hdepth = huffman_unlimited(c, 256, &hb);
    CHECK(wp_huf_coded_bits(c, unl, 256) >= hb && wp_huf_coded_bits(c, unl, 256) < hb + hb / 1000,
          "L=15 (Huffman depth %d): within 0.1%% above plain Huffman's %llu bits", hdepth, (unsigned long long)hb);
    CHECK(wp_huf_coded_bits(c, len, 256) >= wp_huf_coded_bits(c, unl, 256),
          "limit 11 costs no less than limit 15 (%llu vs %llu bits)",
          (unsigned long long)wp_huf_coded_bits(c, len, 256), (unsigned long long)wp_huf_coded_bits(c, unl, 256));
    int mono = 1;
    for (int a = 0; a < 256; a++)
        for (int b = 0; b < 256; b++)
            if (c[a] > c[b] && len[a] > len[b])
                mono = 0;
    CHECK(mono, "a more frequent symbol never has a longer code");
    CHECK(wp_huf_codes(len, 256, code) == 0 && prefix_free(len, code, 256), "canonical codes are prefix-free");
}

static void test_forced_limit(void)
{
    /* Fibonacci counts: unlimited Huffman would reach length 29; the rarest
     * symbol has probability about 2^-20 of the total. */
    uint64_t c[30];
    uint8_t len[30], unl[30];
    c[0] = 1;
    c[1] = 1;
    for (int i = 2; i < 30; i++)
        c[i] = c[i - 1] + c[i - 2];
    uint64_t total = 0;
    for (int i = 0; i < 30; i++)
        total += c[i];
    CHECK(total > (1u << 20) && total < (1u << 22), "Fibonacci histogram: rarest symbol has p = 1/%llu = 2^-%.2f",
          (unsigned long long)total, log2((double)total));
    int rc15 = wp_huf_lengths(c, 30, 15, unl), rc11 = wp_huf_lengths(c, 30, 11, len);
    uint64_t hb;
    int depth = huffman_unlimited(c, 30, &hb);
    CHECK(rc15 == 0 && depth == 29 && max_length(unl, 30) == 15 && wp_huf_coded_bits(c, unl, 30) == 5702867,
          "Huffman depth %d (%llu bits); L=15: max length 15, 5702867 bits", depth, (unsigned long long)hb);
    CHECK(rc11 == 0 && max_length(len, 30) == 11, "limit 11 is forced: max length %d", max_length(len, 30));
    CHECK(kraft(len, 30) == 1.0, "  Kraft sum exactly 1");
    CHECK(len[0] == 11 && len[1] == 11 && len[14] == 10 && len[28] == 2 && len[29] == 2,
          "  lengths 11 x14, 10, 9, 9, 8, 7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2");
    CHECK(wp_huf_coded_bits(c, len, 30) == 5705460 && hb == 5702853,
          "  5705460 bits at L=11 against 5702853 unlimited");

    /* Dyadic: counts 2^19 .. 2^0 and one more 1: total 2^20, last p = 2^-20.
     * Unlimited lengths 1..20, 20; L=11 caps them. */
    uint64_t dy[21];
    uint8_t dl[21];
    for (int i = 0; i < 20; i++)
        dy[i] = (uint64_t)1 << (19 - i);
    dy[20] = 1;
    int rcd = wp_huf_lengths(dy, 21, 11, dl);
    CHECK(rcd == 0 && max_length(dl, 21) == 11 && dl[20] == 11 && dl[0] == 1 && kraft(dl, 21) == 1.0,
          "dyadic histogram with a 2^-20 symbol: it gets 11 bits, the top symbol 1 bit, Kraft 1");

    /* One symbol at 2^-20 among the pair alphabet. */
    uint64_t p[256];
    uint8_t pl[256];
    pair_counts(p);
    p[0x0f] = 1;
    p[0xf0] = 1;
    uint64_t sum = 0;
    for (int i = 0; i < 256; i++)
        sum += p[i];
    int rcp = wp_huf_lengths(p, 256, 11, pl);
    CHECK(rcp == 0 && sum > (1u << 20) && pl[0x0f] <= 11 && pl[0xf0] <= 11 &&
              max_length(pl, 256) == 11,
          "two pair symbols of p = 2^-%.1f: codes of %d and %d bits, capped at 11", log2((double)sum), pl[0x0f], pl[0xf0]);
}

static void test_canonical(void)
{
    /* RFC 1951 section 3.2.2's example: ABCDEFGH with lengths 3,3,3,3,3,2,4,4
     * get codes 010,011,100,101,110,00,1110,1111. */
    const uint8_t len[8] = {3, 3, 3, 3, 3, 2, 4, 4};
    const uint16_t want[8] = {2, 3, 4, 5, 6, 0, 14, 15};
    uint16_t code[8];
    CHECK(wp_huf_codes(len, 8, code) == 0 && memcmp(code, want, sizeof want) == 0,
          "RFC 1951 example: codes 010 011 100 101 110 00 1110 1111");
    wp_huf_table t;
    CHECK(wp_huf_table_init(&t, len, 8, 4) == 0, "limit tables for it (L=4)");
    CHECK(t.first[2] == 0 && t.first[3] == 2 && t.first[4] == 14, "  first codes: len2 00, len3 010, len4 1110");
    CHECK(t.limit[1] == 0 && t.limit[2] == 4 && t.limit[3] == 14 && t.limit[4] == 16,
          "  left-justified limits 0, 4 (01xx), 14 (111x), 16");
    CHECK(t.offset[2] == 0 && t.offset[3] == 1 && t.offset[4] == 6 && t.symbols[0] == 5 && t.symbols[1] == 0 &&
              t.symbols[6] == 6 && t.symbols[7] == 7, "  canonical symbol list F A B C D E G H");
    int l;
    CHECK(wp_huf_decode_peek(&t, 0xb, &l) == 3 && l == 3, "  peek 1011 decodes D (101) in 3 bits");
    CHECK(wp_huf_decode_peek(&t, 0x1, &l) == 5 && l == 2, "  peek 0001 decodes F (00) in 2 bits");
}

static void test_decoder_tables(void)
{
    uint64_t c[256];
    uint8_t len[256];
    uint16_t code[256];
    pair_counts(c);
    c[0x0f] = 0;                                   /* a symbol without code */
    wp_huf_lengths(c, 256, 11, len);
    wp_huf_codes(len, 256, code);
    wp_huf_table t;
    static wp_huf_lut lut;
    CHECK(wp_huf_table_init(&t, len, 256, 11) == 0 && wp_huf_lut_init(&lut, len, 256, 11) == 0 && t.ncoded == 255,
          "limit tables and lookup table built (255 coded symbols)");
    int agree = 1;
    for (uint32_t peek = 0; peek < 2048; peek++) {
        int l = 0, s = wp_huf_decode_peek(&t, peek, &l);
        uint16_t e = lut.entry[peek];
        if (s < 0 ? e != 0 : (e != (uint16_t)(s | l << 8)))
            agree = 0;
    }
    CHECK(agree, "all 2048 peeks: limit comparison and lookup table agree");
    int every = 1;
    for (int s = 0; s < 256; s++) {
        if (!len[s])
            continue;
        uint32_t peek = (uint32_t)code[s] << (11 - len[s]) | (uint32_t)(rng() & ((1u << (11 - len[s])) - 1));
        int l = 0;
        if (wp_huf_decode_peek(&t, peek, &l) != s || l != len[s])
            every = 0;
    }
    CHECK(every, "every symbol's code followed by random bits decodes to it with its length");

    /* Incomplete code: 3 symbols of lengths 1, 2 leave 11xxxxxxxxx uncoded... */
    const uint8_t inc[3] = {1, 2, 0};
    wp_huf_table_init(&t, inc, 3, 11);
    int l;
    CHECK(wp_huf_decode_peek(&t, 0x600, &l) == -1 && wp_huf_decode_peek(&t, 0x5ff, &l) == 1 && l == 2,
          "incomplete code: peek 11... is no code, 10... is symbol 1");
}

static void test_validate(void)
{
    const uint8_t over[3] = {1, 1, 1}, deep[2] = {1, 12}, ok[4] = {1, 2, 3, 3}, inc[2] = {2, 2};
    CHECK(wp_huf_validate(over, 3, 11) == -1, "Kraft sum 3/2 rejected");
    CHECK(wp_huf_validate(deep, 2, 11) == -1, "length 12 > L = 11 rejected");
    CHECK(wp_huf_validate(ok, 4, 11) == 0, "lengths 1,2,3,3 (complete) accepted");
    CHECK(wp_huf_validate(inc, 2, 11) == 0, "lengths 2,2 (incomplete, Kraft 1/2) accepted");
    CHECK(wp_huf_validate(ok, 4, 0) == -1 && wp_huf_validate(ok, 4, 16) == -1 && wp_huf_validate(ok, 257, 11) == -1,
          "L outside 1..15 or nsym > 256 rejected");
    uint8_t t[256];
    wp_huf_table tab;
    static wp_huf_lut lut;
    memset(t, 11, sizeof t);
    CHECK(wp_huf_validate(t, 256, 11) == 0, "256 codes of 11 bits accepted (Kraft 1/8)");
    memset(t, 8, sizeof t);
    t[0] = 7;
    CHECK(wp_huf_validate(t, 256, 11) == -1 && wp_huf_table_init(&tab, t, 256, 11) == -1 &&
              wp_huf_lut_init(&lut, t, 256, 11) == -1 && wp_huf_codes(t, 256, (uint16_t[256]){0}) == -1,
          "255 x 8 bits + one 7-bit code (Kraft > 1) rejected by every builder");
}

static void test_accounting(void)
{
    uint64_t u[256], two[2] = {1, 1}, skew[2] = {3, 1};
    for (int i = 0; i < 256; i++)
        u[i] = 5;
    CHECK(fabs(wp_huf_entropy(u, 256) - 8.0) < 1e-12, "entropy of 256 equal counts: 8 bits");
    CHECK(fabs(wp_huf_entropy(two, 2) - 1.0) < 1e-12, "entropy of {1,1}: 1 bit");
    CHECK(fabs(wp_huf_entropy(skew, 2) - 0.8112781244591328) < 1e-12, "entropy of {3,1}: 0.811278 bits");
    CHECK(wp_huf_entropy(skew, 1) == 0 && wp_huf_entropy(u, 0) == 0, "entropy of one or no symbol: 0");
    const uint8_t len[2] = {1, 1};
    CHECK(wp_huf_coded_bits(skew, len, 2) == 4, "coded bits of {3,1} at 1 bit each: 4");
    uint64_t huge[1] = {UINT64_MAX / 2};
    const uint8_t l11[1] = {11};
    CHECK(wp_huf_coded_bits(huge, l11, 1) == UINT64_MAX, "coded bits saturate instead of overflowing");
}

int main(void)
{
    test_brute_force();
    test_vs_huffman();
    test_edge_alphabets();
    test_pairs();
    test_forced_limit();
    test_canonical();
    test_decoder_tables();
    test_validate();
    test_accounting();
    return tap_done();
}
