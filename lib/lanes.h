/*
 * lanes.h - tiles and lanes: the layout of one Huffman-coded matrix.
 *
 * The layout follows the LazyWeights-style lane design of wpack's DESIGN.md
 * ("Codes, tiles and lanes"): 32 independent bit streams per tile, their
 * 32-bit words interleaved so that one aligned 128-byte read feeds all 32
 * lanes of a decoder while they are all active, and per-tile offsets and
 * lane word counts so that any tile decodes alone. Lanes are not padded to
 * a common depth ("ragged interleave"): the only padding is the zero bits
 * after each lane's last code, in its last word.
 *
 * A matrix is rows x row_sym symbols (bytes), row-major. One symbol is one,
 * two or four weights (codes.h, wp_codes_wps): 2-bit codes in fours, 3- and
 * 4-bit codes in pairs, 5/6/8-bit codes singly. A tile covers 64 rows x 256
 * weights, that is tile_sym = 256 / (weights per symbol) symbols per tile
 * row (64 for fours, 128 for pairs, 256 for single codes).
 *
 * Byte layout of a coded matrix (this text belongs in wpack-bundle(5))
 * -------------------------------------------------------------------
 * Given rows R, symbols per row S, symbols per tile row T (1..256) and one
 * table of 256 code lengths (canonical Huffman, huffman.h, lengths <= 15):
 *
 *   tile rows     TR = ceil(R / 64), tile columns TC = ceil(S / T),
 *   tiles         N  = TR * TC, numbered row-major: t = tr * TC + tc.
 *   tile t        rows 64*tr .. 64*tr + h - 1, h = min(64, R - 64*tr);
 *                 symbol columns T*tc .. T*tc + w - 1, w = min(T, S - T*tc).
 *                 (The last tile row and column may be narrower: partial
 *                 tiles are ordinary tiles with smaller h or w.)
 *   lane k        (k = 0..31) the tile's row 2k (w symbols), then its row
 *                 2k+1 (w symbols), each row only if it is < h. A lane thus
 *                 holds 2w, w or 0 symbols, known from the shape.
 *   lane stream   the canonical code of each symbol, MSB first, packed MSB
 *                 first into 32-bit words: the lane's first bit is bit 31 of
 *                 its word 0. The bits after the last code are zero.
 *   lane words    W_k = ceil(bits_k / 32): 0 for a lane without symbols,
 *                 >= 1 for a lane with symbols, at most 240 (2 x 256 symbols
 *                 x 15 bits / 32), so one byte each.
 *   lane counts   a per-matrix array lane_words[32 * N] of bytes: tile t's
 *                 W_0 .. W_31 at lane_words[32*t .. 32*t + 31].
 *   active lanes  active_mask_t(i) = the set of lanes k with W_k > i, as a
 *                 32-bit mask (bit k = lane k); active_t(i) = its popcount.
 *   tile payload  group 0, group 1, ..., group D_t - 1, D_t = max_k W_k:
 *                 group i is word i of every active lane at depth i, in
 *                 increasing k - active_t(i) words. While all 32 lanes are
 *                 active a group is 32 consecutive words (128 bytes); later
 *                 groups hold only the lanes still running. No padding
 *                 words: the tile payload is sum_k W_k words. Word i of
 *                 lane k is word
 *                     G_t(i) + popcount(active_mask_t(i) & ((1 << k) - 1))
 *                 of the tile, G_t(i) = sum over j < i of active_t(j).
 *                 (A GPU warp gets the mask as __ballot_sync(~0u, W_k > i)
 *                 and the rank as __popc(mask & lanemask_lt); a CPU decoder
 *                 precomputes G_t(i) and the masks per tile.)
 *   offsets       N + 1 unsigned 32-bit values in 32-bit WORDS:
 *                 offset[0] = 0, offset[t+1] = offset[t] + sum_k W_k.
 *                 Tile t's payload is words offset[t] .. offset[t+1] - 1 of
 *                 the matrix payload; the whole payload is offset[N] words.
 *                 Tile t decodes alone from offset[t], offset[t+1], its 32
 *                 lane counts and its payload.
 *   words         stored little-endian (4 bytes each) in files; in memory
 *                 this API takes host-order uint32_t.
 *
 * The encoding is canonical, so every matrix has exactly one valid coded
 * form: decoders reject nonzero padding bits after a lane's last code, a
 * lane count W_k other than the minimum ceil(bits_k / 32) (in particular a
 * nonzero count for a lane that holds no rows), and a tile whose lane
 * counts do not sum to offset[t+1] - offset[t].
 *
 * Decoders never read outside [words, words + nwords), the offsets and
 * lane counts of the tile, and return WP_LANES_ECORRUPT on anything
 * inconsistent (a bit pattern that is no code, a lane running past its W_k
 * words, nonzero padding, bad offsets or lane counts).
 */
#ifndef WPACK_LANES_H
#define WPACK_LANES_H

#include <stdint.h>

#include "huffman.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WP_TILE_ROWS     64   /* matrix rows per tile                   */
#define WP_TILE_WEIGHTS  256  /* weight columns per tile                */
#define WP_LANES         32   /* lanes per tile: 2 rows each            */
#define WP_LANE_MAX_WORDS 240 /* W_k limit: 2 rows x 256 symbols x 15 bits */

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
                            symbol (64, 128 or 256: codes.h)                     */
} wp_lanes_shape;

/* Number of tiles N of a shape; 0 for an empty matrix. Returns 0 also for an
 * invalid shape (tile_sym outside 1..256, rows * row_sym > 2^62); check with
 * wp_lanes_shape_ok. */
uint64_t wp_lanes_ntiles(const wp_lanes_shape *s);

/* 1 if the shape is valid (tile_sym 1..256, rows * row_sym <= 2^62), else 0. */
int wp_lanes_shape_ok(const wp_lanes_shape *s);

/* Position and size of tile t: first row, first symbol column, h rows (1..64)
 * and w symbols per row (1..tile_sym). Returns 0, or WP_LANES_EINVAL if the
 * shape is invalid or t >= N. */
int wp_lanes_tile_rect(const wp_lanes_shape *s, uint64_t t, uint64_t *row0,
                       uint64_t *col0, uint32_t *h, uint32_t *w);

/*
 * Encodes a matrix into tiles and lanes (layout above).
 *
 * sym        R * S symbols, row-major (may be NULL when N = 0).
 * lengths    256 code lengths (wp_huf_lengths); every symbol present in sym
 *            must have a nonzero length. Valid for any limit <= 15.
 * words      out: the payload, cap_words words; may be NULL to ask only for
 *            the size, the offsets and the lane counts.
 * offsets    out: N + 1 offsets, in words (see above).
 * lane_words out: 32 * N bytes, W_k of every lane of every tile (tile t's
 *            at 32*t .. 32*t + 31). Always filled, also when words is NULL.
 * nwords     out: payload size in words (offset[N]), also set when the
 *            call fails with WP_LANES_ESPACE.
 * Returns WP_LANES_OK, WP_LANES_EINVAL (bad shape, lengths failing
 * wp_huf_validate, a NULL offsets/lane_words/nwords, a lane of more than
 * WP_LANE_MAX_WORDS words, payload of 2^32 words or more),
 * WP_LANES_ENOCODE (a symbol without a code) or WP_LANES_ESPACE
 * (words != NULL and cap_words < *nwords). offsets and lane_words are
 * complete only when the result is OK or ESPACE.
 */
int wp_lanes_encode(const uint8_t *sym, const wp_lanes_shape *s, const uint8_t lengths[256],
                    uint32_t *words, uint64_t cap_words, uint32_t *offsets, uint8_t *lane_words,
                    uint64_t *nwords);

/*
 * Reference decoder of tile t: per lane, peek L bits (MSB first, zeros past
 * the lane's W_k words) and compare them against the per-length limits of
 * the hardware unit (wp_huf_decode_peek) - no 2^L-entry table.
 *
 * words, nwords  the matrix payload (nwords 32-bit words); only tile t's
 *                words, [offsets[t], offsets[t+1]), are read.
 * offsets        the matrix's N + 1 word offsets; only offsets[t] and
 *                offsets[t+1] are read.
 * lane_words     the matrix's 32 * N lane counts; only tile t's 32 are read.
 * tab            the limit tables (wp_huf_table_init on the matrix's lengths).
 * out            receives the tile's h x w symbols: symbol (r, c) of the tile
 *                at out[r * out_stride + c] (out_stride >= w). Pass
 *                out = matrix + row0 * S + col0 and out_stride = S to decode
 *                in place; on error out may hold partial output.
 * Returns WP_LANES_OK, WP_LANES_EINVAL (bad shape, t >= N, out_stride < w,
 * NULL offsets/lane_words/tab/out, table length limit outside 1..15) or
 * WP_LANES_ECORRUPT (offsets past nwords or decreasing, lane counts that do
 * not sum to the tile's size or exceed WP_LANE_MAX_WORDS, no code, a lane
 * overrunning its words, nonzero padding bits, a lane count above the
 * minimum).
 */
int wp_lanes_decode_tile_ref(const uint32_t *words, uint64_t nwords, const uint32_t *offsets,
                             const uint8_t *lane_words, const wp_lanes_shape *s,
                             const wp_huf_table *tab, uint64_t t, uint8_t *out, uint64_t out_stride);

/*
 * Fast decoder of tile t: the same contract and the same results, bit for
 * bit and error for error class, as wp_lanes_decode_tile_ref, using a 2^L
 * lookup table on the peek (wp_huf_lut_init on the matrix's lengths). It
 * first copies the tile's groups into one byte-ordered word run per lane
 * (about 31 KiB of stack), where the reference decoder addresses each word
 * by its rank in the group's active-lane mask as a GPU would; then it
 * decodes eight lanes in lockstep, each from a 64-bit buffer that one
 * unaligned load refills with >= 57 bits (5 codes at L = 11, 3 at L <= 15).
 * Tables with peeks that start with no code (incomplete codes) take a
 * checked variant. It prefetches the words after the tile (the next tile
 * in matrix order, if any; never past nwords).
 */
int wp_lanes_decode_tile(const uint32_t *words, uint64_t nwords, const uint32_t *offsets,
                         const uint8_t *lane_words, const wp_lanes_shape *s, const wp_huf_lut *lut,
                         uint64_t t, uint8_t *out, uint64_t out_stride);

/*
 * Decodes a whole matrix into out (R * S symbols, row-major), tile by tile.
 * words/nwords, offsets (N + 1) and lane_words (32 * N) as above. max_len is
 * the table's length limit L (1..15; wpack: 11). Checks first that lengths
 * pass wp_huf_validate(lengths, 256, max_len), that offset[0] = 0, that
 * offsets never decrease and that nwords = offset[N]; each tile's lane
 * counts are checked as it is decoded. reference != 0 uses the reference
 * decoder, else the fast one. Returns WP_LANES_OK, WP_LANES_EINVAL (bad
 * shape or max_len, NULL arguments, out of memory for the lookup table) or
 * WP_LANES_ECORRUPT (lengths, offsets, lane counts or payload invalid).
 */
int wp_lanes_decode(const uint32_t *words, uint64_t nwords, const uint32_t *offsets,
                    const uint8_t *lane_words, const wp_lanes_shape *s, const uint8_t lengths[256],
                    int max_len, int reference, uint8_t *out);

#ifdef __cplusplus
}
#endif
#endif
