/* blocks.c - ggml block bit layouts: unpack, pack, side data, dequantize
 * (see blocks.h). Byte offsets below are those of the structs in the
 * reference ggml/src/ggml-common.h; multi-byte fields are little-endian. */
#include "blocks.h"

#include "ggml_type.h"
#include "half.h"

#include <string.h>

const int8_t wp_kvalues_iq4nl[16] = {
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
};

/* One contiguous run of side-data bytes inside a block. */
struct span { int off, len; };

struct layout {
    int n, nsub, bits, has_min;
    struct span side[2];   /* non-code byte runs, in block order */
};

static int get_layout(int type, struct layout *l)
{
    static const struct layout
        q4_0   = {32, 1, 4, 0, {{0, 2}, {0, 0}}},
        q4_1   = {32, 1, 4, 1, {{0, 4}, {0, 0}}},
        q5_0   = {32, 1, 5, 0, {{0, 2}, {0, 0}}},
        q5_1   = {32, 1, 5, 1, {{0, 4}, {0, 0}}},
        q8_0   = {32, 1, 8, 0, {{0, 2}, {0, 0}}},
        iq4_nl = {32, 1, 4, 0, {{0, 2}, {0, 0}}},
        q2_k   = {256, 16, 2, 1, {{0, 16}, {80, 4}}},
        q3_k   = {256, 16, 3, 0, {{96, 14}, {0, 0}}},
        q4_k   = {256, 8, 4, 1, {{0, 16}, {0, 0}}},
        q5_k   = {256, 8, 5, 1, {{0, 16}, {0, 0}}},
        q6_k   = {256, 16, 6, 0, {{192, 18}, {0, 0}}},
        iq4_xs = {256, 8, 4, 0, {{0, 8}, {0, 0}}};
    const struct layout *s;
    switch (type) {
    case WP_Q4_0: s = &q4_0; break;
    case WP_Q4_1: s = &q4_1; break;
    case WP_Q5_0: s = &q5_0; break;
    case WP_Q5_1: s = &q5_1; break;
    case WP_Q8_0: s = &q8_0; break;
    case WP_IQ4_NL: s = &iq4_nl; break;
    case WP_Q2_K: s = &q2_k; break;
    case WP_Q3_K: s = &q3_k; break;
    case WP_Q4_K: s = &q4_k; break;
    case WP_Q5_K: s = &q5_k; break;
    case WP_Q6_K: s = &q6_k; break;
    case WP_IQ4_XS: s = &iq4_xs; break;
    default: return -1;
    }
    *l = *s;
    return 0;
}

int wp_block_supported(int type)
{
    struct layout l;
    return get_layout(type, &l) == 0;
}

int wp_block_info_get(int type, wp_block_info *info)
{
    struct layout l;
    if (get_layout(type, &l))
        return -1;
    info->n = l.n;
    info->nsub = l.nsub;
    info->sub_n = l.n / l.nsub;
    info->code_bits = l.bits;
    info->side_bytes = l.side[0].len + l.side[1].len;
    info->block_bytes = (int)wp_ggml_type_size((uint32_t)type);
    info->has_min = l.has_min;
    return 0;
}

/* ---- 32-bit little-endian helpers (Q5_0/Q5_1 qh) */
static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

/* ---- shared code layouts */

/* 32 nibbles: byte j holds weight j (low) and weight j+16 (high). */
static void nib32_get(const uint8_t *qs, uint8_t *q)
{
    for (int j = 0; j < 16; j++) {
        q[j] = qs[j] & 15;
        q[j + 16] = qs[j] >> 4;
    }
}
static void nib32_put(const uint8_t *q, uint8_t *qs)
{
    for (int j = 0; j < 16; j++)
        qs[j] = (uint8_t)((q[j] & 15) | (q[j + 16] & 15) << 4);
}

/* Q5_0/Q5_1: low nibbles as nib32, bit 4 of weight j is bit j of qh. */
static void q5_32_get(const uint8_t *qh4, const uint8_t *qs, uint8_t *q)
{
    uint32_t qh = rd32(qh4);
    nib32_get(qs, q);
    for (int j = 0; j < 32; j++)
        q[j] |= (uint8_t)(((qh >> j) & 1) << 4);
}
static void q5_32_put(const uint8_t *q, uint8_t *qh4, uint8_t *qs)
{
    uint32_t qh = 0;
    nib32_put(q, qs);
    for (int j = 0; j < 32; j++)
        qh |= (uint32_t)((q[j] >> 4) & 1) << j;
    wr32(qh4, qh);
}

/* K-quant 2-bit planes (Q2_K codes, Q3_K low bits): weight 128h + 32s + l
 * is bits 2s..2s+1 of qs[32h + l]. */
static void crumbs_get(const uint8_t *qs, uint8_t *q)
{
    for (int w = 0; w < 256; w++)
        q[w] = (qs[32 * (w / 128) + w % 32] >> (2 * ((w / 32) % 4))) & 3;
}
static void crumbs_put(const uint8_t *q, uint8_t *qs)
{
    memset(qs, 0, 64);
    for (int w = 0; w < 256; w++)
        qs[32 * (w / 128) + w % 32] |= (uint8_t)((q[w] & 3) << (2 * ((w / 32) % 4)));
}

/* Q4_K/Q5_K/IQ4_XS-style nibbles in 64-weight chunks: weight 64c + l
 * (l < 32) is the low nibble of qs[32c + l], weight 64c + 32 + l the high. */
static void nib64_get(const uint8_t *qs, uint8_t *q)
{
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            q[64 * c + l] = qs[32 * c + l] & 15;
            q[64 * c + 32 + l] = qs[32 * c + l] >> 4;
        }
}
static void nib64_put(const uint8_t *q, uint8_t *qs)
{
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++)
            qs[32 * c + l] = (uint8_t)((q[64 * c + l] & 15) | (q[64 * c + 32 + l] & 15) << 4);
}

/* K-quant 12-byte packing of eight 6-bit scales and eight 6-bit mins
 * (Q4_K/Q5_K; source get_scale_min_k4). */
static void k4_scales_get(const uint8_t *s, int16_t *sc, int16_t *mn)
{
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 63;
        mn[j] = s[j + 4] & 63;
        sc[j + 4] = (int16_t)((s[j + 8] & 15) | (s[j] >> 6) << 4);
        mn[j + 4] = (int16_t)((s[j + 8] >> 4) | (s[j + 4] >> 6) << 4);
    }
}
static void k4_scales_put(const int16_t *sc, const int16_t *mn, uint8_t *s)
{
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)((sc[j] & 63) | ((sc[j + 4] >> 4) & 3) << 6);
        s[j + 4] = (uint8_t)((mn[j] & 63) | ((mn[j + 4] >> 4) & 3) << 6);
        s[j + 8] = (uint8_t)((sc[j + 4] & 15) | (mn[j + 4] & 15) << 4);
    }
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
    k4_scales_get(s, sc, mn);
}

/* Q3_K 12-byte packing of sixteen 6-bit scales: low nibble of scale j in
 * byte j%8 (j < 8 low half, else high half), bits 4..5 in byte 8 + j%4 at
 * bit 2*(j/4). */
static void k3_scales_get(const uint8_t *s, int16_t *sc)
{
    for (int j = 0; j < 16; j++) {
        int lo = j < 8 ? s[j] & 15 : s[j - 8] >> 4;
        int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        sc[j] = (int16_t)(lo | hi << 4);
    }
}
static void k3_scales_put(const int16_t *sc, uint8_t *s)
{
    memset(s, 0, 12);
    for (int j = 0; j < 16; j++) {
        s[j % 8] |= (uint8_t)((sc[j] & 15) << (j < 8 ? 0 : 4));
        s[8 + j % 4] |= (uint8_t)(((sc[j] >> 4) & 3) << (2 * (j / 4)));
    }
}

int wp_block_unpack(int type, const void *blk, wp_block_parts *p)
{
    const uint8_t *b = blk;
    struct layout l;
    if (get_layout(type, &l))
        return -1;
    memset(p, 0, sizeof *p);
    p->n = l.n;
    switch (type) {
    case WP_Q4_0:
    case WP_IQ4_NL:
        p->d = wp_rd16(b);
        nib32_get(b + 2, p->q);
        break;
    case WP_Q4_1:
        p->d = wp_rd16(b);
        p->dmin = wp_rd16(b + 2);
        nib32_get(b + 4, p->q);
        break;
    case WP_Q5_0:
        p->d = wp_rd16(b);
        q5_32_get(b + 2, b + 6, p->q);
        break;
    case WP_Q5_1:
        p->d = wp_rd16(b);
        p->dmin = wp_rd16(b + 2);
        q5_32_get(b + 4, b + 8, p->q);
        break;
    case WP_Q8_0:
        p->d = wp_rd16(b);
        for (int j = 0; j < 32; j++)
            p->q[j] = b[2 + j] ^ 0x80;
        break;
    case WP_Q2_K:                 /* scales[16] qs[64] d dmin */
        for (int j = 0; j < 16; j++) {
            p->sc[j] = b[j] & 15;
            p->mn[j] = b[j] >> 4;
        }
        crumbs_get(b + 16, p->q);
        p->d = wp_rd16(b + 80);
        p->dmin = wp_rd16(b + 82);
        break;
    case WP_Q3_K:                 /* hmask[32] qs[64] scales[12] d */
        crumbs_get(b + 32, p->q);
        for (int w = 0; w < 256; w++)
            p->q[w] |= (uint8_t)(((b[w % 32] >> (w / 32)) & 1) << 2);
        k3_scales_get(b + 96, p->sc);
        p->d = wp_rd16(b + 108);
        break;
    case WP_Q4_K:                 /* d dmin scales[12] qs[128] */
        p->d = wp_rd16(b);
        p->dmin = wp_rd16(b + 2);
        k4_scales_get(b + 4, p->sc, p->mn);
        nib64_get(b + 16, p->q);
        break;
    case WP_Q5_K:                 /* d dmin scales[12] qh[32] qs[128] */
        p->d = wp_rd16(b);
        p->dmin = wp_rd16(b + 2);
        k4_scales_get(b + 4, p->sc, p->mn);
        nib64_get(b + 48, p->q);
        for (int w = 0; w < 256; w++)
            p->q[w] |= (uint8_t)(((b[16 + w % 32] >> (w / 32)) & 1) << 4);
        break;
    case WP_Q6_K:                 /* ql[128] qh[64] scales[16] d */
        for (int w = 0; w < 256; w++) {
            int h = w / 128, r = w % 128, l = r % 32, g = r / 32;   /* g: 0..3 */
            const uint8_t *ql = b + 64 * h, *qh = b + 128 + 32 * h;
            int lo = (ql[l + 32 * (g & 1)] >> (4 * (g >> 1))) & 15;
            int hi = (qh[l] >> (2 * g)) & 3;
            p->q[w] = (uint8_t)(lo | hi << 4);
        }
        for (int j = 0; j < 16; j++)
            p->sc[j] = (int8_t)b[192 + j];
        p->d = wp_rd16(b + 208);
        break;
    case WP_IQ4_XS: {             /* d scales_h scales_l[4] qs[128] */
        p->d = wp_rd16(b);
        uint16_t sh = wp_rd16(b + 2);
        for (int ib = 0; ib < 8; ib++)
            p->sc[ib] = (int16_t)(((b[4 + ib / 2] >> (4 * (ib % 2))) & 15) | ((sh >> (2 * ib)) & 3) << 4);
        for (int ib = 0; ib < 8; ib++)
            nib32_get(b + 8 + 16 * ib, p->q + 32 * ib);
        break;
    }
    }
    return 0;
}

int wp_block_pack(int type, const wp_block_parts *p, void *blk)
{
    uint8_t *b = blk;
    struct layout l;
    if (get_layout(type, &l))
        return -1;
    switch (type) {
    case WP_Q4_0:
    case WP_IQ4_NL:
        wp_wr16(b, p->d);
        nib32_put(p->q, b + 2);
        break;
    case WP_Q4_1:
        wp_wr16(b, p->d);
        wp_wr16(b + 2, p->dmin);
        nib32_put(p->q, b + 4);
        break;
    case WP_Q5_0:
        wp_wr16(b, p->d);
        q5_32_put(p->q, b + 2, b + 6);
        break;
    case WP_Q5_1:
        wp_wr16(b, p->d);
        wp_wr16(b + 2, p->dmin);
        q5_32_put(p->q, b + 4, b + 8);
        break;
    case WP_Q8_0:
        wp_wr16(b, p->d);
        for (int j = 0; j < 32; j++)
            b[2 + j] = p->q[j] ^ 0x80;
        break;
    case WP_Q2_K:
        for (int j = 0; j < 16; j++)
            b[j] = (uint8_t)((p->sc[j] & 15) | (p->mn[j] & 15) << 4);
        crumbs_put(p->q, b + 16);
        wp_wr16(b + 80, p->d);
        wp_wr16(b + 82, p->dmin);
        break;
    case WP_Q3_K:
        memset(b, 0, 32);
        for (int w = 0; w < 256; w++)
            b[w % 32] |= (uint8_t)(((p->q[w] >> 2) & 1) << (w / 32));
        crumbs_put(p->q, b + 32);
        k3_scales_put(p->sc, b + 96);
        wp_wr16(b + 108, p->d);
        break;
    case WP_Q4_K:
        wp_wr16(b, p->d);
        wp_wr16(b + 2, p->dmin);
        k4_scales_put(p->sc, p->mn, b + 4);
        nib64_put(p->q, b + 16);
        break;
    case WP_Q5_K:
        wp_wr16(b, p->d);
        wp_wr16(b + 2, p->dmin);
        k4_scales_put(p->sc, p->mn, b + 4);
        memset(b + 16, 0, 32);
        for (int w = 0; w < 256; w++)
            b[16 + w % 32] |= (uint8_t)(((p->q[w] >> 4) & 1) << (w / 32));
        nib64_put(p->q, b + 48);
        break;
    case WP_Q6_K:
        memset(b, 0, 192);
        for (int w = 0; w < 256; w++) {
            int h = w / 128, r = w % 128, l = r % 32, g = r / 32;
            uint8_t *ql = b + 64 * h, *qh = b + 128 + 32 * h;
            ql[l + 32 * (g & 1)] |= (uint8_t)((p->q[w] & 15) << (4 * (g >> 1)));
            qh[l] |= (uint8_t)(((p->q[w] >> 4) & 3) << (2 * g));
        }
        for (int j = 0; j < 16; j++)
            b[192 + j] = (uint8_t)p->sc[j];
        wp_wr16(b + 208, p->d);
        break;
    case WP_IQ4_XS: {
        uint16_t sh = 0;
        wp_wr16(b, p->d);
        memset(b + 4, 0, 4);
        for (int ib = 0; ib < 8; ib++) {
            b[4 + ib / 2] |= (uint8_t)((p->sc[ib] & 15) << (4 * (ib % 2)));
            sh |= (uint16_t)(((p->sc[ib] >> 4) & 3) << (2 * ib));
        }
        wp_wr16(b + 2, sh);
        for (int ib = 0; ib < 8; ib++)
            nib32_put(p->q + 32 * ib, b + 8 + 16 * ib);
        break;
    }
    }
    return 0;
}

int wp_block_get_side(int type, const void *blk, uint8_t *side)
{
    struct layout l;
    if (get_layout(type, &l))
        return -1;
    for (int k = 0; k < 2; k++) {
        memcpy(side, (const uint8_t *)blk + l.side[k].off, (size_t)l.side[k].len);
        side += l.side[k].len;
    }
    return 0;
}

int wp_block_put_side(int type, const uint8_t *side, void *blk)
{
    struct layout l;
    if (get_layout(type, &l))
        return -1;
    for (int k = 0; k < 2; k++) {
        memcpy((uint8_t *)blk + l.side[k].off, side, (size_t)l.side[k].len);
        side += l.side[k].len;
    }
    return 0;
}

int wp_block_get_codes(int type, const void *blk, uint8_t *q)
{
    wp_block_parts p;
    if (wp_block_unpack(type, blk, &p))
        return -1;
    memcpy(q, p.q, (size_t)p.n);
    return 0;
}

int wp_block_put_codes(int type, const uint8_t *q, void *blk)
{
    wp_block_parts p;
    if (wp_block_unpack(type, blk, &p))
        return -1;
    memcpy(p.q, q, (size_t)p.n);
    return wp_block_pack(type, &p, blk);
}

/* ---- dequantization: the float expressions, operand order included, are
 * those of dequantize_row_* so that results are bit-equal. */
float wp_parts_value(int type, const wp_block_parts *p, int i)
{
    return wp_parts_code_value(type, p, i, p->q[i]);
}

float wp_parts_code_value(int type, const wp_block_parts *p, int i, int q)
{
    const float d = wp_fp16_to_f32(p->d);
    switch (type) {
    case WP_Q4_0: return (q - 8) * d;
    case WP_Q4_1: return q * d + wp_fp16_to_f32(p->dmin);
    case WP_Q5_0: return (q - 16) * d;
    case WP_Q5_1: return q * d + wp_fp16_to_f32(p->dmin);
    case WP_Q8_0: return (q - 128) * d;
    case WP_IQ4_NL: return d * wp_kvalues_iq4nl[q & 15];
    case WP_Q2_K: {
        const float dl = d * p->sc[i / 16];
        const float ml = wp_fp16_to_f32(p->dmin) * p->mn[i / 16];
        return dl * q - ml;
    }
    case WP_Q3_K: {
        const float dl = d * (p->sc[i / 16] - 32);
        return dl * (q - 4);
    }
    case WP_Q4_K:
    case WP_Q5_K: {
        const float dl = d * p->sc[i / 32];
        const float ml = wp_fp16_to_f32(p->dmin) * p->mn[i / 32];
        return dl * q - ml;
    }
    case WP_Q6_K: return d * p->sc[i / 16] * (q - 32);
    case WP_IQ4_XS: {
        const float dl = d * (p->sc[i / 32] - 32);
        return dl * wp_kvalues_iq4nl[q & 15];
    }
    }
    return 0.0f;
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
