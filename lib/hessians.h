/*
 * hessians.h - GPTQ's Hessian records: H = X^T X of the input of a weight
 * matrix, as hessian(1) writes them and gptq(1) --hessian reads them.
 *
 * A Hessian file is a wpack stream (stream.h) of records, one a weight (or
 * one a shared input), in the order a forward pass first reaches the
 * weights:
 *   kind    WP_REC_HESSIAN (4)
 *   name    the weight tensor's name, e.g. "blk.0.attn_q.weight"
 *   type    WP_F64 (28) as hessian writes it; WP_F32 is read too (widened)
 *   n_dims  2, ne = {cols, cols}, cols = the weight's ne[0] (its row length)
 *           (MoE: n_dims 3, ne = {cols, cols, n_expert}, one H per expert)
 *   payload cols x cols values, little-endian, row-major, H[i][j] = the sum
 *           over tokens of x_i x_j (symmetric, both triangles; NOT divided by
 *           the token count)
 *   attrs   n_tokens=T      rows of X summed (chunks x ctx for dense weights)
 *           text_hash=HEX   XXH64 (seed 0) of the text's bytes, 16 hex digits
 *           ctx=C chunks=N  the calibration's context length and chunk count
 *           expert_tokens=t0,t1,...  (MoE) rows routed to each expert
 *           weights=A,B,C   (hessian --share-inputs) the weights that read
 *                           this input, this record's own name first: gptq
 *                           takes the record for each of them
 * The method is GPTQ's (Frantar et al. 2022, section 3: H = 2 X X^T of the
 * layer's inputs; the factor 2 and the mean are left to the reader, whose
 * damping is relative to the diagonal's mean), the collection llama-imatrix's
 * (tools/imatrix/imatrix.cpp), which keeps only diag(H).
 */
#ifndef WPACK_HESSIANS_H
#define WPACK_HESSIANS_H

#include <stddef.h>
#include <stdint.h>

#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Set r (initialised) up as the head of the Hessian record of weight `name`:
 * kind, type WP_F64, n_dims 2 (3 with n_expert > 1) and ne {cols, cols,
 * n_expert}, attrs n_tokens, text_hash (16 hex digits), ctx, chunks; the
 * caller sets the payload (cols x cols x n_expert doubles) and any
 * weights= or expert_tokens= (below). Returns 0, -1 when out of memory or
 * name is too long. */
int wp_hessian_head(wp_record *r, const char *name, int64_t cols, int64_t n_expert, int64_t n_tokens,
                    const char *text_hash, int64_t ctx, int64_t chunks);

/* Set Hessian record r's attr weights= to the n weights' names (n >= 2;
 * the record's own name first), comma-separated, in the order given: the
 * weights that read this record's input (hessian --share-inputs). Returns
 * 0; -1 with one phrase in err (n bytes): "weight name 'A,B' holds a comma
 * (weights= could not list it)", "out of memory". */
int wp_hessian_set_weights(wp_record *r, const char *const *names, size_t n_names, char *err, size_t n);

/* Set Hessian record r's attr expert_tokens= to the rows routed to each of
 * its n_expert experts, comma-separated. Returns 0, -1 when out of memory. */
int wp_hessian_set_expert_tokens(wp_record *r, const int64_t *tokens, int64_t n_expert);

/* The experts e < n_expert with mark[e] set, as a phrase into buf (n
 * bytes, 64 at least): "2, 3, 6, 7 (4 of 8)", cut with ", ..." where buf
 * ends ("0, 1, 2, ..., 40, ... (121 of 128)"); "" for none. Returns their
 * count. For the warnings of experts no token reached. */
int64_t wp_hessian_expert_list(const unsigned char *mark, int64_t n_expert, char *buf, size_t n);

/* What keeps Hessian record `rec` (its head: ne0 x ne1 x ne2, ne2 the
 * experts' count, 1 for one H; type, payload_len bytes) from being the H of
 * weight `tensor` of cols columns and n_mat matrices (ne[2], its experts; 1
 * for a 2-D tensor), one phrase into buf (n bytes): "Hessian 'REC' is 64x64,
 * tensor T has 172 columns", "Hessian 'REC' holds 4 experts' H, tensor T is
 * one matrix", "Hessian 'REC' is one matrix's H, tensor T has 4 experts",
 * "Hessian 'REC' holds 4 experts' H, tensor T has 8 experts", "Hessian
 * 'REC' has more than 3 dimensions (...)" (ne2 -1: n_dims 4), "Hessian
 * 'REC': type must be F64 or F32 with 4096 values"; NULL when it fits
 * (cols x cols x n_mat values of F64 or F32). */
const char *wp_hessian_fit_problem(const char *rec, int64_t ne0, int64_t ne1, int64_t ne2, uint32_t type,
                                   uint64_t payload_len, const char *tensor, int64_t cols, int64_t n_mat, char *buf,
                                   size_t n);

/* The H of Hessian record r, which fits (wp_hessian_fit_problem), taken from
 * r's payload (r keeps none): cols x cols doubles, one H after the other for
 * a record of experts (ne[2] of them), malloc'd (F32 widened in place, no
 * copy beside it: the peak stays the record's). *zero is set when every
 * entry is 0 (no calibration token reached the weight: GPTQ would zero the
 * matrix; an expert's own zero H is its caller's to see). Returns H, or NULL
 * with one phrase in err (n bytes): "out of memory", "non-finite Hessian
 * entry at (I, J)" (", expert E" after it for an expert's), "negative Hessian
 * diagonal entry V at (I, I): X^T X has none" (the same), "Hessian entry V
 * at (I, J) beside a zero diagonal entry at (I, I): X^T X has none" (a
 * column no token touched has a zero row and column), "not a Hessian's
 * shape (n_dims 4, 4x4)" (a record that does not fit); r is then as it was,
 * or freed. */
double *wp_hessian_take(wp_record *r, int *zero, char *err, size_t n);

/* ---- a Hessian file read by weight (gptq --hessian) ---------------------- */

/* A Hessian file open for reading: its records' heads, indexed by the weights
 * they serve (a record serves its name, or each weight of its weights=), and
 * each H read from its offset when asked (the file stays open). */
typedef struct wp_hessian_file wp_hessian_file;

/* One weight's Hessian record, as its head says. */
typedef struct {
    const char *weight;     /* the weight served */
    uint64_t offset;        /* the record's offset in the file */
    const char *rec;        /* the record's name */
    int64_t ne0, ne1;       /* its shape: cols x cols */
    int64_t ne2;            /* its H count: the experts' (ne[2]), 1 for one H; -1: n_dims 4 */
    uint32_t type;          /* its stream type (WP_F64 or WP_F32 to fit) */
    uint64_t payload_len;   /* its payload bytes */
    int named;              /* the record names the weight (in weights=, or as its name
                               without weights=); 0: a shared record's own name */
} wp_hessian_ref;

/* wp_hessian_file_open's return when the stream reader refused the file (a GGUF,
 * an importance matrix, a text, ...): err holds the reader's message, and the
 * caller may say what the file is instead. */
#define WP_HESSIANS_NOT_STREAM 1

/* Open the Hessian file at path (a plain stream file: the records are read by
 * offset) and index its records' heads, into *hf. Returns 0; -1 with one line
 * naming path in err (n bytes): "cannot open Hessian file: REASON", "not a
 * seekable file", "a zstd-compressed Hessian file", "weight W has two Hessian
 * records (at offsets A and B)" (a weight in two records' weights=), "no
 * Hessian records", the reader's error, "out of memory";
 * WP_HESSIANS_NOT_STREAM (above). *hf is NULL unless 0. Source: ours, the
 * format above. */
int wp_hessian_file_open(const char *path, wp_hessian_file **hf, char *err, size_t n);

/* The weights indexed (each once), and weight k's record, k < the count, in
 * the file's order (a shared record's weights in its weights= order). */
size_t wp_hessian_file_count(const wp_hessian_file *hf);
const wp_hessian_ref *wp_hessian_file_at(const wp_hessian_file *hf, size_t k);

/* The record of weight `weight`, or NULL when the file has none. */
const wp_hessian_ref *wp_hessian_file_find(const wp_hessian_file *hf, const char *weight);

/* The H of weight `weight`, a tensor of cols columns and n_mat matrices
 * (ne[2], its experts; 1 for a 2-D tensor), into *H (cols x cols doubles, or
 * n_mat of them one after the other, malloc'd; NULL when the file has no
 * record for it). Returns 0; 1 when the record's H is zero (every expert's:
 * no calibration token reached the weight; *H NULL: GPTQ would zero the
 * matrix); -1 with one line naming the file in err (n bytes): the record's
 * read error, "PATH: Hessian 'R' is AxB, tensor W has C columns" and the
 * other wp_hessian_fit_problem misfits, "PATH: tensor W: non-finite Hessian
 * entry at (I, J)" and wp_hessian_take's other errors. */
int wp_hessian_file_get(wp_hessian_file *hf, const char *weight, int64_t cols, int64_t n_mat, double **H, char *err,
                        size_t n);

/* Close hf and free its index; NULL is a no-op. */
void wp_hessian_file_close(wp_hessian_file *hf);

#ifdef __cplusplus
}
#endif
#endif
