/*
 * ggml_type.h - the ggml tensor types: ids, names, block size and bytes per block.
 *
 * The table of every ggml type's id, name, block size and bytes. Ids and
 * sizes match llama.cpp's ggml/src/ggml.c type_traits (the pinned
 * reference: libggml v0.4.0 of node-llama-cpp 3.21.1; tests/unit/test_blocks.c
 * checks every type against it). The bit layout inside each quantized block
 * lives in block_layout.h, whose wp_block_geom_of repeats the block
 * size and bytes of the 12 block types it knows (checked against ggml's by
 * the same test).
 */
#ifndef WPACK_GGML_TYPE_H
#define WPACK_GGML_TYPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum wp_ggml_type {
    WP_F32 = 0, WP_F16 = 1, WP_Q4_0 = 2, WP_Q4_1 = 3, WP_Q5_0 = 6, WP_Q5_1 = 7,
    WP_Q8_0 = 8, WP_Q8_1 = 9, WP_Q2_K = 10, WP_Q3_K = 11, WP_Q4_K = 12,
    WP_Q5_K = 13, WP_Q6_K = 14, WP_Q8_K = 15, WP_IQ2_XXS = 16, WP_IQ2_XS = 17,
    WP_IQ3_XXS = 18, WP_IQ1_S = 19, WP_IQ4_NL = 20, WP_IQ3_S = 21,
    WP_IQ2_S = 22, WP_IQ4_XS = 23, WP_I8 = 24, WP_I16 = 25, WP_I32 = 26,
    WP_I64 = 27, WP_F64 = 28, WP_IQ1_M = 29, WP_BF16 = 30, WP_TQ1_0 = 34,
    WP_TQ2_0 = 35, WP_MXFP4 = 39, WP_NVFP4 = 40, WP_Q1_0 = 41, WP_Q2_0 = 42,
    WP_GGML_TYPE_COUNT = 43
};

/* Weights per block (1 for plain types); 0 for an unknown or removed id. */
int wp_ggml_blck_size(uint32_t type);

/* Bytes per block; 0 for an unknown or removed id. */
size_t wp_ggml_type_size(uint32_t type);

/* 1 for the float types a model's weights are stored in (F32, F16, BF16), else 0. */
int wp_ggml_is_float(uint32_t type);

/* ggml's upper-case name ("Q4_K", "F16", "IQ4_XS"); NULL for an unknown id. */
const char *wp_ggml_type_name(uint32_t type);

/* Type id for a name, case-insensitive ("q4_k", "Q4_K"); -1 if unknown. */
int wp_ggml_type_from_name(const char *name);

/* Bytes of one row of ne0 weights; 0 if ne0 is not a multiple of the block
 * size or the type is unknown. */
size_t wp_ggml_row_size(uint32_t type, int64_t ne0);

/* 1 when the type is a quantized block type (blck_size > 1). */
int wp_ggml_is_quantized(uint32_t type);

#ifdef __cplusplus
}
#endif
#endif
