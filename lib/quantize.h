/*
 * quantize.h - one weight tensor into ggml blocks, the step gptq(1) takes for
 * each tensor its plan quantizes.
 *
 * The tensor's values are read as floats (F32 as stored; F16 and BF16
 * widened; a block type dequantized as ggml's to_float does, for
 * llama-quantize's --allow-requantize: llama_tensor_dequantize_impl) and
 * checked finite, then written as the target type: F32, F16 or BF16
 * converted (round to nearest even), a block type quantized matrix by matrix
 * (a 3-D tensor's ne[2] slices, experts, each with its own importance slice
 * and Hessian): GPTQ with the Hessian's factor where the caller has one
 * (wp_gptq_quantize_factored),
 * else the LazyWeights code choice without error feedback where γ, c or λ is
 * asked (wp_gptq_quantize with H = I), else llama.cpp's own RTN
 * (wp_rtn_quantize_threads: ggml_quantize_chunk's bytes).
 */
#ifndef WPACK_QUANTIZE_H
#define WPACK_QUANTIZE_H

#include <stddef.h>
#include <stdint.h>

#include "gptq.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What to make of one tensor. */
typedef struct {
    int to;                        /* the ggml type to write (a float type, or one wp_gptq_supported) */
    const float *importance;       /* ne[0] x n_mat importance weights (an imatrix entry), or NULL */
    const wp_gptq_factor *factor;  /* its Hessian's factor (every matrix's), or NULL: no GPTQ */
    const wp_gptq_opts *go;        /* GPTQ's and LazyWeights' options (damping, γ, c, λ, threads);
                                      NULL: wp_gptq_opts_default's */
    /* Where factor is NULL, matrix m's own factor (an expert's, from its own H), asked
     * for when its turn comes: *f set (freed here after the matrix, wp_gptq_factor_free),
     * or left NULL (none: that matrix as without a factor); returns 0, or -1 with one
     * phrase in err (n bytes), which stops the tensor. NULL: none asked. */
    int (*factor_of)(void *user, int64_t m, wp_gptq_factor **f, char *err, size_t n);
    void *user;                    /* factor_of's first argument */
} wp_quantize_job;

/* What was made, for progress lines and warnings. */
typedef struct {
    const char *how;     /* "convert", "gptq", "rtn+lazy" or "rtn" (the last matrix's) */
    int not_pd;          /* GPTQ's H + damping was not positive definite: RTN instead */
    double damp_used;    /* the damping tried last then (wp_gptq_info) */
    int rounded;         /* a matrix was rounded without GPTQ (set before it is rounded) */
    int64_t gptq;        /* matrices GPTQ quantized (of a 3-D tensor's ne[2]) */
} wp_quantize_info;

/* The two steps of wp_quantize_tensor (below), for a caller with work
 * between them (gptq(1) reads a tensor's Hessian only once its weights
 * passed). First: tensor record r's values as floats for type `type`
 * (ne elements, malloc'd: F32 taken as it is, F16 and BF16 widened in r's own
 * buffer, blocks dequantized into one of their own), checked: finite, rows
 * that fit the type, a type gptq writes, weights its blocks can hold. r
 * keeps no payload (unless refused before its values were read: a record
 * of another kind, an unknown type, a payload of other than the bytes its
 * type and shape need). Returns the floats; NULL with one phrase in err (n
 * bytes): "not a tensor record (kind K)", "unknown ggml type T", "no rows
 * to quantize", wp_tensor_payload_problem's "16 payload bytes, but F32 2 x
 * 4 needs 32", "out of memory", "cannot dequantize Q4_K", "non-finite value
 * V at row R, column C", "row length N does not fit Q4_K", "type T is not
 * supported by gptq", wp_gptq_check_weights' "weight ... is too large for
 * Q6_K (...)". */
float *wp_quantize_read(wp_record *r, int type, char *err, size_t n);

/* Then: the floats f (from wp_quantize_read for job->to; freed here) as r's
 * data of type job->to: r's type and payload replaced
 * (wp_ggml_row_size(to, ne[0]) x rows bytes, rows = the elements / ne[0]).
 * Returns 0; -1 with one phrase in err: "widen must be at least 1", "lambda
 * must be 0 or more", "damping must be 0 or more", "non-finite importance
 * nan at 5 (...)" or "negative importance ...", "out of memory", GPTQ's
 * errors, "RTN failed", "a block scale does not fit fp16 (weights too large
 * for Q4_K[, or importances too large in its imatrix entry])". info is
 * filled as far as the work went (set first). */
int wp_quantize_write(wp_record *r, float *f, const wp_quantize_job *job, wp_quantize_info *info, char *err, size_t n);

/* Make tensor record r (kind WP_REC_TENSOR, n_dims 1 to 4, type F32, F16,
 * BF16 or a block type wp_dequantize_row reads; its payload the tensor's
 * data) a tensor of type job->to: wp_quantize_read, then wp_quantize_write.
 * Peak memory: the floats (4 bytes a weight, in r's own buffer for F16 and
 * BF16) beside the output, plus GPTQ's scratch. Returns 0; -1 with one
 * phrase in err (n bytes; the caller names the tensor), either step's; r
 * then holds no payload. Source: llama-quantize's llama_model_quantize_impl
 * (its per-tensor step), GPTQ (Frantar et al. 2022). */
int wp_quantize_tensor(wp_record *r, const wp_quantize_job *job, wp_quantize_info *info, char *err, size_t n);

#ifdef __cplusplus
}
#endif
#endif
