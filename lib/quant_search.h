/*
 * quant_search.h - llama.cpp's scale searches for one group of weights.
 *
 * Each function finds the scale (and min) of one block or sub-block the way
 * a helper of ggml-quants.c does, with the same float operations in the same
 * order, so the results are bit-equal. They also report the "rounding rule"
 * that produced the codes they return (the inverse scale, and the offset,
 * used in the final rounding pass), so a caller can later re-derive the code
 * of any weight without the search (lib/rtn.c, GPTQ).
 *
 * Used by lib/rtn.c; not block-layout aware.
 */
#ifndef WPACK_QUANT_SEARCH_H
#define WPACK_QUANT_SEARCH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WP_GROUP_MAX_EPS 1e-15f   /* ggml-quants.c GROUP_MAX_EPS */

/* Round to nearest, ties to even, via the 1.5*2^23 magic addition; exact for
 * |f| <= 4194303 and, like llama.cpp's nearest_int, wraps beyond that. */
int wp_nearest_int(float f);

/* Index of the value of val[0..n-1] (ascending) nearest to x; ties go up.
 * Source: best_index_int8. */
int wp_best_index_int8(int n, const int8_t *val, float x);

/* Symmetric search (make_qx_quants with rmse_type 1): n weights x, codes
 * L[i] = nmax + clamp(round(iscale*x[i]), -nmax, nmax-1) in 0 .. 2*nmax-1,
 * error weights w (NULL: x^2). Returns the least-squares scale (0 for an
 * all-|x| < 1e-15 group, whose codes are all 0). *iscale gets the inverse
 * scale whose rounding gave L (0 for the all-zero case). */
float wp_search_symmetric(int n, int nmax, const float *x, const float *w, int8_t *L, float *iscale);

/* make_q3_quants with do_rmse: weights x^2, iterative per-weight refinement.
 * L in 0 .. 2*nmax-1. Returns the scale (0 if all-zero). The codes do not
 * follow one rounding rule (refinement), so none is reported. */
float wp_search_q3(int n, int nmax, const float *x, int8_t *L);

/* Asymmetric search (make_qkx2_quants; make_qkx3_quants with weights): codes
 * L[i] = clamp(round(iscale*(x[i] - min0)), 0, nmax) for the best of nstep+1
 * trial steps, error weights w (non-NULL), |.| error when use_mad. x, w and
 * L hold n (1 .. 256) entries. Trial is (0 .. nstep) rounds with the
 * inverse scale (rmin + rdelta * is + nmax) / (max - min): rmin and rdelta
 * in code steps, as llama.cpp's; nstep < 1 keeps the first rounding. Returns
 * the scale; *the_min gets minus the (non-positive) min. *iscale and *min0
 * get the rule that produced L; *iscale is 0 when all x are equal (codes 0). */
float wp_search_minmax(int n, int nmax, const float *x, const float *w, uint8_t *L, float *the_min,
                       float rmin, float rdelta, int nstep, int use_mad, float *iscale, float *min0);

/* Positive-scale search for sub-block scales (make_qp_quants): codes in
 * 0 .. nmax (as uint8 stores them), weights w. Returns the super-block scale. */
float wp_search_positive(int n, int nmax, const float *x, uint8_t *L, const float *w);

/* Non-linear 4-bit search for one group (the per-block part of
 * quantize_row_iq4_nl_impl, ntry > 0): returns the group scale d (0 when
 * max|x| < 1e-15), error weights w. The codes are re-derived by the caller. */
float wp_search_iq4(int n, const float *x, const float *w, int ntry);

#ifdef __cplusplus
}
#endif
#endif
