/* test_integrity.c - a restored tensor is checked against the hash of its
 * original bytes: symbols that decode to other codes (a payload altered with
 * its checksums recomputed, or a coder bug) never restore silently. */
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "bundle.h"
#include "codes.h"
#include "ggml_type.h"
#include "tap.h"

int main(void)
{
    const int64_t rows = 4, cols = 64;
    float x[4 * 64];
    for (int i = 0; i < rows * cols; i++)
        x[i] = (float)((i * 37 % 101) - 50) / 40.0f;
    uint8_t blocks[4 * 2 * 18];
    ggml_quantize_chunk(GGML_TYPE_Q4_0, x, blocks, 0, rows, cols, NULL);
    wp_codes_geom g;
    wp_codes_geom_get(WP_Q4_0, cols, (uint64_t)rows, &g);

    for (int tamper = 0; tamper < 2; tamper++) {
        wp_record side, sym, *t = NULL;
        wp_record_init(&side);
        wp_record_init(&sym);
        side.kind = WP_REC_SIDE;
        sym.kind = WP_REC_SYMBOLS;
        side.type = sym.type = WP_Q4_0;
        side.n_dims = sym.n_dims = 2;
        side.ne[0] = sym.ne[0] = cols;
        side.ne[1] = sym.ne[1] = rows;
        wp_record_set_name(&side, "w");
        wp_record_set_name(&sym, "w");
        wp_record_alloc(&side, g.side_len);
        wp_record_alloc(&sym, g.n_sym);
        wp_codes_split(&g, blocks, sym.payload, side.payload);
        wp_attr_set(&sym, "codec", "q");
        wp_attr_set_hash(&sym, "xxh32", blocks, sizeof blocks);
        wp_attr_set_i64(&sym, "row_sym", (int64_t)g.row_sym);   /* (as histogram sets them) */
        wp_attr_set_i64(&sym, "tile_sym", g.tile_sym);
        if (tamper)
            sym.payload[5] ^= 0x11;     /* other codes, still valid symbols */
        wp_restore *rs = wp_restore_new();
        int a = wp_restore_put(rs, &side, 0, &t), b = wp_restore_put(rs, &sym, 0, &t);
        if (!tamper)
            CHECK(a == 0 && b == 1 && t->payload_len == sizeof blocks && !memcmp(t->payload, blocks, sizeof blocks),
                  "intact symbols restore the exact blocks");
        else
            CHECK(a == 0 && b == -1 && strstr(wp_restore_error(rs), "does not match its recorded hash"),
                  "altered symbols are refused: %s", wp_restore_error(rs));
        wp_restore_free(rs);
        wp_record_free(&side);
        wp_record_free(&sym);
    }
    return tap_done();
}
