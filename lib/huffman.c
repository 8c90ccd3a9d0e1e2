/*
 * huffman.c - length-limited canonical Huffman codes (see huffman.h).
 *
 * Layers, top to bottom: code lengths by package-merge; validation of a
 * length table; canonical codes; the hardware unit's limit tables and the
 * fast lookup table; entropy accounting.
 */
#include "huffman.h"

#include <assert.h>
#include <math.h>
#include <string.h>

/* ---- code lengths: package-merge ------------------------------------------
 *
 * The coin-collector view (Larmore & Hirschberg 1990): each used symbol i has
 * one coin of each denomination 2^-1 .. 2^-L, of numismatic value counts[i].
 * A set of coins of total denomination n - 1 with least total value gives
 * the optimal lengths: the code length of symbol i is the number of its
 * coins in the set.
 *
 * Build lists from the smallest denomination up. list 0 (denomination 2^-L)
 * is the leaves sorted by weight; list j is the leaves merged with the
 * packages formed by pairing adjacent items of list j-1 (a package weighs the
 * sum of its pair). Take the first 2n - 2 items of list L-1; if p of them are
 * packages, the first 2p items of list L-2 are taken, and so on down. The
 * items taken in each list are a prefix of it, so the leaves taken in a list
 * are the m lightest leaves: each gains one bit of length. Only one flag per
 * item (package or leaf) needs keeping.
 */

#define HUF_MAX_ITEMS (2 * WP_HUF_MAX_SYMBOLS)

int wp_huf_lengths(const uint64_t *counts, int nsym, int max_len, uint8_t *lengths)
{
    if (nsym < 0 || nsym > WP_HUF_MAX_SYMBOLS || max_len < 1 || max_len > WP_HUF_MAX_LEN)
        return -1;
    if (nsym > 0 && (!counts || !lengths))
        return -1;

    /* The used symbols, sorted by (count, symbol): insertion sort, n <= 256. */
    int leaf[WP_HUF_MAX_SYMBOLS];
    int n = 0;
    uint64_t total = 0;
    for (int s = 0; s < nsym; s++) {
        lengths[s] = 0;
        if (counts[s] == 0)
            continue;
        if (counts[s] > ((uint64_t)1 << 59) - total)
            return -1;
        total += counts[s];
        int j = n++;
        while (j > 0 && counts[leaf[j - 1]] > counts[s]) {
            leaf[j] = leaf[j - 1];
            j--;
        }
        leaf[j] = s;
    }
    if (n == 0)
        return 0;
    if (n == 1) {
        lengths[leaf[0]] = 1;
        return 0;
    }
    if (n > (1 << max_len))
        return -1;

    static_assert(HUF_MAX_ITEMS >= 2 * WP_HUF_MAX_SYMBOLS - 1, "list size");
    uint64_t weight[2][HUF_MAX_ITEMS];               /* previous and current list */
    uint8_t is_pkg[WP_HUF_MAX_LEN][HUF_MAX_ITEMS];   /* per list, per item        */
    int len[WP_HUF_MAX_LEN];                         /* items in each list        */

    for (int i = 0; i < n; i++) {
        weight[0][i] = counts[leaf[i]];
        is_pkg[0][i] = 0;
    }
    len[0] = n;
    for (int j = 1; j < max_len; j++) {
        const uint64_t *prev = weight[(j - 1) & 1];
        uint64_t *cur = weight[j & 1];
        int npkg = len[j - 1] / 2, a = 0, b = 0, k = 0;
        while (a < n || b < npkg) {
            uint64_t pw = b < npkg ? prev[2 * b] + prev[2 * b + 1] : 0;
            if (b >= npkg || (a < n && counts[leaf[a]] <= pw)) {
                cur[k] = counts[leaf[a++]];
                is_pkg[j][k++] = 0;
            } else {
                cur[k] = pw;
                is_pkg[j][k++] = 1;
                b++;
            }
        }
        len[j] = k;
    }

    /* Walk back down: a prefix of each list is taken. */
    int take = 2 * n - 2;
    for (int j = max_len - 1; j >= 0; j--) {
        if (take > len[j])
            return -1;                              /* cannot happen for n <= 2^L */
        int m = 0, p = 0;
        for (int k = 0; k < take; k++) {
            if (is_pkg[j][k])
                p++;
            else
                m++;
        }
        for (int i = 0; i < m; i++)
            lengths[leaf[i]]++;
        take = 2 * p;
    }
    return 0;
}

/* ---- validation -------------------------------------------------------- */

int wp_huf_validate(const uint8_t *lengths, int nsym, int max_len)
{
    if (nsym < 0 || nsym > WP_HUF_MAX_SYMBOLS || max_len < 1 || max_len > WP_HUF_MAX_LEN)
        return -1;
    if (nsym > 0 && !lengths)
        return -1;
    /* Kraft sum in units of 2^-max_len: at most 256 * 2^14, no overflow. */
    uint32_t kraft = 0;
    for (int s = 0; s < nsym; s++) {
        if (lengths[s] > max_len)
            return -1;
        if (lengths[s])
            kraft += 1u << (max_len - lengths[s]);
    }
    return kraft <= (1u << max_len) ? 0 : -1;
}

/* ---- canonical codes --------------------------------------------------- */

/* count[l] and first[l] (RFC 1951 3.2.2 steps 1 and 2) for valid lengths. */
static void huf_first_codes(const uint8_t *lengths, int nsym, uint16_t *count, uint16_t *first)
{
    memset(count, 0, (WP_HUF_MAX_LEN + 1) * sizeof *count);
    for (int s = 0; s < nsym; s++)
        if (lengths[s])
            count[lengths[s]]++;
    uint32_t code = 0;
    first[0] = 0;
    for (int l = 1; l <= WP_HUF_MAX_LEN; l++) {
        code = (code + count[l - 1]) << 1;
        first[l] = (uint16_t)code;
    }
}

int wp_huf_codes(const uint8_t *lengths, int nsym, uint16_t *codes)
{
    if (wp_huf_validate(lengths, nsym, WP_HUF_MAX_LEN) != 0 || (nsym > 0 && !codes))
        return -1;
    uint16_t count[WP_HUF_MAX_LEN + 1], next[WP_HUF_MAX_LEN + 1];
    huf_first_codes(lengths, nsym, count, next);
    for (int s = 0; s < nsym; s++)
        codes[s] = lengths[s] ? next[lengths[s]]++ : 0;
    return 0;
}

/* ---- decoder tables ---------------------------------------------------- */

int wp_huf_table_init(wp_huf_table *t, const uint8_t *lengths, int nsym, int max_len)
{
    if (!t || wp_huf_validate(lengths, nsym, max_len) != 0)
        return -1;
    memset(t, 0, sizeof *t);
    t->max_len = max_len;
    huf_first_codes(lengths, nsym, t->count, t->first);
    uint16_t at = 0;
    for (int l = 1; l <= max_len; l++) {
        t->offset[l] = at;
        at += t->count[l];
        t->limit[l] = ((uint32_t)t->first[l] + t->count[l]) << (max_len - l);
    }
    t->ncoded = at;
    /* symbols[] in canonical order: by length, then by value. */
    uint16_t fill[WP_HUF_MAX_LEN + 1];
    memcpy(fill, t->offset, sizeof fill);
    for (int s = 0; s < nsym; s++)
        if (lengths[s])
            t->symbols[fill[lengths[s]]++] = (uint8_t)s;
    return 0;
}

int wp_huf_decode_peek(const wp_huf_table *t, uint32_t peek, int *len)
{
    const int L = t->max_len;
    for (int l = 1; l <= L; l++) {
        if (peek < t->limit[l]) {
            *len = l;
            return t->symbols[t->offset[l] + (peek >> (L - l)) - t->first[l]];
        }
    }
    return -1;
}

int wp_huf_lut_init(wp_huf_lut *lut, const uint8_t *lengths, int nsym, int max_len)
{
    if (!lut || wp_huf_validate(lengths, nsym, max_len) != 0)
        return -1;
    uint16_t codes[WP_HUF_MAX_SYMBOLS];
    wp_huf_codes(lengths, nsym, codes);
    lut->max_len = max_len;
    memset(lut->entry, 0, sizeof(uint16_t) << max_len);
    for (int s = 0; s < nsym; s++) {
        int l = lengths[s];
        if (!l)
            continue;
        uint32_t lo = (uint32_t)codes[s] << (max_len - l), hi = lo + (1u << (max_len - l));
        for (uint32_t p = lo; p < hi; p++)
            lut->entry[p] = (uint16_t)(s | (l << 8));
    }
    return 0;
}

/* ---- accounting -------------------------------------------------------- */

double wp_huf_entropy(const uint64_t *counts, int nsym)
{
    double total = 0, h = 0;
    for (int s = 0; s < nsym; s++)
        total += (double)counts[s];
    if (total <= 0)
        return 0;
    for (int s = 0; s < nsym; s++) {
        if (counts[s]) {
            double p = (double)counts[s] / total;
            h -= p * log2(p);
        }
    }
    return h > 0 ? h : 0;
}

uint64_t wp_huf_coded_bits(const uint64_t *counts, const uint8_t *lengths, int nsym)
{
    uint64_t bits = 0;
    for (int s = 0; s < nsym; s++) {
        if (!counts[s] || !lengths[s])
            continue;
        if (counts[s] > UINT64_MAX / lengths[s] || bits > UINT64_MAX - counts[s] * lengths[s])
            return UINT64_MAX;
        bits += counts[s] * lengths[s];
    }
    return bits;
}
