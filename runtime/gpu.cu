/*
 * gpu.cu - wprun's host side on the GPU (gpu.h): device buffers, the 2^L
 * decode tables, launches of the kernels of kernels.cuh (the layout and the
 * kernels are described there), cuBLAS, timing, the CUDA graph.
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_pipeline.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "gpu.h"
#include "kernels.cuh"
#include "rowmap.h"

/* ---- host error plumbing ------------------------------------------------------- */

static int cuda_fail(char *err, size_t n, const char *what, cudaError_t e)
{
    snprintf(err, n, "%s: %s", what, cudaGetErrorString(e));
    return -1;
}
#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return cuda_fail(err, errlen, #call, e_);                                              \
    } while (0)

/* ---- host side --------------------------------------------------------------------------- */

#define SPLIT_BANDS 8   /* the split pipelines cut a matrix into this many bands of tile rows */

struct wr_gpu {
    cudaStream_t st;
    cublasHandle_t blas;
    void *flush;
    size_t flush_bytes;
    char name[320];
    double hbm;
    int sms;                /* streaming multiprocessors */
    size_t smem_optin;      /* shared memory a block may have (opt-in), bytes */
    cudaStream_t side;      /* the split pipelines' decode stream */
    cudaEvent_t ev0, ev[SPLIT_BANDS];   /* split: start, band b decoded */
};

struct wr_dmat {
    const wr_matrix *m;
    DevMat M;
    wr_huf H;
    void *buf[24];          /* owned device allocations */
    int nbuf;
    uint8_t *fixed;         /* original fixed-width data (twin / cuBLAS baseline) */
    uint8_t *dec;           /* decoded data of the "full" pipeline */
    uint32_t *lut;          /* 2^L decode table (wr_lut_build) */
    uint32_t *plut;         /* WR_Q: its pair table (plut_host), pipeline "private" */
    int smem_ok;            /* WR_Q: a block of "private" with one warp fits the device */
    int pw[4];              /* "private" at batch 1, 2, 4, 8: warps a block (0: not planned yet) */
    unsigned pgrid[4];      /*   and blocks (private_launch) */
    uint8_t *idx;           /* palette pipeline: 4-bit indices transcoded at load */
    uint8_t *idx_tc;        /* transcode pipeline: indices transcoded at run time */
    int *err;
    uint32_t *map;          /* a row map's (m->rows_all > 0): its rows_all indices into the distinct rows */
    float *x[4], *y;        /* rotated inputs, output (batch x the distinct rows) */
    float *y_all;           /* a row map's: the output gathered for every row (k_gather), batch x rows_all */
    uint16_t *xb;           /* BF16 or F16 copy of x for cuBLAS (the matrix's type) */
    int io_batch;
};

extern "C" int wr_gpu_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

extern "C" wr_gpu *wr_gpu_open(char *err, size_t errlen)
{
    wr_gpu *g = (wr_gpu *)calloc(1, sizeof *g);
    cudaDeviceProp p;
    int clk = 0, bus = 0;
    if (!g || cudaSetDevice(0) != cudaSuccess || cudaGetDeviceProperties(&p, 0) != cudaSuccess ||
        cudaStreamCreate(&g->st) != cudaSuccess) {
        snprintf(err, errlen, "cannot open CUDA device 0: %s", cudaGetErrorString(cudaGetLastError()));
        free(g);
        return NULL;
    }
    snprintf(g->name, sizeof g->name, "%.200s (sm_%d%d, %d SMs, L2 %d MiB)", p.name, p.major, p.minor,
             p.multiProcessorCount, p.l2CacheSize >> 20);
    cudaDeviceGetAttribute(&clk, cudaDevAttrMemoryClockRate, 0);
    cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, 0);
    g->hbm = 2.0 * clk * 1e3 * (bus / 8.0) / 1e9;
    g->sms = p.multiProcessorCount > 0 ? p.multiProcessorCount : 1;
    g->smem_optin = p.sharedMemPerBlockOptin;
    bool evs = cudaStreamCreateWithFlags(&g->side, cudaStreamNonBlocking) == cudaSuccess &&
               cudaEventCreateWithFlags(&g->ev0, cudaEventDisableTiming) == cudaSuccess;
    for (int i = 0; evs && i < SPLIT_BANDS; i++)
        evs = cudaEventCreateWithFlags(&g->ev[i], cudaEventDisableTiming) == cudaSuccess;
    if (!evs) {
        snprintf(err, errlen, "cannot create the split pipelines' stream and events: %s",
                 cudaGetErrorString(cudaGetLastError()));
        free(g);
        return NULL;
    }
    g->flush_bytes = 2 * (size_t)(p.l2CacheSize > 0 ? p.l2CacheSize : (64 << 20));
    if (cublasCreate(&g->blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(g->blas, g->st) != CUBLAS_STATUS_SUCCESS ||
        cudaMalloc(&g->flush, g->flush_bytes) != cudaSuccess) {
        snprintf(err, errlen, "cannot create the cuBLAS handle or the L2 flush buffer");
        free(g);
        return NULL;
    }
    return g;
}

extern "C" void wr_gpu_close(wr_gpu *g)
{
    if (!g)
        return;
    cublasDestroy(g->blas);
    cudaFree(g->flush);
    for (int i = 0; i < SPLIT_BANDS; i++)
        cudaEventDestroy(g->ev[i]);
    cudaEventDestroy(g->ev0);
    cudaStreamDestroy(g->side);
    cudaStreamDestroy(g->st);
    free(g);
}

extern "C" const char *wr_gpu_name(const wr_gpu *g) { return g->name; }
extern "C" double wr_gpu_hbm_gbs(const wr_gpu *g) { return g->hbm; }

/* A device buffer of `bytes` bytes, freed with d; the first n (<= bytes) copied from src
 * when given, the rest zeroed. */
static int dalloc_n(wr_dmat *d, void **p, size_t bytes, const void *src, size_t n, char *err, size_t errlen)
{
    CK(cudaMalloc(p, bytes ? bytes : 4));
    d->buf[d->nbuf++] = *p;
    if (src && n)
        CK(cudaMemcpy(*p, src, n, cudaMemcpyHostToDevice));
    if (src && n < bytes)
        CK(cudaMemset((uint8_t *)*p + n, 0, bytes - n));
    return 0;
}

static int dalloc(wr_dmat *d, void **p, size_t bytes, const void *src, char *err, size_t errlen)
{
    return dalloc_n(d, p, bytes, src, bytes, err, errlen);
}

extern "C" void wr_gpu_free(wr_dmat *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->nbuf; i++)
        cudaFree(d->buf[i]);
    for (int i = 0; i < 4; i++)
        cudaFree(d->x[i]);
    cudaFree(d->y);
    cudaFree(d->y_all);
    cudaFree(d->xb);
    free(d);
}

extern "C" wr_dmat *wr_gpu_upload(wr_gpu *g, const wr_matrix *m, const uint8_t *fixed, char *err, size_t errlen)
{
    wr_dmat *d = (wr_dmat *)calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->m = m;
    d->H = m->huf;
    DevMat &M = d->M;
    const wp_coded_view &v = m->v;
    void *p;
    uint64_t fb = wr_fixed_bytes(m);
    if (m->stored) {   /* stored fixed-width: its bytes for the twin, and the twin's buffers */
        if (!fixed) {
            snprintf(err, errlen, "%s: stored fixed-width, and its bytes were not given", m->name);
            goto fail;
        }
        if (dalloc(d, &p, fb, fixed, err, errlen))
            goto fail;
        d->fixed = (uint8_t *)p;
        if (dalloc(d, &p, 4, NULL, err, errlen))
            goto fail;
        d->err = M.err = (int *)p;
        if (cudaMemset(M.err, 0, 4) != cudaSuccess) {
            snprintf(err, errlen, "cudaMemset: %s", cudaGetErrorString(cudaGetLastError()));
            goto fail;
        }
        devmat_fill_stored(M, m);
        goto twin_buffers;
    }
    if (dalloc(d, &p, 4 * v.n_words, v.words, err, errlen))
        goto fail;
    M.words = (const uint32_t *)p;
    if (dalloc(d, &p, 4 * (v.n_tiles + 1), v.offsets, err, errlen))
        goto fail;
    M.offsets = (const uint32_t *)p;
    if (dalloc(d, &p, 32 * v.n_tiles, v.lane_words, err, errlen))
        goto fail;
    M.lane_words = (const uint8_t *)p;
    if (dalloc_n(d, &p, side_alloc_bytes(m->aux.payload_len), m->aux.payload, m->aux.payload_len, err, errlen))
        goto fail;
    M.side = (const uint8_t *)p;
    if (dalloc(d, &p, 4, NULL, err, errlen))
        goto fail;
    d->err = M.err = (int *)p;
    if (dalloc(d, &p, fb, NULL, err, errlen))
        goto fail;
    d->dec = (uint8_t *)p;
    if (fixed) {
        if (dalloc(d, &p, fb, fixed, err, errlen))
            goto fail;
        d->fixed = (uint8_t *)p;
    }
    if (devmat_fill(M, m, err, errlen))
        goto fail;
    if (m->rows_all) {   /* the row map's indices, for k_gather (wr_model_load checked them) */
        std::vector<uint32_t> map((size_t)m->rows_all);
        for (size_t r = 0; r < map.size(); r++)
            map[r] = wp_rowmap_row(&m->rowmap, r);
        if (dalloc(d, &p, 4 * map.size(), map.data(), err, errlen))
            goto fail;
        d->map = (uint32_t *)p;
    }
twin_buffers:
    /* k_twin's and k_palette's column splits: their sums and done-counters (zero) */
    if (dalloc(d, &p, 4 * (size_t)gemv_max_splits(g->sms, M) * 8 * (size_t)M.rows, NULL, err, errlen))
        goto fail;
    M.part = (float *)p;
    if (dalloc(d, &p, 4 * (size_t)gemv_counters(M), NULL, err, errlen))
        goto fail;
    M.cnt = (unsigned *)p;
    if (cudaMemset(M.cnt, 0, 4 * (size_t)gemv_counters(M)) != cudaSuccess) {
        snprintf(err, errlen, "cudaMemset: %s", cudaGetErrorString(cudaGetLastError()));
        goto fail;
    }
    if (m->stored)
        return d;
    {
        /* the 2^L decode table (wr_lut_build: wr_lut_entry of every peek, the code the CPU
           tests run); a block type's pair table from it, then its codes' values for
           k_fused_q (wr_lut_values) */
        std::vector<uint32_t> lut((size_t)1 << M.L);
        if (wr_lut_build(m, lut.data())) {
            snprintf(err, errlen, "%s: cannot build the decode table", m->name);
            goto fail;
        }
        if (m->kind == WR_Q) {
            const std::vector<uint32_t> pairs = plut_host(lut.data(), M.L);
            if (dalloc(d, &p, 4 * pairs.size(), pairs.data(), err, errlen))
                goto fail;
            d->plut = (uint32_t *)p;
            /* 12 KiB: more than the static shared memory of any k_fused_private (kv16) */
            d->smem_ok = private_block_warps(M, 8, g->smem_optin, 12u << 10) > 0;
        }
        wr_lut_values(m, lut.data());
        if (dalloc(d, &p, 4 * lut.size(), lut.data(), err, errlen))
            goto fail;
        d->lut = (uint32_t *)p;
    }
    if (m->kind == WR_EXP) {
        const struct wp_bf16_split &s = m->s;
        /* the sign/mantissa bytes in an allocation of their own, so the kernels can read
           them 8 and 16 at a time (aligned) */
        if (dalloc(d, &p, s.raw_bytes, s.raw, err, errlen))
            goto fail;
        M.raw = (const uint8_t *)p;
        if (dalloc(d, &p, 8 * (size_t)(m->rows + 1), m->vrow, err, errlen))
            goto fail;
        M.vrow = (const unsigned long long *)p;
        if (fixed && wr_palette_ok(m)) {
            /* the palette pipelines: 4-bit indices of every weight, row stride a multiple
               of 4 bytes; "palette" gets them transcoded here (at load), "transcode" at run time */
            M.istride = wr_palette_stride(m);
            M.vstride = wr_palette_fix_stride(m);
            PaletteHost h;
            if (palette_host(m, fixed, h, err, errlen))
                goto fail;
            if (dalloc(d, &p, h.ix.size(), h.ix.data(), err, errlen))
                goto fail;
            d->idx = (uint8_t *)p;
            if (dalloc(d, &p, h.ix.size(), NULL, err, errlen))
                goto fail;
            d->idx_tc = (uint8_t *)p;
            /* the verbatim groups' correction (wr_palette_fix) */
            if (dalloc(d, &p, 4 * (size_t)(m->rows + 1), m->vcnt, err, errlen))
                goto fail;
            M.vcnt = (const uint32_t *)p;
            if (dalloc(d, &p, 4 * h.vcol.size(), h.vcol.data(), err, errlen))
                goto fail;
            M.vcol = (const uint32_t *)p;
            if (dalloc(d, &p, 4 * h.delta.size(), h.delta.data(), err, errlen))
                goto fail;
            M.vdelta = (const float *)p;
        }
    }
    return d;
fail:
    wr_gpu_free(d);
    return NULL;
}

/* Device buffers for a batch: 4 rotated nonzero inputs, y, a BF16 x; a row map's y_all. */
static int ensure_io(wr_dmat *d, int batch, char *err, size_t errlen)
{
    if (d->io_batch >= batch)
        return 0;
    for (int i = 0; i < 4; i++) {
        cudaFree(d->x[i]);
        d->x[i] = NULL;
    }
    cudaFree(d->y);
    cudaFree(d->y_all);
    cudaFree(d->xb);
    /* none left pointing at freed memory: a cudaMalloc below that fails leaves the rest NULL,
       not freed again by the next call or by wr_gpu_free (a reviewer's find) */
    d->y = d->y_all = NULL;
    d->xb = NULL;
    d->io_batch = 0;
    size_t nx = (size_t)batch * (size_t)d->M.cols, ny = (size_t)batch * (size_t)d->M.rows;
    std::vector<float> hx(nx);
    for (int i = 0; i < 4; i++) {
        CK(cudaMalloc(&d->x[i], nx * 4));
        wr_make_x(hx.data(), nx, 100 + (uint64_t)i, d->m->kind == WR_EXP);
        CK(cudaMemcpy(d->x[i], hx.data(), nx * 4, cudaMemcpyHostToDevice));
    }
    CK(cudaMalloc(&d->y, ny * 4));
    if (d->map)
        CK(cudaMalloc(&d->y_all, (size_t)batch * (size_t)d->m->rows_all * 4));
    CK(cudaMalloc(&d->xb, nx * 2));
    d->io_batch = batch;
    return 0;
}

/* Kernel launches. Batches 1, 2, 4, 8 are compiled; a chunk of another size
 * runs as several (3 = 2 + 1, ...). */
#define FOR_TYPES(X)                                                                               \
    X(WP_Q4_0) X(WP_Q4_1) X(WP_Q5_0) X(WP_Q5_1) X(WP_Q8_0) X(WP_IQ4_NL) X(WP_Q2_K) X(WP_Q3_K)      \
    X(WP_Q4_K) X(WP_Q5_K) X(WP_Q6_K) X(WP_IQ4_XS)

/* Allow a kernel `bytes` of dynamic shared memory. The limit only grows:
 * it is the kernel's, not a launch's, and a CUDA graph may hold launches
 * of one kernel for several matrices, each asking for its own (the groups
 * and staged lanes are as deep as the matrix's lanes); set per launch, the
 * last matrix's would have been the limit for all (a reviewer's find). Set
 * once past the default: the default limit is 48 KiB less the kernel's
 * static shared memory, not 48 KiB. An error here (more than the device
 * allows) surfaces at launch (launch()'s cudaGetLastError). */
template <typename K>
static void launch_smem(K kernel, size_t bytes)
{
    static std::map<const void *, size_t> most;   /* per kernel, the limit set */
    size_t &m = most[reinterpret_cast<const void *>(kernel)];
    if (bytes > m && cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes) ==
                         cudaSuccess)
        m = bytes;
}


/* ST: 0 lane words from global memory (FUSED), 1 staged (STAGED), 2 ring (RING, WR_Q only). */
template <int B, int ST>
static void fused_b(wr_gpu *g, wr_dmat *d, const float *x, float *y)
{
    const DevMat &M = d->M;
    dim3 grid((unsigned)M.tcols, (unsigned)((M.trows + FUSED_WARPS - 1) / FUSED_WARPS)), block(32 * FUSED_WARPS);
    const size_t sm = fused_smem_bytes(M, ST);
    if (d->m->kind == WR_EXP) {
        if (ST == 2)
            return; /* wr_gpu_has_pipe refuses RING before this */
        if (M.palette_n) {
            launch_smem(k_fused_exp<B, true, ST == 1>, sm);
            k_fused_exp<B, true, ST == 1><<<grid, block, sm, g->st>>>(M, d->lut, x, y);
        } else {
            launch_smem(k_fused_exp<B, false, ST == 1>, sm);
            k_fused_exp<B, false, ST == 1><<<grid, block, sm, g->st>>>(M, d->lut, x, y);
        }
        return;
    }
    switch (M.type) {
#define FQ(t)                                                                                      \
    case t:                                                                                        \
        launch_smem(k_fused_q<t, B, ST>, sm);                                                      \
        k_fused_q<t, B, ST><<<grid, block, sm, g->st>>>(M, d->lut, x, y);                          \
        break;
        FOR_TYPES(FQ)
#undef FQ
    }
}
/* Blocks a SM of k_fused_q<type, B, ST> at d's dynamic shared memory; 0
 * when the query fails (wr_gpu_sm_warps). */
template <int B, int ST>
static int fused_q_blocks(const wr_dmat *d)
{
    const DevMat &M = d->M;
    const size_t sm = fused_smem_bytes(M, ST);
    int nb = 0;
    switch (M.type) {
#define FQ(t)                                                                                      \
    case t:                                                                                        \
        launch_smem(k_fused_q<t, B, ST>, sm);                                                      \
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, k_fused_q<t, B, ST>, 32 * FUSED_WARPS, sm) != \
            cudaSuccess)                                                                           \
            nb = 0;                                                                                \
        break;
        FOR_TYPES(FQ)
#undef FQ
    }
    cudaGetLastError();   /* a failed query leaves no error for the next launch */
    return nb;
}

template <int B>
static int fused_q_blocks_st(const wr_dmat *d, int st)
{
    return st == 0 ? fused_q_blocks<B, 0>(d) : st == 1 ? fused_q_blocks<B, 1>(d) : fused_q_blocks<B, 2>(d);
}

extern "C" int wr_gpu_sm_warps(wr_gpu *g, wr_dmat *d, int pipe, int batch, double *waves)
{
    const int st = pipe == WR_PIPE_FUSED ? 0 : pipe == WR_PIPE_STAGED ? 1 : pipe == WR_PIPE_RING ? 2 : -1;
    int nb = 0;
    *waves = 0.0;
    if (d->m->kind != WR_Q || d->m->stored || st < 0)
        return 0;
    switch (batch) {
    case 1: nb = fused_q_blocks_st<1>(d, st); break;
    case 2: nb = fused_q_blocks_st<2>(d, st); break;
    case 4: nb = fused_q_blocks_st<4>(d, st); break;
    case 8: nb = fused_q_blocks_st<8>(d, st); break;
    default: return 0;
    }
    /* rounds of the launch's blocks (FUSED_WARPS tile rows each, some idle in the last) */
    const double blocks = (double)d->M.tcols * (double)((d->M.trows + FUSED_WARPS - 1) / FUSED_WARPS);
    if (nb > 0)
        *waves = blocks / ((double)nb * g->sms);
    return nb * FUSED_WARPS;
}

/* Pipeline "private" at batch B (1, 2, 4, 8): k_fused_private on
 * private_shape's grid (the SMs, the blocks a SM holds of private_block_warps
 * warps, the tiles). Planned once per matrix and batch (d->pw, d->pgrid):
 * the attribute and occupancy queries would otherwise sit
 * between the timing events. The kernel's dynamic shared memory limit is
 * set to all the device allows, so a later matrix never lowers it under an
 * earlier one's launches (a captured graph's, say); where that fails,
 * nothing is planned and the launch reports the error. */
template <int TYPE, int B>
static void private_launch(wr_gpu *g, wr_dmat *d, const float *x, float *y)
{
    constexpr int bi = B == 1 ? 0 : B == 2 ? 1 : B == 4 ? 2 : 3;
    const DevMat &M = d->M;
    if (!M.ntiles)
        return;
    int w = d->pw[bi];
    unsigned grid = d->pgrid[bi];
    if (!w) {
        cudaFuncAttributes a;
        size_t st = 12u << 10;
        if (cudaFuncGetAttributes(&a, k_fused_private<TYPE, B>) == cudaSuccess)
            st = a.sharedSizeBytes;
        else
            cudaGetLastError();
        const int w_fit = std::max(1, private_block_warps(M, B, g->smem_optin, st));
        const bool set = g->smem_optin > st &&
                         cudaFuncSetAttribute(k_fused_private<TYPE, B>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              (int)(g->smem_optin - st)) == cudaSuccess;
        if (!set)
            cudaGetLastError();
        int nb = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, k_fused_private<TYPE, B>, 32 * w_fit,
                                                          private_smem_bytes(M, B, w_fit)) != cudaSuccess ||
            nb < 1) {
            cudaGetLastError();
            nb = 1;
        }
        private_shape(M.ntiles, w_fit, g->sms, nb, &w, &grid);
        if (set) {
            d->pw[bi] = w;
            d->pgrid[bi] = grid;
        }
    }
    k_fused_private<TYPE, B><<<grid, 32 * w, private_smem_bytes(M, B, w), g->st>>>(M, d->plut, x, y);
}

template <int B>
static void fused_p(wr_gpu *g, wr_dmat *d, const float *x, float *y)
{
    switch (d->M.type) {
#define FP(t) case t: private_launch<t, B>(g, d, x, y); break;
        FOR_TYPES(FP)
#undef FP
    }
}

template <int B> static void fused_g(wr_gpu *g, wr_dmat *d, const float *x, float *y) { fused_b<B, 0>(g, d, x, y); }
template <int B> static void fused_s(wr_gpu *g, wr_dmat *d, const float *x, float *y) { fused_b<B, 1>(g, d, x, y); }
template <int B> static void fused_r(wr_gpu *g, wr_dmat *d, const float *x, float *y) { fused_b<B, 2>(g, d, x, y); }

/* The warps a SM holds of a k_twin / k_palette instantiation (its
 * registers decide: cudaOccupancyMaxActiveBlocksPerMultiprocessor, asked
 * once per kernel, the first time gemv_launch runs it); GEMV_SM_WARPS when
 * the runtime cannot say. */
template <typename A, void (*K)(DevMat, A, const float *, float *, long long)>
static int gemv_sm_warps(void)
{
    static const int w = [] {
        int nb = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, K, 32 * TWIN_WARPS, 0) != cudaSuccess || nb < 1) {
            cudaGetLastError();
            return GEMV_SM_WARPS;
        }
        return nb * TWIN_WARPS;
    }();
    return w;
}

/* Launch k_twin or k_palette (K) on gemv_grid's grid, its column splits
 * sized so one wave fills the device (gemv_sm_warps). y needs no zeroing:
 * rows_store's split reduction stores every row. */
template <typename A, void (*K)(DevMat, A, const float *, float *, long long)>
static void gemv_launch(wr_gpu *g, wr_dmat *d, A arg, const float *x, float *y)
{
    dim3 grid;
    const long long span = gemv_grid(g->sms, d->M, grid, gemv_sm_warps<A, K>());
    K<<<grid, 32 * TWIN_WARPS, 0, g->st>>>(d->M, arg, x, y, span);
}

template <int B>
static void twin_b(wr_gpu *g, wr_dmat *d, const uint8_t *blocks, const float *x, float *y)
{
    switch (d->M.type) {
#define TQ(t) case t: gemv_launch<const uint8_t *, k_twin<t, B>>(g, d, blocks, x, y); break;
        FOR_TYPES(TQ)
#undef TQ
    }
}

/* Steps k_palette loads ahead at batch b (1 or 2; above, it loads a step at
 * its start): WPRUN_PALETTE_AHEAD=1 or 2 for both (wr_palette_ahead_env,
 * read once; wprun warns about other values); else 2 at
 * batch 1, 1 at batch 2, the faster of the two at each (H200, 4096 x 14336,
 * median us: batch 1 43.0 against 44.8 loading 1 ahead, with 123 registers
 * against 96; batch 2 54.3 against 54.8 loading 2 ahead). */
static int palette_ahead(int b)
{
    static const int env = wr_palette_ahead_env();
    return env > 0 ? env : b == 1 ? 2 : 1;
}

template <int B>
static void palette_b(wr_gpu *g, wr_dmat *d, const uint8_t *idx, const float *x, float *y)
{
    constexpr int PD2 = B <= 2 ? 2 : 1;   /* loading 2 steps ahead exists for batch 1 and 2 */
    const bool al = d->M.cols % 8 == 0, pd2 = B <= 2 && palette_ahead(B) == 2;
    if (al && pd2)
        gemv_launch<const uint8_t *, k_palette<B, true, PD2>>(g, d, idx, x, y);
    else if (pd2)
        gemv_launch<const uint8_t *, k_palette<B, false, PD2>>(g, d, idx, x, y);
    else if (al)
        gemv_launch<const uint8_t *, k_palette<B, true>>(g, d, idx, x, y);
    else
        gemv_launch<const uint8_t *, k_palette<B, false>>(g, d, idx, x, y);
}

/* Run kernel family F (fused_b, twin_b, palette_b) over a batch in chunks of 8, 4, 2, 1. */
#define CHUNKED(F, batch, x, y, ...)                                                               \
    for (int b0_ = 0; b0_ < (batch);) {                                                            \
        int n_ = (batch) - b0_;                                                                    \
        const float *x_ = (x) + (long long)b0_ * d->M.cols;                                        \
        float *y_ = (y) + (long long)b0_ * d->M.rows;                                              \
        if (n_ >= 8) { F<8>(g, d, __VA_ARGS__ x_, y_); b0_ += 8; }                                 \
        else if (n_ >= 4) { F<4>(g, d, __VA_ARGS__ x_, y_); b0_ += 4; }                            \
        else if (n_ >= 2) { F<2>(g, d, __VA_ARGS__ x_, y_); b0_ += 2; }                            \
        else { F<1>(g, d, __VA_ARGS__ x_, y_); b0_ += 1; }                                         \
    }

/* Decode tile rows [tr0, tr1) of a BF16 matrix to out on stream st with
 * k_restore_exp; blocks = 0: one block a unit (every SM), else at most that
 * many blocks (a grid-stride walk: the decode stays on fewer SMs). */
static void restore_exp_rows(cudaStream_t st, wr_dmat *d, uint16_t *out, unsigned long long tr0, unsigned long long tr1,
                             int blocks)
{
    const DevMat &M = d->M;
    unsigned long long units = (tr1 - tr0 + FUSED_WARPS - 1) / FUSED_WARPS * M.tcols;
    if (blocks > 0 && units > (unsigned long long)blocks)
        units = (unsigned long long)blocks;
    if (!units)
        return;
    if (M.palette_n)
        k_restore_exp<true><<<(unsigned)units, 32 * FUSED_WARPS, 0, st>>>(M, d->lut, out, tr0, tr1);
    else
        k_restore_exp<false><<<(unsigned)units, 32 * FUSED_WARPS, 0, st>>>(M, d->lut, out, tr0, tr1);
}

/* Restore the fixed-width data: lut = 0 the limit-decoding k_restore (the
 * reference method, every type), lut = 1 the table-decoding k_restore_exp
 * for BF16 (the "full" pipeline; ggml blocks always take k_restore). */
static void launch_restore(wr_gpu *g, wr_dmat *d, uint8_t *out, int lut = 1)
{
    const DevMat &M = d->M;
    if (!M.ntiles)
        return;
    if (lut && d->m->kind == WR_EXP && d->m->type == WP_BF16) {
        restore_exp_rows(g->st, d, (uint16_t *)out, 0, M.trows, 0);
        return;
    }
    k_restore<<<(unsigned)M.ntiles, 32, 0, g->st>>>(M, d->H, out, d->m->kind == WR_EXP);
}

/* The GEMM's input x in the matrix's type: BF16/F16 converted into d->xb
 * on g->st, F32 x itself. */
static const void *x_for_gemm(wr_gpu *g, wr_dmat *d, const float *x, int batch)
{
    if (d->m->type == WP_F32)
        return x;
    const long long n = (long long)batch * d->M.cols;
    k_to_16<<<(unsigned)((n + 255) / 256), 256, 0, g->st>>>(x, d->xb, n, d->m->type == WP_F16);
    return d->xb;
}

/* y rows [r0, r0 + nr) = W rows [r0, r0 + nr) times xg (x_for_gemm), with
 * cuBLAS on g->st: W and x in the matrix's type (BF16, F16 or F32), FP32
 * accumulate and output (no TF32: the default math mode). */
static int cublas_rows(wr_gpu *g, wr_dmat *d, const void *W, const void *xg, int batch, float *y, long long r0,
                       long long nr, char *err, size_t errlen)
{
    const float one = 1.0f, zero = 0.0f;
    const long long cols = d->M.cols;
    const cudaDataType_t t = d->m->type == WP_F32 ? CUDA_R_32F : d->m->type == WP_F16 ? CUDA_R_16F : CUDA_R_16BF;
    const size_t es = d->m->type == WP_F32 ? 4 : 2;
    cublasStatus_t s = cublasGemmEx(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)nr, batch, (int)cols, &one,
                                    (const uint8_t *)W + (size_t)(r0 * cols) * es, t, (int)cols, xg, t, (int)cols,
                                    &zero, y + r0, CUDA_R_32F, (int)d->M.rows, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "cublasGemmEx: status %d", (int)s);
        return -1;
    }
    return 0;
}

static int cublas_gemm(wr_gpu *g, wr_dmat *d, const void *W, const float *x, int batch, float *y, char *err,
                       size_t errlen)
{
    return cublas_rows(g, d, W, x_for_gemm(g, d, x, batch), batch, y, 0, d->M.rows, err, errlen);
}

/* Blocks of k_restore_exp<PAL> one SM holds at once (its registers and
 * shared memory decide: cudaOccupancyMaxActiveBlocksPerMultiprocessor,
 * asked once per kernel); 1 when the runtime cannot say. */
template <bool PAL>
static int restore_sm_blocks(void)
{
    static const int nb = [] {
        int n = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k_restore_exp<PAL>, 32 * FUSED_WARPS, 0) !=
                cudaSuccess ||
            n < 1) {
            cudaGetLastError();
            return 1;
        }
        return n;
    }();
    return nb;
}

/* The split pipelines (BF16): the SM split between decode and GEMM. The
 * matrix is decoded band by band (SPLIT_BANDS bands of tile rows) on the
 * side stream by a grid that fills S = sms / frac SMs (restore_sm_blocks
 * blocks a SM of its share, walking the band's units), while cuBLAS, its SM
 * count target set to the other SMs, multiplies each band once it is
 * decoded (an event a band): decode of band b + 1 overlaps the GEMM of band
 * b. The block scheduler places the blocks; nothing pins them to S SMs (see
 * kernels.cuh TODO). Why a full share: one block (4 warps) a SM left each
 * warp ~14 tiles of a 4096 x 14336 matrix in turn, latency-bound, and
 * split2/4/8 took about 3 ms at every batch against 0.57 ms for full (H200,
 * 2026-11-30; not yet timed with the full share). */
static int launch_split(wr_gpu *g, wr_dmat *d, int frac, const float *x, int batch, float *y, char *err, size_t errlen)
{
    const DevMat &M = d->M;
    const int sd = std::max(1, g->sms / frac);
    const int blocks = sd * (M.palette_n ? restore_sm_blocks<true>() : restore_sm_blocks<false>());
    const unsigned long long nb = std::min<unsigned long long>(SPLIT_BANDS, M.trows);
    const unsigned long long band = nb ? (M.trows + nb - 1) / nb : 1;
    const void *xg = x_for_gemm(g, d, x, batch);
    CK(cudaEventRecord(g->ev0, g->st));
    CK(cudaStreamWaitEvent(g->side, g->ev0, 0));
    if (cublasSetSmCountTarget(g->blas, std::max(1, g->sms - sd)) != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "cublasSetSmCountTarget failed");
        return -1;
    }
    int rc = 0;
    unsigned b = 0;
    for (unsigned long long tr0 = 0; tr0 < M.trows && rc == 0; tr0 += band, b++) {
        const unsigned long long tr1 = std::min(tr0 + band, M.trows);
        restore_exp_rows(g->side, d, (uint16_t *)d->dec, tr0, tr1, blocks);
        cudaError_t e = cudaEventRecord(g->ev[b], g->side);
        if (e == cudaSuccess)
            e = cudaStreamWaitEvent(g->st, g->ev[b], 0);
        if (e != cudaSuccess) {
            rc = cuda_fail(err, errlen, "split: band event", e);
            break;
        }
        const long long r0 = (long long)tr0 * 64, r1 = std::min((long long)tr1 * 64, M.rows);
        rc = cublas_rows(g, d, d->dec, xg, batch, y, r0, r1 - r0, err, errlen);
    }
    cublasSetSmCountTarget(g->blas, 0);
    return rc;
}

extern "C" int wr_gpu_has_pipe(const wr_dmat *d, int pipe)
{
    if (d->m->stored)   /* no lanes: the twin alone */
        return pipe == WR_PIPE_TWIN && d->fixed != NULL;
    switch (pipe) {
    case WR_PIPE_FUSED: case WR_PIPE_FULL: case WR_PIPE_STAGED: return 1;
    case WR_PIPE_RING: return d->m->kind == WR_Q;
    case WR_PIPE_PRIVATE: return d->m->kind == WR_Q && d->smem_ok;
    case WR_PIPE_RECON: case WR_PIPE_SPLIT2: case WR_PIPE_SPLIT4: case WR_PIPE_SPLIT8:
        return d->m->kind == WR_EXP && d->m->type == WP_BF16;
    case WR_PIPE_TWIN: return d->fixed != NULL;
    case WR_PIPE_TRANSCODE: case WR_PIPE_PALETTE: return d->idx != NULL;
    default: return 0;
    }
}

/* Enqueue one pipeline run on device buffers (no synchronisation): y (batch x the distinct
 * rows) = W x; for a matrix with a row map, then k_gather into d->y_all (batch x rows_all), so
 * every timing and the graph pass include it. */
static int launch(wr_gpu *g, wr_dmat *d, int pipe, const float *x, int batch, float *y, char *err, size_t errlen)
{
    const DevMat &M = d->M;
    const bool exp = d->m->kind == WR_EXP;
    if (!wr_gpu_has_pipe(d, pipe)) {
        /* the caller names the pipeline (wprun.c's pipe_name, the one list of names) */
        snprintf(err, errlen, "%s: the pipeline does not apply to this matrix", d->m->name);
        return -1;
    }
    if (pipe == WR_PIPE_FUSED || pipe == WR_PIPE_STAGED || pipe == WR_PIPE_RING || pipe == WR_PIPE_PRIVATE) {
        CK(cudaMemsetAsync(y, 0, sizeof(float) * (size_t)batch * (size_t)M.rows, g->st));
        if (pipe == WR_PIPE_FUSED) {
            CHUNKED(fused_g, batch, x, y, )
        } else if (pipe == WR_PIPE_STAGED) {
            CHUNKED(fused_s, batch, x, y, )
        } else if (pipe == WR_PIPE_PRIVATE) {
            CHUNKED(fused_p, batch, x, y, )
        } else {
            CHUNKED(fused_r, batch, x, y, )
        }
    } else if (pipe == WR_PIPE_SPLIT2 || pipe == WR_PIPE_SPLIT4 || pipe == WR_PIPE_SPLIT8) {
        if (launch_split(g, d, pipe == WR_PIPE_SPLIT2 ? 2 : pipe == WR_PIPE_SPLIT4 ? 4 : 8, x, batch, y, err, errlen))
            return -1;
    } else if (pipe == WR_PIPE_RECON) {
        CK(cudaMemsetAsync(y, 0, sizeof(float) * (size_t)batch * (size_t)M.rows, g->st));
        dim3 grid((unsigned)M.tcols, (unsigned)((M.trows + FUSED_WARPS - 1) / FUSED_WARPS));
        for (int b0 = 0; b0 < batch; b0 += RECON_N) {
            const int nv = std::min(RECON_N, batch - b0);
            const float *xb = x + (long long)b0 * M.cols;
            float *yb = y + (long long)b0 * M.rows;
            if (M.palette_n)
                k_recon<true><<<grid, 32 * FUSED_WARPS, 0, g->st>>>(M, d->lut, xb, nv, yb);
            else
                k_recon<false><<<grid, 32 * FUSED_WARPS, 0, g->st>>>(M, d->lut, xb, nv, yb);
        }
    } else if (pipe == WR_PIPE_TRANSCODE || pipe == WR_PIPE_PALETTE) {
        const uint8_t *ix = d->idx;
        if (pipe == WR_PIPE_TRANSCODE) {
            dim3 grid((unsigned)M.tcols, (unsigned)((M.trows + FUSED_WARPS - 1) / FUSED_WARPS));
            k_transcode<<<grid, 32 * FUSED_WARPS, 0, g->st>>>(M, d->lut, d->idx_tc);
            ix = d->idx_tc;
        }
        CHUNKED(palette_b, batch, x, y, ix, )
    } else {
        const uint8_t *data = d->fixed;
        if (pipe == WR_PIPE_FULL) {
            launch_restore(g, d, d->dec);
            data = d->dec;
        }
        if (exp) {
            if (cublas_gemm(g, d, data, x, batch, y, err, errlen))
                return -1;
        } else {
            CHUNKED(twin_b, batch, x, y, data, )
        }
    }
    if (d->map) {   /* y_all[b][r] = y[b][map[r]] (rowmap.h) */
        const long long n = (long long)batch * d->m->rows_all;
        k_gather<<<(unsigned)std::min<long long>((n + 255) / 256, 65535), 256, 0, g->st>>>(y, d->map, M.rows,
                                                                                         d->m->rows_all, batch, d->y_all);
    }
    CK(cudaGetLastError());
    return 0;
}

static int check_err_flag(wr_dmat *d, char *err, size_t errlen)
{
    int flag = 0;
    CK(cudaMemcpy(&flag, d->err, 4, cudaMemcpyDeviceToHost));
    if (flag) {
        snprintf(err, errlen, "%s: corrupt lanes (device decoder)", d->m->name);
        return -1;
    }
    return 0;
}

extern "C" int wr_gpu_restore(wr_gpu *g, wr_dmat *d, int lut, uint8_t *out, char *err, size_t errlen)
{
    if (d->m->stored) {
        snprintf(err, errlen, "%s: stored fixed-width: no lanes to decode", d->m->name);
        return -1;
    }
    CK(cudaMemset(d->err, 0, 4));
    CK(cudaMemset(d->dec, 0, wr_fixed_bytes(d->m)));
    launch_restore(g, d, d->dec, lut);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(g->st));
    CK(cudaMemcpy(out, d->dec, wr_fixed_bytes(d->m), cudaMemcpyDeviceToHost));
    return check_err_flag(d, err, errlen);
}

extern "C" int wr_gpu_gemv(wr_gpu *g, wr_dmat *d, int pipe, const float *x, int batch, float *y, char *err,
                           size_t errlen)
{
    if (ensure_io(d, batch, err, errlen))
        return -1;
    size_t nx = (size_t)batch * (size_t)d->M.cols, ny = (size_t)batch * (size_t)d->M.rows;
    CK(cudaMemset(d->err, 0, 4));
    CK(cudaMemcpy(d->x[0], x, nx * 4, cudaMemcpyHostToDevice));
    if (launch(g, d, pipe, d->x[0], batch, d->y, err, errlen))
        return -1;
    CK(cudaStreamSynchronize(g->st));
    if (d->map)   /* every row's outputs, gathered on the device */
        CK(cudaMemcpy(y, d->y_all, (size_t)batch * (size_t)d->m->rows_all * 4, cudaMemcpyDeviceToHost));
    else
        CK(cudaMemcpy(y, d->y, ny * 4, cudaMemcpyDeviceToHost));
    /* ensure_io's rotated input 0 is restored for timing */
    std::vector<float> hx(nx);
    wr_make_x(hx.data(), nx, 100, d->m->kind == WR_EXP);
    CK(cudaMemcpy(d->x[0], hx.data(), nx * 4, cudaMemcpyHostToDevice));
    return check_err_flag(d, err, errlen);
}

static double median(std::vector<double> &v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

extern "C" int wr_gpu_time(wr_gpu *g, wr_dmat *d, int pipe, int batch, int warmup, int runs, double *median_us,
                           char *err, size_t errlen)
{
    if (ensure_io(d, batch, err, errlen))
        return -1;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<double> t;
    for (int r = 0; r < warmup + runs; r++) {
        CK(cudaMemsetAsync(g->flush, r & 255, g->flush_bytes, g->st));   /* evict L2 (not timed) */
        CK(cudaEventRecord(e0, g->st));
        if (launch(g, d, pipe, d->x[r % 4], batch, d->y, err, errlen))
            return -1;
        CK(cudaEventRecord(e1, g->st));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= warmup)
            t.push_back(1e3 * ms);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    *median_us = median(t);
    return 0;
}

extern "C" int wr_gpu_graph_pipe(const wr_dmat *d, int pipe)
{
    if (d->m->stored)   /* the twin, a kernel for a block type; cuBLAS for a float matrix */
        return d->m->kind == WR_Q ? WR_PIPE_TWIN : -1;
    const bool blas = pipe == WR_PIPE_SPLIT2 || pipe == WR_PIPE_SPLIT4 || pipe == WR_PIPE_SPLIT8 ||
                      (pipe == WR_PIPE_FULL && d->m->kind == WR_EXP);
    return !wr_gpu_has_pipe(d, pipe) || blas || pipe == WR_PIPE_TWIN ? WR_PIPE_FUSED : pipe;
}

extern "C" int wr_gpu_graph_pass(wr_gpu *g, wr_dmat **d, const int *pipe, int n, int runs, double *graph_us,
                                 double *stream_us, char *err, size_t errlen)
{
    std::vector<int> p((size_t)n);
    std::vector<wr_dmat *> dk;   /* the matrices the pass runs (a stored float matrix's twin is cuBLAS: left out) */
    for (int i = 0; i < n; i++) {
        const int pi = wr_gpu_graph_pipe(d[i], pipe ? pipe[i] : WR_PIPE_FUSED);
        if (pi < 0)
            continue;
        p[dk.size()] = pi;
        dk.push_back(d[i]);
        if (ensure_io(d[i], 1, err, errlen))
            return -1;
    }
    d = dk.data();
    n = (int)dk.size();
    /* one pass outside the capture: the launches' one-time set-up (occupancy queries,
       shared-memory attributes) and any launch error happen here */
    for (int i = 0; i < n; i++)
        if (launch(g, d[i], p[(size_t)i], d[i]->x[0], 1, d[i]->y, err, errlen))
            return -1;
    CK(cudaStreamSynchronize(g->st));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(g->st, cudaStreamCaptureModeRelaxed));
    for (int i = 0; i < n; i++)
        if (launch(g, d[i], p[(size_t)i], d[i]->x[0], 1, d[i]->y, err, errlen)) {
            cudaStreamEndCapture(g->st, &graph);
            return -1;
        }
    CK(cudaStreamEndCapture(g->st, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<double> tg, ts;
    for (int r = 0; r < 3 + runs; r++) {
        float ms = 0;
        CK(cudaMemsetAsync(g->flush, r & 255, g->flush_bytes, g->st));
        CK(cudaEventRecord(e0, g->st));
        CK(cudaGraphLaunch(exec, g->st));
        CK(cudaEventRecord(e1, g->st));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= 3)
            tg.push_back(1e3 * ms);
        CK(cudaMemsetAsync(g->flush, r & 255, g->flush_bytes, g->st));
        CK(cudaEventRecord(e0, g->st));
        for (int i = 0; i < n; i++)
            if (launch(g, d[i], p[(size_t)i], d[i]->x[0], 1, d[i]->y, err, errlen))
                return -1;
        CK(cudaEventRecord(e1, g->st));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= 3)
            ts.push_back(1e3 * ms);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    *graph_us = median(tg);
    *stream_us = median(ts);
    return 0;
}
