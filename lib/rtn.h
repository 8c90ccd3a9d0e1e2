/*
 * rtn.h - round-to-nearest quantization into ggml blocks, byte-exact with
 * llama.cpp's ggml_quantize_chunk (pinned reference, ggml-quants.c).
 *
 * Types: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL (32-weight blocks), Q2_K, Q3_K,
 * Q4_K, Q5_K, Q6_K, IQ4_XS (256-weight super-blocks). Without importance
 * weights the result equals llama.cpp's reference path (quantize_row_*_ref,
 * which ggml_quantize_chunk uses when imatrix is NULL); with them, its
 * imatrix path (quantize_row_*_impl). Q8_0 ignores importance weights, as
 * llama.cpp does.
 *
 * The work is split in two so that GPTQ can interleave its error feedback:
 *   1. wp_rtn_choose: from a block's (super-block's) weights, choose the
 *      side data (d, dmin, sub-block scales and mins) exactly as llama.cpp,
 *      and remember llama.cpp's rounding rule for each sub-block;
 *   2. wp_rtn_code: the code llama.cpp's rule gives one weight under those
 *      scales.
 * RTN is choose + code every weight + wp_block_pack (lib/blocks.c, over
 * block_layout.h, the only place that knows bit layouts).
 */
#ifndef WPACK_RTN_H
#define WPACK_RTN_H

#include <stddef.h>
#include <stdint.h>

#include "blocks.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The scales chosen for one block and llama.cpp's rounding rule under them. */
typedef struct {
    int type;            /* WP_* block type */
    int imatrix;         /* 1: chosen with importance weights (llama.cpp's _impl
                            path), whose 32-weight rules round to nearest;
                            wp_rtn_scales_from_parts sets it too */
    wp_block_parts p;    /* side data (d, dmin, sc, mn) exactly as the block will
                            store them; q[] = codes of the weights the scales
                            were chosen from */
    /* Per sub-block rounding rule (index s = i / (n / nsub)); meaning depends
     * on type and path, see wp_rtn_code. */
    float mul[16];       /* inverse step multiplied in (32-weight types, IQ4) */
    float div[16];       /* step divided by (K-quants: fp16(d) * sub-block scale) */
    float off[16];       /* offset: min subtracted (Q4_1/Q5_1) or added (K mins) */
    uint8_t fixed[16];   /* 1: llama.cpp keeps the search's codes (zero step);
                            wp_rtn_code returns p.q[i] */
} wp_rtn_scales;

/* llama.cpp's row statistic for the 32-weight types' imatrix path:
 * sum of x^2 over the row (in order) / n. Source: quantize_row_q4_0_impl. */
float wp_rtn_row_sigma2(const float *row, int64_t n);

/* Choose the scales of one block of type from its weights x[0 .. n-1]
 * (n = 32 or 256, wp_block_info.n), with importance weights qw[0 .. n-1]
 * (the imatrix entries of these columns) or NULL for the reference path.
 * row_sigma2 = wp_rtn_row_sigma2 of the whole row; used only by Q4_0, Q4_1,
 * Q5_0, Q5_1 with qw (pass 0 otherwise). Fills *s, including s->p.q with
 * the codes of x. Returns 0, -1 for an unsupported type.
 * Sources: quantize_row_{q4_0,q4_1,q5_0,q5_1,q8_0}_ref and _impl,
 * quantize_row_{q2_K,q3_K,q4_K,q5_K,q6_K}_ref and _impl,
 * quantize_row_iq4_nl_impl (as quantize_iq4_nl / quantize_iq4_xs call it). */
int wp_rtn_choose(int type, const float *x, const float *qw, float row_sigma2, wp_rtn_scales *s);

/* The code (0 .. 2^bits-1, blocks.h convention) llama.cpp's final rounding
 * gives weight i (0 .. n-1) of the block if its value is x, under the scales
 * in *s. For the weights the scales were chosen from it returns s->p.q[i].
 * Out-of-range x (as GPTQ's updated weights may be) is clamped to the code
 * range; x must be finite and |x / step| < 2^22. Sources: the code loops
 * that end each quantize_row_*_ref and _impl (ggml-quants.c): the reference
 * path's truncation of x·(1/d) + 8.5 for Q4_0 (16.5 Q5_0, + 0.5 and the min
 * for Q4_1/Q5_1), roundf for Q8_0, nearest_int of (x + min)/scale for the
 * K-quants (as quantize_row_q4_K_ref's last loop), best_index_int8 over
 * kvalues_iq4nl for IQ4. */
int wp_rtn_code(const wp_rtn_scales *s, int i, float x);

/* A rounding rule from side data alone (d, dmin, sc, mn as stored in *p):
 * wp_rtn_code then gives the code whose dequantized level is nearest x
 * (IQ4: nearest of the 16 non-linear levels), e.g. for scales GPTQ sets
 * itself (a shared step, a widened one). For Q2_K..Q6_K this is exactly
 * llama.cpp's final requantization rule; for the 32-weight types llama.cpp's
 * reference path rounds with the unrounded float scale instead, so use
 * wp_rtn_choose for byte-exact RTN. Codes in p->q are kept as the fallback
 * of zero-step sub-blocks. Returns 0 / -1 for an unsupported type. Source:
 * the rounding rules of wp_rtn_code with the scales dequantized as ggml's
 * dequantize_row_* reads them (get_scale_min_k4 for Q4_K/Q5_K). */
int wp_rtn_scales_from_parts(int type, const wp_block_parts *p, wp_rtn_scales *s);

/* Quantize one block: choose, code each weight, pack into blk
 * (wp_block_info.block_bytes bytes); x and qw (NULL, or importance
 * weights) hold the block's n weights, row_sigma2 as for wp_rtn_choose.
 * Byte-exact with one block of quantize_row_<type>_ref (qw NULL) or _impl.
 * Returns 0, -1 for an unsupported type. */
int wp_rtn_block(int type, const float *x, const float *qw, float row_sigma2, void *blk);

/* Quantize nrows rows of n_per_row weights (row-major) into dst, like
 * ggml_quantize_chunk(type, src, dst, 0, nrows, n_per_row, imatrix):
 * imatrix is NULL or n_per_row importance weights (one per column).
 * Returns bytes written (nrows * row size), 0 for an unsupported type or a
 * row length that is not a multiple of the block size. */
size_t wp_rtn_quantize(int type, const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                       const float *imatrix);

/* wp_rtn_quantize with the rows shared over `threads` threads (par.h), as
 * llama-quantize splits a tensor's rows over its nthread: the same bytes for
 * any thread count. Same arguments and return value. */
size_t wp_rtn_quantize_threads(int type, const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                               const float *imatrix, int threads);

#ifdef __cplusplus
}
#endif
#endif
