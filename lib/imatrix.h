/*
 * imatrix.h - llama-imatrix's output (an "importance matrix"), in either of
 * its two formats, told apart by content (the GGUF magic), never by the
 * file name: the GGUF file, read through wpack's own GGUF reader
 * (gguf_file.h; no libggml), and the legacy binary "imatrix.dat".
 *
 * GGUF.  Format source: llama.cpp tools/imatrix/imatrix.cpp (save_imatrix)
 * and common/imatrix-loader.cpp (common_imatrix_load) of the pinned
 * llama.cpp.  The file is a GGUF with
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
 *
 * Legacy imatrix.dat (`llama-imatrix --output-format dat`, and every
 * llama.cpp before the GGUF format).  Format source: tools/imatrix/
 * imatrix.cpp IMatrixCollector::save_imatrix_legacy (writer) and
 * common/imatrix-loader.cpp common_imatrix_load_legacy (reader; llama-quantize
 * uses it for any file its GGUF reader refuses).  Little-endian (llama.cpp
 * writes host order):
 *   i32 n_entries                         >= 1
 *   n_entries times:
 *     i32 len, len bytes name             (no terminator; the name ends at
 *                                          its first NUL byte, if any)
 *     i32 ncall                           chunks, ceil(max count / chunk size)
 *     i32 nval                            >= 1: cols × n_mat values
 *     nval f32                            (in_sum2 / count) · ncall per value
 *                                          (1 · ncall for a matrix with count 0)
 *   optional trailer:
 *     i32 chunk_count                     (the last chunk processed)
 *     i32 len, len bytes dataset name     (the calibration file)
 * A name given twice keeps the later entry (a std::map assignment).  As
 * llama.cpp, the trailer is read as far as it goes and anything after it is
 * ignored: a trailer cut inside chunk_count leaves the bytes there were as the
 * low bytes of chunk_count (std::istream::read into a zeroed int32), a length
 * <= 0 or running past the end drops the dataset name.  The importance
 * llama-quantize hands to the quantizers (quantize.cpp load_imatrix, legacy
 * branch) is value / (float)ncall where ncall > 0, else the value itself
 * (not 1 as in the GGUF path).
 */
#ifndef WPACK_IMATRIX_H
#define WPACK_IMATRIX_H

#include <stddef.h>
#include <stdint.h>

#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One weight's entry. */
typedef struct wp_imatrix_entry {
    char    *name;        /* the weight's tensor name, without ".in_sum2" */
    int64_t  cols;        /* columns of the weight (its ne[0], the input's length);
                           * legacy: the entry's value count nval (the file
                           * does not say how it splits into matrices) */
    int64_t  n_mat;       /* matrices: experts of a MoE weight, else 1; legacy: 1 */
    float   *sum2;        /* n_mat × cols: in_sum2, row-major (matrix, column);
                           * legacy: the values as stored, (in_sum2/count)·ncall */
    float   *counts;      /* n_mat: counts exactly as stored (float); legacy:
                           * one, (float)ncall */
    float   *importance;  /* n_mat × cols: GGUF sum2 / (float)lround(count), 1
                           * where count rounds to 0; legacy sum2 / (float)ncall,
                           * sum2 itself where ncall <= 0 */
} wp_imatrix_entry;

/* A whole file. Entries are sorted by name, one per name. */
typedef struct wp_imatrix {
    int                n;
    wp_imatrix_entry  *e;
    int                n_datasets;
    char             **datasets;   /* imatrix.datasets; legacy: the trailer's
                                    * dataset name, if any (0 or 1) */
    uint32_t           chunk_count; /* imatrix.chunk_count; legacy: the
                                     * trailer's i32 as stored (bits), 0 without
                                     * one.  llama-quantize takes it as an int32
                                     * and records it only when that is > 0 */
    uint32_t           chunk_size;  /* imatrix.chunk_size (tokens per chunk); legacy: 0 */
    int                legacy;      /* 1: read from a legacy imatrix.dat */
} wp_imatrix;

/* Read the llama-imatrix file at path, GGUF or legacy imatrix.dat (by its
 * first bytes: "GGUF" or not), into *im (zeroed first); llama.cpp's
 * common_imatrix_load + quantize.cpp load_imatrix read the same values.
 * Returns 0, or -1 with one line in err naming the file.  GGUF: truncated or
 * malformed GGUF, missing imatrix metadata (llama-quantize refuses such files
 * too; told at the first tensor, and a model, one with general.architecture,
 * named as such), no imatrix entries, in_sum2 without counts or the reverse, a tensor
 * that is not F32, sizes that do not divide, a negative or non-finite count.
 * Legacy (the message says "not GGUF, so read as a legacy imatrix.dat"): an
 * entry count < 1, a negative name length, a value count < 1, an entry cut
 * short or running past the end of the file (every size is checked against
 * the bytes actually read before anything is allocated for it); a wpack
 * stream is named as such.  Both: unreadable file, out of memory.  On failure
 * *im holds nothing. */
int wp_imatrix_load(const char *path, wp_imatrix *im, char *err, size_t errlen);

/* Whether the n bytes at head (a file's first, up to 4 KiB) begin as
 * llama-imatrix's legacy imatrix.dat (its save_imatrix_legacy layout): an
 * int32 entry count of 1 to 2^20, then the first name's int32 length, 1 to
 * 4096, and that many bytes, all within head, of printable ASCII with no
 * blank.  A cheap test before wp_imatrix_load, which reads the file whole: a
 * llama2.c checkpoint's dim and hidden_dim pass as a count and a length, but
 * not its next bytes as a name.  Returns 1 or 0. */
int wp_imatrix_dat_head(const uint8_t *head, size_t n);

/* llama-imatrix's GGUF key of its chunk count, which its header holds near the start (a
 * model's quantize.imatrix.chunks_count is another key). */
#define WP_IMATRIX_KEY_CHUNK_COUNT "imatrix.chunk_count"

/* What a tensor name of llama-imatrix's GGUF is: 1 for NAME.in_sum2, 2 for NAME.counts
 * (NAME may be empty), 0 for any other name. */
int wp_imatrix_tensor_kind(const char *name);

/* The entry of weight `name` ("blk.0.attn_q.weight"), or NULL. */
const wp_imatrix_entry *wp_imatrix_find(const wp_imatrix *im, const char *name);

/* What llama-quantize refuses in an importance matrix it loaded, whatever
 * tensors it quantizes (llama_model_quantize_impl checks every value): a
 * non-finite importance; and a negative one, which no llama-imatrix writes (a
 * mean of squared activations; llama-quantize takes it, and a few negative
 * columns turn its scale search into garbage blocks). Returns 0, or -1 with
 * one line in err (n bytes) naming path and the entry: "PATH: imatrix entry
 * W has a non-finite importance (nan at 5): llama-quantize refuses such a
 * file", "... a negative importance (-1 at 3): importance is a mean of
 * squared activations". */
int wp_imatrix_check(const wp_imatrix *im, const char *path, char *err, size_t n);

/* The entry of weight `name` for a tensor of rows ne0 long and n_mat matrices
 * (experts; ne[2]), as llama-quantize takes it (quantize.cpp load_imatrix,
 * llama-quant.cpp): columns and experts equal, or for a legacy entry its
 * value count ne0 x n_mat. Returns 0 with *e (NULL when im has no entry);
 * with `lenient` (the tensor is one llama-quantize quantizes without an entry
 * that does not fit: its token embedding, wp_ftype_is_token_embd), 1 with *e
 * NULL when the entry does not fit (a warning in msg: "PATH: imatrix entry W
 * does not fit the tensor: the entry has 64 values, the tensor's rows are 512
 * long: quantized without it, as llama-quantize does"); else -1 when it does
 * not fit (msg: "PATH: imatrix entry W does not fit the tensor: the entry has
 * 64 columns, the tensor's rows are 172 long"; experts as "x 8 experts").
 * msg holds n bytes; path names the file. */
int wp_imatrix_fit(const wp_imatrix *im, const char *path, const char *name, int64_t ne0, int64_t n_mat, int lenient,
                   const wp_imatrix_entry **e, char *msg, size_t n);

/* The key/values llama-quantize records of the importance matrix it used
 * (tools/quantize/quantize.cpp): quantize.imatrix.file (path, cut to 127
 * bytes), quantize.imatrix.dataset (the first dataset, cut to 127 bytes; when
 * there is one), quantize.imatrix.entries_count (u32), and
 * quantize.imatrix.chunks_count (u32; when chunk_count as an int32 is
 * positive), in that order, set up in kv[0..] (4 initialised records; see
 * wp_gguf_kv_set). Returns how many (2 to 4), or -1 when out of memory. */
int wp_imatrix_kvs(const wp_imatrix *im, const char *path, wp_record kv[4]);

/* Release everything *im holds; it is zeroed. */
void wp_imatrix_free(wp_imatrix *im);

#ifdef __cplusplus
}
#endif
#endif
