/*
 * test_emu.cpp - every CUDA kernel of runtime/kernels.cuh run from its own
 * source on the host (tests/runtime/simt.h: one std::thread per CUDA
 * thread, barriers per block and per warp), launched as runtime/gpu.cu
 * launches it (the same grids, block sizes, dynamic shared memory and
 * arguments; the DevMat filled as wr_gpu_upload fills it, with host
 * buffers), and checked against the CPU reference (runtime/cpu.c) on
 * synthetic matrices (wr_model_synth) with partial tiles:
 *
 *   - k_restore (limit decode), every coded type and BF16/F16/F32: the
 *     bytes = wr_restore_bytes bit for bit, error flag 0;
 *   - k_restore_exp<PAL> (BF16, palette pairs and exponent bytes, the latter
 *     made by splitting the restored bytes again with palette 0): the
 *     bytes = wr_restore_bytes, also with a grid of 1 and 3 blocks (the
 *     split pipelines' grid-stride walk) and on a band of tile rows (rows
 *     outside it untouched);
 *   - k_fused_q<TYPE,B,ST>, every coded type, B 1/2/4/8, global and staged
 *     lanes; k_fused_exp<B,PAL,ST> for BF16 (palette pairs with verbatim
 *     groups, exponent bytes), F16 and F32: y (zeroed first) within 1e-5
 *     (normwise relative) of the float64 GEMV of the restored bytes
 *     (wr_ref_gemv64) and of wr_cpu_gemv_fused;
 *   - k_transcode: the index array = wr_cpu_transcode's bit for bit;
 *   - k_palette<B,AL> (indices transcoded at load and by k_transcode) and
 *     k_twin<TYPE,B> on gemv_grid's grid for 1 and 132 SMs (one column
 *     split and several; batch 1 on both, 2 on 132, 4 and 8 on 1, as every
 *     warp shuffle costs the emulator a barrier): within 1e-5 of
 *     wr_ref_gemv64 and of wr_cpu_gemv_palette / wr_cpu_gemv_fixed; a
 *     BF16 matrix split again with groups of 96 puts verbatim groups
 *     across k_palette's column splits (pal_fix's clamp to the split);
 *   - k_recon<PAL> (BF16), batches 1, 17, 32 and 40 (32 + 8: RECON_N
 *     vectors a launch): within 1e-5 of wr_ref_gemv64 and wr_cpu_gemv_fused;
 *   - k_to_16: BF16 and F16 of x = wp_f32_to_bf16 / wp_f32_to_fp16;
 *   - k_gather (a row map's gather), batches 1 and 3, on a full grid and on
 *     2 blocks: = wr_cpu_gather bit for bit;
 *   - a corrupt lane count and an offset past the lane words set the error
 *     flag in every lane-decoding kernel (k_restore, k_fused_q and
 *     k_fused_exp global and staged, k_restore_exp, k_transcode, k_recon),
 *     and so does (BF16) a palette index without a palette entry; with the
 *     offset past the words, none of them reads a lane word of the corrupt
 *     tiles (simt::probe_hook on every global lane-word read);
 *   - memory traffic (simt.h's WR_PROBE counts) of k_fused_q<Q4_K, 1, ST>
 *     for fused, staged and ring: printed a tile's worth; each lane word
 *     read from global memory once, the same table lookups in the three,
 *     staged and ring lane-word reads one wavefront each, group starts read
 *     only for words past the tile's full groups, side bytes in the aligned
 *     16-byte loads that cover a row's (Q4_K 1, Q6_K 2);
 *   - every launch: no barrier or warp collective reached at different lines
 *     within a block or warp, none with an exited lane, no misaligned vector
 *     load, no write past the dynamic shared memory (simt.h's checks).
 */
#include "simt.h"

#include "kernels.cuh"
#include "codes.h"
#include "rowmap.h"

#include <chrono>
#include <string>
#include <unistd.h>

#include "tap.h"

static const uint32_t qtypes[] = {WP_Q4_0, WP_Q4_1, WP_Q5_0, WP_Q5_1, WP_Q8_0, WP_IQ4_NL,
                                  WP_Q2_K, WP_Q3_K, WP_Q4_K, WP_Q5_K, WP_Q6_K, WP_IQ4_XS};
static const int batches[] = {1, 2, 4, 8};

/* ---- device buffers: host memory, aligned as cudaMalloc's --------------------------------- */

static std::vector<void *> allocs;

static void *dmalloc(size_t bytes)
{
    /* the size asked for (not cudaMalloc's granularity): a sanitizer build sees a read past it */
    const size_t n = bytes ? bytes : 4;
    void *p = NULL;
    if (posix_memalign(&p, 256, n)) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    memset(p, 0xcd, n);   /* uninitialised device memory */
    allocs.push_back(p);
    return p;
}

template <typename T>
static T *dnew(size_t n)
{
    return (T *)dmalloc(n * sizeof(T));
}

static void dfree_all()
{
    for (void *p : allocs)
        free(p);
    allocs.clear();
}

/* ---- the emulator's checks, summed over the launches of one check ------------------------- */

static long e_div, e_part, e_mis, e_smem, e_unw, e_launch;

static void emu_reset() { e_div = e_part = e_mis = e_smem = e_unw = e_launch = 0; }

template <typename F>
static void go(dim3 grid, dim3 block, size_t sm, F &&f)
{
    simt::run_kernel(grid, block, sm, f);
    e_div += simt::stats.divergent;
    e_part += simt::stats.partial;
    e_mis += simt::stats.misaligned;
    e_smem += simt::stats.smem_overrun;
    e_unw += simt::stats.unwaited;
    e_launch++;
}

static bool emu_ok() { return e_launch > 0 && !e_div && !e_part && !e_mis && !e_smem && !e_unw; }

static std::string emu_why()
{
    char b[240];
    if (emu_ok())
        return "";
    snprintf(b, sizeof b, " [emulator: %ld launches, %ld divergent, %ld partial-warp, %ld misaligned, %ld smem overrun, %ld copies not waited for]",
             e_launch, e_div, e_part, e_mis, e_smem, e_unw);
    return b;
}

/* ---- wr_gpu_upload, with host buffers -------------------------------------------------------- */

static int g_sms = 132;                  /* the SM count gemv_grid sees */
static const int g_sms_max = 132;        /* ... at most (the splits' sums buffer is sized for it) */
static int g_sm_warps = GEMV_SM_WARPS;   /* the warps a SM gemv_grid aims for (gpu.cu: the kernel's occupancy) */
static int g_pal_ahead = 1;              /* steps k_palette loads ahead at batch 1, 2 (WPRUN_PALETTE_AHEAD) */

struct Dev {
    const wr_matrix *m;
    DevMat M;
    wr_huf H;
    uint32_t *lut;   /* 2^L decode table */
    uint32_t *plut;  /* WR_Q: its pair table (plut_host), pipeline "private" */
    uint8_t *idx;    /* palette pipeline: indices transcoded at load */
    int *err;
};

static void *dcopy(size_t bytes, const void *src)
{
    void *p = dmalloc(bytes);
    if (src && bytes)
        memcpy(p, src, bytes);
    return p;
}

/* As wr_gpu_upload (gpu.cu; devmat_fill of kernels.cuh for the geometry): -1 where it fails. fixed: wr_restore_bytes's output or NULL. */
static int upload(Dev &d, const wr_matrix *m, const uint8_t *fixed, char *err, size_t errlen)
{
    memset(&d, 0, sizeof d);
    d.m = m;
    d.H = m->huf;
    DevMat &M = d.M;
    const wp_coded_view &v = m->v;
    M.words = (const uint32_t *)dcopy(4 * v.n_words, v.words);
    M.offsets = (const uint32_t *)dcopy(4 * (v.n_tiles + 1), v.offsets);
    M.lane_words = (const uint8_t *)dcopy(32 * v.n_tiles, v.lane_words);
    {   /* padded to 16 (side_alloc_bytes), zeros past the payload */
        uint8_t *sd = (uint8_t *)dmalloc(side_alloc_bytes(m->aux.payload_len));
        memset(sd, 0, side_alloc_bytes(m->aux.payload_len));
        if (m->aux.payload_len)
            memcpy(sd, m->aux.payload, m->aux.payload_len);
        M.side = sd;
    }
    d.err = M.err = (int *)dmalloc(4);
    if (devmat_fill(M, m, err, errlen))
        return -1;
    M.part = (float *)dmalloc(4 * (size_t)gemv_max_splits(g_sms_max, M) * 8 * (size_t)M.rows);
    M.cnt = (unsigned *)dcopy(4 * (size_t)gemv_counters(M), std::vector<unsigned>(gemv_counters(M), 0).data());
    {
        std::vector<uint32_t> lut((size_t)1 << M.L);
        if (wr_lut_build(m, lut.data())) {
            snprintf(err, errlen, "%s: cannot build the decode table", m->name);
            return -1;
        }
        if (m->kind == WR_Q) {
            const std::vector<uint32_t> pairs = plut_host(lut.data(), M.L);
            d.plut = (uint32_t *)dcopy(4 * pairs.size(), pairs.data());
        }
        wr_lut_values(m, lut.data());   /* as gpu.cu uploads it */
        d.lut = (uint32_t *)dcopy(4 * lut.size(), lut.data());
    }
    if (m->kind == WR_EXP) {
        const struct wp_bf16_split &s = m->s;
        M.raw = (const uint8_t *)dcopy(s.raw_bytes, s.raw);
        M.vrow = (const unsigned long long *)dcopy(8 * (size_t)(m->rows + 1), m->vrow);
        if (fixed && wr_palette_ok(m)) {
            M.istride = wr_palette_stride(m);
            M.vstride = wr_palette_fix_stride(m);
            PaletteHost h;
            if (palette_host(m, fixed, h, err, errlen))
                return -1;
            d.idx = (uint8_t *)dcopy(h.ix.size(), h.ix.data());
            M.vcnt = (const uint32_t *)dcopy(4 * (size_t)(m->rows + 1), m->vcnt);
            M.vcol = (const uint32_t *)dcopy(4 * h.vcol.size(), h.vcol.data());
            M.vdelta = (const float *)dcopy(4 * h.delta.size(), h.delta.data());
        }
    }
    return 0;
}

/* ---- the launches of gpu.cu ------------------------------------------------------------------ */

#define FOR_TYPES(X)                                                                               \
    X(WP_Q4_0) X(WP_Q4_1) X(WP_Q5_0) X(WP_Q5_1) X(WP_Q8_0) X(WP_IQ4_NL) X(WP_Q2_K) X(WP_Q3_K)      \
    X(WP_Q4_K) X(WP_Q5_K) X(WP_Q6_K) X(WP_IQ4_XS)


template <int B, int ST>
static void fused_b(Dev &d, const float *x, float *y)
{
    const DevMat &M = d.M;
    dim3 grid((unsigned)M.tcols, (unsigned)((M.trows + FUSED_WARPS - 1) / FUSED_WARPS)), block(32 * FUSED_WARPS);
    const size_t sm = fused_smem_bytes(M, ST);
    const uint32_t *lut = d.lut;
    if (d.m->kind == WR_EXP) {
        if (M.palette_n)
            go(grid, block, sm, [&] { k_fused_exp<B, true, ST == 1>(M, lut, x, y); });
        else
            go(grid, block, sm, [&] { k_fused_exp<B, false, ST == 1>(M, lut, x, y); });
        return;
    }
    switch (M.type) {
#define FQ(t)                                                                                      \
    case t:                                                                                        \
        go(grid, block, sm, [&] { k_fused_q<t, B, ST>(M, lut, x, y); });                           \
        break;
        FOR_TYPES(FQ)
#undef FQ
    }
}
/* Pipeline "private" as gpu.cu's private_launch runs it (private_block_warps,
   private_shape), on a device with the H200's 227 KiB a block but g_priv_sms SMs of one
   block each (1 unless a test says otherwise) and, where g_priv_wcap is set, no more
   warps a block than that: so a matrix of more tiles than a block's warps loops its
   warps over tiles (the persistent loop), as on the device once a matrix has more tiles
   than its SMs' blocks hold. */
static const size_t H200_SMEM_OPTIN = 232448;
static int g_priv_sms = 1, g_priv_wcap = 0;

template <int B>
static void fused_p(Dev &d, const float *x, float *y)
{
    const DevMat &M = d.M;
    int w_fit = private_block_warps(M, B, H200_SMEM_OPTIN, 64), w = 0;
    if (g_priv_wcap && w_fit > g_priv_wcap)
        w_fit = g_priv_wcap;
    unsigned grid = 0;
    private_shape(M.ntiles, w_fit, g_priv_sms, 1, &w, &grid);
    const size_t sm = private_smem_bytes(M, B, w);
    const uint32_t *plut = d.plut;
    switch (M.type) {
#define FP(t)                                                                                      \
    case t:                                                                                        \
        go(dim3(grid), dim3(32 * (unsigned)w), sm, [&] { k_fused_private<t, B>(M, plut, x, y); }); \
        break;
        FOR_TYPES(FP)
#undef FP
    }
}
template <int B> static void fused_g(Dev &d, const float *x, float *y) { fused_b<B, 0>(d, x, y); }
template <int B> static void fused_s(Dev &d, const float *x, float *y) { fused_b<B, 1>(d, x, y); }
template <int B> static void fused_r(Dev &d, const float *x, float *y) { fused_b<B, 2>(d, x, y); }


template <int B>
static void twin_b(Dev &d, const uint8_t *blocks, const float *x, float *y)
{
    const DevMat &M = d.M;
    dim3 grid, block(32 * TWIN_WARPS);
    const long long span = gemv_grid(g_sms, M, grid, g_sm_warps);
    switch (M.type) {
#define TQ(t) case t: go(grid, block, 0, [&] { k_twin<t, B>(M, blocks, x, y, span); }); break;
        FOR_TYPES(TQ)
#undef TQ
    }
}

template <int B>
static void palette_b(Dev &d, const uint8_t *idx, const float *x, float *y)
{
    const DevMat &M = d.M;
    dim3 grid, block(32 * TWIN_WARPS);
    const long long span = gemv_grid(g_sms, M, grid, g_sm_warps);
    if (B <= 2 && g_pal_ahead == 2) {
        if (M.cols % 8 == 0)
            go(grid, block, 0, [&] { k_palette<B, true, B <= 2 ? 2 : 1>(M, idx, x, y, span); });
        else
            go(grid, block, 0, [&] { k_palette<B, false, B <= 2 ? 2 : 1>(M, idx, x, y, span); });
    } else if (M.cols % 8 == 0) {
        go(grid, block, 0, [&] { k_palette<B, true>(M, idx, x, y, span); });
    } else {
        go(grid, block, 0, [&] { k_palette<B, false>(M, idx, x, y, span); });
    }
}

#define CHUNKED(F, batch, x, y, ...)                                                               \
    for (int b0_ = 0; b0_ < (batch);) {                                                            \
        int n_ = (batch) - b0_;                                                                    \
        const float *x_ = (x) + (long long)b0_ * d.M.cols;                                         \
        float *y_ = (y) + (long long)b0_ * d.M.rows;                                               \
        if (n_ >= 8) { F<8>(d, __VA_ARGS__ x_, y_); b0_ += 8; }                                    \
        else if (n_ >= 4) { F<4>(d, __VA_ARGS__ x_, y_); b0_ += 4; }                               \
        else if (n_ >= 2) { F<2>(d, __VA_ARGS__ x_, y_); b0_ += 2; }                               \
        else { F<1>(d, __VA_ARGS__ x_, y_); b0_ += 1; }                                            \
    }

static void restore_exp_rows(Dev &d, uint16_t *out, unsigned long long tr0, unsigned long long tr1, int blocks)
{
    const DevMat &M = d.M;
    unsigned long long units = (tr1 - tr0 + FUSED_WARPS - 1) / FUSED_WARPS * M.tcols;
    if (blocks > 0 && units > (unsigned long long)blocks)
        units = (unsigned long long)blocks;
    if (!units)
        return;
    const uint32_t *lut = d.lut;
    if (M.palette_n)
        go(dim3((unsigned)units), dim3(32 * FUSED_WARPS), 0, [&] { k_restore_exp<true>(M, lut, out, tr0, tr1); });
    else
        go(dim3((unsigned)units), dim3(32 * FUSED_WARPS), 0, [&] { k_restore_exp<false>(M, lut, out, tr0, tr1); });
}

static void launch_restore(Dev &d, uint8_t *out, int lut)
{
    const DevMat &M = d.M;
    if (!M.ntiles)
        return;
    if (lut && d.m->kind == WR_EXP && d.m->type == WP_BF16) {
        restore_exp_rows(d, (uint16_t *)out, 0, M.trows, 0);
        return;
    }
    const int is_exp = d.m->kind == WR_EXP;
    go(dim3((unsigned)M.ntiles), dim3(32), 0, [&] { k_restore(M, d.H, out, is_exp); });
}

/* launch() of gpu.cu for the kernels' pipelines (y and the error flag zeroed first, as
   wr_gpu_gemv does; y of the palette and twin pipelines is NaN first, so a row never
   stored shows) */
enum { P_FUSED, P_STAGED, P_TWIN, P_PALETTE, P_TRANSCODE, P_RECON, P_RING, P_PRIVATE };

static void run_pipe(Dev &d, int pipe, const float *x, int batch, float *y, const uint8_t *fixed, uint8_t *idx_tc)
{
    const DevMat &M = d.M;
    *d.err = 0;
    const size_t ny = (size_t)batch * (size_t)M.rows;
    for (size_t i = 0; i < ny; i++)
        y[i] = NAN;
    if (pipe == P_FUSED || pipe == P_STAGED || pipe == P_RING || pipe == P_PRIVATE) {
        memset(y, 0, sizeof(float) * ny);
        if (pipe == P_FUSED) {
            CHUNKED(fused_g, batch, x, y, )
        } else if (pipe == P_STAGED) {
            CHUNKED(fused_s, batch, x, y, )
        } else if (pipe == P_PRIVATE) {
            CHUNKED(fused_p, batch, x, y, )
        } else {
            CHUNKED(fused_r, batch, x, y, )
        }
    } else if (pipe == P_RECON) {
        memset(y, 0, sizeof(float) * ny);
        dim3 grid((unsigned)M.tcols, (unsigned)((M.trows + FUSED_WARPS - 1) / FUSED_WARPS));
        const uint32_t *lut = d.lut;
        for (int b0 = 0; b0 < batch; b0 += RECON_N) {
            const int nv = std::min(RECON_N, batch - b0);
            const float *xb = x + (long long)b0 * M.cols;
            float *yb = y + (long long)b0 * M.rows;
            if (M.palette_n)
                go(grid, dim3(32 * FUSED_WARPS), 0, [&] { k_recon<true>(M, lut, xb, nv, yb); });
            else
                go(grid, dim3(32 * FUSED_WARPS), 0, [&] { k_recon<false>(M, lut, xb, nv, yb); });
        }
    } else if (pipe == P_TRANSCODE || pipe == P_PALETTE) {
        const uint8_t *ix = d.idx;
        if (pipe == P_TRANSCODE) {
            dim3 grid((unsigned)M.tcols, (unsigned)((M.trows + FUSED_WARPS - 1) / FUSED_WARPS));
            const uint32_t *lut = d.lut;
            go(grid, dim3(32 * FUSED_WARPS), 0, [&] { k_transcode(M, lut, idx_tc); });
            ix = idx_tc;
        }
        CHUNKED(palette_b, batch, x, y, ix, )
    } else {
        CHUNKED(twin_b, batch, x, y, fixed, )
    }
}

/* ---- checks ---------------------------------------------------------------------------------- */

static uint64_t rs = 88172645463325252ull;
static uint32_t rnd(void) { return (uint32_t)(tap_xorshift(&rs) >> 32); }

/* Inputs and references of one batch: x (aligned), the float64 GEMV, the CPU fused GEMV. */
struct Ref {
    int batch;
    float *x;
    std::vector<double> y64, yf;
};

static Ref make_ref(const wr_matrix *m, const uint8_t *fixed, int batch, uint64_t seed)
{
    Ref r;
    char err[512];
    r.batch = batch;
    const size_t nx = (size_t)batch * (size_t)m->cols, ny = (size_t)batch * (size_t)m->rows;
    r.x = dnew<float>(nx);
    wr_make_x(r.x, nx, seed, m->kind == WR_EXP);
    r.y64.resize(ny);
    wr_ref_gemv64(m, fixed, r.x, batch, r.y64.data(), NULL);
    std::vector<float> yf(ny);
    if (wr_cpu_gemv_fused(m, r.x, batch, yf.data(), err, sizeof err))
        fprintf(stderr, "# wr_cpu_gemv_fused: %s\n", err);
    r.yf.assign(yf.begin(), yf.end());
    return r;
}

/* y against both references; the worse error in *e */
static bool close_to(const float *y, const Ref &r, const std::vector<double> *other, double *e)
{
    const size_t n = r.y64.size();
    double e1 = wr_relerr(y, r.y64.data(), n), e2 = wr_relerr(y, (other ? *other : r.yf).data(), n);
    *e = std::max(e1, e2);
    return e1 < 1e-5 && e2 < 1e-5;
}

static std::string pipe_name(const wr_matrix *m, int p)
{
    char b[80];
    const char *pal = m->kind == WR_EXP && m->s.palette_n ? "true" : "false";
    switch (p) {
    case P_FUSED: case P_STAGED: case P_RING:
        if (m->kind == WR_Q)
            snprintf(b, sizeof b, "k_fused_q<%s, B, %d>", wp_ggml_type_name(m->type), p == P_STAGED ? 1 : p == P_RING ? 2 : 0);
        else
            snprintf(b, sizeof b, "k_fused_exp<B, %s, %s>", pal, p == P_STAGED ? "true" : "false");
        return b;
    case P_PRIVATE: snprintf(b, sizeof b, "k_fused_private<%s, B>", wp_ggml_type_name(m->type)); return b;
    case P_TWIN: snprintf(b, sizeof b, "k_twin<%s, B>", wp_ggml_type_name(m->type)); return b;
    case P_PALETTE: snprintf(b, sizeof b, "k_palette<B, %s>", m->cols % 8 ? "false" : "true"); return b;
    case P_TRANSCODE: snprintf(b, sizeof b, "k_transcode, k_palette<B, %s>", m->cols % 8 ? "false" : "true"); return b;
    default: snprintf(b, sizeof b, "k_recon<%s>", pal); return b;
    }
}

/* k_restore (limits) for any matrix; lut: also the table decode (k_restore_exp, BF16). */
static void check_restore(Dev &d, const uint8_t *ref, size_t len)
{
    const wr_matrix *m = d.m;
    uint8_t *out = dnew<uint8_t>(len);
    for (int lut = 0; lut < 2; lut++) {
        if (lut && !(m->kind == WR_EXP && m->type == WP_BF16))
            continue;
        emu_reset();
        memset(out, 0, len);
        *d.err = 0;
        launch_restore(d, out, lut);
        CHECK(memcmp(out, ref, len) == 0 && *d.err == 0 && emu_ok(), "%s: %s restores the exact bytes, flag %d%s",
              m->name, lut ? (m->s.palette_n ? "k_restore_exp<true>" : "k_restore_exp<false>") : "k_restore",
              *d.err, emu_why().c_str());
    }
}

/* k_restore_exp on fewer blocks than units, and on a band of tile rows */
static void check_restore_split(Dev &d, const uint8_t *ref, size_t len)
{
    const wr_matrix *m = d.m;
    const DevMat &M = d.M;
    uint8_t *out = dnew<uint8_t>(len);
    const unsigned long long tr = M.trows;
    struct { unsigned long long tr0, tr1; int blocks; } cases[] = {
        {0, tr, 1}, {0, tr, 3}, {tr / 3, tr - tr / 3 > tr / 3 ? tr - tr / 3 : tr / 3 + 1, 0},
        {tr / 3, tr - tr / 3 > tr / 3 ? tr - tr / 3 : tr / 3 + 1, 1}, {tr - 1, tr, 2}};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const auto &c = cases[ci];
        bool seen = false;
        for (size_t cj = 0; cj < ci; cj++)
            seen |= cases[cj].tr0 == c.tr0 && cases[cj].tr1 == c.tr1 && cases[cj].blocks == c.blocks;
        if (seen)
            continue;
        emu_reset();
        memset(out, 0xee, len);
        *d.err = 0;
        restore_exp_rows(d, (uint16_t *)out, c.tr0, c.tr1, c.blocks);
        const size_t rb = 2 * (size_t)m->cols;
        const size_t a = (size_t)std::min<long long>((long long)c.tr0 * 64, m->rows) * rb,
                     b = (size_t)std::min<long long>((long long)c.tr1 * 64, m->rows) * rb;
        bool in = memcmp(out + a, ref + a, b - a) == 0, outside = true;
        for (size_t i = 0; i < len; i++)
            if ((i < a || i >= b) && out[i] != 0xee)
                outside = false;
        CHECK(in && outside && *d.err == 0 && emu_ok(),
              "%s: k_restore_exp tile rows [%llu, %llu) of %llu, %s: band exact, rest untouched, flag %d%s", m->name,
              c.tr0, c.tr1, tr, c.blocks ? (c.blocks == 1 ? "1 block" : c.blocks == 2 ? "2 blocks" : "3 blocks")
                                         : "a block a unit",
              *d.err, emu_why().c_str());
    }
}

static void check_gemv(Dev &d, int pipe, const Ref &r, const uint8_t *fixed, uint8_t *idx_tc,
                       const std::vector<double> *other, const char *what)
{
    const wr_matrix *m = d.m;
    float *y = dnew<float>((size_t)r.batch * (size_t)m->rows);
    emu_reset();
    run_pipe(d, pipe, r.x, r.batch, y, fixed, idx_tc);
    double e;
    bool ok = close_to(y, r, other, &e);
    CHECK(ok && *d.err == 0 && emu_ok(), "%s: %s batch %d%s: relative error %.2e (< 1e-5), flag %d%s", m->name,
          pipe_name(m, pipe).c_str(), r.batch, what, e, *d.err, emu_why().c_str());
    if (pipe == P_TWIN || pipe == P_PALETTE || pipe == P_TRANSCODE) {
        /* rows_store's split reduction leaves its counters at 0 for the next launch */
        long long left = 0;
        for (long long i = 0; i < gemv_counters(d.M); i++)
            left += d.M.cnt[i] != 0;
        CHECK(left == 0, "%s: %s batch %d%s: the split counters are back to 0 (%lld are not)", m->name,
              pipe_name(m, pipe).c_str(), r.batch, what, left);
    }
}

/* Pipeline "private": within 1e-5 of the references (check_gemv), and fused's sums:
   bit for bit on a matrix of one tile column (the same symbols decoded through the other
   table layout, x's sub-block sums added in the same order, one add a row into y), else
   within 1e-6 (a row's tile columns reach y in another order: the emulator runs fused's
   columns as blocks one after another, private's as warps of one block at once). */
static void check_private(Dev &d, const Ref &r, const char *what = "")
{
    const wr_matrix *m = d.m;
    check_gemv(d, P_PRIVATE, r, NULL, NULL, NULL, what);
    const size_t ny = (size_t)r.batch * (size_t)m->rows;
    float *y0 = dnew<float>(ny), *y1 = dnew<float>(ny);
    emu_reset();
    run_pipe(d, P_FUSED, r.x, r.batch, y0, NULL, NULL);
    run_pipe(d, P_PRIVATE, r.x, r.batch, y1, NULL, NULL);
    if (d.M.tcols == 1) {
        CHECK(memcmp(y0, y1, 4 * ny) == 0 && emu_ok(), "%s: %s batch %d%s: bit for bit k_fused_q<%s, B, 0>'s sums%s",
              m->name, pipe_name(m, P_PRIVATE).c_str(), r.batch, what, wp_ggml_type_name(m->type),
              emu_why().c_str());
    } else {
        std::vector<double> a(y0, y0 + ny);
        const double e = wr_relerr(y1, a.data(), ny);
        CHECK(e < 1e-6 && emu_ok(), "%s: %s batch %d%s: k_fused_q<%s, B, 0>'s sums to %.1e (< 1e-6)%s", m->name,
              pipe_name(m, P_PRIVATE).c_str(), r.batch, what, wp_ggml_type_name(m->type), e, emu_why().c_str());
    }
}

/* The grids k_twin and k_palette run on: (SM count, warps a SM gemv_grid aims for);
   132 SMs at 64 warps a SM gives the most column splits. */
static const int grids[3][2] = {{1, GEMV_SM_WARPS}, {132, GEMV_SM_WARPS}, {132, 64}};

/* The (batch, grid) pairs run (a warp shuffle costs the emulator a barrier; 8
   vectors' reductions on 27 blocks take half a second): batch 1 on one column
   split and on several, 2 on several, 4 and 8 on one and on the most. */
static bool gemv_case(int b, int gi)
{
    return b == 1 || (b == 2 && gi == 1) || (b >= 4 && gi != 1);
}

/* As wr_gpu_upload uploads a matrix the bundle stores fixed-width (m->stored):
   devmat_fill_stored, its bytes and the twin's buffers. -1 where it fails. */
static int upload_stored(Dev &d, const wr_matrix *m, char *err, size_t errlen)
{
    memset(&d, 0, sizeof d);
    d.m = m;
    DevMat &M = d.M;
    d.err = M.err = (int *)dcopy(4, std::vector<int>(1, 0).data());
    devmat_fill_stored(M, m);
    M.part = (float *)dmalloc(4 * (size_t)gemv_max_splits(g_sms_max, M) * 8 * (size_t)M.rows);
    M.cnt = (unsigned *)dcopy(4 * (size_t)gemv_counters(M), std::vector<unsigned>(gemv_counters(M), 0).data());
    return 0;
}

/* Every block type stored fixed-width: k_twin on the DevMat of upload_stored gives the sums
   of k_twin on the coded matrix's upload bit for bit (the same blocks, grid and kernel: the
   stored DevMat lacks nothing the twin reads), within 1e-5 of float64. */
static void check_stored(void)
{
    char err[512];
    for (uint32_t t : qtypes) {
        const int blk = wp_ggml_blck_size(t);
        const int64_t cols = blk == 256 ? 768 : 544;
        wr_model md;
        memset(&md, 0, sizeof md);
        uint8_t *ref = NULL;
        size_t len = 0;
        int rc = wr_model_synth(&md, t, 70, cols, (uint64_t)t + 31, err, sizeof err);
        rc = rc ? rc : wr_restore_bytes(&md.m[0], &ref, &len, err, sizeof err);
        rc = rc ? rc : wr_model_add_stored(&md, t, "stored", 70, cols, ref, err, sizeof err);
        Dev dc, ds;
        rc = rc ? rc : upload(dc, &md.m[0], ref, err, sizeof err);
        rc = rc ? rc : upload_stored(ds, &md.m[1], err, sizeof err);
        CHECK(rc == 0 && md.m[1].stored == WR_STORED_FIXED, "stored %s 70x%lld uploaded as wr_gpu_upload does (%s)",
              wp_ggml_type_name(t), (long long)cols, rc ? err : "ok");
        if (rc == 0) {
            uint8_t *fixed = (uint8_t *)dcopy(len, ref);
            for (int b : {1, 4}) {
                Ref r = make_ref(&md.m[0], ref, b, 50 + (uint64_t)b);
                const size_t ny = (size_t)b * 70;
                float *y0 = dnew<float>(ny), *y1 = dnew<float>(ny);
                emu_reset();
                run_pipe(dc, P_TWIN, r.x, b, y0, fixed, NULL);
                run_pipe(ds, P_TWIN, r.x, b, y1, fixed, NULL);
                const double e = wr_relerr(y1, r.y64.data(), ny);
                CHECK(memcmp(y0, y1, 4 * ny) == 0 && e < 1e-5 && *ds.err == 0 && emu_ok(),
                      "stored %s: k_twin batch %d = the coded matrix's twin bit for bit, relative error %.2e%s",
                      wp_ggml_type_name(t), b, e, emu_why().c_str());
            }
        }
        free(ref);
        wr_model_free(&md);
        dfree_all();
    }
}

/* Everything that runs on one matrix: twin: k_twin (WR_Q); palette: k_palette (BF16
   palette pairs); recon: k_recon (BF16). */
static void check_matrix(const wr_matrix *m, bool twin, bool palette, bool recon)
{
    char err[512];
    uint8_t *ref = NULL;
    size_t len = 0;
    if (wr_restore_bytes(m, &ref, &len, err, sizeof err)) {
        CHECK(0, "%s: wr_restore_bytes (%s)", m->name, err);
        return;
    }
    Dev d;
    const int rc = upload(d, m, twin ? ref : NULL, err, sizeof err);
    CHECK(rc == 0, "%s: uploaded as wr_gpu_upload does (%llu tiles, dmax %d, L %d)%s%s", m->name,
          (unsigned long long)d.M.ntiles, d.M.dmax, d.M.L, rc ? ": " : "", rc ? err : "");
    if (rc) {
        free(ref);
        return;
    }
    uint8_t *fixed = twin ? (uint8_t *)dcopy(len, ref) : NULL;
    check_restore(d, ref, len);
    const bool bf16 = m->kind == WR_EXP && m->type == WP_BF16;
    if (bf16)
        check_restore_split(d, ref, len);
    for (int bi = 0; bi < 4; bi++) {
        const int b = batches[bi];
        Ref r = make_ref(m, ref, b, 7 + (uint64_t)b);
        check_gemv(d, P_FUSED, r, NULL, NULL, NULL, "");
        check_gemv(d, P_STAGED, r, NULL, NULL, NULL, "");
        if (m->kind == WR_Q)   /* ring lanes read every word from the ring, unchecked: one not
                                  landed yet reads 0x5a bytes here (simt.h) and breaks the sums */
            check_gemv(d, P_RING, r, NULL, NULL, NULL, "");
        if (m->kind == WR_Q)
            check_private(d, r);
        if (twin && m->kind == WR_Q) {
            std::vector<float> yt((size_t)b * (size_t)m->rows);
            wr_cpu_gemv_fixed(m, ref, r.x, b, yt.data());
            std::vector<double> y2(yt.begin(), yt.end());
            for (int gi = 0; gi < 3; gi++) {
                if (!gemv_case(b, gi))
                    continue;
                g_sms = grids[gi][0];
                g_sm_warps = grids[gi][1];
                dim3 grid;
                gemv_grid(g_sms, d.M, grid, g_sm_warps);
                char what[64];
                snprintf(what, sizeof what, " (%d SMs, %d warps a SM: grid %u x %u)", g_sms, g_sm_warps, grid.x,
                         grid.y);
                check_gemv(d, P_TWIN, r, fixed, NULL, &y2, what);
            }
        }
        if (d.idx && palette) {   /* palette-pair BF16 */
            std::vector<float> yp((size_t)b * (size_t)m->rows);
            int prc = wr_cpu_gemv_palette(m, d.idx, r.x, b, yp.data(), err, sizeof err);
            std::vector<double> y2(yp.begin(), yp.end());
            uint8_t *idx_tc = dnew<uint8_t>((size_t)(d.M.istride * m->rows));
            for (int gi = 0; gi < 3; gi++) {
                if (!gemv_case(b, gi))
                    continue;
                g_sms = grids[gi][0];
                g_sm_warps = grids[gi][1];
                dim3 grid;
                gemv_grid(g_sms, d.M, grid, g_sm_warps);
                char what[64];
                snprintf(what, sizeof what, " (%d SMs, %d warps a SM: grid %u x %u)", g_sms, g_sm_warps, grid.x,
                         grid.y);
                if (prc == 0) {
                    check_gemv(d, P_PALETTE, r, NULL, NULL, &y2, what);
                    if (b <= 2) {   /* loading 2 steps ahead */
                        g_pal_ahead = 2;
                        std::string w2 = std::string(what) + " 2 steps ahead";
                        check_gemv(d, P_PALETTE, r, NULL, NULL, &y2, w2.c_str());
                        g_pal_ahead = 1;
                    }
                    /* the transcoded indices equal the loaded ones (checked below): the
                       whole pipeline at batches 1 and 4 */
                    if (b == 1 || b == 4)
                        check_gemv(d, P_TRANSCODE, r, NULL, idx_tc, &y2, what);
                }
            }
            CHECK(prc == 0, "%s: wr_cpu_gemv_palette batch %d", m->name, b);
        }
    }
    if (d.idx) {   /* k_transcode's indices = wr_cpu_transcode's */
        const size_t il = (size_t)(d.M.istride * m->rows);
        uint8_t *idx_tc = dnew<uint8_t>(il);
        std::vector<uint8_t> i1(il);
        int trc = wr_cpu_transcode(m, i1.data(), err, sizeof err);
        /* the kernel writes only the pairs of the tiles (the padding bytes are the
           allocation's: zero them as the reference has them) */
        memset(idx_tc, 0, il);
        emu_reset();
        *d.err = 0;
        dim3 grid((unsigned)d.M.tcols, (unsigned)((d.M.trows + FUSED_WARPS - 1) / FUSED_WARPS));
        const DevMat &M = d.M;
        const uint32_t *lut = d.lut;
        go(grid, dim3(32 * FUSED_WARPS), 0, [&] { k_transcode(M, lut, idx_tc); });
        CHECK(trc == 0 && memcmp(idx_tc, i1.data(), il) == 0 && *d.err == 0 && emu_ok(),
              "%s: k_transcode's index array = wr_cpu_transcode's (%zu bytes), flag %d%s", m->name, il, *d.err,
              emu_why().c_str());
    }
    if (recon && bf16)
        for (int b : {1, 17, 32, 40}) {
            Ref r = make_ref(m, ref, b, 50 + (uint64_t)b);
            check_gemv(d, P_RECON, r, NULL, NULL, NULL, b > RECON_N ? " (2 launches)" : "");
        }
    free(ref);
    dfree_all();
}

/* src's weights split again (bf16split --palette palette_n --group group) from its restored
   bytes, coded and loaded back from a bundle file as matrix `src.suffix`. 0 or -1. */
static int make_split(wr_model *md, const wr_matrix *src, int palette_n, int64_t group, const char *suffix,
                      char *err, size_t errlen)
{
    uint8_t *fixed = NULL;
    size_t len = 0;
    if (wr_restore_bytes(src, &fixed, &len, err, errlen))
        return -1;
    struct wp_bf16_split s;
    memset(&s, 0, sizeof s);
    wp_record t, aux, sym, coded;
    wp_record_init(&t);
    wp_record_init(&aux);
    wp_record_init(&sym);
    wp_record_init(&coded);
    t.kind = WP_REC_TENSOR;
    t.type = WP_BF16;
    t.n_dims = 2;
    t.ne[0] = src->cols;
    t.ne[1] = src->rows;
    char name[300];
    snprintf(name, sizeof name, "%s.%s", src->name, suffix);
    wp_record_set_name(&t, name);
    int rc = -1;
    char path[] = "/tmp/wpack-test-emu-XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0)
        close(fd);
    if (fd >= 0 && wp_bf16_split(&s, WP_BF16, fixed, src->rows, src->cols, palette_n, group) == 0 &&
        wp_bf16_records(&s, &t, &aux, &sym) == 0 &&
        wp_attr_set_hash(&sym, "xxh32", fixed, len) == 0) {
        uint64_t counts[256] = {0};
        uint8_t lengths[256];
        for (uint64_t i = 0; i < sym.payload_len; i++)
            counts[sym.payload[i]]++;
        wp_lanes_shape shape;
        memset(&shape, 0, sizeof shape);
        shape.rows = (uint64_t)src->rows;
        shape.row_sym = (uint64_t)s.sym_per_row;
        shape.tile_sym = palette_n ? 128 : 256;   /* a tile row: 256 weights */
        coded.kind = WP_REC_CODED;
        coded.type = WP_BF16;
        coded.n_dims = 2;
        coded.ne[0] = src->cols;
        coded.ne[1] = src->rows;
        wp_record_set_name(&coded, name);
        free(coded.attrs);
        coded.attrs = strdup(sym.attrs ? sym.attrs : "");
        FILE *f = NULL;
        wp_writer *w = NULL;
        if (wp_huf_lengths(counts, 256, WP_HUF_LEN, lengths) == 0 &&
            wp_coded_encode(&coded, sym.payload, &shape, lengths, WP_HUF_LEN, err, errlen) == 0 &&
            (f = fopen(path, "wb")) != NULL && (w = wp_writer_open(f, path, 8, err, errlen)) != NULL &&
            wp_writer_put(w, &aux) == 0 && wp_writer_put(w, &coded) == 0 && wp_writer_close(w, err, errlen) == 0) {
            fclose(f);
            f = NULL;
            rc = wr_model_load(md, path, NULL, err, errlen);
        }
        if (f)
            fclose(f);
    }
    remove(path);
    wp_bf16_split_free(&s);
    wp_record_free(&t);
    wp_record_free(&aux);
    wp_record_free(&sym);
    wp_record_free(&coded);
    free(fixed);
    return rc == 0 && md->n == 1 && md->m[0].s.palette_n == palette_n && (!palette_n || md->m[0].s.group == group)
               ? 0
               : -1;
}

/* Lane-word reads from global memory (fused's loads, staged's and ring's copies) below
   lw_lo or at lw_hi and above: check_corrupt's count. */
static const uint32_t *lw_lo, *lw_hi;
static std::atomic<long> lw_outside{0};
static void lane_read_outside(int site, const void *p)
{
    const uint32_t *w = (const uint32_t *)p;
    if ((site == WR_SITE_GWORD || site == WR_SITE_COPY) && (w < lw_lo || w >= lw_hi))
        lw_outside++;
}

/* A corrupt matrix: every lane-decoding kernel flags it. sound_from > 0: the tiles
   whose words start before lane word sound_from are corrupt, and no kernel reads a
   lane word of theirs (a corrupt tile reads no word: its lanes count 0). */
static void check_corrupt(const wr_matrix *m, const char *how, uint32_t sound_from = 0)
{
    char err[512];
    Dev d;
    if (upload(d, m, NULL, err, sizeof err)) {
        CHECK(0, "%s (%s): upload: %s", m->name, how, err);
        return;
    }
    lw_lo = d.M.words + sound_from, lw_hi = d.M.words + m->v.n_words, lw_outside = 0;
    if (sound_from)
        simt::probe_hook = lane_read_outside;
    const size_t fb = wr_fixed_bytes(m);
    uint8_t *out = dnew<uint8_t>(fb);
    const int b = 2;
    float *x = dnew<float>((size_t)b * (size_t)m->cols), *y = dnew<float>((size_t)32 * (size_t)m->rows);
    wr_make_x(x, (size_t)b * (size_t)m->cols, 3, m->kind == WR_EXP);
    emu_reset();
    *d.err = 0;
    launch_restore(d, out, 0);
    CHECK(*d.err == 1 && emu_ok(), "%s, %s: k_restore sets the error flag%s", m->name, how, emu_why().c_str());
    for (int p : {P_FUSED, P_STAGED, P_RING, P_PRIVATE}) {
        if ((p == P_RING || p == P_PRIVATE) && m->kind != WR_Q)
            continue;
        emu_reset();
        run_pipe(d, p, x, b, y, NULL, NULL);
        CHECK(*d.err == 1 && emu_ok(), "%s, %s: %s sets the error flag%s", m->name, how, pipe_name(m, p).c_str(),
              emu_why().c_str());
    }
    if (m->kind == WR_EXP && m->type == WP_BF16) {
        emu_reset();
        *d.err = 0;
        launch_restore(d, out, 1);
        CHECK(*d.err == 1 && emu_ok(), "%s, %s: k_restore_exp<%s> sets the error flag%s", m->name, how,
              m->s.palette_n ? "true" : "false", emu_why().c_str());
        emu_reset();
        float *x32 = dnew<float>((size_t)RECON_N * (size_t)m->cols);
        wr_make_x(x32, (size_t)RECON_N * (size_t)m->cols, 4, 1);
        run_pipe(d, P_RECON, x32, 17, y, NULL, NULL);
        CHECK(*d.err == 1 && emu_ok(), "%s, %s: %s sets the error flag%s", m->name, how, pipe_name(m, P_RECON).c_str(),
              emu_why().c_str());
        if (m->s.palette_n) {
            d.M.istride = wr_palette_stride(m);
            uint8_t *idx = dnew<uint8_t>((size_t)(d.M.istride * m->rows));
            dim3 grid((unsigned)d.M.tcols, (unsigned)((d.M.trows + FUSED_WARPS - 1) / FUSED_WARPS));
            const DevMat &M = d.M;
            const uint32_t *lut = d.lut;
            emu_reset();
            *d.err = 0;
            go(grid, dim3(32 * FUSED_WARPS), 0, [&] { k_transcode(M, lut, idx); });
            CHECK(*d.err == 1 && emu_ok(), "%s, %s: k_transcode sets the error flag%s", m->name, how,
                  emu_why().c_str());
        }
    }
    if (sound_from) {
        simt::probe_hook = nullptr;
        CHECK(lw_outside == 0, "%s, %s: no kernel reads a lane word of the corrupt tiles (%ld read)", m->name, how,
              lw_outside.load());
    }
    dfree_all();
}

/* Corrupt m in place two ways (a lane count one too many; tile 0 ending past the lane
   words), check each, and put it back; also the sound matrix leaves the flag 0. */
static void corruptions(wr_matrix *m)
{
    uint8_t *lw = (uint8_t *)m->v.lane_words;
    lw[3]++;
    check_corrupt(m, "lane 3 of tile 0 one word too long");
    lw[3]--;
    uint32_t *off = (uint32_t *)m->v.offsets;
    const uint32_t o1 = off[1];
    off[1] = (uint32_t)m->v.n_words + 1;   /* tile 0 ends past the words, tile 1 starts there */
    check_corrupt(m, "tile 0 ends past the lane words", m->v.n_tiles >= 2 ? off[2] : (uint32_t)m->v.n_words);
    off[1] = o1;
    char err[512];
    Dev d;
    if (upload(d, m, NULL, err, sizeof err) == 0) {
        float *x = dnew<float>((size_t)m->cols), *y = dnew<float>((size_t)m->rows);
        wr_make_x(x, (size_t)m->cols, 3, m->kind == WR_EXP);
        emu_reset();
        run_pipe(d, P_STAGED, x, 1, y, NULL, NULL);
        CHECK(*d.err == 0 && emu_ok(), "%s restored: the staged kernel leaves the flag 0%s", m->name,
              emu_why().c_str());
    }
    dfree_all();
}

/* A peek that no code starts with: a matrix of one symbol (all-zero blocks: one code, of
   one bit, 0) whose first lane word gets its top bit set. k_fused_q and k_fused_private
   take no per-symbol check of the table's bad flag: the lane stops there (the entry's
   length is 0), so it ends short of its words or with padding bits set, which lane_close
   flags. Every lane-decoding kernel must flag it. */
static void check_no_code(uint32_t type, int64_t cols, int block_bytes, int block_n)
{
    char err[512];
    wr_model md;
    memset(&md, 0, sizeof md);
    const int64_t rows = 130;
    std::vector<uint8_t> zero((size_t)(rows * cols / block_n * block_bytes), 0);
    const std::string name = std::string("one-symbol.") + wp_ggml_type_name(type);
    int rc = wr_model_add_blocks(&md, type, name.c_str(), rows, cols, zero.data(), err, sizeof err);
    wr_matrix *m = rc ? NULL : &md.m[0];
    CHECK(m && m->huf.L == 1 && ((const uint32_t *)m->v.words)[0] == 0,
          "%s: all-zero blocks coded with one 1-bit code (L %d), lane words zero%s%s", name.c_str(), m ? m->huf.L : -1,
          rc ? ": " : "", rc ? err : "");
    if (m && m->huf.L == 1) {
        ((uint32_t *)m->v.words)[0] ^= 0x80000000u;
        check_corrupt(m, "lane 0's first bit a peek without a code");
    }
    wr_model_free(&md);
}

/* A lane one word short: the one-symbol Q8_0 of check_no_code (130 x 256, code 0 of one
   bit), its last tile (rows 128, 129: lane 0 alone, 16 words) cut to 15 words, lane count
   and offsets consistent. The decode runs off the lane's end at 480 bits; past W a lane
   must read 0 (a peek with a code), not a ring slot's stale word, which, peeking without a
   code, stopped the lane at exactly 32 W bits where wr_pos_close saw nothing wrong (a
   reviewer's find: the ring pipeline left the flag 0; the emulator fills shared memory
   with 0xa5). Every lane-decoding kernel must flag it. */
static void check_short_lane()
{
    char err[512];
    wr_model md;
    memset(&md, 0, sizeof md);
    const int64_t rows = 130, cols = 256;
    std::vector<uint8_t> zero((size_t)(rows * cols / 32 * 34), 0);
    int rc = wr_model_add_blocks(&md, WP_Q8_0, "short-lane.Q8_0", rows, cols, zero.data(), err, sizeof err);
    wr_matrix *m = rc ? NULL : &md.m[0];
    uint8_t *lw = m ? (uint8_t *)m->v.lane_words : NULL;
    uint32_t *off = m ? (uint32_t *)m->v.offsets : NULL;
    const bool shape = m && m->huf.L == 1 && m->v.n_tiles == 3 && lw[64] == 16 && lw[65] == 0 &&
                       off[3] - off[2] == 16;
    CHECK(shape, "short-lane.Q8_0: L 1, 3 tiles, the last tile's lane 0 16 words, lane 1 none%s%s", rc ? ": " : "",
          rc ? err : "");
    if (shape) {
        lw[64] = 15;
        off[3] -= 1;
        check_corrupt(m, "the last tile's lane 0 one word short");
    }
    wr_model_free(&md);
}

/* A padding bit set: a Q8_0 matrix of zeros but one 1 (row 0, lane 0 of tile 0) and one
   -1 (row 64, tile 1), so three symbols, code lengths 1, 2, 2: lane 0 of tile 0 holds
   511 + 2 = 513 bits, 17 words (the others 16), its last word alone in group 16 (tile
   word 512) with 31 padding bits. Its lowest bit set, every lane-decoding kernel must
   flag the tile (lane_close / wr_pos_close: the padding after a lane's last code is 0). */
static void check_padding_bit()
{
    char err[512];
    wr_model md;
    memset(&md, 0, sizeof md);
    const int64_t rows = 130, cols = 256, bpr = cols / 32;
    std::vector<uint8_t> fixed((size_t)(rows * bpr * 34), 0);
    fixed[2] = 1;                                  /* row 0, weight 0: 1 */
    fixed[(size_t)(64 * bpr) * 34 + 2] = 0xff;     /* row 64, weight 0: -1 */
    int rc = wr_model_add_blocks(&md, WP_Q8_0, "padding.Q8_0", rows, cols, fixed.data(), err, sizeof err);
    wr_matrix *m = rc ? NULL : &md.m[0];
    const uint8_t *lw = m ? (const uint8_t *)m->v.lane_words : NULL;
    CHECK(m && lw[0] == 17 && lw[1] == 16 && m->v.offsets[1] == 32 * 16 + 1,
          "padding.Q8_0: lane 0 of tile 0 17 words (%d), lane 1 16 (%d), tile 0 %u words (513)%s%s",
          lw ? lw[0] : -1, lw ? lw[1] : -1, m ? m->v.offsets[1] : 0u, rc ? ": " : "", rc ? err : "");
    if (m && lw[0] == 17 && m->v.offsets[1] == 513) {
        ((uint32_t *)m->v.words)[512] ^= 1u;
        check_corrupt(m, "a padding bit of lane 0's last word set");
    }
    wr_model_free(&md);
}

/* A palette index without a palette entry (the palette one entry short, as a corrupt
   bundle could have it): the BF16 lane kernels flag it rather than read past the palette. */
static void check_short_palette(wr_matrix *m)
{
    char err[512];
    const int np = m->s.n_palette;
    m->s.n_palette = np - 1;
    float *x = dnew<float>((size_t)m->cols), *y = dnew<float>((size_t)32 * (size_t)m->rows);
    wr_make_x(x, (size_t)m->cols, 3, 1);
    int cpu = wr_cpu_gemv_fused(m, x, 1, y, err, sizeof err);
    Dev d;
    if (np >= 2 && cpu == -1 && upload(d, m, NULL, err, sizeof err) == 0) {
        const size_t fb = wr_fixed_bytes(m);
        uint8_t *out = dnew<uint8_t>(fb);
        const char *how = "index n_palette - 1 without a palette entry";
        for (int lut = 0; lut < 2; lut++) {
            emu_reset();
            *d.err = 0;
            launch_restore(d, out, lut);
            CHECK(*d.err == 1 && emu_ok(), "%s, %s: %s sets the error flag%s", m->name, how,
                  lut ? "k_restore_exp<true>" : "k_restore", emu_why().c_str());
        }
        for (int p : {P_FUSED, P_STAGED, P_RECON}) {
            emu_reset();
            run_pipe(d, p, x, 1, y, NULL, NULL);
            CHECK(*d.err == 1 && emu_ok(), "%s, %s: %s sets the error flag%s", m->name, how, pipe_name(m, p).c_str(),
                  emu_why().c_str());
        }
        d.M.istride = wr_palette_stride(m);
        uint8_t *idx = dnew<uint8_t>((size_t)(d.M.istride * m->rows));
        dim3 grid((unsigned)d.M.tcols, (unsigned)((d.M.trows + FUSED_WARPS - 1) / FUSED_WARPS));
        const DevMat &M = d.M;
        const uint32_t *lut = d.lut;
        emu_reset();
        *d.err = 0;
        go(grid, dim3(32 * FUSED_WARPS), 0, [&] { k_transcode(M, lut, idx); });
        CHECK(*d.err == 1 && emu_ok(), "%s, %s: k_transcode sets the error flag%s", m->name, how, emu_why().c_str());
    } else {
        CHECK(0, "%s: a palette of %d - 1 entries: the CPU reference fails (%d) and the upload works", m->name, np,
              cpu);
    }
    m->s.n_palette = np;
    dfree_all();
}

/* One lane of the longest codes: a synthetic Q8_0 (codes Gaussian around 0,
   spread 22) whose lane 0 of tile 0 (rows 0, 1; columns 0..255) holds
   +-(97..127), values the rest almost never takes, so their Huffman codes
   are about 11 bits and that lane reads 11 words a sub-block where the
   others read 6.5 (176 words against 104): the most words a ring lane
   reads between fills in the tests, and a lane far ahead of its warp. Every
   pipeline must still match the twin bit for bit (check_matrix). */
static void check_long_lane()
{
    char err[512];
    wr_model md, ml;
    memset(&md, 0, sizeof md);
    memset(&ml, 0, sizeof ml);
    uint8_t *fixed = NULL;
    size_t len = 0;
    const int64_t rows = 130, cols = 544, bpr = cols / 32;
    int rc = wr_model_synth(&md, WP_Q8_0, rows, cols, 31, err, sizeof err);
    rc = rc ? rc : wr_restore_bytes(&md.m[0], &fixed, &len, err, sizeof err);
    CHECK(rc == 0 && len == (size_t)(rows * bpr * 34), "long lane: synthetic Q8_0 restored (%s)", rc ? err : "ok");
    if (rc == 0) {
        for (int64_t r = 0; r < 2; r++)
            for (int64_t j = 0; j < 8; j++)
                for (int i = 0; i < 32; i++) {
                    const int v = 97 + (int)((i * 7 + j * 3 + r) % 31);
                    fixed[(r * bpr + j) * 34 + 2 + i] = (uint8_t)(int8_t)((i + j) % 2 ? v : -v);
                }
        rc = wr_model_add_blocks(&ml, WP_Q8_0, "long-lane.Q8_0.130x544", rows, cols, fixed, err, sizeof err);
        const uint8_t *lw = rc ? NULL : (const uint8_t *)ml.m[0].v.lane_words;
        CHECK(rc == 0 && lw[0] >= 160 && lw[1] <= 110,
              "long lane: coded from its blocks, lane 0 of tile 0 %d words (>= 160), lane 1 %d (<= 110)%s%s",
              lw ? lw[0] : -1, lw ? lw[1] : -1, rc ? ": " : "", rc ? err : "");
        if (rc == 0)
            check_matrix(&ml.m[0], true, false, false);
    }
    free(fixed);
    wr_model_free(&md);
    wr_model_free(&ml);
}

/* The same for the types whose ring fill serves several sub-blocks
   (ring_every: 8 for Q2_K and Q3_K, 4 for the 16-symbol ones): lane 0 of
   tile 0 (rows 0, 1) holds the matrix's rarest symbols, cycled, so its codes
   are 10-11 bits long and it reads near the most words a fill must hold
   for, (ring_every + 1) sub-blocks of 11-bit codes, while the other lanes
   read their usual few. Every pipeline must still match the twin bit for
   bit (check_matrix); a fill serving one sub-block more than its words
   allow reads a copy not yet landed (simt.h's 0x5a bytes). */
static void check_long_lane_type(uint32_t type)
{
    char err[512], name[64];
    wr_model md, ml;
    memset(&md, 0, sizeof md);
    memset(&ml, 0, sizeof ml);
    const int64_t rows = 130, cols = 768;
    snprintf(name, sizeof name, "long-lane.%s.130x768", wp_ggml_type_name(type));
    uint8_t *fixed = NULL;
    size_t len = 0;
    wp_codes_geom g;
    int rc = wr_model_synth(&md, type, rows, cols, 31, err, sizeof err);
    rc = rc ? rc : wr_restore_bytes(&md.m[0], &fixed, &len, err, sizeof err);
    rc = rc ? rc : wp_codes_geom_get((int)type, cols, (uint64_t)rows, &g);
    CHECK(rc == 0 && len == g.block_len, "%s: synthetic matrix restored (%s)", name, rc ? err : "ok");
    if (rc == 0) {
        std::vector<uint8_t> sym(g.n_sym), side(g.side_len);
        wp_codes_split(&g, fixed, sym.data(), side.data());
        /* the alphabet by count, rarest first */
        std::vector<uint64_t> n(g.alphabet, 0);
        for (uint8_t s : sym)
            n[s]++;
        std::vector<uint32_t> by(g.alphabet);
        for (uint32_t s = 0; s < g.alphabet; s++)
            by[s] = s;
        std::stable_sort(by.begin(), by.end(), [&](uint32_t a, uint32_t b) { return n[a] < n[b]; });
        const uint32_t nr = g.alphabet / 8;   /* 32 of 256 symbols, 8 of 64 */
        for (uint64_t r = 0; r < 2; r++)
            for (uint32_t j = 0; j < g.tile_sym; j++)
                sym[r * g.row_sym + j] = (uint8_t)by[(j * 5 + r) % nr];
        rc = wp_codes_join(&g, sym.data(), side.data(), fixed);
        rc = rc ? rc : wr_model_add_blocks(&ml, type, name, rows, cols, fixed, err, sizeof err);
        const uint8_t *lw = rc ? NULL : (const uint8_t *)ml.m[0].v.lane_words;
        /* the most: 2 rows of tile_sym codes of WR_LUT_MAX_BITS bits (measured: Q2_K and Q4_K
           all of it, Q3_K 83 of 88 words, Q6_K 148 of 176, its 64 symbols' longest code 10) */
        const int most = (int)((2 * g.tile_sym * WR_LUT_MAX_BITS + 31) / 32);
        CHECK(rc == 0 && ml.m[0].huf.L >= WR_LUT_MAX_BITS - 1 && lw[0] * 5 >= most * 4 && lw[1] * 3 <= most * 2,
              "%s: lane 0 of tile 0 %d words (the most %d), lane 1 %d, longest code %d%s%s", name, lw ? lw[0] : -1,
              most, lw ? lw[1] : -1, rc ? -1 : ml.m[0].huf.L, rc ? ": " : "", rc ? err : "");
        if (rc == 0)
            check_matrix(&ml.m[0], true, false, false);
    }
    free(fixed);
    wr_model_free(&md);
    wr_model_free(&ml);
}

/* Ring lanes near the ring's size (review): a Q8_0 matrix of 0s (the 1-bit code) with lane
   k of tiles 0 and 1 holding 16 k codes of 1, 2, 3 (2-3 bits) first, so their W run from
   16 to about 42, across RING_WORDS - 3 .. RING_WORDS + 2 where the zeroed slots W .. W + 2
   wrap onto slots 0 .. 2; the last tile's lane 0 (rows 128, 129, the only lane there, the
   others W = 0) holds n such codes. Every pipeline must match the twin; and the last lane
   made 1, 2 or 3 words short (its words and the tile's span cut) must be flagged (weak:
   the code is complete, so a stale slot has codes too; the ring's zeroes are not needed
   to pass this part, check_short_lane's incomplete code is what tests them). */
static std::vector<uint8_t> ring_edge_blocks(int64_t rows, int64_t cols, int nlast)
{
    const int64_t bpr = cols / 32;
    std::vector<uint8_t> f((size_t)(rows * bpr * 34), 0);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t b = 0; b < bpr; b++) {
            f[(size_t)(r * bpr + b) * 34 + 0] = 0x00;
            f[(size_t)(r * bpr + b) * 34 + 1] = 0x3c;   /* d = 1.0 */
        }
    auto put = [&](int64_t r, int64_t c, int v) { f[(size_t)(r * bpr + c / 32) * 34 + 2 + (size_t)(c % 32)] = (uint8_t)(int8_t)v; };
    for (int64_t t = 0; t < 2; t++)
        for (int k = 0; k < 32; k++)
            for (int j = 0; j < 16 * k; j++)
                put(64 * t + 2 * k + j / cols, j % cols, 1 + j % 3);
    for (int j = 0; j < nlast; j++)
        put(128 + j / cols, j % cols, 1 + j % 3);
    return f;
}

static void check_ring_edges()
{
    char err[512];
    const int64_t rows = 130, cols = 256;
    bool seen[64] = {false};
    int tested = 0;
    for (int n = 0; n <= 512; n += 3) {
        wr_model md;
        memset(&md, 0, sizeof md);
        std::vector<uint8_t> f = ring_edge_blocks(rows, cols, n);
        char name[64];
        snprintf(name, sizeof name, "ring-edge.Q8_0.n%d", n);
        int rc = wr_model_add_blocks(&md, WP_Q8_0, name, rows, cols, f.data(), err, sizeof err);
        wr_matrix *m = rc ? NULL : &md.m[0];
        uint8_t *lw = m ? (uint8_t *)m->v.lane_words : NULL;
        uint32_t *off = m ? (uint32_t *)m->v.offsets : NULL;
        const int W = lw ? lw[64] : -1;
        bool others0 = lw != NULL;
        for (int k = 65; lw && k < 96; k++)
            others0 &= lw[k] == 0;
        if (!m || !others0 || W < 0 || W >= 64 || seen[W] || !(W >= 28 && W <= 35)) {
            if (!m || !others0)
                CHECK(0, "%s: built (%s), the last tile's lanes 1.. empty", name, rc ? err : "ok");
            wr_model_free(&md);
            continue;
        }
        seen[W] = true;
        if (tested++ == 0) {
            std::string ws;
            for (int k = 0; k < 64; k++)
                ws += std::to_string(lw[k]) + " ";
            printf("# ring-edge: L %d, tiles 0, 1 lane words: %s\n", m->huf.L, ws.c_str());
        }
        printf("# %s: the last tile's lane 0 %d words\n", name, W);
        check_matrix(m, true, false, false);
        for (int s = 1; s <= 3 && s <= W; s++) {
            off[3] -= 1;   /* the tile's last word (lane 0's, alone in its group) cut, each time */
            lw[64] = (uint8_t)(W - s);
            char how[96];
            snprintf(how, sizeof how, "the last tile's lane 0 (%d words) %d short", W, s);
            check_corrupt(m, how);
        }
        wr_model_free(&md);
    }
    CHECK(tested >= 8, "ring-edge: %d lane lengths tested", tested);
}

/* Memory traffic of the fused GEMV's decode path at batch 1 (simt.h's
   WR_PROBE counts: shared wavefronts, global 128-byte lines, per warp
   instruction) for fused, staged, ring and private on a synthetic matrix of
   type `type`, 256 x 4096 (64 tiles; the synthetic codes of `wprun --synth`). What must hold
   whatever the timing: the four decode the same symbols, so their table
   lookups are the same instructions (and, but for a lane's last codes in
   ring, at the same addresses; private's in its lane-private table, one
   wavefront each, where the shared table takes about 3.5); each pipeline
   reads every lane word from global memory once (fused and private: a load, staged
   and ring: a copy's source); staged and ring read a word from shared
   memory in one wavefront (word i of lane k in bank k). The counts
   themselves are printed, a tile's worth, for runtime/JOURNAL.md's L1 budget. */
static void check_traffic(uint32_t type)
{
    char err[512];
    wr_model md;
    memset(&md, 0, sizeof md);
    const int64_t rows = 256, cols = 4096;
    const char *tn = wp_ggml_type_name(type);
    const wr_geom G = wr_geom_of((int)type);
    /* side_row's loads in the matrix (its full tiles): the aligned 16-byte chunks that cover a
       tile row's side bytes (Q4_K: 1; Q6_K's 18 bytes at an even offset: 2) */
    const int64_t side_bytes = 256 / G.n * G.side, bpr = cols / G.n;
    long side_loads = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t tc = 0; tc < cols / 256; tc++)
            side_loads += (((r * bpr + tc * 256 / G.n) * G.side) % 16 + side_bytes + 15) / 16;
    int rc = wr_model_synth(&md, type, rows, cols, 5, err, sizeof err);
    Dev d;
    rc = rc ? rc : upload(d, &md.m[0], NULL, err, sizeof err);
    CHECK(rc == 0, "traffic: synthetic %s %lldx%lld uploaded (%s)", tn, (long long)rows, (long long)cols, rc ? err : "ok");
    if (rc) {
        wr_model_free(&md);
        dfree_all();
        return;
    }
    const wr_matrix *m = &md.m[0];
    const double tiles = (double)m->v.n_tiles, words = (double)m->v.n_words;
    /* words past the tile's full groups (lane_word_index reads a group's start for those) */
    long past_full = 0;
    for (uint64_t t = 0; t < m->v.n_tiles; t++) {
        unsigned full = 255;
        for (int k = 0; k < 32; k++)
            full = std::min(full, (unsigned)m->v.lane_words[t * 32 + k]);
        for (int k = 0; k < 32; k++)
            past_full += m->v.lane_words[t * 32 + k] - full;
    }
    float *x = dnew<float>((size_t)cols), *y = dnew<float>((size_t)rows);
    wr_make_x(x, (size_t)cols, 3, 0);
    simt::Traffic t[4];
    for (int st = 0; st < 4; st++) {
        memset(y, 0, 4 * (size_t)rows);
        simt::traffic.reset();
        simt::probing = true;
        if (st == 0)
            fused_b<1, 0>(d, x, y);
        else if (st == 1)
            fused_b<1, 1>(d, x, y);
        else if (st == 2)
            fused_b<1, 2>(d, x, y);
        else
            fused_p<1>(d, x, y);
        simt::probing = false;
        t[st] = simt::traffic;
    }
    const char *nm[4] = {"fused", "staged", "ring", "private"};
    for (int st = 0; st < 4; st++) {
        const simt::Traffic &a = t[st];
        const long gl = a.lanes[WR_SITE_GWORD] + a.lanes[WR_SITE_COPY];
        printf("# traffic %s %s, a tile: table %.0f wavefronts (%.2f a lookup); words from global %.0f requests, "
               "%.0f lines (%.2f a request, %.2f sectors); from shared %.0f requests, %.0f wavefronts; group starts %.0f requests, "
               "%.0f wavefronts; side bytes %.0f requests, %.0f lines\n",
               tn, nm[st], a.units[WR_SITE_LUT] / tiles, (double)a.units[WR_SITE_LUT] / (double)a.instr[WR_SITE_LUT],
               (a.instr[WR_SITE_GWORD] + a.instr[WR_SITE_COPY]) / tiles,
               (a.units[WR_SITE_GWORD] + a.units[WR_SITE_COPY]) / tiles,
               (double)(a.units[WR_SITE_GWORD] + a.units[WR_SITE_COPY]) /
                   (double)std::max(1L, a.instr[WR_SITE_GWORD] + a.instr[WR_SITE_COPY]),
               (double)(a.sectors[WR_SITE_GWORD] + a.sectors[WR_SITE_COPY]) /
                   (double)std::max(1L, a.instr[WR_SITE_GWORD] + a.instr[WR_SITE_COPY]),
               a.instr[WR_SITE_SWORD] / tiles, a.units[WR_SITE_SWORD] / tiles, a.instr[WR_SITE_GROUP] / tiles,
               a.units[WR_SITE_GROUP] / tiles, a.instr[WR_SITE_SIDE] / tiles, a.units[WR_SITE_SIDE] / tiles);
        CHECK((double)gl == words, "traffic %s %s: every lane word read from global memory once (%ld reads, %.0f words)",
              tn, nm[st], gl, words);
        if (st != 1)
            CHECK(a.lanes[WR_SITE_GROUP] == past_full,
                  "traffic %s %s: a group's start read only for words past the tile's full groups (%ld reads, %ld "
                  "such words of %.0f)", tn, nm[st], a.lanes[WR_SITE_GROUP], past_full, words);
        /* the rows' side bytes in side_row's loads (Q4_K 16 bytes in 1 a row) */
        CHECK(a.lanes[WR_SITE_SIDE] == side_loads,
              "traffic %s %s: side bytes in %.2f loads a tile row (%ld loads, %ld expected; %.2f requests a tile)", tn,
              nm[st], (double)a.lanes[WR_SITE_SIDE] / (double)(rows * (cols / 256)), a.lanes[WR_SITE_SIDE], side_loads,
              a.instr[WR_SITE_SIDE] / tiles);
        if (st == 3) {
            /* private: fused's lookups and lane words, each lookup one wavefront (lane k reads bank k) */
            CHECK(a.instr[WR_SITE_LUT] == t[0].instr[WR_SITE_LUT] && a.lanes[WR_SITE_LUT] == t[0].lanes[WR_SITE_LUT] &&
                      a.units[WR_SITE_LUT] == a.instr[WR_SITE_LUT] && a.units[WR_SITE_GWORD] == t[0].units[WR_SITE_GWORD],
                  "traffic %s private: fused's table lookups (%ld instructions; fused %ld) in one wavefront each (%ld "
                  "wavefronts; fused %ld), the same lane-word lines (%ld; fused %ld)", tn, a.instr[WR_SITE_LUT],
                  t[0].instr[WR_SITE_LUT], a.units[WR_SITE_LUT], t[0].units[WR_SITE_LUT], a.units[WR_SITE_GWORD],
                  t[0].units[WR_SITE_GWORD]);
        } else if (st > 0) {
            /* staged: the same addresses; ring: the peeks of a lane's last codes run past its
               end into whatever its slots hold (fused and staged read zeros there), so the
               lookups of those codes may land on another copy of the same entry */
            const long du = a.units[WR_SITE_LUT] - t[0].units[WR_SITE_LUT];
            CHECK(a.instr[WR_SITE_LUT] == t[0].instr[WR_SITE_LUT] && a.lanes[WR_SITE_LUT] == t[0].lanes[WR_SITE_LUT] &&
                      (st == 1 ? du == 0 : std::labs(du) * 200 <= t[0].units[WR_SITE_LUT]),
                  "traffic %s %s: the table lookups of fused (%ld instructions, %ld wavefronts; fused %ld, %ld)",
                  tn, nm[st], a.instr[WR_SITE_LUT], a.units[WR_SITE_LUT], t[0].instr[WR_SITE_LUT], t[0].units[WR_SITE_LUT]);
            CHECK(a.instr[WR_SITE_SWORD] > 0 && a.units[WR_SITE_SWORD] == a.instr[WR_SITE_SWORD],
                  "traffic %s %s: shared lane-word reads take one wavefront each (%ld reads, %ld wavefronts)", tn, nm[st],
                  a.instr[WR_SITE_SWORD], a.units[WR_SITE_SWORD]);
        }
    }
    CHECK(t[0].lanes[WR_SITE_LUT] == rows * cols / G.wps, "traffic %s: a lookup a symbol of %d codes (%ld, %lld)", tn,
          G.wps, t[0].lanes[WR_SITE_LUT], (long long)(rows * cols / G.wps));
    wr_model_free(&md);
    dfree_all();
}

/* The emulator's cp.async (simt.h): a copy reads as 0x5a bytes until waited
   for; of two copies to one word in flight together the older lands last;
   a thread ending with a copy not waited for is counted (and fails emu_ok). */
static void check_async_copies()
{
    uint32_t *src = dnew<uint32_t>(64);
    uint32_t *out = dnew<uint32_t>(4 * 32);
    for (int i = 0; i < 64; i++)
        src[i] = 0x1000u + (uint32_t)i;
    emu_reset();
    go(dim3(1), dim3(32), 2 * 32 * 4, [&] {
        WR_DYN_SMEM(uint32_t, sm);
        const unsigned k = threadIdx.x;
        __pipeline_memcpy_async(&sm[k], &src[k], 4);
        __pipeline_commit();
        out[k] = sm[k];                 /* before the wait: poison */
        __pipeline_memcpy_async(&sm[32 + k], &src[32 + k], 4);
        __pipeline_commit();
        __pipeline_wait_prior(1);       /* the first batch only */
        out[32 + k] = sm[k];
        out[64 + k] = sm[32 + k];       /* second batch: still poison */
        __pipeline_memcpy_async(&sm[k], &src[32 + k], 4);
        __pipeline_commit();
        __pipeline_wait_prior(0);       /* sm[k]'s first copy landed before this one was issued */
        out[96 + k] = sm[k];
    });
    bool ok = emu_ok();
    for (int k = 0; k < 32; k++)
        ok &= out[k] == 0x5a5a5a5au && out[32 + k] == src[k] && out[64 + k] == 0x5a5a5a5au &&
              out[96 + k] == src[32 + k];
    CHECK(ok, "simt cp.async: poison until waited for, wait_prior(1) leaves the newest batch%s", emu_why().c_str());

    emu_reset();
    go(dim3(1), dim3(32), 32 * 4, [&] {
        WR_DYN_SMEM(uint32_t, sm);
        const unsigned k = threadIdx.x;
        __pipeline_memcpy_async(&sm[k], &src[k], 4);
        __pipeline_commit();
        __pipeline_memcpy_async(&sm[k], &src[32 + k], 4);
        __pipeline_commit();
        __pipeline_wait_prior(0);
        out[k] = sm[k];
        __pipeline_memcpy_async(&sm[k], &src[k], 4);   /* never waited for */
        __pipeline_commit();
    });
    ok = e_unw == 32;
    for (int k = 0; k < 32; k++)
        ok &= out[k] == src[k];
    CHECK(ok, "simt cp.async: of two copies in flight to one word the older lands last (%#x, %#x); "
              "each thread ending with a copy in flight is counted (%ld, 32)", out[0], src[0], e_unw);

    /* a 16-byte copy needs both ends 16-aligned (load_lut_async's): a source or a
       destination one word off is counted, an aligned pair is not, a 4-byte copy never */
    emu_reset();
    go(dim3(1), dim3(32), 128 * 4, [&] {
        WR_DYN_SMEM(uint32_t, sm);
        const unsigned k = threadIdx.x;
        if (k < 4)
            __pipeline_memcpy_async(&sm[4 * k], &src[4 * k], 16);           /* aligned */
        else if (k < 8)
            __pipeline_memcpy_async(&sm[4 * k], &src[4 * k + 1], 16);       /* source off */
        else if (k < 12)
            __pipeline_memcpy_async(&sm[4 * k + 1], &src[4 * k], 16);       /* destination off */
        else
            __pipeline_memcpy_async(&sm[48 + k], &src[k + 1], 4);           /* 4 bytes: any word */
        __pipeline_commit();
        __pipeline_wait_prior(0);
    });
    const long mis = e_mis;
    emu_reset();
    CHECK(mis == 8, "simt cp.async: a 16-byte copy with its source or destination not 16-aligned is counted "
                    "as misaligned (%ld, 8)", mis);
    dfree_all();
}

/* k_to_16: x to BF16 / F16, rounding to nearest even. */
static void check_to_16()
{
    const long long n = 1000;
    float *x = dnew<float>(n);
    uint16_t *o = dnew<uint16_t>(n);
    wr_make_x(x, (size_t)n, 5, 0);
    const float special[] = {0.0f, -0.0f, 1e-30f, -3e-8f, 65519.0f, 65520.0f, 1e30f, -INFINITY, 1.00390625f, 1.01171875f};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++)
        x[i] = special[i];
    for (long long i = 20; i < n; i += 7) {   /* ties and near-ties of both formats */
        uint32_t u = __float_as_uint(x[i]);
        x[i] = __uint_as_float((u & ~0xffffu) | (rnd() & 1 ? 0x8000u : 0x7fffu));
    }
    for (int f16 = 0; f16 < 2; f16++) {
        emu_reset();
        go(dim3((unsigned)((n + 255) / 256)), dim3(256), 0, [&] { k_to_16(x, o, n, f16); });
        bool ok = true;
        for (long long i = 0; i < n; i++)
            ok &= o[i] == (f16 ? wp_f32_to_fp16(x[i]) : wp_f32_to_bf16(x[i]));
        CHECK(ok && emu_ok(), "k_to_16 (%s, %lld values in 4 blocks of 256): = %s%s", f16 ? "F16" : "BF16", n,
              f16 ? "wp_f32_to_fp16" : "wp_f32_to_bf16", emu_why().c_str());
    }
    dfree_all();
}

/* k_gather: a row map's gather, y_all[b][r] = y[b][map[r]], batches 1 and 3, 300 distinct rows
   standing for 1000 (indices at random, the last distinct row among them), on a grid that
   covers every output and on one of 2 blocks (its grid-stride walk): = wr_cpu_gather bit for bit. */
static void check_gather()
{
    const long long rows = 300, rows_all = 1000;
    std::vector<uint8_t> mapb(4 * (size_t)rows_all);
    std::vector<uint32_t> vals((size_t)rows_all);   /* the indices as written, for a check of their own */
    for (long long r = 0; r < rows_all; r++) {
        const uint32_t v = r == 7 ? (uint32_t)rows - 1 : rnd() % (uint32_t)rows;
        vals[(size_t)r] = v;
        for (int k = 0; k < 4; k++)
            mapb[4 * (size_t)r + (size_t)k] = (uint8_t)(v >> 8 * k);
    }
    wr_matrix m;
    memset(&m, 0, sizeof m);
    m.rows = rows;
    m.rows_all = rows_all;
    m.rowmap.kind = WP_REC_ROWMAP;
    m.rowmap.payload = mapb.data();
    m.rowmap.payload_len = mapb.size();
    uint32_t *map = dnew<uint32_t>((size_t)rows_all);
    for (long long r = 0; r < rows_all; r++)   /* as wr_gpu_upload fills it */
        map[r] = wp_rowmap_row(&m.rowmap, (uint64_t)r);
    for (int batch : {1, 3}) {
        float *y = dnew<float>((size_t)(batch * rows)), *y_all = dnew<float>((size_t)(batch * rows_all));
        wr_make_x(y, (size_t)(batch * rows), 9, 0);
        std::vector<float> want((size_t)(batch * rows_all));
        wr_cpu_gather(&m, y, batch, want.data());
        for (unsigned blocks : {(unsigned)((batch * rows_all + 255) / 256), 2u}) {
            memset(y_all, 0xcd, sizeof(float) * (size_t)(batch * rows_all));
            emu_reset();
            go(dim3(blocks), dim3(256), 0, [&] { k_gather(y, map, rows, rows_all, batch, y_all); });
            bool same = !memcmp(y_all, want.data(), want.size() * sizeof(float));
            for (long long i = 0; i < batch * rows_all; i++)   /* and each output from its row as written */
                same &= y_all[i] == y[(i / rows_all) * rows + vals[(size_t)(i % rows_all)]];
            CHECK(same && emu_ok() && want[7] == y[rows - 1], "k_gather (batch %d, %lld of %lld rows, %u blocks of 256): "
                  "= wr_cpu_gather%s", batch, rows, rows_all, blocks, emu_why().c_str());
        }
    }
    dfree_all();
}

/* private_block_warps: the warps a block of k_fused_private gets at L = 11 on an H200 or
   H100 (227 KiB a block) and an A100 or Orin (163 KiB), its static shared memory 64
   bytes, with the deepest lanes (dmax 240 words) and the synthetic Q4_K's (57); fewer tiles than
   warps; and none where a one-warp block does not fit. */
static void check_private_plan()
{
    DevMat M;
    memset(&M, 0, sizeof M);
    M.L = 11;
    M.ntiles = 3584;
    const int dmax[2] = {240, 57};
    const int want[2][2][4] = {{{32, 24, 16, 9}, {11, 8, 5, 3}}, {{32, 32, 16, 11}, {23, 13, 7, 3}}};
    const size_t optin[2] = {H200_SMEM_OPTIN, 166912};
    for (int di = 0; di < 2; di++)
        for (int dv = 0; dv < 2; dv++)
            for (int bi = 0; bi < 4; bi++) {
                M.dmax = dmax[di];
                const int B = 1 << bi, w = private_block_warps(M, B, optin[dv], 64);
                CHECK(w == want[di][dv][bi] && private_smem_bytes(M, B, w) + 64 <= optin[dv] &&
                          (w == private_warps(B) || private_smem_bytes(M, B, w + 1) + 64 > optin[dv]),
                      "private_block_warps: L 11, dmax %d, %zu bytes a block, batch %d: %d warps (%d), %zu bytes",
                      dmax[di], optin[dv], B, w, want[di][dv][bi], private_smem_bytes(M, B, w) + 64);
            }
    M.dmax = 240;
    M.ntiles = 5;
    CHECK(private_block_warps(M, 1, H200_SMEM_OPTIN, 64) == 5, "private_block_warps: 5 tiles, 5 warps");
    /* private_shape: (tiles, warps that fit, SMs, blocks a SM) -> warps, blocks */
    const struct { unsigned long long n; int wf, sms, nb, w; unsigned g; } sh[] = {
        {3584, 32, 132, 1, 28, 128},   /* 4096 x 14336 on an H200 at batch 1 */
        {1024, 32, 132, 1, 8, 128},    /* 4096 x 4096 */
        {100000, 32, 132, 1, 32, 132}, /* more tiles than warps: persistent */
        {3584, 8, 108, 2, 8, 216},     /* two blocks a SM */
        {5, 32, 132, 1, 1, 5},         {34, 8, 2, 1, 8, 2}, {34, 32, 1, 1, 32, 1}};
    for (auto &c : sh) {
        int w = 0;
        unsigned g = 0;
        private_shape(c.n, c.wf, c.sms, c.nb, &w, &g);
        CHECK(w == c.w && g == c.g, "private_shape: %llu tiles, %d warps fit, %d SMs x %d: %d warps (%d) x %u blocks (%u)",
              c.n, c.wf, c.sms, c.nb, w, c.w, g, c.g);
    }
    M.ntiles = 3584;
    CHECK(private_block_warps(M, 8, 101376, 64) == 0 && private_block_warps(M, 8, 146000, 64) == 1,
          "private_block_warps: none in 99 KiB at L 11 (the table alone is 128 KiB), one warp at batch 8 in 142.6 KiB");
}

/* fused_smem_bytes, fused_lane_words and fused_groups: every warp's lane words and groups
   inside the launch's dynamic shared memory, none overlapping another (a warp's groups
   overlapping the next warp's passed every kernel check here: the emulator's warps seldom
   write them at once), the groups 8-aligned; and the bytes of the synthetic Q4_K's (dmax 58)
   and Q8_0's (109) and the deepest lanes (240). */
static void check_fused_plan()
{
    DevMat M;
    memset(&M, 0, sizeof M);
    const int dmax[4] = {1, 58, 109, 240};
    const size_t want[4][3] = {{64, 1024, 16448}, {1856, 30208, 18240}, {3520, 56320, 19904}, {7680, 123392, 24064}};
    for (int di = 0; di < 4; di++)
        for (int st = 0; st < 3; st++) {
            M.dmax = dmax[di];
            const size_t n = fused_smem_bytes(M, st);
            std::vector<std::pair<size_t, size_t>> part;   /* byte ranges [a, b) */
            uint32_t *dyn = reinterpret_cast<uint32_t *>(uintptr_t(1) << 20);
            const uintptr_t base = reinterpret_cast<uintptr_t>(dyn);
            bool aligned = true;
            for (unsigned w = 0; w < FUSED_WARPS; w++) {
                if (uint32_t *sw = fused_lane_words(M, dyn, st, w)) {
                    const size_t a = reinterpret_cast<uintptr_t>(sw) - base;
                    part.push_back({a, a + 4 * 32 * (size_t)(st == 1 ? staged_depth(M) : RING_WORDS)});
                }
                if (Group *g = fused_groups(M, dyn, st, w)) {
                    const size_t a = reinterpret_cast<uintptr_t>(g) - base;
                    aligned &= a % 8 == 0;
                    part.push_back({a, a + sizeof(Group) * (size_t)M.dmax});
                }
            }
            std::sort(part.begin(), part.end());
            bool ok = aligned && part.size() == (st == 2 ? 8u : 4u) && part.back().second <= n;
            for (size_t i = 1; i < part.size(); i++)
                ok &= part[i - 1].second <= part[i].first;
            CHECK(ok && n == want[di][st],
                  "fused_smem_bytes: dmax %d, %s: %zu bytes (%zu), each warp's lane words and groups apart inside them",
                  dmax[di], st == 0 ? "global" : st == 1 ? "staged" : "ring", n, want[di][st]);
        }
}

int main(void)
{
    char err[512];
    const auto t0 = std::chrono::steady_clock::now();
    check_private_plan();
    check_fused_plan();
    check_to_16();
    check_gather();
    check_async_copies();
    check_long_lane();
    check_ring_edges();
    check_stored();
    for (uint32_t t : {WP_Q2_K, WP_Q3_K, WP_Q4_K, WP_Q6_K})
        check_long_lane_type(t);
    for (uint32_t t : {WP_Q4_K, WP_Q6_K, WP_Q8_0})
        check_traffic(t);

    /* every coded type: a partial tile row and (32-weight blocks) a partial tile column */
    for (uint32_t t : qtypes) {
        const int blk = wp_ggml_blck_size(t);
        const int64_t cols = blk == 256 ? 768 : 544;
        wr_model md;
        memset(&md, 0, sizeof md);
        int rc = wr_model_synth(&md, t, 130, cols, (uint64_t)t + 11, err, sizeof err);
        CHECK(rc == 0, "synthetic %s 130x%lld (%s)", wp_ggml_type_name(t), (long long)cols, rc ? err : "ok");
        if (rc == 0)
            check_matrix(&md.m[0], true, false, false);
        wr_model_free(&md);
    }
    /* more tile rows than a block's warps (grid.y 2, the last block's warps partly idle) */
    {
        wr_model md;
        memset(&md, 0, sizeof md);
        int rc = wr_model_synth(&md, WP_Q4_K, 300, 512, 77, err, sizeof err);
        CHECK(rc == 0, "synthetic Q4_K 300x512");
        if (rc == 0)
            check_matrix(&md.m[0], false, false, false);
        wr_model_free(&md);
    }
    /* private: more tiles (34) than its blocks' warps, on one tile column (its sums then
       equal fused's bit for bit): one SM, 32 warps at batch 1, warps 0 and 1 taking a
       second tile; 16 at batch 4, warps 0 and 1 a third; and two SMs of blocks of 8
       warps (grid 2, a stride of 16 tiles) */
    {
        wr_model md;
        memset(&md, 0, sizeof md);
        uint8_t *ref = NULL;
        size_t len = 0;
        int rc = wr_model_synth(&md, WP_Q4_0, 64 * 33 + 10, 256, 78, err, sizeof err);
        rc = rc ? rc : wr_restore_bytes(&md.m[0], &ref, &len, err, sizeof err);
        Dev d;
        rc = rc ? rc : upload(d, &md.m[0], NULL, err, sizeof err);
        CHECK(rc == 0 && d.M.trows == 34, "synthetic Q4_0 2122x256 uploaded, %llu tile rows (34)%s%s",
              rc ? 0ULL : (unsigned long long)d.M.trows, rc ? ": " : "", rc ? err : "");
        if (rc == 0)
            for (int b : {1, 4}) {
                Ref r = make_ref(&md.m[0], ref, b, 40 + (uint64_t)b);
                check_private(d, r);
                g_priv_sms = 2;
                g_priv_wcap = 8;
                check_private(d, r, " (2 SMs, blocks of 8 warps)");
                g_priv_sms = 1;
                g_priv_wcap = 0;
            }
        free(ref);
        wr_model_free(&md);
        dfree_all();
    }

    /* floats: BF16 (palette pairs with verbatim groups; 300 x 512: 5 tile rows, 16 | cols;
       9 x 2112: 9 256-column steps in one split, k_palette's load-ahead buffers in rotation),
       F16, F32; odd row lengths; each BF16 matrix also as exponent bytes */
    struct { uint32_t t; int64_t rows, cols; uint64_t seed; } fl[] = {
        {WP_BF16, 130, 600, 3}, {WP_BF16, 300, 512, 99}, {WP_BF16, 70, 301, 17}, {WP_BF16, 9, 2112, 23},
        {WP_F16, 130, 600, 5},  {WP_F16, 70, 301, 6},    {WP_F32, 130, 600, 7}, {WP_F32, 70, 301, 8}};
    for (auto &f : fl) {
        wr_model md;
        memset(&md, 0, sizeof md);
        int rc = wr_model_synth(&md, f.t, f.rows, f.cols, f.seed, err, sizeof err);
        /* the 130-row ones hold verbatim groups, so the kernels' verbatim path runs for every float type */
        CHECK(rc == 0 && md.m[0].s.palette_n == 16 && (f.rows != 130 || md.m[0].s.n_verbatim > 0),
              "synthetic %s %lldx%lld: palette %d, %lld verbatim groups",
              wp_ggml_type_name(f.t), (long long)f.rows, (long long)f.cols, rc ? -1 : md.m[0].s.n_palette,
              rc ? -1LL : (long long)md.m[0].s.n_verbatim);
        if (rc == 0) {
            check_matrix(&md.m[0], f.t == WP_BF16, f.t == WP_BF16 && f.rows != 300, f.t == WP_BF16);
            /* the same weights as exponent bytes (palette 0) */
            if (f.t == WP_BF16) {
                wr_model p0;
                memset(&p0, 0, sizeof p0);
                int prc = make_split(&p0, &md.m[0], 0, WP_BF16_GROUP_DEFAULT, "pal0", err, sizeof err);
                CHECK(prc == 0, "%s as exponent bytes (palette 0) loaded%s%s", md.m[0].name, prc ? ": " : "",
                      prc ? err : "");
                if (prc == 0)
                    check_matrix(&p0.m[0], false, false, true);
                wr_model_free(&p0);
            }
            /* groups of 96 (not a divisor of 256): verbatim groups straddle the GEMVs' column
               splits; of 102 (not a multiple of 4): groups start off float4 alignment, and
               k_palette's correction reads x one float at a time there */
            if (f.t == WP_BF16 && f.rows == 130)
                for (int64_t gs : {96, 102}) {
                    wr_model gm;
                    memset(&gm, 0, sizeof gm);
                    char suf[16];
                    snprintf(suf, sizeof suf, "g%lld", (long long)gs);
                    int grc = make_split(&gm, &md.m[0], 16, gs, suf, err, sizeof err);
                    CHECK(grc == 0 && gm.m[0].s.n_verbatim > 0, "%s with groups of %lld loaded, %lld verbatim groups%s%s",
                          md.m[0].name, (long long)gs, grc ? -1LL : (long long)gm.m[0].s.n_verbatim, grc ? ": " : "",
                          grc ? err : "");
                    if (grc == 0)
                        check_matrix(&gm.m[0], true, true, gs == 96);
                    wr_model_free(&gm);
                }
        }
        wr_model_free(&md);
    }

    /* corruption */
    {
        wr_model md;
        memset(&md, 0, sizeof md);
        if (wr_model_synth(&md, WP_Q8_0, 64, 256, 5, err, sizeof err) == 0)
            corruptions(&md.m[0]);
        wr_model_free(&md);
        check_no_code(WP_Q8_0, 544, 34, 32);
        check_no_code(WP_Q4_K, 768, 144, 256);
        check_padding_bit();
        check_short_lane();
        memset(&md, 0, sizeof md);
        if (wr_model_synth(&md, WP_BF16, 70, 301, 17, err, sizeof err) == 0) {
            corruptions(&md.m[0]);
            check_short_palette(&md.m[0]);
        }
        wr_model_free(&md);
    }

    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("# %.1f s\n", s);
    return tap_done();
}
