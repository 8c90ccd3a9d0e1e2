/*
 * gptq.h - GPTQ into llama.cpp's block formats, with the LazyWeights options
 * (shared step γ, widened step c, rate term λ).
 *
 * Source: Frantar, Ashkboos, Hoefler, Alistarh 2022, "GPTQ: Accurate
 * Post-Training Quantization for Generative Pre-trained Transformers",
 * Algorithm 1 and its reference implementation (gptq.py, fasterquant):
 * dead columns (zero Hessian diagonal: H_ii = 1, W[:, i] = 0), damping
 * λ·mean(diag H) on the diagonal, optional act-order (columns by descending
 * diag H) with static groups, the upper Cholesky factor U of H⁻¹
 * (H⁻¹ = UᵀU), lazy batches of columns whose error is pushed to the later
 * columns with one matrix product (cblas_sgemm), and per-column error
 * feedback err = (w - q) / U_jj, W[:, j+1:] -= err · U[j, j+1:].
 *
 * Terms. A weight matrix W has `rows` rows (one output each) of `cols`
 * weights (input features, ggml ne[0]); row r is stored at W + r*cols. The
 * Hessian H = XᵀX (cols × cols, double, row-major, symmetric) is over the
 * matrix input X. A block is one ggml block of a row: a super-block of 256
 * weights (Q2_K … Q6_K, IQ4_XS) made of sub-blocks (16 or 32 weights, each
 * with its own scale and for some types a min), or a 32-weight block (Q4_0,
 * Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL). A code is the integer a weight is stored
 * as (blocks.h convention); the step is the spacing of the values a
 * sub-block's codes stand for (d·sub-scale for K-quants).
 *
 * Scale choice. When GPTQ reaches the first column of a block (or, with γ on
 * a 32-weight type, of a run of up to 256 weights of one row), it chooses the
 * block's side data from the CURRENT error-updated weights of the whole block:
 *   - default: llama.cpp's own choice (wp_rtn_choose, <wpack/rtn.h>), and each
 *     weight gets llama.cpp's rounding rule under it (wp_rtn_code), so with
 *     H = I (no error to push) the output equals wp_rtn_quantize byte for byte;
 *   - γ (gamma): one shared step per super-block: every sub-block scale is
 *     the type's largest sub-scale S (Q4_K/Q5_K 63, Q6_K 127, Q3_K and IQ4_XS
 *     31, Q2_K 15) and d = step / S; for 32-weight types one d is shared by
 *     the blocks of each run of up to 256 weights of a row. The step is the
 *     one that just covers the largest |weight| (symmetric types: the signed
 *     extreme maps to the most negative code, as llama.cpp's Q4_0 does) or the
 *     widest sub-block range including 0 (types with mins);
 *   - c (widen ≥ 1): the step (γ's shared one, or llama.cpp's per-sub-block
 *     ones) multiplied by c; codes are clamped to the type's range;
 *   - with γ or c > 1, types with mins (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K) get each
 *     sub-block's min placed so that the middle of the sub-block's range
 *     (including 0 for the K types) falls on the middle code: codes
 *     concentrate around the centre of the code range in every sub-block.
 * Code choice with γ, c > 1 or λ > 0: the nearest representable value (exact
 * float values as ggml's dequantizer computes them), or with λ > 0 the code
 * among the five nearest that minimises
 *     ((w - value) / step)² · (mean_j U_jj² / U_jj²) + λ · bits(code),
 * bits(code) = -log2((count(code) + 1) / (N + K)) from a running histogram
 * of this matrix's codes so far (add-one smoothing; K = 2^code_bits; the
 * 4-bit types are counted singly, not in pairs). Weights are visited in
 * GPTQ's order (lazy batch, then row, then column).
 *
 * Memory: the working copy of W (rows·cols floats), with a Hessian one
 * cols×cols double matrix (the factor reuses it as floats) plus
 * rows·128..256 floats of batch error; with act-order, the side data and
 * rounding rule of every block (about 560 bytes per block) as well.
 */
#ifndef WPACK_GPTQ_H
#define WPACK_GPTQ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return values of wp_gptq_quantize besides 0 (done) and -1 (error). */
#define WP_GPTQ_NOT_PD 1   /* H + damping not positive definite after every
                              retry: nothing written; fall back to RTN */

typedef struct {
    double damp;        /* damping as a fraction of mean(diag H); default 0.01 */
    int    retries;     /* further tries (≥ 0), each with 10× the damping; default 4 */
    int    act_order;   /* 1: columns by descending diag H, static groups */
    int    gamma;       /* 1: one shared step per super-block / 256-weight run */
    double widen;       /* c ≥ 1: step multiplied by c; default 1 */
    double lambda;      /* λ ≥ 0: bits weight in the code choice; default 0 */
    int    block_cols;  /* lazy batch width, default 128 (rounded up to a
                           multiple of the scale group: 256 for super-block
                           types, and with gamma for every type; not with
                           act_order) */
    int    consume;     /* 1: W and H are the caller's scratch — quantize in
                           them instead of copies, so peak memory stays near
                           one tensor plus its Hessian (not with act_order,
                           which still copies H); on WP_GPTQ_NOT_PD both come
                           back as they were. Default 0. */
    int    threads;     /* rows coded on this many threads at once (<wpack/par.h>);
                           the output is the same for any count (the BLAS
                           library's own thread count, which its Cholesky
                           rounds by, is another matter), λ > 0 included
                           (a code's bits count the codes of its chunk of
                           64 rows, and of every row in earlier lazy
                           batches). Default 1. */
} wp_gptq_opts;

/* Defaults as above. */
void wp_gptq_opts_default(wp_gptq_opts *o);

/* What a run did. */
typedef struct {
    double damp_used;   /* the damping finally used, as a fraction of mean diag H */
    int    tries;       /* factorizations tried (1 = the first worked) */
    int64_t dead_cols;  /* columns with H_ii == 0 (their weights set to 0) */
    double loss;        /* GPTQ's own objective: Σ (w - q)² / U_jj² / 2
                           (gptq.py's Losses; 0 without a Hessian) */
} wp_gptq_info;

/* 1 when wp_gptq_quantize supports type, a ggml type id (WP_Q4_K ...,
 * <wpack/ggml_type.h>): the block types of <wpack/rtn.h>:
 * Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS. */
int wp_gptq_supported(int type);

/* Quantize W (rows × cols floats, row-major, finite) into rows·row_size bytes
 * of ggml blocks of type (a ggml type id, <wpack/ggml_type.h>) at dst, row
 * after row as ggml_quantize_chunk lays them out. cols must be a multiple of
 * the type's block size.
 *   H   cols × cols doubles (row-major, symmetric with both triangles filled,
 *       e.g. XᵀX summed or averaged over tokens; the scale does not matter;
 *       a cblas_dsyrk result holds one triangle: mirror it first, as the
 *       act-order permutation reads both), or NULL for H = I (no error
 *       feedback: RTN, or the γ/c/λ code choice without GPTQ).
 *   qw  cols importance weights (an imatrix: mean squared activation per
 *       input column) handed to llama.cpp's scale searches (its imatrix
 *       path), or NULL for its reference path.
 *   o   options, NULL for the defaults.
 *   info filled when not NULL.
 * Returns 0; WP_GPTQ_NOT_PD when every damping failed (dst untouched);
 * -1 on bad arguments (rows < 0; W or dst NULL while rows > 0; cols not a
 * positive multiple of the type's block size; widen below 1, lambda or damp
 * below 0, or not finite), an unsupported type, a non-finite weight,
 * importance weight or Hessian entry, a weight above
 * WP_GPTQ_WEIGHT_MAX in magnitude (wp_gptq_check_weights), a scale that does
 * not fit fp16 (weights beyond ±65504·range), no memory, or no room for
 * OpenBLAS's buffers under an address-space limit (wp_blas_room's line,
 * blas_room.h; with H), with a one-line message in err (errlen bytes) that
 * names the row and column where it applies. Thread-safe: its own threads (o->threads)
 * and the BLAS/LAPACK library's run one after the other, never at once.
 * The same as wp_gptq_factor_make + wp_gptq_quantize_factored +
 * wp_gptq_factor_free (below), for one matrix. */
int wp_gptq_quantize(int type, const float *W, int64_t rows, int64_t cols,
                     const double *H, const float *qw, const wp_gptq_opts *o,
                     void *dst, wp_gptq_info *info, char *err, size_t errlen);

/* The Hessian's part of GPTQ, made once and used for any number of matrices
 * with the same input (a Hessian file's record shared by q, k and v, or by
 * ffn_gate and ffn_up): dead columns (H_ii == 0), damping λ·mean(diag H)
 * with its retries, the act-order permutation and the upper Cholesky factor
 * U of (P·H·Pᵀ + damping)⁻¹ (gptq.py's fasterquant up to Hinv). It depends
 * on H, cols and the options damp, retries and act_order only — not on the
 * type, W, qw or the other options. Memory: cols × cols floats (4·cols²
 * bytes) plus 9·cols bytes. Read-only once made: one factor may serve
 * concurrent wp_gptq_quantize_factored calls. */
typedef struct wp_gptq_factor wp_gptq_factor;

/* Make *f from H (cols × cols doubles, row-major, symmetric with both
 * triangles filled, finite; as for wp_gptq_quantize) under o's damp, retries and act_order (NULL: defaults).
 * H is read only (a cols × cols double copy is worked in) unless o->consume,
 * where (without act_order) the factor is worked out and kept in H's own
 * buffer: H must then stay allocated, unchanged, until wp_gptq_factor_free,
 * and is the caller's to free after it.
 * Returns 0; WP_GPTQ_NOT_PD when every damping failed — *f is still made, and
 * records the outcome: wp_gptq_quantize_factored returns WP_GPTQ_NOT_PD for
 * it, with damp_used and tries, for every matrix it is given (with consume H
 * is then as it was); -1 with *f NULL and a one-line message in err (errlen
 * bytes) on bad arguments (H NULL, cols ≤ 0, damp negative or not finite,
 * retries < 0), a non-finite entry (named by row and column), no memory, or
 * no room for OpenBLAS's buffers under an address-space limit (wp_blas_room's
 * line, blas_room.h). */
int wp_gptq_factor_make(const double *H, int64_t cols, const wp_gptq_opts *o, wp_gptq_factor **f,
                        char *err, size_t errlen);

/* wp_gptq_factor_make taking H over: H (malloc'd) belongs to the factor from
 * this call on, whatever it returns. The factor is worked out in H's buffer
 * (with act_order in a permuted copy, H freed after it), which then shrinks
 * to the float factor: peak memory cols² doubles (two with act_order), kept
 * 4·cols² bytes. On WP_GPTQ_NOT_PD or -1 H is already freed. o->consume is
 * not read. */
int wp_gptq_factor_take(double *H, int64_t cols, const wp_gptq_opts *o, wp_gptq_factor **f,
                        char *err, size_t errlen);

/* The cols the factor was made for; 0 for NULL. */
int64_t wp_gptq_factor_cols(const wp_gptq_factor *f);

/* Free f (NULL: nothing); after it, a consumed H is the caller's again. */
void wp_gptq_factor_free(wp_gptq_factor *f);

/* wp_gptq_quantize with the Hessian's part already done: f from
 * wp_gptq_factor_make/_take for a Hessian of cols columns, or NULL for
 * H = I. o must ask the act_order f was made with (-1 otherwise, and for
 * another cols); o->consume applies to W only, and o->damp and o->retries
 * are not read (f's were made with its own). The blocks are byte for byte
 * those of wp_gptq_quantize with that H and o; info's damp_used, tries and
 * dead_cols are f's. Returns as wp_gptq_quantize (WP_GPTQ_NOT_PD when f
 * records it: dst untouched, W as it was). */
int wp_gptq_quantize_factored(int type, const float *W, int64_t rows, int64_t cols,
                              const wp_gptq_factor *f, const float *qw, const wp_gptq_opts *o,
                              void *dst, wp_gptq_info *info, char *err, size_t errlen);

/* Hessian-weighted quantization error tr(ΔW·H·ΔWᵀ) with ΔW = dequant(q) - W
 * (GPTQ's layer-wise objective, Frantar et al. 2022, eq. 1, summed over the
 * rows), q the rows × cols weights quantized as type at q (ggml row layout,
 * dequantized as ggml's dequantize_row_* does); H cols × cols, NULL means I
 * (plain squared error). In double, in the weights' units squared. Returns
 * -1 for a type without blocks here, cols not a multiple of its block size,
 * out of memory, or no room for OpenBLAS's buffers (wp_blas_room). Cost rows·cols² (test and report use, not the hot
 * path). */
double wp_gptq_hloss(int type, const float *W, const void *q, int64_t rows, int64_t cols,
                     const double *H);

/* Index of the first of nblocks blocks of type at q whose d or dmin (fp16)
 * is not finite, or -1 when all are; -2 for an unsupported type. */
int64_t wp_gptq_check_blocks(int type, const void *q, int64_t nblocks);

/* A weight magnitude above what a block of any wp_gptq_supported type can
 * hold: the largest, Q6_K's and IQ4_XS's, is 65504 · 128 · 32, about 2.7e8
 * (an fp16 super-block scale, an int8 sub-block scale, a code of -32); this
 * bound, 65504 · 127 · 127 (about 1.06e9), is above it with room. Below it,
 * the fp16 check of the scales (wp_gptq_check_blocks) refuses what a type
 * cannot hold. Above it, from about 1.8e19, a weight's square overflows the
 * float sums of the scale searches (llama.cpp's make_qx_quants and the
 * like), which then gave Q6_K, Q3_K and IQ4_XS finite scales that zeroed the
 * block's weights, unsaid (a breaker's find: one weight of 1e20). */
#define WP_GPTQ_WEIGHT_MAX (65504.0 * 127.0 * 127.0)

/* Whether the rows × cols weights at w (row-major) may go to the scale
 * searches for type (necessary, not sufficient: a weight a type cannot hold
 * below the bound is found by the fp16 check after): 0, or -1 with one line
 * in err naming the first weight that is not finite ("non-finite weight nan
 * at row 0, column 5") or above WP_GPTQ_WEIGHT_MAX in magnitude ("weight
 * 1e+20 at row 0, column 5 is too large for Q6_K (no block holds one above
 * 1.06e+09: its scales are fp16)"); type names the type in it.
 * wp_gptq_quantize runs it; a caller of the RTN quantizers (<wpack/rtn.h>),
 * which do not check, runs it first. */
int wp_gptq_check_weights(int type, const float *w, int64_t rows, int64_t cols, char *err, size_t errlen);

/* Shannon entropy in bits per code of the codes of nblocks blocks of type
 * at q (blocks.h codes, counted singly). -1 for an unsupported type. */
double wp_gptq_code_entropy(int type, const void *q, int64_t nblocks);

#ifdef __cplusplus
}
#endif
#endif
