/*
 * lanes.h - tiles and lanes: the layout of one Huffman-coded matrix.
 *
 * The layout follows the LazyWeights-style lane design of wpack's DESIGN.md
 * ("Codes, tiles and lanes"): 32 independent bit streams per tile, their
 * 32-bit words interleaved so that one aligned 128-byte read feeds all 32
 * lanes of a decoder, and per-tile offsets so that any tile decodes alone.
 *
 * A matrix is rows x row_sym symbols (bytes), row-major. One symbol is one
 * or two weights: 4-bit codes are coded in pairs, 5/6/8-bit codes singly. A
 * tile covers 64 rows x 256 weights, that is tile_sym = 256 / (weights per
 * symbol) symbols per tile row (128 for pairs, 256 for single codes).
 *
 * Byte layout of a coded matrix (this text belongs in wpack-bundle(5))
 * -------------------------------------------------------------------
 * Given rows R, symbols per row S, symbols per tile row T (1..256) and one
 * table of 256 code lengths (canonical Huffman, huffman.h):
 *
 *   tile rows     TR = ceil(R / 64), tile columns TC = ceil(S / T),
 *   tiles         N  = TR * TC, numbered row-major: t = tr * TC + tc.
 *   tile t        rows 64*tr .. 64*tr + h - 1, h = min(64, R - 64*tr);
 *                 symbol columns T*tc .. T*tc + w - 1, w = min(T, S - T*tc).
 *                 (The last tile row and column may be narrower: partial
 *                 tiles are ordinary tiles with smaller h or w.)
 *   lane k        (k = 0..31) the tile's row 2k (w symbols), then its row
 *                 2k+1 (w symbols), each row only if it is < h. A lane thus
 *                 holds 2w, w or 0 symbols; the decoder knows how many from
 *                 the shape, so no lane lengths are stored.
 *   lane stream   the canonical code of each symbol, MSB first, packed MSB
 *                 first into 32-bit words: the lane's first bit is bit 31 of
 *                 its word 0. The bits after the last code are zero.
 *                 Lane k takes W_k = ceil(bits_k / 32) words.
 *   tile depth    D_t = max over k of W_k (>= 1 for every tile, since a
 *                 tile holds at least one symbol and every code is >= 1 bit).
 *   tile payload  D_t * 32 words: word i of lane k is word 32*i + k of the
 *                 tile, i = 0..D_t-1; lanes with W_k < D_t are padded with
 *                 zero words. A payload is thus D_t groups of 128 bytes.
 *   offsets       N + 1 unsigned 32-bit values in units of 128-byte groups
 *                 (32 words): offset[0] = 0, offset[t+1] = offset[t] + D_t.
 *                 Tile t's payload is words 32*offset[t] .. 32*offset[t+1]-1
 *                 of the matrix payload; the whole payload is
 *                 32*offset[N] words. Tile t decodes alone from its payload
 *                 and D_t = offset[t+1] - offset[t].
 *   words         stored little-endian (4 bytes each) in files; in memory
 *                 this API takes host-order uint32_t.
 *
 * The encoding is canonical: decoders reject a lane whose padding bits or
 * padding words are not zero and a tile whose depth is larger than its
 * longest lane, so every matrix has exactly one valid coded form.
 *
 * Decoders never read outside [words, words + nwords) and return
 * WP_LANES_ECORRUPT on anything inconsistent (a bit pattern that is no code,
 * a lane running past its tile's depth, nonzero padding, bad offsets).
 */
#ifndef WPACK_LANES_H
#define WPACK_LANES_H

#include <stdint.h>

#include "huffman.h"

#define WP_TILE_ROWS     64   /* matrix rows per tile                   */
#define WP_TILE_WEIGHTS  256  /* weight columns per tile                */
#define WP_LANES         32   /* lanes per tile: 2 rows each            */

enum {
    WP_LANES_OK       =  0,
    WP_LANES_EINVAL   = -1,   /* bad shape, bad table, bad argument     */
    WP_LANES_ENOCODE  = -2,   /* encode: a symbol has code length 0     */
    WP_LANES_ESPACE   = -3,   /* encode: output buffer too small        */
    WP_LANES_ECORRUPT = -4    /* decode: input is not a valid encoding  */
};

/* Shape of a symbol matrix. */
typedef struct {
    uint64_t rows;       /* R: matrix rows (0 allowed: no tiles)                 */
    uint64_t row_sym;    /* S: symbols per matrix row (0 allowed: no tiles)      */
    uint32_t tile_sym;   /* T: symbols per tile row, 1..256: 256 / weights per
                            symbol (128 for paired 4-bit codes, 256 otherwise)   */
} wp_lanes_shape;

/* Number of tiles N of a shape; 0 for an empty matrix. Returns 0 also for an
 * invalid shape (tile_sym outside 1..256, rows * row_sym >= 2^62); check with
 * wp_lanes_shape_ok. */
uint64_t wp_lanes_ntiles(const wp_lanes_shape *s);

/* 1 if the shape is valid (tile_sym 1..256, rows * row_sym < 2^62), else 0. */
int wp_lanes_shape_ok(const wp_lanes_shape *s);

/* Position and size of tile t: first row, first symbol column, h rows (1..64)
 * and w symbols per row (1..tile_sym). Returns 0, or WP_LANES_EINVAL if the
 * shape is invalid or t >= N. */
int wp_lanes_tile_rect(const wp_lanes_shape *s, uint64_t t, uint64_t *row0,
                       uint64_t *col0, uint32_t *h, uint32_t *w);

/*
 * Encodes a matrix into tiles and lanes (layout above).
 *
 * sym        R * S symbols, row-major.
 * lengths    256 code lengths (wp_huf_lengths); every symbol present in sym
 *            must have a nonzero length. Valid for any limit <= 15.
 * words      out: the payload, cap_words words; may be NULL to ask only for
 *            the size and the offsets.
 * offsets    out: N + 1 offsets in 128-byte groups (see above).
 * nwords     out: payload size in words (32 * offset[N]), also set when the
 *            call fails with WP_LANES_ESPACE.
 * Returns WP_LANES_OK, WP_LANES_EINVAL (bad shape, lengths failing
 * wp_huf_validate, payload of 2^32 groups or more), WP_LANES_ENOCODE (a
 * symbol without a code) or WP_LANES_ESPACE (words != NULL and cap_words <
 * *nwords).
 */
int wp_lanes_encode(const uint8_t *sym, const wp_lanes_shape *s, const uint8_t lengths[256],
                    uint32_t *words, uint64_t cap_words, uint32_t *offsets, uint64_t *nwords);

/*
 * Reference decoder of tile t: per lane, peek L bits (MSB first, zeros past
 * the tile's depth) and compare them against the per-length limits of the
 * hardware unit (wp_huf_decode_peek) - no 2^L-entry table.
 *
 * words, nwords  the matrix payload; only tile t's words are read.
 * offsets        the matrix's N + 1 offsets; only offsets[t], offsets[t+1]
 *                are read.
 * tab            the limit tables (wp_huf_table_init on the matrix's lengths).
 * out            receives the tile's h x w symbols: symbol (r, c) of the tile
 *                at out[r * out_stride + c] (out_stride >= w). Pass
 *                out = matrix + row0 * S + col0 and out_stride = S to decode
 *                in place; on error out may hold partial output.
 * Returns WP_LANES_OK, WP_LANES_EINVAL (bad shape, t >= N, out_stride < w)
 * or WP_LANES_ECORRUPT.
 */
int wp_lanes_decode_tile_ref(const uint32_t *words, uint64_t nwords, const uint32_t *offsets,
                             const wp_lanes_shape *s, const wp_huf_table *tab, uint64_t t,
                             uint8_t *out, uint64_t out_stride);

/*
 * Fast decoder of tile t: the same contract and the same results, bit for
 * bit and error for error class, as wp_lanes_decode_tile_ref, using a 2^L
 * lookup table on the peek (wp_huf_lut_init on the matrix's lengths) and a
 * 64-bit bit buffer per lane, four lanes decoded interleaved.
 */
int wp_lanes_decode_tile(const uint32_t *words, uint64_t nwords, const uint32_t *offsets,
                         const wp_lanes_shape *s, const wp_huf_lut *lut, uint64_t t,
                         uint8_t *out, uint64_t out_stride);

/*
 * Decodes a whole matrix into out (R * S symbols, row-major), tile by tile.
 * max_len is the table's length limit L (1..15; wpack: 11). Checks first
 * that lengths pass wp_huf_validate(lengths, 256, max_len), that offset[0] =
 * 0, that offsets never decrease and that nwords = 32 * offset[N].
 * reference != 0 uses the reference decoder, else the fast one. Returns
 * WP_LANES_OK, WP_LANES_EINVAL (bad shape or max_len, out of memory for the
 * lookup table) or WP_LANES_ECORRUPT (lengths, offsets or payload invalid).
 */
int wp_lanes_decode(const uint32_t *words, uint64_t nwords, const uint32_t *offsets,
                    const wp_lanes_shape *s, const uint8_t lengths[256], int max_len,
                    int reference, uint8_t *out);

#endif
