/* codes.c - ggml blocks ↔ symbols + side data (see codes.h). */
#include "codes.h"

#include <string.h>

int wp_codes_wps(int code_bits)
{
    return code_bits >= 2 && code_bits <= 8 ? 8 / code_bits : 0;
}

int wp_codes_geom_get(int type, int64_t row_len, uint64_t rows, wp_codes_geom *g)
{
    memset(g, 0, sizeof *g);
    if (wp_block_info_get(type, &g->bi) || row_len < 0 || row_len % g->bi.n)
        return -1;
    g->wps = wp_codes_wps(g->bi.code_bits);
    if (!g->wps || g->bi.n % g->wps) {
        memset(g, 0, sizeof *g);
        return -1;
    }
    g->type = type;
    g->rows = rows;
    g->row_len = row_len;
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
    const int bits = g->bi.code_bits, wps = g->wps;
    uint8_t q[256];
    for (uint64_t b = 0; b < nb; b++) {
        const uint8_t *blk = blocks + b * (uint64_t)g->bi.block_bytes;
        wp_block_get_codes(g->type, blk, q);
        wp_block_get_side(g->type, blk, side + b * (uint64_t)g->bi.side_bytes);
        for (int j = 0; j < g->bi.n; j += wps) {
            unsigned s = 0;
            for (int k = 0; k < wps; k++)
                s |= (unsigned)q[j + k] << (bits * k);
            *sym++ = (uint8_t)s;
        }
    }
}

int wp_codes_join(const wp_codes_geom *g, const uint8_t *sym, const uint8_t *side, uint8_t *blocks)
{
    uint64_t nb = g->block_len / (uint64_t)g->bi.block_bytes;
    const int bits = g->bi.code_bits, wps = g->wps;
    const unsigned mask = (1u << bits) - 1;
    uint8_t q[256];
    for (uint64_t b = 0; b < nb; b++) {
        uint8_t *blk = blocks + b * (uint64_t)g->bi.block_bytes;
        for (int j = 0; j < g->bi.n; j += wps, sym++) {
            if (*sym >= g->alphabet)
                return -1;
            for (int k = 0; k < wps; k++)
                q[j + k] = (uint8_t)((*sym >> (bits * k)) & mask);
        }
        memset(blk, 0, (size_t)g->bi.block_bytes);
        wp_block_put_side(g->type, side + b * (uint64_t)g->bi.side_bytes, blk);
        wp_block_put_codes(g->type, q, blk);
    }
    return 0;
}
