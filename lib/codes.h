/*
 * codes.h - a matrix of ggml blocks as symbols + side data, and back.
 *
 * The symbol view of a quantized matrix that histogram, huffbuild,
 * laneinterleave, verify and the runner share (DESIGN.md "Codes, tiles and
 * lanes"): each block's integer codes (blocks.h) become symbols, 4-bit codes
 * in pairs (first weight in the low nibble: symbol = q[2j] | q[2j+1] << 4),
 * 2/3/5/6/8-bit codes one per symbol; everything else a block stores (d,
 * dmin, sub-block scales and mins) is side data, kept as the block's own
 * bytes, block after block, so that joining symbols and side data gives the
 * exact blocks back.
 */
#ifndef WPACK_CODES_H
#define WPACK_CODES_H

#include <stdint.h>

#include "blocks.h"

typedef struct {
    int           type;        /* ggml type id (WP_Q4_K ...) */
    wp_block_info bi;          /* its block geometry */
    uint64_t      rows;        /* matrix rows (product of ne[1..]) */
    int64_t       row_len;     /* weights per row, ne[0] */
    int           wps;         /* weights per symbol: 2 (paired) or 1 */
    uint64_t      row_sym;     /* symbols per row = row_len / wps */
    uint32_t      tile_sym;    /* symbols per tile row = 256 / wps */
    uint32_t      alphabet;    /* distinct symbol values possible: 2^(bits·wps) */
    uint64_t      n_sym;       /* rows · row_sym */
    uint64_t      side_len;    /* bytes of side data: blocks · bi.side_bytes */
    uint64_t      block_len;   /* bytes of the blocks: blocks · bi.block_bytes */
} wp_codes_geom;

/* Geometry of a rows × row_len matrix of type. Returns 0, or -1 when the
 * type has no code view (blocks.h) or row_len is not a multiple of its
 * block size. */
int wp_codes_geom_get(int type, int64_t row_len, uint64_t rows, wp_codes_geom *g);

/* Split blocks (g->block_len bytes) into sym (g->n_sym bytes, row-major) and
 * side (g->side_len bytes). Never fails for a valid geometry. */
void wp_codes_split(const wp_codes_geom *g, const uint8_t *blocks, uint8_t *sym, uint8_t *side);

/* Join sym and side back into blocks (g->block_len bytes), the exact bytes
 * wp_codes_split took apart. Returns 0, or -1 when a symbol is outside the
 * alphabet (a pair nibble is always in range; a 5-bit code of 32 is not). */
int wp_codes_join(const wp_codes_geom *g, const uint8_t *sym, const uint8_t *side, uint8_t *blocks);

#endif
