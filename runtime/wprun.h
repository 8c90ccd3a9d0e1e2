/*
 * wprun.h - the runner's host side: coded matrices of a bundle (or made up
 * in memory), the CPU reference of every kernel, and the float64 reference.
 *
 * A matrix is rows x cols weights (cols = ne[0], the row length; rows = the
 * product of ne[1..]); y = W x for a batch of B input vectors is computed as
 *   x  B x cols floats, vector b at x[b * cols]
 *   y  B x rows floats, vector b at y[b * rows]
 * Two kinds of coded matrices (bundle.h):
 *   WR_Q    SIDE + CODED (codec=q): a ggml block type's codes as symbols
 *           (codes grouped into 8-bit symbols: 4 2-bit, 2 3- or 4-bit, else 1; codes.h), side bytes of every block beside;
 *   WR_EXP  RAW + CODED (codec=exp): floating-point weights (BF16, F16,
 *           F32) as exponent symbols
 *           (palette indices in pairs, or exponent bytes) + sign/mantissa.
 * A third sort is run too: a matrix the bundle stores fixed-width (a tensor
 * record, or a zstd of one, where coding would not make it smaller, or that
 * the filters left uncoded), held as its restored bytes and run by the twin
 * alone (stored != 0).
 * Records of coded matrices are kept as read (payload pointers are what the
 * GPU uploads); a stored matrix's aux is the restored copy.
 */
#ifndef WPACK_WPRUN_H
#define WPACK_WPRUN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "bf16.h"
#include "bundle.h"
#include "codes.h"
#include "stream.h"
#include "wr_dev.h"

enum { WR_Q = 1, WR_EXP = 2 };

/* How the bundle stores a matrix (wr_matrix.stored). */
enum {
    WR_STORED_CODED = 0,   /* lane-coded: SIDE/RAW + CODED */
    WR_STORED_FIXED = 1,   /* a tensor record, fixed-width (laneinterleave's stored=fixed:
                              coding would not make it smaller) */
    WR_STORED_ZSTD = 2,    /* a zstd record of such a tensor record */
    WR_STORED_UNCODED = 3  /* a tensor record (or zstd of one) the filters left uncoded
                              (histogram --no-float's floats) */
};

/* Exit statuses of wprun (wprun(1)). */
enum {
    WR_EXIT_OK = 0,
    WR_EXIT_FAIL = 1,      /* a check failed (bit mismatch, error too large) or an error */
    WR_EXIT_NODEV = 3,     /* no CUDA device and no --cpu */
    WR_EXIT_USAGE = 64     /* bad command line (sysexits EX_USAGE) */
};

typedef struct {
    char        name[256];
    const char *src;          /* the bundle file it was loaded from (wr_model_load's path, kept by
                                 the caller), or NULL (synthetic) */
    int         kind;         /* WR_Q (a ggml block type) or WR_EXP (BF16, F16, F32) */
    int         stored;       /* WR_STORED_*: CODED, or FIXED / ZSTD / UNCODED (run by the twin
                                 alone: aux holds the restored tensor, coded and the lane fields
                                 are empty) */
    char       *load_err;     /* a stored matrix whose record did not restore at load: why
                                 (wr_restore_bytes gives it); NULL */
    uint32_t    type;         /* ggml type */
    int64_t     rows, cols;
    int64_t     rows_all;     /* a rowmap's tensor (rowmap.h): its rows, of which rows are the
                                 distinct ones that are coded; 0 without a rowmap (a stored
                                 matrix is held with its rows expanded: 0) */
    wp_record   rowmap;       /* a lane-coded rowmap's tensor: its ROWMAP record (unwrapped, its
                                 indices checked against rows at load, the expanded tensor's hash
                                 by wr_restore_bytes); kind 0 without */
    wp_record   aux;          /* SIDE (WR_Q) or RAW (WR_EXP); the TENSOR when stored */
    wp_record   coded;        /* CODED */
    wp_coded_view v;          /* parsed coded, pointers into coded.payload */
    wr_huf      huf;          /* limit tables of v.lengths */
    /* WR_Q */
    wr_geom     dg;           /* device geometry of the type */
    wp_codes_geom g;
    /* WR_EXP: split fields, pointers into aux.payload (s.sym unused) */
    struct wp_bf16_split s;
    uint64_t   *vrow;         /* rows + 1: byte offset in vbytes of row r's first verbatim group */
    uint32_t   *vcnt;         /* rows + 1: verbatim groups before row r */
} wr_matrix;

typedef struct {
    int        n, cap;
    wr_matrix *m;
    /* matrices of the bundles that are not lane-coded (wr_model_load): in m[], run by the twin,
       those laneinterleave stored fixed-width or zstd'd (stored=fixed: coding was not smaller)
       and those the filters left uncoded (n_uncoded: histogram --no-float's floats, say); not
       run, those shared with an earlier tensor (ref) or of a type without a kernel (n_other) */
    int        n_fixed, n_zstd, n_uncoded, n_shared, n_other;
    int        n_empty;      /* not run either: matrices of 0 rows or columns */
    /* the bundle files mapped whole (wr_model_load), whose pages the coded matrices' aux and
       coded payloads point into (borrowed: no copy); unmapped by wr_model_free */
    struct wr_map { void *p; size_t n; } *maps;
    int        n_maps;
} wr_model;

/* ---- model (runtime/model.c) ---- */

/* Load every matrix of a bundle file, found through its trailing index
 * (wp_index_read, wp_record_read_at): each coded one (SIDE/RAW + CODED
 * pair; a rowmap before it sets rows_all), and each one stored fixed-width
 * or zstd'd (a tensor record of 2 or more dimensions, or a zstd of one) of a
 * type the twin takes (a ggml block type of the kernels, BF16, F16, F32),
 * restored with wp_restore (a rowmap before it expanded; the bytes must be
 * what its type and shape need): stored
 * WR_STORED_FIXED or ZSTD, counted in md->n_fixed and n_zstd (those with
 * laneinterleave's stored=fixed), or WR_STORED_UNCODED, counted in
 * n_uncoded (the rest); one whose record does not restore (a corrupt zstd
 * payload under good checksums, or too few bytes) is kept with load_err
 * set, so that its run fails alone. Every other record (metadata, 1-D
 * tensors, shared tensors, tensors of other types) is read once, its
 * checksums checked, its zstd payload (zstd, kvpack) undone once, the
 * shared and other-typed
 * matrices counted in md->n_shared and n_other; they are not run. match: NULL or a
 * NULL-terminated list of substrings, one of which the name must contain
 * (then only the tensors it matches are read; an empty list matches none). path must outlive md (each matrix's src points to it).
 * The file is mapped (mmap, private): the coded matrices' lanes, tables
 * and side data stay in the mapping, the page cache's pages, not copied
 * (wp_record_map_at; read into memory where the file cannot be mapped),
 * until wr_model_free; so the file must not be cut short meanwhile (a
 * page past its new end is a SIGBUS). A bundle with nothing lane-coded
 * loads as any other (the twin runs its matrices); a lane-coded matrix
 * zstd'd whole (a --dist bundle after zstd -d) is refused by name.
 * Returns 0, or -1 with a one-line message in err: WR_LOAD_DIST (-2) where
 * the file is a --dist bundle (one zstd frame, or lane-coded matrices
 * zstd'd), which wprun reads none of. */
#define WR_LOAD_DIST (-2)
int  wr_model_load(wr_model *md, const char *path, const char *const *match, char *err, size_t errlen);

/* Append a synthetic coded matrix of type (a block type of blocks.h, or
 * WP_BF16, WP_F16, WP_F32) and shape rows x cols (cols a multiple of the
 * block size): realistic codes (peaked, as trained weights give) and
 * scales, or Gaussian floats with every 97th weight 8x larger (a diagonal
 * stripe of outliers) and rare zeros (verbatim
 * groups), coded as histogram | huffbuild --max-len 11 | laneinterleave
 * would code them (floats: bf16split --palette 16 --row 64 first; F16 and
 * F32 also get rare values scaled by 2^-12 .. 2^12, so that they too have
 * exponents outside the palette: verbatim groups). seed
 * makes it repeatable. Returns 0 or -1 with a message. */
int  wr_model_synth(wr_model *md, uint32_t type, int64_t rows, int64_t cols, uint64_t seed,
                    char *err, size_t errlen);
/* Append a quantized matrix coded from its ggml blocks: type a quantized
 * ggml type with a code view (Q4_0 .. IQ4_XS), rows x cols (cols a multiple
 * of the block size), blocks the rows x cols / block size blocks as
 * llama.cpp stores them (ggml_row_size(type, cols) bytes a row), coded as
 * wr_model_synth codes its own. Tests build matrices with chosen codes with
 * it. Returns 0 or -1 with a message. */
int  wr_model_add_blocks(wr_model *md, uint32_t type, const char *name, int64_t rows, int64_t cols,
                         const uint8_t *blocks, char *err, size_t errlen);
/* Drop (and free) the matrices whose name contains none of the substrings
 * of match (a NULL-terminated list; NULL: keep all); wr_model_load's
 * --match filter, for matrices added otherwise
 * (wr_model_synth). */
void wr_model_keep(wr_model *md, const char *const *match);
/* Free md's matrices and unmap its bundle files: no matrix's pointers into
 * them (host lanes, tables, side data), nor a device upload made from them
 * that is still being read, may outlive this. md is left empty; a zeroed
 * md is freed as a no-op. */
void wr_model_free(wr_model *md);

/* Append a matrix stored fixed-width (stored WR_STORED_FIXED): type a ggml
 * block type with a code view or BF16, F16, F32; rows x cols; data its
 * ggml_row_size(type, cols) x rows bytes, copied. Tests and the emulator
 * build stored matrices with it. Returns 0 or -1 with a message. */
int  wr_model_add_stored(wr_model *md, uint32_t type, const char *name, int64_t rows, int64_t cols,
                         const uint8_t *data, char *err, size_t errlen);

/* The exact tensor bytes as the library restores them (wp_restore: the
 * reference `verify` uses): *out malloc'd, *len bytes (ggml blocks for WR_Q,
 * the original BF16/F16/F32 bytes for WR_EXP; a stored matrix's restored
 * tensor; of a matrix with a row map, its distinct rows only). Returns 0,
 * or -1 with a one-line message in err. */
int  wr_restore_bytes(const wr_matrix *m, uint8_t **out, size_t *len, char *err, size_t errlen);

/* Bytes the device holds for a matrix in coded form (lane words, offsets,
 * lane counts, lengths, side/raw bytes; a stored matrix: its fixed-width
 * bytes), and in its fixed-width form. */
uint64_t wr_coded_bytes(const wr_matrix *m);
uint64_t wr_fixed_bytes(const wr_matrix *m);

/* ---- CPU reference (runtime/cpu.c) ---- */

/* Tile decoders of wr_cpu_restore. */
enum {
    WR_DEC_TABLE = 0,   /* lib's lookup-table decoder (wp_lanes_decode_tile) */
    WR_DEC_LIMITS = 1,  /* lib's reference: per-length limits (wp_lanes_decode_tile_ref) */
    WR_DEC_DEVICE = 2   /* the kernels' decode on the host (wr_dev_decode_tile) */
};

/* Decode every tile with decoder `mode` (WR_DEC_*) and restore the exact
 * blocks (WR_Q, g.block_len bytes) or float bytes (WR_EXP: BF16, F16 or
 * F32 elements rebuilt from exponent and raw bits with wr_dev.h's
 * wr_float_rebuild, verbatim groups copied) into out. Returns 0 or -1 (also
 * for a stored matrix: it has no lanes). */
int  wr_cpu_restore(const wr_matrix *m, int mode, uint8_t *out, char *err, size_t errlen);

/* The most words any lane of m holds (at least 1, at most
 * WP_LANE_MAX_WORDS): the depth of a staged tile (kernels.cuh's dmax). */
int  wr_lane_depth(const wr_matrix *m);

/* The GEMV kernels' 2^L decode table of m (wr_lut_entry for every peek;
 * palette pairs carry m's palette): lut holds 2^m->huf.L words. -1 when L
 * is outside 1..WR_LUT_MAX_BITS. */
int  wr_lut_build(const wr_matrix *m, uint32_t *lut);

/* k_fused_q's table from wr_lut_build's, in place: a ggml block type's
 * entries with their codes' values (wr_lut_codes, wr_lut_value); other
 * kinds unchanged. */
void wr_lut_values(const wr_matrix *m, uint32_t *lut);

/* Tile t decoded as the device kernels decode it, with wr_dev.h's code run
 * on the host: the tile's words staged lane by lane as lane_open<true> does
 * (group i = the lanes with W_k > i, wr_group_word), each lane read with
 * wr_bits through lut (wr_lut_build), a fill check every second symbol of a
 * row, then wr_bits_close (the staged k_fused_q reads the same symbols by
 * position, lane_pair_at). out: the tile's symbols, row r at out + 256 r.
 * Returns 0, or -1 when the kernels would flag the tile (offsets or lane
 * counts inconsistent, a peek without a code, a palette index without an
 * entry, lane length or padding wrong). */
int  wr_dev_decode_tile(const wr_matrix *m, const uint32_t *lut, uint64_t t, uint8_t *out);

/* Fused decode + GEMV: tile by tile into a 64 x 256 symbol buffer, each
 * weight dequantized (wr_dev.h = blocks.h semantics) and multiplied; a
 * tile's partial sums in float, added into double per row. Any batch >= 1.
 * WR_Q: every coded type; WR_EXP: the exponent-only path (exponents
 * decoded, BF16/F16/F32 rebuilt from the raw bits, verbatim groups from
 * vbytes).
 * Never holds more than one tile of decoded symbols. Returns 0 or -1 (also
 * for a stored matrix, which the twin alone runs). */
int  wr_cpu_gemv_fused(const wr_matrix *m, const float *x, int batch, float *y, char *err, size_t errlen);

/* The twin: the same GEMV over fixed-width data (blocks of WR_Q, or the
 * fully decoded floats of WR_EXP, i.e. the "full decode" pipeline), read
 * with wp_block_code / wr_sub_scale. data = wr_restore_bytes's output.
 * Returns 0, or -1 (out of memory: batch > 64 takes a buffer). */
int  wr_cpu_gemv_fixed(const wr_matrix *m, const uint8_t *data, const float *x, int batch, float *y);

/* A row map's gather (rowmap.h: a GEMV over a tensor with repeated rows is
 * one over its distinct rows followed by y[r] = y'[map[r]]): y_all, batch x
 * m->rows_all floats (vector b at b * rows_all), from y, the distinct rows'
 * outputs, batch x m->rows (vector b at b * rows). m has a row map
 * (m->rows_all > 0) that wr_model_load checked (wp_rowmap_check: every
 * index below m->rows). The CPU reference of k_gather, which every
 * pipeline's GEMV ends with on the GPU. */
void wr_cpu_gather(const wr_matrix *m, const float *y, int batch, float *y_all);

/* The palette pipelines' 4-bit index array of a palette-pair BF16 matrix:
 * rows x wr_palette_stride(m) bytes (a multiple of 4), weight (r, c) at
 * nibble c % 2 (low first) of byte r * stride + c / 2, i.e. the pair
 * symbols of bf16.h row by row; weights of verbatim groups hold index 0, as
 * the coded slots do. */
int64_t wr_palette_stride(const wr_matrix *m);

/* Whether m is a palette-pair BF16 matrix: exponent-coded BF16 whose
 * symbols are bf16split --palette's pairs of 4-bit palette indices (bf16.h),
 * the form the transcode and palette pipelines read. 1 or 0. */
int     wr_palette_pair(const wr_matrix *m);

/* Whether the palette pipelines take m: a palette-pair BF16 matrix whose
 * palette entry 0 (the index of a verbatim group's slots) is not exponent
 * 255. The GPU palette GEMV (k_palette) first multiplies every weight as
 * its index says and then adds (w - w_pal) x for the verbatim groups; an
 * infinite or NaN w_pal could not be taken back. 1 or 0. */
int     wr_palette_ok(const wr_matrix *m);

/* That array transcoded at load from the restored BF16 bytes (fixed =
 * wr_restore_bytes's output): the bytes split again with wp_bf16_split
 * (bf16.h, the one home of the pair layout), its pair symbols copied row by
 * row (the "palette" pipeline; gpu.cu uploads it). idx: rows * stride
 * bytes. -1 when m is not palette-pair BF16, or the split does not give
 * back m's palette. */
int  wr_palette_index(const wr_matrix *m, const uint8_t *fixed, uint8_t *idx);

/* The palette pipelines' correction for verbatim groups (k_palette's
 * pal_fix adds delta x after multiplying every weight as its index says):
 * for verbatim group v, numbered row by row as m->vcnt counts them (row r's
 * groups are vcnt[r] .. vcnt[r + 1] - 1), vcol[v] = its first column and
 * delta[v * wr_palette_fix_stride(m) + t] = w - w_pal of its weight t in
 * float, 0 past the group's end; w is the weight in fixed
 * (wr_restore_bytes's output, rows x cols BF16), w_pal the one palette
 * index 0 and the weight's raw byte make. vcol: m->s.n_verbatim entries;
 * delta: n_verbatim x stride floats. The stride is the group rounded up to
 * a multiple of 8 (k_palette reads delta 8 floats at a time). Returns 0, or
 * -1 when m is not palette-pair BF16 (or its map does not give n_verbatim
 * groups). */
int64_t wr_palette_fix_stride(const wr_matrix *m);
int     wr_palette_fix(const wr_matrix *m, const uint8_t *fixed, uint32_t *vcol, float *delta);

/* WPRUN_PALETTE_AHEAD (wprun(1) ENVIRONMENT): 1 or 2 as set, 0 when unset
 * or empty, -1 for any other value (wprun warns; the GPU takes its
 * default). */
int     wr_palette_ahead_env(void);

/* The same array decoded from the lanes (the "transcode" pipeline's first
 * kernel, k_transcode): every tile's pair symbols stored as bytes. Equals
 * wr_palette_index's bit for bit on a sound bundle. Returns 0 or -1. */
int  wr_cpu_transcode(const wr_matrix *m, uint8_t *idx, char *err, size_t errlen);

/* The palette GEMV (k_palette's reference): each weight's BF16 rebuilt from
 * palette[index], its raw byte, or its verbatim group; sums per 256 columns
 * in float, added in double. Returns 0 or -1 with a message in err (a
 * palette index without an entry; m not a palette-pair BF16 matrix). */
int  wr_cpu_gemv_palette(const wr_matrix *m, const uint8_t *idx, const float *x, int batch, float *y, char *err,
                         size_t errlen);

/* float64 reference: dequantize each row with lib (wp_dequantize_row, or
 * the float value of BF16/F16/F32), accumulate products in double. data =
 * wr_restore_bytes's output; y: batch x rows. yabs: NULL, or batch x rows
 * sums of |w x| in double, as y (wr_relerr_abs). Returns 0, or -1 (out of
 * memory, y untouched). */
int  wr_ref_gemv64(const wr_matrix *m, const uint8_t *data, const float *x, int batch, double *y, double *yabs);

/* Normwise relative error max|y - ref| / max|ref| over the entries whose
 * ref is finite (the absolute error max|y - ref| when every finite ref is 0;
 * 0 when y is 0 there too); an entry whose ref is +-Inf (NaN) must
 * be the same Inf (a NaN) in y, else the error is +Inf. Why: a BF16 matrix
 * holding Inf weights round-trips exactly, and its GEMV is Inf or NaN. */
double wr_relerr(const float *y, const double *ref, size_t n);
/* wr_relerr of a GEMV whose sums of |w x| are yabs (wr_ref_gemv64's; NULL:
 * wr_relerr itself), rows of cols weights:
 *  - the denominator is at least S, the largest yabs within float's range
 *    over sqrt(cols), the size an output has when its products do not
 *    cancel: where every output cancels to near zero (a matrix of one row,
 *    say), the float sums' rounding is measured against the size of the
 *    products, not of the result; over many rows max|ref| is mostly the
 *    larger;
 *  - an output whose ref is finite but whose yabs is beyond float's range
 *    (FLT_MAX) may be Inf or NaN in y: a float sum of such products
 *    overflows (a BF16 matrix of its largest values); it is left out then,
 *    and compared when finite. (An Inf or NaN ref is as wr_relerr takes it.) */
double wr_relerr_abs(const float *y, const double *ref, const double *yabs, size_t n, int64_t cols);
/* Whether wr_relerr_abs leaves an output out as a float overflow: its ref
 * finite, its sum of |w x| yabs beyond FLT_MAX, and y Inf or NaN. */
int    wr_relerr_overflow(float y, double ref, double yabs);

/* Inputs for benchmarks and checks: never zero (|v| in [0.25, 1.25]),
 * rounded to BF16 when bf16 (so a BF16 GEMM sees them exactly). */
void wr_make_x(float *x, size_t n, uint64_t seed, int bf16);

/* Monotonic seconds. */
double wr_now(void);

#ifdef __cplusplus
}
#endif

#endif
