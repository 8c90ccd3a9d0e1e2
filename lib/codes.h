/*
 * codes.h - a matrix of ggml blocks as symbols + side data, and back.
 *
 * The symbol view of a quantized matrix that histogram, huffbuild,
 * laneinterleave, verify and the runner share (DESIGN.md "Codes, tiles and
 * lanes"): each block's integer codes (blocks.h) become symbols, as many
 * consecutive codes per symbol as fit in its 8 bits (wps, weights per
 * symbol, from the code width alone):
 *     2-bit codes (Q2_K)                          wps 4, symbol bits 8
 *     3-bit codes (Q3_K)                          wps 2, symbol bits 6
 *     4-bit codes (Q4_0, Q4_1, IQ4_NL, Q4_K, IQ4_XS) wps 2, symbol bits 8
 *     5-, 6- and 8-bit codes                      wps 1
 * symbol j of a block = sum over k < wps of q[wps·j + k] << (bits·k): the
 * first weight in the lowest bits (for 4-bit codes the low nibble). A block
 * of n weights gives n / wps symbols (n is 32 or 256, so always whole);
 * everything else a block stores (d, dmin, sub-block scales and mins) is
 * side data, kept as the block's own bytes, block after block, so that
 * joining symbols and side data gives the exact blocks back.
 */
#ifndef WPACK_CODES_H
#define WPACK_CODES_H

#include <stdint.h>

#include "blocks.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int           type;        /* ggml type id (WP_Q4_K ...) */
    wp_block_info bi;          /* its block geometry */
    uint64_t      rows;        /* matrix rows (product of ne[1..]) */
    int64_t       row_len;     /* weights per row, ne[0] */
    int           wps;         /* weights per symbol: 4 (2-bit codes), 2 (3-
                                  and 4-bit codes) or 1 (5-, 6-, 8-bit) */
    uint64_t      row_sym;     /* symbols per row = row_len / wps */
    uint32_t      tile_sym;    /* symbols per tile row = 256 / wps */
    uint32_t      alphabet;    /* distinct symbol values possible: 2^(bits·wps):
                                  256 (2-bit codes in fours, 4-bit in pairs,
                                  8-bit), 64 (Q3_K's 3-bit pairs, Q6_K's 6-bit
                                  codes), 32 (5-bit codes) */
    uint64_t      n_sym;       /* rows · row_sym */
    uint64_t      side_len;    /* bytes of side data: blocks · bi.side_bytes */
    uint64_t      block_len;   /* bytes of the blocks: blocks · bi.block_bytes */
} wp_codes_geom;

/* Weights per symbol for codes of code_bits bits: the most whole codes that
 * fit in one 8-bit symbol, 8 / code_bits (integer division). Returns 4 (2
 * bits), 2 (3, 4 bits) or 1 (5 .. 8 bits); 0 for code_bits outside 2 .. 8.
 * The one place that decides the grouping; the runtime's wr_geom_of
 * (runtime/wr_dev.h) carries the same numbers, tested against this. */
int wp_codes_wps(int code_bits);

/* Geometry of a rows × row_len matrix of type. Returns 0, or -1 when the
 * type has no code view (blocks.h) or row_len is not a multiple of its
 * block size. */
int wp_codes_geom_get(int type, int64_t row_len, uint64_t rows, wp_codes_geom *g);

/* Split blocks (g->block_len bytes) into sym (g->n_sym bytes, row-major,
 * codes grouped as above) and side (g->side_len bytes). Never fails for a
 * valid geometry. */
void wp_codes_split(const wp_codes_geom *g, const uint8_t *blocks, uint8_t *sym, uint8_t *side);

/* Join sym and side back into blocks (g->block_len bytes), the exact bytes
 * wp_codes_split took apart. Returns 0, or -1 when a symbol is outside the
 * alphabet (>= g->alphabet: a Q3_K or Q6_K symbol of 64 or more, a 5-bit
 * code of 32 or more; an alphabet of 256 is every byte); blocks are then
 * partly written. */
int wp_codes_join(const wp_codes_geom *g, const uint8_t *sym, const uint8_t *side, uint8_t *blocks);

#ifdef __cplusplus
}
#endif
#endif
