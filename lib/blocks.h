/*
 * blocks.h - ggml's quantized blocks as parts, and nothing else.
 *
 * Where each bit of a ggml block lives is block_layout.h's (inline
 * functions that the runtime's CUDA kernels compile too); this API is built
 * on it, and everything else sees a block as "parts": one integer code per
 * weight plus side data (the super-block/block scale d, the min dmin and the
 * sub-block scales and mins), exactly as the block stores them.
 *
 * Supported types: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL (32 weights per
 * block) and Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS (256 weights per
 * super-block). Layouts follow ggml/src/ggml-common.h (block_q4_0 ...
 * block_iq4_xs) of the pinned reference llama.cpp; the dequantizers give the
 * same floats, bit for bit, as its dequantize_row_* (ggml-quants.c).
 *
 * Codes (wp_block_parts.q[i], weight order i = 0 .. n-1, 0 .. 2^bits-1) and
 * the value each one stands for:
 *   Q4_0    q - 8                  times d
 *   Q4_1    q                      times d, plus m (stored in dmin)
 *   Q5_0    q - 16                 times d
 *   Q5_1    q                      times d, plus m (stored in dmin)
 *   Q8_0    q - 128 (the int8 byte, sign bit flipped) times d
 *   IQ4_NL  kvalues_iq4nl[q]       times d
 *   Q2_K    q (0..3)               times d*sc[s], minus dmin*mn[s]  (s = i/16)
 *   Q3_K    q - 4 (q 0..7)         times d*(sc[s]-32)               (s = i/16)
 *   Q4_K    q (0..15)              times d*sc[s], minus dmin*mn[s]  (s = i/32)
 *   Q5_K    q (0..31)              times d*sc[s], minus dmin*mn[s]  (s = i/32)
 *   Q6_K    q - 32 (q 0..63)       times d*sc[s], sc signed int8    (s = i/16)
 *   IQ4_XS  kvalues_iq4nl[q]       times d*(sc[s]-32)               (s = i/32)
 *
 * Side data is "everything in the block that is not code bits", kept as the
 * raw bytes the block stores them in (block field order): an entropy coder
 * can code the codes and keep side bytes verbatim, and
 * wp_block_put_side + wp_block_put_codes restores the exact block.
 *
 * All functions are pure, thread-safe and take blocks as byte pointers with no
 * alignment requirement.
 */
#ifndef WPACK_BLOCKS_H
#define WPACK_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 16 non-linear levels of IQ4_NL / IQ4_XS (ggml-common.h kvalues_iq4nl). */
extern const int8_t wp_kvalues_iq4nl[16];

/* One block as integers. Fields a type does not have are 0. */
typedef struct {
    uint8_t  q[256];  /* code per weight, weight order, 0 .. 2^bits-1 */
    uint16_t d;       /* raw fp16 bits: block scale (32-weight types) or
                         super-block scale of the sub-block scales (K, IQ4_XS) */
    uint16_t dmin;    /* raw fp16 bits: Q4_1/Q5_1 block min m (added);
                         Q2_K/Q4_K/Q5_K super-block scale of the mins */
    int16_t  sc[16];  /* sub-block scale as stored: Q2_K 0..15, Q3_K 0..63
                         (biased by 32), Q4_K/Q5_K 0..63, Q6_K -128..127,
                         IQ4_XS 0..63 (biased by 32) */
    int16_t  mn[16];  /* sub-block min as stored: Q2_K 0..15, Q4_K/Q5_K 0..63 */
    int      n;       /* weights in the block: 32 or 256 */
} wp_block_parts;

/* Geometry of a supported type. */
typedef struct {
    int n;            /* weights per block: 32 or 256 */
    int nsub;         /* sub-blocks carrying their own scale (1 for 32-weight types) */
    int sub_n;        /* weights per sub-block (n / nsub) */
    int code_bits;    /* 2, 3, 4, 5, 6 or 8 */
    int side_bytes;   /* bytes of side data per block (wp_block_get_side) */
    int block_bytes;  /* bytes per block (ggml type_size) */
    int has_min;      /* 1 when dmin is used (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K) */
} wp_block_info;

/* Fill *info for type (a WP_* id from ggml_type.h). Returns 0, or -1 when the type
 * is not one of the supported block types (info untouched). */
int wp_block_info_get(int type, wp_block_info *info);

/* 1 when blocks.c supports the type. */
int wp_block_supported(int type);

/* Unpack one block of type at blk into *p (all fields written). Every byte
 * pattern unpacks; wp_block_pack gives the same bytes back. Returns 0, -1 for
 * an unsupported type. Source: ggml-common.h block structs, dequantize_row_*. */
int wp_block_unpack(int type, const void *blk, wp_block_parts *p);

/* Pack *p into one block of type at blk (info.block_bytes written). Codes and
 * side integers are masked to their field widths. Returns 0, -1 for an
 * unsupported type. Source: the packing steps of quantize_row_*_ref. */
int wp_block_pack(int type, const wp_block_parts *p, void *blk);

/* Copy the side data of one block (all non-code bytes, in block field order;
 * info.side_bytes of them) to side. Returns 0, -1 if unsupported. Layouts:
 * the block_* structs of ggml-common.h (block_layout.h's spans). */
int wp_block_get_side(int type, const void *blk, uint8_t *side);

/* Write side data (from wp_block_get_side) into a block's non-code bytes;
 * code bits are left as they are. Returns 0, -1 if unsupported. Layouts as
 * wp_block_get_side. */
int wp_block_put_side(int type, const uint8_t *side, void *blk);

/* Codes of one block (info.n of them, weight order: the order
 * dequantize_row_<type> writes y in) to q, each 0 .. 2^code_bits - 1 as
 * ggml stores it (Q3_K: low bits with hmask's bit, Q6_K: ql with qh).
 * Returns 0, -1 if unsupported. */
int wp_block_get_codes(int type, const void *blk, uint8_t *q);

/* Write info.n codes (weight order, masked to code_bits) into a block's code
 * bits, the inverse of wp_block_get_codes (the packing steps of
 * quantize_row_<type>_ref); side bytes are left as they are. Returns 0, -1
 * if unsupported. */
int wp_block_put_codes(int type, const uint8_t *q, void *blk);

/* The 6-bit sub-block scales sc[0..7] and mins mn[0..7] a Q4_K/Q5_K block
 * ends up storing when llama.cpp's packer is handed 8-bit values ls, lm that
 * may exceed 63 (quantize_row_q4_K_impl packs make_qp_quants' codes without
 * clamping; a negative sub-block scale wraps to >= 192): bits beyond the
 * 6-bit fields spill into neighbouring fields or are lost, as there.
 * For values <= 63, sc = ls and mn = lm. */
void wp_k4_scales_from_bytes(const uint8_t ls[8], const uint8_t lm[8], int16_t sc[8], int16_t mn[8]);

/* The float value of weight i (0 .. n-1) of a block in parts form, with the
 * same float operations as ggml's dequantize_row_* (so bit-equal to it);
 * 0.0f for a type without blocks here (no error return: the caller has
 * checked the type, wp_block_info_get). */
float wp_parts_value(int type, const wp_block_parts *p, int i);

/* The value weight i would have with code q instead of p->q[i] (same float
 * operations as wp_parts_value, and its 0.0f for an unknown type): what
 * GPTQ needs for its error feedback. */
float wp_parts_code_value(int type, const wp_block_parts *p, int i, int q);

/* Dequantize a whole block in parts form to y[0 .. n-1]. Returns 0 / -1. */
int wp_parts_dequantize(int type, const wp_block_parts *p, float *y);

/* Dequantize k weights (a multiple of the block size) from blocks at src to y.
 * Bit-equal to ggml's dequantize_row_<type> / type_traits.to_float.
 * Returns 0, -1 for an unsupported type or a k that is not a multiple. */
int wp_dequantize_row(int type, const void *src, float *y, int64_t k);

#ifdef __cplusplus
}
#endif
#endif
