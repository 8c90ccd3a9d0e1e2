/* blocks.c - ggml blocks as parts: unpack, pack, side data, dequantize
 * (see blocks.h), on the bit layouts of block_layout.h. */
#include "blocks.h"

#include "block_layout.h"

#include "ggml_type.h"
#include "half.h"

#include <string.h>

const int8_t wp_kvalues_iq4nl[16] = WP_KVALUES_IQ4NL;

int wp_block_supported(int type) { return wp_block_geom_of(type).n > 0; }

int wp_block_info_get(int type, wp_block_info *info)
{
    const wp_block_geom g = wp_block_geom_of(type);
    if (!g.n)
        return -1;
    info->n = g.n;
    info->nsub = g.nsub;
    info->sub_n = g.sub_n;
    info->code_bits = g.bits;
    info->side_bytes = g.side;
    info->block_bytes = g.bytes;
    info->has_min = g.has_min;
    return 0;
}

void wp_k4_scales_from_bytes(const uint8_t ls[8], const uint8_t lm[8], int16_t sc[8], int16_t mn[8])
{
    uint8_t s[12];
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            s[j] = ls[j];
            s[j + 4] = lm[j];
        } else {
            s[j + 4] = (uint8_t)((ls[j] & 15) | (lm[j] & 15) << 4);
            s[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
            s[j] |= (uint8_t)((lm[j] >> 4) << 6);
        }
    }
    for (int j = 0; j < 8; j++) {
        int a, b;
        wp_side_k4(s, j, &a, &b);
        sc[j] = (int16_t)a;
        mn[j] = (int16_t)b;
    }
}

int wp_block_unpack(int type, const void *blk, wp_block_parts *p)
{
    const wp_block_geom g = wp_block_geom_of(type);
    uint8_t side[32];
    if (wp_block_get_side(type, blk, side))
        return -1;
    memset(p, 0, sizeof *p);
    p->n = g.n;
    p->d = (uint16_t)wp_side_d(type, side);
    p->dmin = (uint16_t)wp_side_dmin(type, side);
    for (int s = 0; s < g.nsub; s++) {
        int sc, mn;
        wp_side_sc_mn(type, side, s, &sc, &mn);
        p->sc[s] = (int16_t)sc;
        p->mn[s] = (int16_t)mn;
    }
    return wp_block_get_codes(type, blk, p->q);
}

int wp_block_pack(int type, const wp_block_parts *p, void *blk)
{
    uint8_t side[32];
    if (!wp_block_supported(type))
        return -1;
    wp_side_pack(type, p->d, p->dmin, p->sc, p->mn, side);
    wp_block_assemble(type, side, p->q, blk);
    return 0;
}

int wp_block_get_side(int type, const void *blk, uint8_t *side)
{
    if (!wp_block_supported(type))
        return -1;
    wp_block_side_get(type, blk, side);
    return 0;
}

int wp_block_put_side(int type, const uint8_t *side, void *blk)
{
    if (!wp_block_supported(type))
        return -1;
    wp_block_side_put(type, side, blk);
    return 0;
}

/* The block types, for a loop written once a type: with the type a
 * constant, block_layout.h's switch folds away (a loop that switched on each
 * code made histogram 1.4 times slower). */
#define EACH_BLOCK_TYPE(X)                                                                                       \
    X(WP_Q4_0) X(WP_Q4_1) X(WP_Q5_0) X(WP_Q5_1) X(WP_Q8_0) X(WP_IQ4_NL) X(WP_Q2_K) X(WP_Q3_K) X(WP_Q4_K)      \
    X(WP_Q5_K) X(WP_Q6_K) X(WP_IQ4_XS)

int wp_block_get_codes(int type, const void *blk, uint8_t *q)
{
    const uint8_t *b = blk;
    switch (type) {
#define GET_CODES(T)                                                                                             \
    case T:                                                                                                      \
        for (int i = 0; i < wp_block_geom_of(T).n; i++)                                                          \
            q[i] = (uint8_t)wp_block_code(T, b, i);                                                              \
        return 0;
        EACH_BLOCK_TYPE(GET_CODES)
    default:
        return -1;
    }
}

int wp_block_put_codes(int type, const uint8_t *q, void *blk)
{
    uint8_t side[32];
    if (!wp_block_supported(type))
        return -1;
    /* every non-side byte holds code bits: the block built again around its side bytes */
    wp_block_side_get(type, blk, side);
    wp_block_assemble(type, side, q, blk);
    return 0;
}

/* ---- dequantization: the float expressions, operand order included, are
 * those of dequantize_row_* so that results are bit-equal. */
float wp_parts_value(int type, const wp_block_parts *p, int i)
{
    return wp_parts_code_value(type, p, i, p->q[i]);
}

float wp_parts_code_value(int type, const wp_block_parts *p, int i, int q)
{
    /* code q stands for c = q - code_off, or kvalues_iq4nl[q] (block_layout.h); the value is
       c d (+ m) for the 32-weight types, dl c (- ml) for the others, as dequantize_row_* has
       it (float products commute exactly; a min is added only where the type has one, as
       (q - 8) d + 0 would turn -0 into +0) */
    const wp_block_geom g = wp_block_geom_of(type);
    if (!g.n)
        return 0.0f;
    const float d = wp_fp16_to_f32(p->d), c = g.nl ? (float)wp_kvalues_iq4nl[q & 15] : (float)(q - g.code_off);
    if (g.nsub == 1)
        return g.has_min ? c * d + wp_fp16_to_f32(p->dmin) : c * d;
    const int s = i / g.sub_n;
    const float dl = d * (float)(p->sc[s] - g.sc_bias);
    return g.has_min ? dl * c - wp_fp16_to_f32(p->dmin) * (float)p->mn[s] : dl * c;
}

int wp_parts_dequantize(int type, const wp_block_parts *p, float *y)
{
    if (!wp_block_supported(type))
        return -1;
    for (int i = 0; i < p->n; i++)
        y[i] = wp_parts_value(type, p, i);
    return 0;
}

int wp_dequantize_row(int type, const void *src, float *y, int64_t k)
{
    wp_block_info info;
    if (wp_block_info_get(type, &info) || k < 0 || k % info.n)
        return -1;
    const uint8_t *b = src;
    wp_block_parts p;
    for (int64_t i = 0; i < k / info.n; i++) {
        wp_block_unpack(type, b + i * info.block_bytes, &p);
        wp_parts_dequantize(type, &p, y + i * info.n);
    }
    return 0;
}
