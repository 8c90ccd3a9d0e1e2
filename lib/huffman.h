/*
 * huffman.h - length-limited canonical Huffman codes for wpack's lanes.
 *
 * One table per matrix, over an alphabet of at most 256 symbols (a byte: a
 * pair of 4-bit codes, one 5/6/8-bit code, a BF16 exponent). The table is
 * stored as code lengths only (one byte per symbol, 0 = the symbol has no
 * code); everything else is derived from them:
 *
 *   counts --wp_huf_lengths--> code lengths          (optimal, every length <= L)
 *   lengths --wp_huf_codes---> canonical codes       (DEFLATE, RFC 1951 3.2.2)
 *   lengths --wp_huf_table_init--> first/limit/offset tables: the decoder of
 *          the hardware unit, which peeks L bits and compares them against
 *          one left-justified limit per code length (no 2^L-entry table)
 *   lengths --wp_huf_lut_init----> a 2^L-entry lookup table for the fast CPU
 *          decoder; it decodes exactly what the limit tables decode.
 *
 * wpack uses L = WP_HUF_LEN = 11. Codes are sent MSB first: the first bit of a
 * code is its most significant bit (as in the canonical-code convention of
 * RFC 1951, though DEFLATE itself packs bits LSB first; wpack's lanes do not).
 *
 * Canonical order: symbols sorted by (code length, symbol value); the first
 * code of length l is (first[l-1] + count[l-1]) << 1, codes of one length are
 * consecutive. Hence every code of length l, left-justified to L bits, is
 * smaller than every code of length l+1 left-justified - the property the
 * limit comparison relies on.
 */
#ifndef WPACK_HUFFMAN_H
#define WPACK_HUFFMAN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WP_HUF_MAX_SYMBOLS 256  /* alphabet size limit (a byte)                */
#define WP_HUF_MAX_LEN     15   /* largest length limit L this module accepts   */
#define WP_HUF_LEN         11   /* the length limit wpack uses                  */

/*
 * Optimal length-limited code lengths (Larmore & Hirschberg, "A fast algorithm
 * for optimal length-limited Huffman codes", JACM 37(3), 1990: package-merge,
 * in its coin-collector form; O(n L) time, O(n L) bytes of flags).
 *
 * counts[nsym]  occurrences of each symbol (any 64-bit values); nsym <= 256.
 * max_len       L, 1..15.
 * lengths[nsym] out: code length per symbol, 0 for symbols with count 0.
 *               The result minimises sum(counts[i] * lengths[i]) over all
 *               prefix codes with lengths <= L. With two or more used symbols
 *               the code is complete (Kraft sum exactly 1). One used symbol
 *               gets length 1 (code "0"); no used symbol gives all zeros.
 * Ties between equal counts are broken by symbol value, so the result is a
 * deterministic function of the counts.
 * Returns 0, or -1 if nsym or max_len is out of range, more symbols are used
 * than 2^L codes can hold, or the sum of counts exceeds 2^59 (so that package
 * weights cannot overflow 64 bits).
 */
int wp_huf_lengths(const uint64_t *counts, int nsym, int max_len, uint8_t *lengths);

/*
 * Checks a code-length table read from untrusted input: nsym 0..256, max_len
 * 1..15, every length <= max_len, Kraft sum sum(2^-lengths[i]) over nonzero
 * lengths <= 1 (an incomplete code is allowed: a one-symbol code is one).
 * Returns 0 if valid, -1 if not.
 */
int wp_huf_validate(const uint8_t *lengths, int nsym, int max_len);

/*
 * Canonical codes from code lengths (RFC 1951 section 3.2.2): codes[i] holds
 * the lengths[i] low bits of symbol i's code, sent MSB first; codes[i] = 0
 * where lengths[i] = 0. Returns 0, or -1 if the lengths fail
 * wp_huf_validate(lengths, nsym, WP_HUF_MAX_LEN).
 */
int wp_huf_codes(const uint8_t *lengths, int nsym, uint16_t *codes);

/*
 * The decoder tables of the hardware unit, for a peek of max_len = L bits:
 *
 *   for l = 1..L:  if peek < limit[l]:
 *                      symbol = symbols[offset[l] + (peek >> (L - l)) - first[l]]
 *                      length = l; stop
 *   otherwise (peek >= limit[L]): not a code - corrupt input.
 *
 * first[l]  first canonical code of length l (right-justified, l bits)
 * limit[l]  (first[l] + count[l]) << (L - l): one past the last code of
 *           length l, left-justified to L bits; nondecreasing in l; a length
 *           with no codes has limit[l] = limit[l-1], so it never matches.
 * offset[l] index in symbols[] of the first symbol of length l
 * symbols[] the coded symbols in canonical order (length, then value)
 */
typedef struct {
    int      max_len;                       /* L: bits peeked                */
    int      ncoded;                        /* symbols with a code           */
    uint16_t count[WP_HUF_MAX_LEN + 1];     /* codes of each length          */
    uint16_t first[WP_HUF_MAX_LEN + 1];
    uint16_t offset[WP_HUF_MAX_LEN + 1];
    uint32_t limit[WP_HUF_MAX_LEN + 1];
    uint8_t  symbols[WP_HUF_MAX_SYMBOLS];
} wp_huf_table;

/* Builds the limit tables from code lengths (nsym of them, each 0 ..
 * max_len): for each length, its first canonical code, the index of its
 * first symbol and its left-justified limit. Returns 0, or -1 if
 * wp_huf_validate(lengths, nsym, max_len) fails. Source: the canonical
 * decoding of Moffat and Turpin ("On the implementation of minimum
 * redundancy prefix codes", IEEE Trans. Commun. 1997), with the codes
 * DEFLATE assigns. */
int wp_huf_table_init(wp_huf_table *t, const uint8_t *lengths, int nsym, int max_len);

/*
 * Decodes one symbol from an L-bit peek (the next L bits of the stream, MSB
 * first, zeros past its end) with the limit comparison above - the reference
 * decoder. Returns the symbol (0..255) and sets *len to its code length, or
 * returns -1 if the peek starts with no code (only possible for an incomplete
 * code or an empty table).
 */
int wp_huf_decode_peek(const wp_huf_table *t, uint32_t peek, int *len);

/*
 * The fast decoder's table: entry[peek] = symbol | (length << 8) for every
 * L-bit peek, 0 where the peek starts with no code. 2^L entries of 2 bytes
 * (4 KiB at L = 11, 64 KiB reserved for L = 15); allocate it on the heap.
 */
typedef struct {
    int      max_len;
    uint16_t entry[1u << WP_HUF_MAX_LEN];
} wp_huf_lut;

/* Fills the lookup table from code lengths (as wp_huf_table_init): every
 * peek whose first len bits are a code gets that symbol and len, the usual
 * table-driven decoder (as zstd's HUF_decodeSymbolX1 tables, here MSB
 * first). Returns 0, or -1 if wp_huf_validate(lengths, nsym, max_len)
 * fails. */
int wp_huf_lut_init(wp_huf_lut *lut, const uint8_t *lengths, int nsym, int max_len);

/* Shannon entropy of the counts, bits per symbol (0 for fewer than two used
 * symbols or an all-zero histogram). */
double wp_huf_entropy(const uint64_t *counts, int nsym);

/* Total coded bits sum(counts[i] * lengths[i]) (saturates at UINT64_MAX). */
uint64_t wp_huf_coded_bits(const uint64_t *counts, const uint8_t *lengths, int nsym);

#ifdef __cplusplus
}
#endif
#endif
