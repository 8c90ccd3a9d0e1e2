/*
 * gpu.h - the CUDA side of wprun, as seen from C (runtime/gpu.cu).
 *
 * Compiled only when nvcc is present (runtime.mk); a build with
 * -DWPACK_NO_CUDA has no GPU path and wprun never calls these. All sizes are
 * as in wprun.h (x: batch x cols floats, y: batch x rows floats, vector b at
 * b * cols / b * rows). Errors: -1 with a one-line message in err (the CUDA
 * or cuBLAS error string and the call that failed).
 */
#ifndef WPACK_GPU_H
#define WPACK_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "wprun.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GEMV/GEMM pipelines. */
enum {
    WR_PIPE_FUSED = 0, /* WR_Q: fused lane decode + GEMV (registers, no decoded weights in
                          global memory); WR_EXP: exponent-only decode, BF16 rebuilt in
                          registers, reconstructive GEMV ("exp") */
    WR_PIPE_FULL = 1,  /* decode the whole matrix to global memory (blocks / BF16, F16, F32),
                          then the twin GEMV (WR_Q) or cuBLAS GEMM in that float type (WR_EXP) */
    WR_PIPE_TWIN = 2,  /* the baseline on fixed-width data uploaded as is: the twin GEMV on
                          ggml blocks (WR_Q), cuBLAS GEMM on the original BF16, F16 or F32 (WR_EXP) */
    WR_PIPE_TRANSCODE = 3, /* WR_EXP, palette pairs: lanes transcoded to 4-bit palette
                          indices in global memory at run time, then the palette GEMV */
    WR_PIPE_PALETTE = 4,   /* WR_EXP, palette pairs: the 4-bit indices transcoded once at
                          load (12 b/w read: index + raw byte), palette GEMV */
    WR_PIPE_STAGED = 5,    /* FUSED with each tile's lane words first copied to shared
                          memory (coalesced, the interleave undone), then decoded from
                          there: no global load inside the decode loop */
    WR_PIPE_RECON = 6,     /* WR_EXP: the reconstructive GEMM for batches above 8: exponents
                          decoded, BF16 tiles rebuilt in shared memory 16 columns at a
                          time, multiplied on tensor cores (wmma, FP32 sums), 32 input
                          vectors a launch */
    WR_PIPE_SPLIT2 = 7,    /* WR_EXP: the SM split between decode and GEMM: FULL cut into
                          bands of tile rows, band b + 1 decoded on 1/2 (SPLIT2), 1/4 or
                          1/8 of the SMs while cuBLAS multiplies band b on the rest */
    WR_PIPE_SPLIT4 = 8,
    WR_PIPE_SPLIT8 = 9,
    WR_PIPE_RING = 10,     /* WR_Q: FUSED with each lane's next words copied ahead into a
                          ring of RING_WORDS words a lane in shared memory (cp.async, one
                          sub-block ahead, 4 KiB a warp, and the warp's groups, 8 bytes
                          a word of the deepest lane), overlapping the loads with decode */
    WR_PIPE_PRIVATE = 11,  /* WR_Q: FUSED through a lane-private decode table (lane k reads
                          bank k of shared memory only: one wavefront a lookup, against
                          3.56 for the shared table; 128 KiB at L = 11), persistent: a
                          block copies the table once and its warps take tiles across
                          the matrix */
    WR_PIPE_COUNT = 12
};

/* Number of CUDA devices; 0 when there is none or no driver. */
int wr_gpu_count(void);

typedef struct wr_gpu wr_gpu;
typedef struct wr_dmat wr_dmat;

/* Open device 0: a stream, a cuBLAS handle, an L2-flush buffer. NULL on
 * error, with a one-line message in err. wr_gpu_close frees them and g
 * (after the matrices uploaded to it, wr_gpu_free); NULL is a no-op. */
wr_gpu *wr_gpu_open(char *err, size_t errlen);
void    wr_gpu_close(wr_gpu *g);
/* The device's name and HBM bandwidth in GB/s (from its memory clock and bus width). */
const char *wr_gpu_name(const wr_gpu *g);
double      wr_gpu_hbm_gbs(const wr_gpu *g);

/* Upload a coded matrix (lane words, offsets, lane counts, side/raw bytes,
 * limit tables); fixed = the restored fixed-width bytes (wr_restore_bytes,
 * wr_fixed_bytes(m) of them), uploaded for WR_PIPE_TWIN, and for a
 * palette-pair BF16 matrix (wr_palette_ok) transcoded to the palette
 * pipelines' indices; or NULL. WR_EXP: BF16, F16 or F32. A matrix the
 * bundle stores fixed-width (m->stored): fixed and the twin's buffers only
 * (fixed must be given). The result keeps a pointer to m, which must
 * outlive it; fixed is copied. NULL on error (out of device memory, a CUDA
 * error), with a one-line message in err. wr_gpu_free frees its device
 * buffers and d; NULL is a no-op. */
wr_dmat *wr_gpu_upload(wr_gpu *g, const wr_matrix *m, const uint8_t *fixed, char *err, size_t errlen);
void     wr_gpu_free(wr_dmat *d);

/* 1 if pipeline pipe runs on this matrix: a stored one (m->stored) TWIN
 * alone; else FUSED, STAGED and FULL always,
 * RING for ggml-block (WR_Q) matrices, PRIVATE for those when one warp's block fits the
 * device's shared memory, RECON and SPLIT* for exponent-coded (BF16) matrices, TWIN when
 * fixed data was uploaded, TRANSCODE and PALETTE for palette-pair BF16 whose
 * fixed data was uploaded (wr_palette_ok: a palette whose
 * entry 0 is not exponent 255). */
int wr_gpu_has_pipe(const wr_dmat *d, int pipe);

/* Lane decoder kernel (one warp per tile, thread k = lane k): restore the
 * exact blocks (WR_Q) or BF16, F16 or F32 bytes (WR_EXP) into device memory and copy
 * them to out (wr_fixed_bytes(m) bytes). lut = 0: canonical decode against
 * the per-length limits (the hardware unit's method, every type); lut = 1:
 * the 2^L lookup table of the GEMV kernels (BF16; ggml blocks take the limit
 * kernel either way). Returns 0, or -1 (also for corrupt lanes, which the
 * kernel flags). */
int wr_gpu_restore(wr_gpu *g, wr_dmat *d, int lut, uint8_t *out, char *err, size_t errlen);

/* Warps a SM that pipeline pipe's kernel holds at batch (1, 2, 4 or 8) on
 * matrix d: cudaOccupancyMaxActiveBlocksPerMultiprocessor for k_fused_q
 * with the launch's dynamic shared memory (registers, shared memory and
 * the launch bounds decide) times its warps a block; *waves = the
 * launch's blocks (a warp a tile row of a tile column, FUSED_WARPS rows a
 * block) over that many blocks on every SM. FUSED,
 * STAGED and RING of ggml-block (WR_Q) matrices; 0 (and *waves 0) for
 * the others, another batch, or when the query fails. For --bench: the
 * last round of tiles (waves > 1: more than one) can take up to a tile's
 * decode time however few tiles are in it. */
int wr_gpu_sm_warps(wr_gpu *g, wr_dmat *d, int pipe, int batch, double *waves);

/* y = W x through a pipeline, any batch >= 1 (the fused kernels take 8
 * vectors at a time). Host x and y; y is batch x m->rows_all for a matrix
 * with a row map (the distinct rows' outputs gathered on the device by
 * k_gather, as wr_gpu_time and the graph pass run it too), else batch x
 * rows. */
int wr_gpu_gemv(wr_gpu *g, wr_dmat *d, int pipe, const float *x, int batch, float *y, char *err, size_t errlen);

/* Time a pipeline: device events around each run, `warmup` untimed runs,
 * then `runs` timed runs, each on the next of 4 rotated nonzero inputs and
 * after a flush of L2 (a write of 2x its size, not timed). *median_us = the
 * median. Returns 0 or -1. */
int wr_gpu_time(wr_gpu *g, wr_dmat *d, int pipe, int batch, int warmup, int runs, double *median_us,
                char *err, size_t errlen);

/* The pipeline the graph pass runs for `pipe` on d: pipe itself where it
 * applies and runs kernels only, else FUSED (cuBLAS's full and split for
 * float matrices, and the twin of a coded matrix, are not captured). A
 * matrix the bundle stores fixed-width (m->stored) takes the twin alone:
 * TWIN for a block type (k_twin, captured), -1 for a float matrix (its
 * twin is cuBLAS: wr_gpu_graph_pass leaves it out). */
int wr_gpu_graph_pipe(const wr_dmat *d, int pipe);

/* A whole-model weight pass (every matrix once, batch 1, as one token's
 * decode step needs) captured in a CUDA graph: matrix i through
 * wr_gpu_graph_pipe(d[i], pipe[i]) (pipe NULL: FUSED for all; wprun passes
 * the tuning file's choice; a matrix for which wr_gpu_graph_pipe is -1 is
 * left out), launched once outside the capture first;
 * *graph_us = median time of a graph launch, *stream_us = the same launches
 * issued one by one. Returns 0 or -1 with a message in err. */
int wr_gpu_graph_pass(wr_gpu *g, wr_dmat **d, const int *pipe, int n, int runs, double *graph_us,
                      double *stream_us, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
