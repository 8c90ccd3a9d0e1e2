/* codes.c - ggml blocks ↔ symbols + side data (see codes.h). */
#include "codes.h"

#include <string.h>

int wp_codes_geom_get(int type, int64_t row_len, uint64_t rows, wp_codes_geom *g)
{
    memset(g, 0, sizeof *g);
    if (wp_block_info_get(type, &g->bi) || row_len < 0 || row_len % g->bi.n)
        return -1;
    g->type = type;
    g->rows = rows;
    g->row_len = row_len;
    g->wps = g->bi.paired ? 2 : 1;
    g->row_sym = (uint64_t)row_len / (uint64_t)g->wps;
    g->tile_sym = 256u / (uint32_t)g->wps;
    g->alphabet = 1u << (g->bi.code_bits * g->wps);
    g->n_sym = rows * g->row_sym;
    uint64_t blocks = rows * ((uint64_t)row_len / (uint64_t)g->bi.n);
    g->side_len = blocks * (uint64_t)g->bi.side_bytes;
    g->block_len = blocks * (uint64_t)g->bi.block_bytes;
    return 0;
}

void wp_codes_split(const wp_codes_geom *g, const uint8_t *blocks, uint8_t *sym, uint8_t *side)
{
    uint64_t nb = g->block_len / (uint64_t)g->bi.block_bytes;
    uint8_t q[256];
    for (uint64_t b = 0; b < nb; b++) {
        const uint8_t *blk = blocks + b * (uint64_t)g->bi.block_bytes;
        wp_block_get_codes(g->type, blk, q);
        wp_block_get_side(g->type, blk, side + b * (uint64_t)g->bi.side_bytes);
        if (g->wps == 2)
            for (int j = 0; j < g->bi.n / 2; j++)
                *sym++ = (uint8_t)(q[2 * j] | q[2 * j + 1] << 4);
        else
            for (int j = 0; j < g->bi.n; j++)
                *sym++ = q[j];
    }
}

int wp_codes_join(const wp_codes_geom *g, const uint8_t *sym, const uint8_t *side, uint8_t *blocks)
{
    uint64_t nb = g->block_len / (uint64_t)g->bi.block_bytes;
    uint8_t q[256];
    for (uint64_t b = 0; b < nb; b++) {
        uint8_t *blk = blocks + b * (uint64_t)g->bi.block_bytes;
        if (g->wps == 2) {
            for (int j = 0; j < g->bi.n / 2; j++, sym++) {
                q[2 * j] = *sym & 15;
                q[2 * j + 1] = *sym >> 4;
            }
        } else {
            for (int j = 0; j < g->bi.n; j++, sym++) {
                if (*sym >= g->alphabet)
                    return -1;
                q[j] = *sym;
            }
        }
        memset(blk, 0, (size_t)g->bi.block_bytes);
        wp_block_put_side(g->type, side + b * (uint64_t)g->bi.side_bytes, blk);
        wp_block_put_codes(g->type, q, blk);
    }
    return 0;
}
