/*
 * block_layout.h - where each bit of a ggml quantized block lives: the one
 * place in wpack that knows it, as inline functions that C11 (lib/blocks.c,
 * the runtime's CPU reference) and CUDA (runtime/kernels.cuh, through
 * runtime/wr_dev.h) compile alike.
 *
 *   wp_block_geom_of   weights, bytes, sub-blocks, code bits, side spans and
 *                      what a code stands for, per type
 *   wp_block_code      code i of a block;  wp_block_codes_put: a block's codes written
 *   wp_block_side_get, wp_block_side_put, wp_block_assemble  side bytes out and
 *                      in, a whole block from side bytes and codes
 *   wp_block_code_span8  where 8 codes sit in 8 bytes (the twin's loads)
 *   wp_side_*          d, dmin and the sub-block scales and mins, read from
 *                      and written to a block's side bytes
 *   WP_KVALUES_IQ4NL   the 16 non-linear levels of IQ4_NL and IQ4_XS
 *
 * A block's side bytes are its non-code bytes, its spans in block order
 * (wp_block_get_side, blocks.h). Layouts: ggml/src/ggml-common.h's
 * block_q4_0 ... block_iq4_xs of the pinned reference llama.cpp, and its
 * get_scale_min_k4 (ggml-quants.c); multi-byte fields little-endian.
 * Bit-exactness against llama.cpp's dequantizers is tested through blocks.h
 * (tests/unit/test_blocks.c, ppl.bats) and the runtime's use of the same
 * functions (tests/runtime/test_cpu.c).
 */
#ifndef WPACK_BLOCK_LAYOUT_H
#define WPACK_BLOCK_LAYOUT_H

#include <stdint.h>

#include "ggml_type.h"

/* WP_BL: an inline function for the host and, under nvcc, the device too
 * (forced inline there: the kernels' inner loops call them); WP_BL_CONST
 * also a constant expression in C++ (the kernels' templates take a type's
 * geometry as a constant). */
#if defined(__CUDACC__)
#define WP_BL static __host__ __device__ __forceinline__
#else
#define WP_BL static inline
#endif
#if defined(__cplusplus) && __cplusplus >= 201402L   /* (C++11's constexpr is one return statement) */
#define WP_BL_CONST WP_BL constexpr
#else
#define WP_BL_CONST WP_BL
#endif

/* kvalues_iq4nl (ggml-common.h): code q of IQ4_NL and IQ4_XS stands for
 * level q times the (sub-)block scale. */
#define WP_KVALUES_IQ4NL {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

/* Geometry of a block type; all 0 for a type that is not a block type. */
typedef struct {
    int n;            /* weights per block: 32 or 256 */
    int bytes;        /* bytes per block (ggml type_size) */
    int nsub;         /* sub-blocks with their own scale (1: the 32-weight types) */
    int sub_n;        /* weights per sub-block (n / nsub) */
    int bits;         /* bits per code: 2, 3, 4, 5, 6 or 8 */
    int side;         /* side bytes: side_len[0] + side_len[1] */
    int side_off[2];  /* the side spans (offset, length), block order; */
    int side_len[2];  /*   a second span only in Q2_K (d and dmin after the codes) */
    int has_min;      /* 1 when dmin is used (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K) */
    int code_off;     /* code q stands for q - code_off (Q8_0: the int8, sign bit flipped) */
    int nl;           /* 1: code q stands for kvalues_iq4nl[q] (IQ4_NL, IQ4_XS) */
    int sc_bias;      /* a stored sub-block scale sc scales by sc - sc_bias (Q3_K, IQ4_XS: 32) */
} wp_block_geom;

/* A geometry from its fields (wp_block_geom_of's table rows). */
WP_BL_CONST wp_block_geom wp_block_geom_make(int n, int bytes, int nsub, int bits, int o0, int l0, int o1, int l1,
                                             int has_min, int code_off, int nl, int sc_bias)
{
    wp_block_geom g = {n,  bytes,   nsub,     nsub ? n / nsub : 0, bits,    l0 + l1,
                       {o0, o1}, {l0, l1}, has_min, code_off,           nl, sc_bias};
    return g;
}

WP_BL_CONST wp_block_geom wp_block_geom_of(int type)
{
    switch (type) {
    /*                                   n  bytes nsub bits  side spans     min  off  nl  bias */
    case WP_Q4_0:   return wp_block_geom_make(32,   18,  1, 4,    0, 2,   0, 0, 0,   8,  0,  0);
    case WP_Q4_1:   return wp_block_geom_make(32,   20,  1, 4,    0, 4,   0, 0, 1,   0,  0,  0);
    case WP_Q5_0:   return wp_block_geom_make(32,   22,  1, 5,    0, 2,   0, 0, 0,  16,  0,  0);
    case WP_Q5_1:   return wp_block_geom_make(32,   24,  1, 5,    0, 4,   0, 0, 1,   0,  0,  0);
    case WP_Q8_0:   return wp_block_geom_make(32,   34,  1, 8,    0, 2,   0, 0, 0, 128,  0,  0);
    case WP_IQ4_NL: return wp_block_geom_make(32,   18,  1, 4,    0, 2,   0, 0, 0,   0,  1,  0);
    case WP_Q2_K:   return wp_block_geom_make(256,  84, 16, 2,    0, 16, 80, 4, 1,   0,  0,  0);
    case WP_Q3_K:   return wp_block_geom_make(256, 110, 16, 3,   96, 14,  0, 0, 0,   4,  0, 32);
    case WP_Q4_K:   return wp_block_geom_make(256, 144,  8, 4,    0, 16,  0, 0, 1,   0,  0,  0);
    case WP_Q5_K:   return wp_block_geom_make(256, 176,  8, 5,    0, 16,  0, 0, 1,   0,  0,  0);
    case WP_Q6_K:   return wp_block_geom_make(256, 210, 16, 6,  192, 18,  0, 0, 0,  32,  0,  0);
    case WP_IQ4_XS: return wp_block_geom_make(256, 136,  8, 4,    0, 8,   0, 0, 0,   0,  1, 32);
    default:        return wp_block_geom_make(0,     0,  0, 0,    0, 0,   0, 0, 0,   0,  0,  0);
    }
}

/* ---- codes ----------------------------------------------------------------
 * Code i (0 .. n-1, weight order) of a block of type at b, 0 .. 2^bits - 1
 * (block_q4_0 ... block_iq4_xs: qs, qh, hmask, ql as dequantize_row_* reads
 * them); 0 for a type that is not a block type. */
WP_BL int wp_block_code(int type, const uint8_t *b, int i)
{
    switch (type) {
    case WP_Q4_0: case WP_IQ4_NL: return (b[2 + (i & 15)] >> (i & 16 ? 4 : 0)) & 15;
    case WP_Q4_1: return (b[4 + (i & 15)] >> (i & 16 ? 4 : 0)) & 15;
    case WP_Q5_0: return ((b[6 + (i & 15)] >> (i & 16 ? 4 : 0)) & 15) | ((b[2 + i / 8] >> (i % 8)) & 1) << 4;
    case WP_Q5_1: return ((b[8 + (i & 15)] >> (i & 16 ? 4 : 0)) & 15) | ((b[4 + i / 8] >> (i % 8)) & 1) << 4;
    case WP_Q8_0: return b[2 + i] ^ 0x80;
    case WP_Q2_K: return (b[16 + 32 * (i / 128) + i % 32] >> (2 * ((i / 32) % 4))) & 3;
    case WP_Q3_K: return ((b[32 + 32 * (i / 128) + i % 32] >> (2 * ((i / 32) % 4))) & 3) |
                         ((b[i % 32] >> (i / 32)) & 1) << 2;
    case WP_Q4_K: return (b[16 + 32 * (i / 64) + i % 32] >> ((i / 32) % 2 ? 4 : 0)) & 15;
    case WP_Q5_K: return ((b[48 + 32 * (i / 64) + i % 32] >> ((i / 32) % 2 ? 4 : 0)) & 15) |
                         ((b[16 + i % 32] >> (i / 32)) & 1) << 4;
    case WP_Q6_K: {
        int h = i / 128, r = i % 128, l = r % 32, g = r / 32;
        int lo = (b[64 * h + l + 32 * (g & 1)] >> (4 * (g >> 1))) & 15;
        int hi = (b[128 + 32 * h + l] >> (2 * g)) & 3;
        return lo | hi << 4;
    }
    case WP_IQ4_XS: return (b[8 + 16 * (i / 32) + (i & 15)] >> (i & 16 ? 4 : 0)) & 15;
    default: return 0;
    }
}

/* Write a block's n codes q (weight order, each masked to the type's bits)
 * into its code bits, which must all be 0 (a block's non-side bytes cleared):
 * wp_block_code's inverse, the packing steps of quantize_row_*_ref. A loop
 * a layout, not a code at a time: the runtime's restore kernel writes a
 * block's bytes so. */
WP_BL void wp_block_codes_put(int type, const uint8_t *q, uint8_t *b)
{
    switch (type) {
    case WP_Q4_0: case WP_IQ4_NL: case WP_Q4_1: {
        int at = type == WP_Q4_1 ? 4 : 2;
        for (int j = 0; j < 16; j++)
            b[at + j] = (uint8_t)((q[j] & 15) | (q[j + 16] & 15) << 4);
        break;
    }
    case WP_Q5_0: case WP_Q5_1: {
        int qh = type == WP_Q5_1 ? 4 : 2;
        for (int j = 0; j < 16; j++)
            b[qh + 4 + j] = (uint8_t)((q[j] & 15) | (q[j + 16] & 15) << 4);
        for (int j = 0; j < 32; j++)
            b[qh + j / 8] |= (uint8_t)(((q[j] >> 4) & 1) << (j % 8));
        break;
    }
    case WP_Q8_0:
        for (int j = 0; j < 32; j++)
            b[2 + j] = (uint8_t)(q[j] ^ 0x80);
        break;
    case WP_Q2_K: case WP_Q3_K: {
        int at = type == WP_Q2_K ? 16 : 32;
        for (int w = 0; w < 256; w++)
            b[at + 32 * (w / 128) + w % 32] |= (uint8_t)((q[w] & 3) << (2 * ((w / 32) % 4)));
        if (type == WP_Q3_K)
            for (int w = 0; w < 256; w++)
                b[w % 32] |= (uint8_t)(((q[w] >> 2) & 1) << (w / 32));
        break;
    }
    case WP_Q4_K: case WP_Q5_K: {
        int at = type == WP_Q4_K ? 16 : 48;
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++)
                b[at + 32 * c + l] = (uint8_t)((q[64 * c + l] & 15) | (q[64 * c + 32 + l] & 15) << 4);
        if (type == WP_Q5_K)
            for (int w = 0; w < 256; w++)
                b[16 + w % 32] |= (uint8_t)(((q[w] >> 4) & 1) << (w / 32));
        break;
    }
    case WP_Q6_K:
        for (int w = 0; w < 256; w++) {
            int h = w / 128, r = w % 128, l = r % 32, g = r / 32;
            b[64 * h + l + 32 * (g & 1)] |= (uint8_t)((q[w] & 15) << (4 * (g >> 1)));
            b[128 + 32 * h + l] |= (uint8_t)(((q[w] >> 4) & 3) << (2 * g));
        }
        break;
    case WP_IQ4_XS:
        for (int ib = 0; ib < 8; ib++)
            for (int j = 0; j < 16; j++)
                b[8 + 16 * ib + j] = (uint8_t)((q[32 * ib + j] & 15) | (q[32 * ib + j + 16] & 15) << 4);
        break;
    default:
        break;
    }
}

/* Where codes i0 .. i0 + 7 (i0 % 8 == 0) of a block sit, for the types
 * whose 8 consecutive codes are in 8 consecutive bytes (Q4_0, IQ4_NL, Q4_1,
 * Q8_0, Q4_K, IQ4_XS): code i0 + u = (b[*off + u] >> *shift) & 15, or for
 * Q8_0 b[*off + u] ^ 0x80 (the layout wp_block_code reads one at a time; the
 * twin GEMV reads the 8 bytes in one to four loads). Returns 0, or -1 for
 * the other types. */
WP_BL int wp_block_code_span8(int type, int i0, int *off, int *shift)
{
    switch (type) {
    case WP_Q4_0: case WP_IQ4_NL: *off = 2 + (i0 & 15); *shift = i0 & 16 ? 4 : 0; return 0;
    case WP_Q4_1: *off = 4 + (i0 & 15); *shift = i0 & 16 ? 4 : 0; return 0;
    case WP_Q8_0: *off = 2 + i0; *shift = 0; return 0;
    case WP_Q4_K: *off = 16 + 32 * (i0 / 64) + i0 % 32; *shift = (i0 / 32) % 2 ? 4 : 0; return 0;
    case WP_IQ4_XS: *off = 8 + 16 * (i0 / 32) + (i0 & 15); *shift = i0 & 16 ? 4 : 0; return 0;
    default: return -1;
    }
}

/* Copy a block's side bytes out to side (wp_block_geom_of(type).side of
 * them, its spans in block order), and back into a block's spans. */
WP_BL void wp_block_side_get(int type, const uint8_t *b, uint8_t *side)
{
    const wp_block_geom g = wp_block_geom_of(type);
    int o = 0;
    for (int s = 0; s < 2; s++)
        for (int j = 0; j < g.side_len[s]; j++)
            side[o++] = b[g.side_off[s] + j];
}

WP_BL void wp_block_side_put(int type, const uint8_t *side, uint8_t *b)
{
    const wp_block_geom g = wp_block_geom_of(type);
    int o = 0;
    for (int s = 0; s < 2; s++)
        for (int j = 0; j < g.side_len[s]; j++)
            b[g.side_off[s] + j] = side[o++];
}

/* One exact block from its side bytes and its n codes (weight order): the
 * block zeroed, the side bytes put back, the codes written (the inverse of
 * wp_block_side_get and wp_block_code). */
WP_BL void wp_block_assemble(int type, const uint8_t *side, const uint8_t *q, uint8_t *b)
{
    const wp_block_geom g = wp_block_geom_of(type);
    for (int j = 0; j < g.bytes; j++)
        b[j] = 0;
    wp_block_side_put(type, side, b);
    wp_block_codes_put(type, q, b);
}

/* ---- side bytes -----------------------------------------------------------
 * A block's side bytes (its spans, in block order) hold, by type:
 *   Q4_0, Q5_0, Q8_0, IQ4_NL  d
 *   Q4_1, Q5_1                d, m (in dmin)
 *   Q2_K                      scales[16] (scale low nibble, min high), d, dmin
 *   Q3_K                      scales[12] (16 6-bit scales), d
 *   Q4_K, Q5_K                d, dmin, scales[12] (8 6-bit scales, 8 mins: get_scale_min_k4)
 *   Q6_K                      scales[16] (int8), d
 *   IQ4_XS                    d, scales_h (16 bits), scales_l[4] (8 6-bit scales) */

/* The little-endian 16-bit field at p (fp16 bits, IQ4_XS's scales_h), read and written. */
WP_BL unsigned wp_side_u16(const uint8_t *p) { return (unsigned)(p[0] | p[1] << 8); }

WP_BL void wp_side_put16(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* Byte offset of d in the side bytes; of dmin, d's + 2. */
WP_BL int wp_side_d_at(int type)
{
    return type == WP_Q2_K ? 16 : type == WP_Q3_K ? 12 : type == WP_Q6_K ? 16 : 0;
}

/* The raw fp16 bits of d (the block or super-block scale) and of dmin (0
 * for a type without a min). */
WP_BL unsigned wp_side_d(int type, const uint8_t *side) { return wp_side_u16(side + wp_side_d_at(type)); }
WP_BL unsigned wp_side_dmin(int type, const uint8_t *side)
{
    return wp_block_geom_of(type).has_min ? wp_side_u16(side + wp_side_d_at(type) + 2) : 0u;
}

/* The 6-bit scale and min j (0..7) of the K-quant 12-byte packing at s
 * (get_scale_min_k4). */
WP_BL void wp_side_k4(const uint8_t *s, int j, int *sc, int *mn)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
        *mn = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

/* Sub-block s's scale as stored (blocks.h's wp_block_parts sc: Q2_K 0..15,
 * Q3_K 0..63 biased by 32, Q4_K/Q5_K 0..63, Q6_K -128..127, IQ4_XS 0..63
 * biased by 32) to *sc, and its min (Q2_K 0..15, Q4_K/Q5_K 0..63) to *mn;
 * 0 where the type has none. */
WP_BL void wp_side_sc_mn(int type, const uint8_t *side, int s, int *sc, int *mn)
{
    *sc = *mn = 0;
    switch (type) {
    case WP_Q2_K: *sc = side[s] & 15; *mn = side[s] >> 4; break;
    case WP_Q3_K: *sc = (s < 8 ? side[s] & 15 : side[s - 8] >> 4) | ((side[8 + s % 4] >> (2 * (s / 4))) & 3) << 4; break;
    case WP_Q4_K: case WP_Q5_K: wp_side_k4(side + 4, s, sc, mn); break;
    case WP_Q6_K: *sc = (int8_t)side[s]; break;
    case WP_IQ4_XS: *sc = ((side[4 + s / 2] >> (4 * (s % 2))) & 15) | ((wp_side_u16(side + 2) >> (2 * s)) & 3) << 4; break;
    default: break;
    }
}

/* Write the side bytes of a block (wp_block_geom_of(type).side of them)
 * from d, dmin (raw fp16 bits) and the nsub sub-block scales and mins as
 * stored (wp_side_sc_mn's ranges; not read for the 32-weight types, whose
 * sc and mn may be NULL), each masked to its field: the inverse of
 * wp_side_d, wp_side_dmin and wp_side_sc_mn (the packing steps of
 * quantize_row_*_ref). */
WP_BL void wp_side_pack(int type, unsigned d, unsigned dmin, const int16_t *sc, const int16_t *mn, uint8_t *side)
{
    const wp_block_geom g = wp_block_geom_of(type);
    for (int k = 0; k < g.side; k++)
        side[k] = 0;
    wp_side_put16(side + wp_side_d_at(type), d);
    if (g.has_min)
        wp_side_put16(side + wp_side_d_at(type) + 2, dmin);
    switch (type) {
    case WP_Q2_K:
        for (int j = 0; j < 16; j++)
            side[j] = (uint8_t)((sc[j] & 15) | (mn[j] & 15) << 4);
        break;
    case WP_Q3_K:
        for (int j = 0; j < 16; j++) {
            side[j % 8] |= (uint8_t)((sc[j] & 15) << (j < 8 ? 0 : 4));
            side[8 + j % 4] |= (uint8_t)(((sc[j] >> 4) & 3) << (2 * (j / 4)));
        }
        break;
    case WP_Q4_K: case WP_Q5_K:
        for (int j = 0; j < 4; j++) {
            side[4 + j] = (uint8_t)((sc[j] & 63) | ((sc[j + 4] >> 4) & 3) << 6);
            side[8 + j] = (uint8_t)((mn[j] & 63) | ((mn[j + 4] >> 4) & 3) << 6);
            side[12 + j] = (uint8_t)((sc[j + 4] & 15) | (mn[j + 4] & 15) << 4);
        }
        break;
    case WP_Q6_K:
        for (int j = 0; j < 16; j++)
            side[j] = (uint8_t)sc[j];
        break;
    case WP_IQ4_XS: {
        unsigned sh = 0;
        for (int j = 0; j < 8; j++) {
            side[4 + j / 2] |= (uint8_t)((sc[j] & 15) << (4 * (j % 2)));
            sh |= (unsigned)((sc[j] >> 4) & 3) << (2 * j);
        }
        wp_side_put16(side + 2, sh);
        break;
    }
    default:
        break;
    }
}

#undef WP_BL
#undef WP_BL_CONST
#endif
