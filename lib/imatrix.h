/*
 * imatrix.h - llama-imatrix's GGUF output (an "importance matrix") read
 * through wpack's own GGUF reader (gguf_file.h; no libggml).
 *
 * Format source: llama.cpp tools/imatrix/imatrix.cpp (save_imatrix) and
 * common/imatrix-loader.cpp (common_imatrix_load) of the pinned llama.cpp.
 * The file is a GGUF with
 *   general.type        string  "imatrix"
 *   imatrix.datasets    array of string (calibration file names)
 *   imatrix.chunk_count u32     chunks processed
 *   imatrix.chunk_size  u32     tokens per chunk
 * and, per weight W (e.g. "blk.0.attn_q.weight"), two F32 tensors:
 *   W.in_sum2  ne = {cols, n_mat}: sum over the input rows x of x_j² (the
 *              diagonal of the input Hessian XᵀX), per matrix (n_mat = experts
 *              of a MoE weight, else 1)
 *   W.counts   ne = {1, n_mat}: the number of rows summed, per matrix.
 * The importance llama-quantize hands to the quantizers (tools/quantize/
 * quantize.cpp load_imatrix) is in_sum2 / count per matrix, with the count
 * rounded to an integer (std::lround) and then made a float, the division in
 * float; a matrix whose count is 0 gets importance 1 for every column.
 * The legacy binary ".dat" format is not read (convert it with
 * `llama-imatrix --in-file x.dat -o x.gguf`).
 */
#ifndef WPACK_IMATRIX_H
#define WPACK_IMATRIX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One weight's entry. */
typedef struct wp_imatrix_entry {
    char    *name;        /* the weight's tensor name, without ".in_sum2" */
    int64_t  cols;        /* columns of the weight (its ne[0], the input's length) */
    int64_t  n_mat;       /* matrices: experts of a MoE weight, else 1 */
    float   *sum2;        /* n_mat × cols: in_sum2, row-major (matrix, column) */
    float   *counts;      /* n_mat: counts exactly as stored (float) */
    float   *importance;  /* n_mat × cols: sum2 / (float)lround(count), 1 where count rounds to 0 */
} wp_imatrix_entry;

/* A whole file. Entries are sorted by name. */
typedef struct wp_imatrix {
    int                n;
    wp_imatrix_entry  *e;
    int                n_datasets;
    char             **datasets;   /* imatrix.datasets */
    uint32_t           chunk_count; /* imatrix.chunk_count */
    uint32_t           chunk_size;  /* imatrix.chunk_size (tokens per chunk) */
} wp_imatrix;

/* Read the llama-imatrix GGUF file at path into *im (zeroed first).
 * Returns 0, or -1 with one line in err naming the file: not a GGUF file,
 * truncated or malformed GGUF, missing imatrix metadata (llama-quantize
 * refuses such files too), no imatrix entries, in_sum2 without counts or the
 * reverse, a tensor that is not F32, sizes that do not divide, a negative or
 * non-finite count, out of memory.  On failure *im holds nothing. */
int wp_imatrix_load(const char *path, wp_imatrix *im, char *err, size_t errlen);

/* The entry of weight `name` ("blk.0.attn_q.weight"), or NULL. */
const wp_imatrix_entry *wp_imatrix_find(const wp_imatrix *im, const char *name);

/* Release everything *im holds; it is zeroed. */
void wp_imatrix_free(wp_imatrix *im);

#ifdef __cplusplus
}
#endif
#endif
