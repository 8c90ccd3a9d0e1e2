/*
 * gpu.cu - wprun's CUDA kernels and their host wrappers (see gpu.h).
 *
 * Layout (lanes.h): a tile is 64 rows x 256 weights, lane k holds tile rows
 * 2k and 2k+1; the tile stores word i of every active lane together (ragged
 * interleave). One warp decodes one tile, thread k = lane k: the warp gets
 * group i's active mask as __ballot_sync(~0u, W_k > i) and lane k's word as
 * G(i) + __popc(mask & lanemask_lt); the masks and group starts G(i) are
 * computed once per tile into shared memory (D ballots, D <= 240), after
 * which each thread streams its own words. Each symbol is decoded from an
 * L-bit peek compared against the per-length limits in shared memory
 * (wr_huf_peek, the hardware unit's method), never a 2^L table.
 *
 * Kernels:
 *   k_restore       lane decode against the per-length limits -> exact ggml
 *                   blocks (wr_put_block) or BF16, in global memory (the
 *                   reference decoder, and the "full" pipeline for blocks)
 *   k_restore_exp   table decode -> BF16 (the "full" pipeline for BF16)
 *   k_fused_q<T,B>  fused decode + GEMV, batch B in {1,2,4,8}, type T a template
 *                   argument: codes looked up as values, weights only in registers
 *   k_fused_exp<B>  exponent-only decode, BF16 rebuilt in registers, GEMV
 *   k_transcode     lanes -> 4-bit palette indices in global memory
 *   k_palette<B>    GEMV from 4-bit palette indices + raw bytes (no Huffman)
 *   k_twin<T,B>     the twin: the same GEMV reading fixed-width ggml blocks
 *   cuBLAS          BF16 GEMM (cublasGemmEx, FP32 accumulate) for "full" and the baseline
 * The GEMV, transcode and BF16 restore kernels decode through a 2^L lookup
 * table in shared memory built on the host from the limits (build_lut).
 *
 * Measured on an H200 (README.md): every kernel bit-exact / within 1e-4, but
 * the fused kernels are 1.2-4.2x the twin at batch 1; Nsight Compute shows
 * them bound by issue and load latency of the serial lane decode (one thread
 * a lane, 3,584 warps for 4096 x 14336), with DRAM at ~5 %.
 *
 * TODO (not implemented, deliberately absent rather than half-working):
 *   - stage each tile's words through shared memory in coalesced 128-byte
 *     groups (each thread now loads its own words, two ahead);
 *   - the reconstructive GEMM for large batches (BF16 tiles rebuilt in shared
 *     memory feeding mma.sync); batches > 8 now run the fused kernels 8 at a time
 *     or the "full" pipeline;
 *   - autotuning of the SM split between decode and GEMM (the tuner now picks
 *     between whole pipelines per matrix and batch);
 *   - F16/F32 exponent-coded matrices on the device (BF16 only).
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gpu.h"

#define FUSED_WARPS 4
#define TWIN_WARPS 4
#define MAX_DEPTH WP_LANE_MAX_WORDS

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

/* ---- device view of a matrix ------------------------------------------------------ */

struct DevMat {
    const uint32_t *words, *offsets;
    const uint8_t *lane_words;
    const uint8_t *side;                     /* WR_Q side bytes */
    const uint8_t *palette, *vmap, *vbytes, *raw;
    const unsigned long long *vrow;          /* WR_EXP: vbytes offset of row r */
    int type, wps, bits, n, sub_n, side_bytes, block_bytes, palette_n, n_palette;  /* wps codes of bits bits per symbol */
    long long rows, cols, S, gpr, group;
    long long istride;                       /* palette index bytes a row (a multiple of 4) */
    unsigned long long n_words;              /* lane words of the matrix */
    int gshift;                              /* log2(group) when a power of 2, else -1 */
    int qoff, qnl;                           /* WR_Q: c(q) = kv[q] when qnl, else q - qoff */
    int L;                                   /* lookup-table bits (= max code length) */
    unsigned T;
    unsigned long long tcols, trows, ntiles;
    int *err;
};

/* Per-warp group geometry of one tile. */
struct Groups {
    uint32_t mask[MAX_DEPTH];
    uint32_t start[MAX_DEPTH];
};

struct Lane {
    const uint32_t *tw;
    const Groups *g;
    uint32_t W, next, lt;
    uint32_t q0, q1;          /* words next and next + 1, loaded ahead (prefetch distance 2) */
    unsigned long long buf;
    int nbits;
    unsigned long long pos;
};

struct TileGeo {
    unsigned long long r0, c0;   /* first row, first symbol column */
    unsigned h, w;               /* rows, symbols per row */
};

__device__ __forceinline__ TileGeo tile_geo(const DevMat &M, unsigned long long t)
{
    TileGeo g;
    unsigned long long tr = t / M.tcols, tc = t % M.tcols;
    g.r0 = tr * 64;
    g.c0 = tc * M.T;
    long long hh = M.rows - (long long)g.r0, ww = M.S - (long long)g.c0;
    g.h = (unsigned)(hh < 64 ? hh : 64);
    g.w = (unsigned)(ww < (long long)M.T ? ww : (long long)M.T);
    return g;
}

/* Word i of this thread's lane (0 past its end). */
__device__ __forceinline__ uint32_t lane_word(const Lane &L, uint32_t i)
{
    return i < L.W ? __ldg(L.tw + L.g->start[i] + __popc(L.g->mask[i] & L.lt)) : 0u;
}

/* Warp-collective: open tile t for this thread's lane. */
__device__ __forceinline__ void lane_open(const DevMat &M, unsigned long long t, Groups *g, Lane &L, unsigned &bad)
{
    const unsigned k = threadIdx.x & 31;
    uint32_t W = M.lane_words[t * 32 + k];
    uint32_t o0 = M.offsets[t], o1 = M.offsets[t + 1];
    bad |= W > MAX_DEPTH;
    W = W > MAX_DEPTH ? MAX_DEPTH : W;
    uint32_t D = __reduce_max_sync(0xffffffffu, W), G = 0;
    for (uint32_t i = 0; i < D; i++) {
        uint32_t m = __ballot_sync(0xffffffffu, W > i);
        if (k == 0) {
            g->mask[i] = m;
            g->start[i] = G;
        }
        G += __popc(m);
    }
    __syncwarp();
    bad |= (o1 < o0) || (G != o1 - o0) || (o1 > M.n_words);
    L.tw = M.words + o0;
    L.g = g;
    L.W = bad ? 0 : W;   /* corrupt offsets: read no word (the kernel flags the tile) */
    L.next = 0;
    L.lt = (1u << k) - 1;
    L.buf = 0;
    L.nbits = 0;
    L.pos = 0;
    L.q0 = lane_word(L, 0);
    L.q1 = lane_word(L, 1);
}

__device__ __forceinline__ int lane_sym(Lane &L, const wr_huf *h, unsigned &bad)
{
    if (L.nbits < 32) {
        const uint32_t v = L.q0;
        L.q0 = L.q1;
        L.q1 = lane_word(L, L.next + 2);
        L.next++;
        L.buf |= (unsigned long long)v << (32 - L.nbits);
        L.nbits += 32;
    }
    int len;
    int s = wr_huf_peek(h, (uint32_t)(L.buf >> (64 - h->L)), &len);
    bad |= s < 0;
    L.buf <<= len;
    L.nbits -= len;
    L.pos += (unsigned long long)len;
    return s < 0 ? 0 : s;
}

/* The canonical-form checks of lanes.h after a lane's last code. */
__device__ __forceinline__ void lane_close(const Lane &L, unsigned &bad)
{
    unsigned long long p = L.pos;
    bad |= p > 32ull * L.W;
    bad |= (p + 31) / 32 != L.W;
    if (p % 32)
        bad |= (L.buf >> (32 + p % 32)) != 0;
}

__device__ __forceinline__ void load_huf(wr_huf *dst, const wr_huf &src)
{
    const uint32_t *s = reinterpret_cast<const uint32_t *>(&src);
    uint32_t *d = reinterpret_cast<uint32_t *>(dst);
    for (unsigned i = threadIdx.x; i < sizeof(wr_huf) / 4; i += blockDim.x)
        d[i] = s[i];
}

/* BF16 bits of weight (row, col) of an exponent-coded matrix, from the
 * decoded symbol of its column (sym), its raw byte or its verbatim group. */
__device__ __forceinline__ uint16_t exp_bits(const DevMat &M, long long row, long long col, int sym, unsigned &bad)
{
    if (M.palette_n) {
        long long gi = col / M.group;
        unsigned long long bit = (unsigned long long)(row * M.gpr + gi);
        if ((M.vmap[bit / 8] >> (bit % 8)) & 1) {
            unsigned long long before = 0;
            for (unsigned long long b = (unsigned long long)(row * M.gpr); b < bit; b++)
                before += (M.vmap[b / 8] >> (b % 8)) & 1;
            const uint8_t *p = M.vbytes + M.vrow[row] + 2 * (before * M.group + (col - gi * M.group));
            return (uint16_t)(p[0] | p[1] << 8);
        }
        int idx = (sym >> (4 * (col & 1))) & 15;
        bad |= idx >= M.n_palette;
        return wr_bf16_rebuild(M.palette[idx], M.raw[row * M.cols + col]);
    }
    return wr_bf16_rebuild((uint32_t)sym, M.raw[row * M.cols + col]);
}

/* ---- restore kernels: one warp (block of 32) per tile -------------------------------- */

__global__ void __launch_bounds__(32) k_restore(DevMat M, wr_huf H, uint8_t *out, int is_exp)
{
    __shared__ wr_huf h;
    __shared__ Groups g;
    __shared__ uint8_t sbuf[64 * 256];
    const unsigned long long t = blockIdx.x;
    const unsigned k = threadIdx.x;
    load_huf(&h, H);
    __syncwarp();
    TileGeo tg = tile_geo(M, t);
    unsigned bad = 0;
    Lane L;
    lane_open(M, t, &g, L, bad);
    for (unsigned r = 2 * k; r < tg.h && r < 2 * k + 2; r++)
        for (unsigned c = 0; c < tg.w; c++)
            sbuf[r * 256 + c] = (uint8_t)lane_sym(L, &h, bad);
    lane_close(L, bad);
    __syncwarp();
    if (!is_exp) {
        const unsigned nw = tg.w * (unsigned)M.wps, nbt = nw / (unsigned)M.n;
        const unsigned long long bpr = (unsigned long long)M.cols / (unsigned long long)M.n;
        const unsigned long long c0w = tg.c0 * (unsigned long long)M.wps;
        uint8_t q[256];
        for (unsigned it = k; it < tg.h * nbt; it += 32) {
            unsigned r = it / nbt, jb = it % nbt;
            const uint8_t *s = sbuf + r * 256 + jb * (unsigned)M.n / (unsigned)M.wps;
            wr_unpack(s, M.bits, M.wps, M.n, q);
            unsigned long long b = (tg.r0 + r) * bpr + c0w / (unsigned long long)M.n + jb;
            uint8_t blk[256];
            wr_put_block(M.type, M.side + b * (unsigned long long)M.side_bytes, q, blk);
            uint8_t *dst = out + b * (unsigned long long)M.block_bytes;
            for (int j = 0; j < M.block_bytes; j++)
                dst[j] = blk[j];
        }
    } else {
        const unsigned long long c0w = M.palette_n ? 2 * tg.c0 : tg.c0;
        long long nw = M.cols - (long long)c0w;
        nw = nw < 256 ? nw : 256;
        for (unsigned it = k; it < tg.h * (unsigned)nw; it += 32) {
            unsigned r = it / (unsigned)nw, j = it % (unsigned)nw;
            long long row = (long long)tg.r0 + r, col = (long long)c0w + j;
            int sym = sbuf[r * 256 + (M.palette_n ? j / 2 : j)];
            uint16_t v = exp_bits(M, row, col, sym, bad);
            out[2 * (row * M.cols + col)] = (uint8_t)v;
            out[2 * (row * M.cols + col) + 1] = (uint8_t)(v >> 8);
        }
    }
    if (bad)
        atomicOr(M.err, 1);
}

/* ---- fast decode: a 2^L lookup table in shared memory ----------------------------------
 * The GEMV kernels decode with one shared-memory load a symbol: entry p of
 * the table (p = the next L bits) is len | flags << 4 | payload << 8, built on
 * the host from the same limit tables (build_lut) so it decodes exactly what
 * wr_huf_peek decodes; len 0 marks a peek no code starts with (corrupt).
 * Payload: the symbol (ggml codes, exponent bytes), or for palette pairs the
 * two exponents palette[sym & 15] | palette[sym >> 4] << 8 with flag bit u set
 * when index u of the pair is not in the palette. */

#define LUT_MAX (1 << 15)

__device__ __forceinline__ uint32_t lane_next(Lane &L, const uint32_t *lut, int Lb, unsigned &bad)
{
    if (L.nbits < 32) {
        const uint32_t v = L.q0;
        L.q0 = L.q1;
        L.q1 = lane_word(L, L.next + 2);
        L.next++;
        L.buf |= (unsigned long long)v << (32 - L.nbits);
        L.nbits += 32;
    }
    const uint32_t e = lut[(uint32_t)(L.buf >> (64 - Lb))];
    const uint32_t len = e & 15u;
    bad |= len == 0;
    L.buf <<= len;
    L.nbits -= (int)len;
    L.pos += len;
    return e;
}

/* Stage the lookup table (2^L words) into shared memory, block-wide. */
__device__ __forceinline__ void load_lut(uint32_t *dst, const uint32_t *__restrict__ src, int Lb)
{
    for (unsigned i = threadIdx.x; i < (1u << Lb); i += blockDim.x)
        dst[i] = __ldg(src + i);
}

/* The original bytes of a weight in a verbatim group (slow path, rare):
 * the group's bytes follow those of the row's earlier verbatim groups. */
__device__ __noinline__ uint32_t verbatim_bf16(const DevMat &M, long long row, long long col, bool &is_v)
{
    long long gi = col / M.group;
    unsigned long long bit = (unsigned long long)(row * M.gpr + gi);
    is_v = (M.vmap[bit / 8] >> (bit % 8)) & 1;
    if (!is_v)
        return 0;
    unsigned long long before = 0;
    for (unsigned long long b = (unsigned long long)(row * M.gpr); b < bit; b++)
        before += (M.vmap[b / 8] >> (b % 8)) & 1;
    const uint8_t *p = M.vbytes + M.vrow[row] + 2 * (before * M.group + (col - gi * M.group));
    return (uint32_t)(p[0] | p[1] << 8);
}

/* Set bits of vmap in [lo, hi) (bit i = byte i / 8, LSB first). */
__device__ __forceinline__ unsigned long long vmap_count(const uint8_t *vmap, unsigned long long lo,
                                                         unsigned long long hi)
{
    unsigned long long n = 0;
    for (; lo < hi && (lo & 7); lo++)
        n += (vmap[lo / 8] >> (lo & 7)) & 1;
    for (; lo + 8 <= hi; lo += 8)
        n += __popc(vmap[lo / 8]);
    for (; lo < hi; lo++)
        n += (vmap[lo / 8] >> (lo & 7)) & 1;
    return n;
}

/* The verbatim groups of one row over columns [c0, c0 + nw): bit i of mask
 * = group g0 + i is verbatim, vb = byte offset in vbytes of the first
 * verbatim group at or after g0 (given `before`, the row's verbatim groups
 * ahead of g0). ok = 0 when more than 32 groups overlap the span (groups
 * under 8 weights): then every weight takes verbatim_bf16. */
struct VRow {
    uint32_t mask;
    int ok;
    long long g0;
    unsigned long long vb;
};

__device__ __forceinline__ VRow vrow_span(const DevMat &M, long long row, long long c0, int nw,
                                          unsigned long long before)
{
    VRow V;
    V.g0 = c0 / M.group;
    V.mask = 0;
    V.ok = 1;
    V.vb = M.vrow[row] + 2ull * before * (unsigned long long)M.group;
    const long long g1 = (c0 + nw - 1) / M.group;
    if (g1 - V.g0 + 1 > 32) {
        V.ok = 0;
        return V;
    }
    const unsigned long long b = (unsigned long long)(row * M.gpr + V.g0);
    for (int i = 0; i <= (int)(g1 - V.g0); i++)
        V.mask |= (uint32_t)((M.vmap[(b + i) / 8] >> ((b + i) & 7)) & 1) << i;
    return V;
}

/* vrow_span for a tile row: counts the row's verbatim groups ahead of it. */
__device__ __forceinline__ VRow vrow_tile(const DevMat &M, long long row, long long c0, int nw)
{
    if (M.vrow[row + 1] == M.vrow[row]) {   /* no verbatim group in the row */
        VRow V = {0u, 1, 0, 0};
        return V;
    }
    const unsigned long long b0 = (unsigned long long)(row * M.gpr);
    return vrow_span(M, row, c0, nw, vmap_count(M.vmap, b0, b0 + (unsigned long long)(c0 / M.group)));
}

/* The BF16 bits of weight (row, col) when it is in a verbatim group of V
 * (*is_v = 1), else *is_v = 0. */
__device__ __forceinline__ uint32_t vrow_bits(const DevMat &M, const VRow &V, long long row, long long col, bool &is_v)
{
    if (!V.ok)
        return verbatim_bf16(M, row, col, is_v);
    const long long local = col - V.g0 * M.group;
    const int gi = (int)(M.gshift >= 0 ? local >> M.gshift : local / M.group);
    is_v = (V.mask >> gi) & 1;
    if (!is_v)
        return 0;
    const unsigned long long at =
        V.vb + 2ull * ((unsigned long long)__popc(V.mask & ((1u << gi) - 1)) * (unsigned long long)M.group +
                       (unsigned long long)(local - (long long)gi * M.group));
    return (uint32_t)(M.vbytes[at] | M.vbytes[at + 1] << 8);
}

/* float of BF16 bits sign|exp|mantissa from an exponent and a raw byte (sign << 7 | mantissa). */
__device__ __forceinline__ float bf16_value(uint32_t e, uint32_t raw)
{
    return __uint_as_float((raw & 0x80u) << 24 | (e & 255u) << 23 | (raw & 0x7fu) << 16);
}

/* ---- fused decode + GEMV, ggml block types ------------------------------------------------
 * Block = FUSED_WARPS warps on the tiles of one tile column (blockIdx.x) and
 * FUSED_WARPS consecutive tile rows; the column's x slice (B x 256 floats)
 * and its per-sub-block sums sit in shared memory. Thread k walks rows 2k,
 * 2k+1 sub-block by sub-block: dot = sum c(q) x over the sub-block, then
 * acc += dl * dot - ml * sum(x) (the factored form of wr_value), for B
 * vectors in registers; one atomicAdd a row and vector at the end (y zeroed
 * first). TYPE is a template argument, so the block geometry (wr_geom_of)
 * folds into constants. */

/* ---- the tile kernels' common frame --------------------------------------------------------
 * Block = FUSED_WARPS warps on the tiles of one tile column (blockIdx.x) and
 * FUSED_WARPS consecutive tile rows: warp w takes tile row tr. */
struct TilePos {
    unsigned warp, k;               /* warp in the block, lane (thread) in the warp */
    unsigned long long tc, tr;      /* tile column, tile row */
    long long c0w;                  /* first weight column of the tile */
    int nw;                         /* weights a tile row (256, fewer at the right edge) */
};

__device__ __forceinline__ TilePos tile_pos(const DevMat &M)
{
    TilePos p;
    p.warp = threadIdx.x / 32;
    p.k = threadIdx.x % 32;
    p.tc = blockIdx.x;
    p.tr = (unsigned long long)blockIdx.y * FUSED_WARPS + p.warp;
    p.c0w = (long long)p.tc * 256;
    p.nw = (int)(M.cols - p.c0w < 256 ? M.cols - p.c0w : 256);
    return p;
}

/* Stage the tile column's slice of the B input vectors in shared memory
 * (zeros past the row end), block-wide; the caller syncs. */
template <int B>
__device__ __forceinline__ void stage_x(float (*xs)[256], const DevMat &M, const float *x, const TilePos &p)
{
    for (int i = threadIdx.x; i < B * 256; i += blockDim.x) {
        int b = i / 256, j = i % 256;
        xs[b][j] = j < p.nw ? x[(long long)b * M.cols + p.c0w + j] : 0.0f;
    }
}

/* End of a GEMV tile: check the lane, add thread k's sums of rows 2k, 2k+1
 * to y (zeroed before the launch), flag a corrupt tile. */
template <int B>
__device__ __forceinline__ void finish_gemv(const DevMat &M, const TileGeo &tg, unsigned k, const Lane &L,
                                            const float (&acc)[2][B], unsigned bad, float *y)
{
    lane_close(L, bad);
#pragma unroll
    for (int rr = 0; rr < 2; rr++) {
        const unsigned r = 2 * k + rr;
        if (r < tg.h)
#pragma unroll
            for (int b = 0; b < B; b++)
                atomicAdd(&y[(long long)b * M.rows + (long long)tg.r0 + r], acc[rr][b]);
    }
    if (bad)
        atomicOr(M.err, 1);
}

/* Codes a symbol of a type holds (wr_geom_of's wps, as a constant for the
 * templates; wr_gpu_upload checks that the two agree). */
__host__ __device__ constexpr int dev_wps(int type)
{
    return type == WP_Q2_K ? 4
           : (type == WP_Q4_0 || type == WP_Q4_1 || type == WP_IQ4_NL || type == WP_Q3_K || type == WP_Q4_K ||
              type == WP_IQ4_XS) ? 2
                                 : 1;
}

/* The code values c(q) of one symbol's wps codes, as one shared-memory
 * load: float, float2 or float4. */
template <int WPS> struct ValT;
template <> struct ValT<1> { typedef float T; };
template <> struct ValT<2> { typedef float2 T; };
template <> struct ValT<4> { typedef float4 T; };
__device__ __forceinline__ float val_get(float v, int) { return v; }
__device__ __forceinline__ float val_get(float2 v, int u) { return u ? v.y : v.x; }
__device__ __forceinline__ float val_get(float4 v, int u) { return u == 0 ? v.x : u == 1 ? v.y : u == 2 ? v.z : v.w; }
__device__ __forceinline__ void val_set(float &v, int, float c) { v = c; }
__device__ __forceinline__ void val_set(float2 &v, int u, float c) { (u ? v.y : v.x) = c; }
__device__ __forceinline__ void val_set(float4 &v, int u, float c)
{
    (u == 0 ? v.x : u == 1 ? v.y : u == 2 ? v.z : v.w) = c;
}

template <int TYPE, int B>
__global__ void __launch_bounds__(32 * FUSED_WARPS, B <= 2 ? 8 : 4) k_fused_q(DevMat M, const uint32_t *__restrict__ glut,
                                                              const float *__restrict__ x, float *__restrict__ y)
{
    constexpr int WPS = dev_wps(TYPE);
    typedef typename ValT<WPS>::T V;
    const wr_geom G = wr_geom_of(TYPE);
    __shared__ uint32_t lut[1 << 11];
    __shared__ V vt[256];   /* symbol -> its codes' values c(q) */
    __shared__ Groups g[FUSED_WARPS];
    __shared__ float xs[B][256];
    __shared__ float xsum[B][16];
    const TilePos P = tile_pos(M);
    const unsigned warp = P.warp, k = P.k;
    const unsigned long long tc = P.tc, tr = P.tr;
    const long long c0w = P.c0w;
    const int nw = P.nw;
    load_lut(lut, glut, M.L);
    for (int sy = threadIdx.x; sy < 256; sy += blockDim.x) {
        V v;
#pragma unroll
        for (int u = 0; u < WPS; u++) {
            const int q = (sy >> (G.bits * u)) & ((1 << G.bits) - 1);
            val_set(v, u, M.qnl ? wr_kv(q) : (float)(q - M.qoff));
        }
        vt[sy] = v;
    }
    stage_x<B>(xs, M, x, P);
    __syncthreads();
    for (int i = threadIdx.x; i < B * 16; i += blockDim.x) {
        int b = i / 16, sb = i % 16;
        float a = 0.0f;
        if (sb < 256 / G.sub_n)
            for (int j = 0; j < G.sub_n; j++)
                a += xs[b][sb * G.sub_n + j];
        xsum[b][sb] = a;
    }
    __syncthreads();
    if (tr >= M.trows)
        return;
    const unsigned long long t = tr * M.tcols + tc;
    TileGeo tg = tile_geo(M, t);
    unsigned bad = 0;
    Lane L;
    lane_open(M, t, &g[warp], L, bad);
    float acc[2][B] = {};
    const unsigned long long bpr = (unsigned long long)(M.cols / G.n);
    const int nsub = nw / G.sub_n;
#pragma unroll
    for (int rr = 0; rr < 2; rr++) {
        const unsigned r = 2 * k + rr;
        if (r >= tg.h)
            break;
        const unsigned long long row = tg.r0 + r;
        const uint8_t *sp = M.side + (row * bpr + (unsigned long long)c0w / G.n) * (unsigned)G.side;
        for (int sb = 0; sb < nsub; sb++) {
            const int jb = sb * G.sub_n / G.n, sib = sb * G.sub_n % G.n / G.sub_n;
            const wr_scale sc = wr_sub_scale(TYPE, sp + jb * G.side, sib);
            float dot[B];
#pragma unroll
            for (int b = 0; b < B; b++)
                dot[b] = 0.0f;
#pragma unroll
            for (int i = 0; i < G.sub_n / WPS; i++) {
                const V cv = vt[(lane_next(L, lut, M.L, bad) >> 8) & 255];
#pragma unroll
                for (int u = 0; u < WPS; u++) {
                    const float c = val_get(cv, u);
                    const int j = sb * G.sub_n + i * WPS + u;
#pragma unroll
                    for (int b = 0; b < B; b++)
                        dot[b] = fmaf(c, xs[b][j], dot[b]);
                }
            }
#pragma unroll
            for (int b = 0; b < B; b++)
                acc[rr][b] += sc.dl * dot[b] - sc.ml * xsum[b][sb];
        }
    }
    finish_gemv<B>(M, tg, k, L, acc, bad, y);
}

/* ---- fused exponent-only decode + GEMV (BF16) ---------------------------------------------
 * The same tiling; each decoded symbol gives one exponent (palette 0) or two
 * (palette pairs, transcoded by the lookup table); BF16 is rebuilt in
 * registers from the exponent and the raw byte. Rows with verbatim groups
 * (vrow[r + 1] > vrow[r]) take the slow path for weights of those groups. */

/* BF16 bits of weight (row, col) from its decoded table entry e (exponent
 * u of the symbol), its raw byte and the row's verbatim groups V; flags
 * palette indices outside the palette in bad. */
template <bool PAL>
__device__ __forceinline__ uint32_t exp_weight(const DevMat &M, const VRow &V, bool hasv, long long row,
                                               long long col, uint32_t e, int u, uint32_t raw, unsigned &bad)
{
    uint32_t bits = (raw & 0x80u) << 8 | ((e >> (8 + 8 * u)) & 255u) << 7 | (raw & 0x7fu);
    if (hasv) {
        bool is_v;
        const uint32_t vb = vrow_bits(M, V, row, col, is_v);
        if (is_v)
            bits = vb;
        else
            bad |= (e >> (4 + u)) & 1;
    } else if (PAL) {
        bad |= (e >> (4 + u)) & 1;
    }
    return bits;
}

template <int B, bool PAL>
__global__ void __launch_bounds__(32 * FUSED_WARPS, B <= 2 ? 7 : 4) k_fused_exp(DevMat M, const uint32_t *__restrict__ glut,
                                                                const float *__restrict__ x, float *__restrict__ y)
{
    constexpr int WPS = PAL ? 2 : 1;
    __shared__ uint32_t lut[1 << 11];
    __shared__ Groups g[FUSED_WARPS];
    __shared__ float xs[B][256];
    const TilePos P = tile_pos(M);
    const unsigned warp = P.warp, k = P.k;
    const unsigned long long tc = P.tc, tr = P.tr;
    const long long c0w = P.c0w;
    const int nw = P.nw;
    load_lut(lut, glut, M.L);
    stage_x<B>(xs, M, x, P);
    __syncthreads();
    if (tr >= M.trows)
        return;
    const unsigned long long t = tr * M.tcols + tc;
    TileGeo tg = tile_geo(M, t);
    unsigned bad = 0;
    Lane L;
    lane_open(M, t, &g[warp], L, bad);
    float acc[2][B] = {};
#pragma unroll
    for (int rr = 0; rr < 2; rr++) {
        const unsigned r = 2 * k + rr;
        if (r >= tg.h)
            break;
        const long long row = (long long)(tg.r0 + r);
        const uint8_t *rawp = M.raw + row * M.cols + c0w;
        VRow V = {0u, 1, 0, 0};
        if (PAL)
            V = vrow_tile(M, row, c0w, nw);
        const bool hasv = PAL && (V.mask || !V.ok);
        if (M.cols % 8 == 0) {   /* 8 raw bytes at a time (aligned: own allocation, 8 | cols) */
            for (unsigned c0 = 0; c0 < tg.w; c0 += 8 / WPS) {
                const uint2 rv = __ldg(reinterpret_cast<const uint2 *>(rawp + c0 * WPS));
                const uint32_t rw[2] = {rv.x, rv.y};
#pragma unroll
                for (int cc = 0; cc < 8 / WPS; cc++) {
                    const uint32_t e = lane_next(L, lut, M.L, bad);
#pragma unroll
                    for (int u = 0; u < WPS; u++) {
                        const int jj = cc * WPS + u, j = (int)c0 * WPS + jj;
                        const uint32_t bits = exp_weight<PAL>(M, V, hasv, row, c0w + j, e, u,
                                                              (rw[jj / 4] >> (8 * (jj % 4))) & 255u, bad);
                        const float v = __uint_as_float(bits << 16);
#pragma unroll
                        for (int b = 0; b < B; b++)
                            acc[rr][b] = fmaf(v, xs[b][j], acc[rr][b]);
                    }
                }
            }
        } else {
            for (unsigned c = 0; c < tg.w; c++) {
                const uint32_t e = lane_next(L, lut, M.L, bad);
#pragma unroll
                for (int u = 0; u < WPS; u++) {
                    const int j = (int)c * WPS + u;
                    if (PAL && j >= nw)
                        break;
                    const uint32_t bits = exp_weight<PAL>(M, V, hasv, row, c0w + j, e, u, __ldg(rawp + j), bad);
                    const float v = __uint_as_float(bits << 16);
#pragma unroll
                    for (int b = 0; b < B; b++)
                        acc[rr][b] = fmaf(v, xs[b][j], acc[rr][b]);
                }
            }
        }
    }
    finish_gemv<B>(M, tg, k, L, acc, bad, y);
}

/* ---- fast BF16 restore (the "full" pipeline's decode) ------------------------------------
 * The tiling and table decode of k_fused_exp; each weight's BF16 bits are
 * stored straight to out (thread k writes rows 2k, 2k+1). */

template <bool PAL>
__global__ void __launch_bounds__(32 * FUSED_WARPS, 7) k_restore_exp(DevMat M, const uint32_t *__restrict__ glut,
                                                                  uint16_t *__restrict__ out)
{
    constexpr int WPS = PAL ? 2 : 1;
    __shared__ uint32_t lut[1 << 11];
    __shared__ Groups g[FUSED_WARPS];
    const TilePos P = tile_pos(M);
    const unsigned warp = P.warp, k = P.k;
    const unsigned long long tc = P.tc, tr = P.tr;
    const long long c0w = P.c0w;
    const int nw = P.nw;
    load_lut(lut, glut, M.L);
    __syncthreads();
    if (tr >= M.trows)
        return;
    const unsigned long long t = tr * M.tcols + tc;
    TileGeo tg = tile_geo(M, t);
    unsigned bad = 0;
    Lane L;
    lane_open(M, t, &g[warp], L, bad);
    for (unsigned r = 2 * k; r < tg.h && r < 2 * k + 2; r++) {
        const long long row = (long long)(tg.r0 + r);
        const uint8_t *rawp = M.raw + row * M.cols + c0w;
        uint16_t *dst = out + row * M.cols + c0w;
        VRow V = {0u, 1, 0, 0};
        if (PAL)
            V = vrow_tile(M, row, c0w, nw);
        const bool hasv = PAL && (V.mask || !V.ok);
        if (M.cols % 16 == 0) {   /* 16 raw bytes in, 32 bytes out at a time (aligned) */
            for (unsigned c0 = 0; c0 < tg.w; c0 += 16 / WPS) {
                const uint4 rv = __ldg(reinterpret_cast<const uint4 *>(rawp + c0 * WPS));
                const uint32_t rw[4] = {rv.x, rv.y, rv.z, rv.w};
                uint32_t ow[8];
#pragma unroll
                for (int cc = 0; cc < 16 / WPS; cc++) {
                    const uint32_t e = lane_next(L, lut, M.L, bad);
#pragma unroll
                    for (int u = 0; u < WPS; u++) {
                        const int jj = cc * WPS + u;
                        const uint32_t bits = exp_weight<PAL>(M, V, hasv, row, c0w + c0 * WPS + jj, e, u,
                                                              (rw[jj / 4] >> (8 * (jj % 4))) & 255u, bad);
                        if (jj % 2)
                            ow[jj / 2] |= bits << 16;
                        else
                            ow[jj / 2] = bits;
                    }
                }
                uint4 *o = reinterpret_cast<uint4 *>(dst + c0 * WPS);
                o[0] = make_uint4(ow[0], ow[1], ow[2], ow[3]);
                o[1] = make_uint4(ow[4], ow[5], ow[6], ow[7]);
            }
        } else {
            for (unsigned c = 0; c < tg.w; c++) {
                const uint32_t e = lane_next(L, lut, M.L, bad);
#pragma unroll
                for (int u = 0; u < WPS; u++) {
                    const int j = (int)c * WPS + u;
                    if (PAL && j >= nw)
                        break;
                    dst[j] = (uint16_t)exp_weight<PAL>(M, V, hasv, row, c0w + j, e, u, __ldg(rawp + j), bad);
                }
            }
        }
    }
    lane_close(L, bad);
    if (bad)
        atomicOr(M.err, 1);
}

/* ---- palette transcode: lanes -> 4-bit palette indices in global memory ---------------------
 * One warp a tile, as the fused kernels; each decoded pair symbol is the
 * byte idx[2j] | idx[2j+1] << 4, written to the index array (row stride
 * istride bytes) that the palette kernel reads. */

__global__ void __launch_bounds__(32 * FUSED_WARPS, 8) k_transcode(DevMat M, const uint32_t *__restrict__ glut,
                                                                uint8_t *__restrict__ idx)
{
    __shared__ uint32_t lut[1 << 11];
    __shared__ Groups g[FUSED_WARPS];
    const TilePos P = tile_pos(M);
    const unsigned warp = P.warp, k = P.k;
    const unsigned long long tc = P.tc, tr = P.tr;
    load_lut(lut, glut, M.L);
    __syncthreads();
    if (tr >= M.trows)
        return;
    const unsigned long long t = tr * M.tcols + tc;
    TileGeo tg = tile_geo(M, t);
    unsigned bad = 0;
    Lane L;
    lane_open(M, t, &g[warp], L, bad);
    for (unsigned r = 2 * k; r < tg.h && r < 2 * k + 2; r++) {
        uint8_t *dst = idx + (tg.r0 + r) * (unsigned long long)M.istride + tg.c0;
        if (tg.w % 4 == 0) {   /* 4 symbols a store (aligned: 4 | istride, 128 | c0) */
            for (unsigned c = 0; c < tg.w; c += 4) {
                uint32_t w = 0;
#pragma unroll
                for (int cc = 0; cc < 4; cc++) {
                    const uint32_t e = lane_next(L, lut, M.L, bad);
                    bad |= (e >> 4) & 3;   /* an index without a palette entry (slots of verbatim
                                              groups and pad nibbles hold 0) */
                    w |= (e >> 24) << (8 * cc);
                }
                *reinterpret_cast<uint32_t *>(dst + c) = w;
            }
        } else {
            for (unsigned c = 0; c < tg.w; c++) {
                const uint32_t e = lane_next(L, lut, M.L, bad);
                bad |= (e >> 4) & 3;
                dst[c] = (uint8_t)(e >> 24);
            }
        }
    }
    lane_close(L, bad);
    if (bad)
        atomicOr(M.err, 1);
}

/* ---- direct palette GEMV: 4-bit indices + raw bytes (no Huffman at run time) ----------------
 * One warp a row; lane l takes 8 weights at a time (one 32-bit word of
 * indices, 8 raw bytes); warp-shuffle reduction. 12 bits a weight read. */

template <int B, bool AL>
__global__ void __launch_bounds__(32 * TWIN_WARPS, B <= 2 ? 8 : 4) k_palette(DevMat M, const uint8_t *__restrict__ idx,
                                                             const float *__restrict__ x, float *__restrict__ y)
{
    __shared__ uint32_t pal[16];
    if (threadIdx.x < 16)
        pal[threadIdx.x] = M.palette[threadIdx.x];
    __syncthreads();
    const long long row = (long long)blockIdx.x * TWIN_WARPS + threadIdx.x / 32;
    const unsigned l = threadIdx.x % 32;
    if (row >= M.rows)
        return;
    const bool hasv = M.vrow[row + 1] > M.vrow[row];
    const uint32_t *iw = reinterpret_cast<const uint32_t *>(idx + row * M.istride);
    const uint8_t *rawp = M.raw + row * M.cols;
    float acc[B];
#pragma unroll
    for (int b = 0; b < B; b++)
        acc[b] = 0.0f;
    unsigned long long before = 0;   /* the row's verbatim groups ahead of this step's span */
    for (long long c0 = 0; c0 < M.cols; c0 += 256) {
        const int nw = (int)(M.cols - c0 < 256 ? M.cols - c0 : 256);
        VRow V = {0u, 1, 0, 0};
        if (hasv) {   /* the same span for every lane: uniform loads */
            V = vrow_span(M, row, c0, nw, before);
            /* the groups wholly before the next step's span, counted from vmap (also when
               V.ok = 0, where the mask is not kept) */
            const unsigned long long b0 = (unsigned long long)(row * M.gpr);
            before += vmap_count(M.vmap, b0 + (unsigned long long)V.g0, b0 + (unsigned long long)((c0 + 256) / M.group));
        }
        const long long j0 = c0 + 8 * l;
        if (j0 >= M.cols)
            continue;
        const uint32_t ix = __ldg(iw + j0 / 8);
        /* AL (8 | cols): 8 raw bytes and 2 x float4 a load (aligned: own allocations) */
        uint2 r8 = make_uint2(0, 0);
        float xv[B][8];
        if (AL) {
            r8 = __ldg(reinterpret_cast<const uint2 *>(rawp + j0));
#pragma unroll
            for (int b = 0; b < (B <= 2 ? B : 0); b++) {
                const float4 *xp = reinterpret_cast<const float4 *>(x + (long long)b * M.cols + j0);
                const float4 a = __ldg(xp), c = __ldg(xp + 1);
                xv[b][0] = a.x, xv[b][1] = a.y, xv[b][2] = a.z, xv[b][3] = a.w;
                xv[b][4] = c.x, xv[b][5] = c.y, xv[b][6] = c.z, xv[b][7] = c.w;
            }
        }
#pragma unroll
        for (int u = 0; u < 8; u++) {
            const long long j = j0 + u;
            if (!AL && j >= M.cols)
                break;
            const uint32_t raw = AL ? ((u < 4 ? r8.x : r8.y) >> (8 * (u % 4))) & 255u : __ldg(rawp + j);
            float v = bf16_value(pal[(ix >> (4 * u)) & 15], raw);
            if (hasv && (V.mask || !V.ok)) {
                bool is_v;
                uint32_t bits = vrow_bits(M, V, row, j, is_v);
                if (is_v)
                    v = __uint_as_float(bits << 16);
            }
#pragma unroll
            for (int b = 0; b < B; b++)
                acc[b] = fmaf(v, AL && B <= 2 ? xv[b][u] : __ldg(x + (long long)b * M.cols + j), acc[b]);
        }
    }
#pragma unroll
    for (int b = 0; b < B; b++) {
        float a = acc[b];
        for (int o = 16; o; o >>= 1)
            a += __shfl_xor_sync(0xffffffffu, a, o);
        if (l == 0)
            y[(long long)b * M.rows + row] = a;
    }
}

/* ---- the twin: the same GEMV on fixed-width ggml blocks -------------------------------
 * One warp per row; lane l takes the row's sub-blocks l, l+32, ... (codes
 * read from the block bytes with wr_get_code, the scale from its side
 * bytes), the same factored sum as k_fused_q; warp-shuffle reduction. */

/* The sub-block scale of a fixed-width block, read in place. */
template <int TYPE>
__device__ __forceinline__ wr_scale blk_scale(const uint8_t *blk, int s)
{
    if (TYPE == WP_Q2_K) {   /* side = scales[16] at 0, d and dmin at 80 */
        wr_scale r = {0.0f, 0.0f, 0, 0};
        r.dl = wr_fp16_to_f32(wr_rd16(blk + 80)) * (float)(blk[s] & 15);
        r.ml = wr_fp16_to_f32(wr_rd16(blk + 82)) * (float)(blk[s] >> 4);
        return r;
    }
    int off[2], len[2];
    wr_side_spans(TYPE, off, len);
    return wr_sub_scale(TYPE, blk + off[0], s);
}

template <int TYPE, int B>
__global__ void __launch_bounds__(32 * TWIN_WARPS) k_twin(DevMat M, const uint8_t *__restrict__ blocks,
                                                          const float *__restrict__ x, float *__restrict__ y)
{
    constexpr int NL = TYPE == WP_IQ4_NL || TYPE == WP_IQ4_XS;
    const wr_geom G = wr_geom_of(TYPE);
    __shared__ float kv[16];
    if (threadIdx.x < 16)
        kv[threadIdx.x] = wr_kv((int)threadIdx.x);
    __syncthreads();
    const long long row = (long long)blockIdx.x * TWIN_WARPS + threadIdx.x / 32;
    const unsigned l = threadIdx.x % 32;
    if (row >= M.rows)
        return;
    const unsigned bpr = (unsigned)(M.cols / G.n);
    const uint8_t *rb = blocks + (unsigned long long)row * bpr * G.bytes;
    float acc[B];
#pragma unroll
    for (int b = 0; b < B; b++)
        acc[b] = 0.0f;
    /* lane l takes weights w0 .. w0 + 7 of every 256: one sub-block's, x read as float4 pairs */
    for (unsigned w0 = 8 * l; w0 < (unsigned)M.cols; w0 += 256) {
        const unsigned jb = w0 / G.n, wi = w0 % G.n;
        const uint8_t *blk = rb + jb * G.bytes;
        const wr_scale sc = blk_scale<TYPE>(blk, (int)(wi / G.sub_n));
        float xv[B][8];
#pragma unroll
        for (int b = 0; b < B; b++) {
            const float4 *xp = reinterpret_cast<const float4 *>(x + (long long)b * M.cols + w0);
            const float4 a = __ldg(xp), c = __ldg(xp + 1);
            xv[b][0] = a.x, xv[b][1] = a.y, xv[b][2] = a.z, xv[b][3] = a.w;
            xv[b][4] = c.x, xv[b][5] = c.y, xv[b][6] = c.z, xv[b][7] = c.w;
        }
        float dot[B], sx[B];
#pragma unroll
        for (int b = 0; b < B; b++)
            dot[b] = sx[b] = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int q = wr_get_code(TYPE, blk, (int)wi + i);
            const float c = NL ? kv[q] : (float)(q - sc.off);
#pragma unroll
            for (int b = 0; b < B; b++) {
                dot[b] = fmaf(c, xv[b][i], dot[b]);
                sx[b] += xv[b][i];
            }
        }
#pragma unroll
        for (int b = 0; b < B; b++)
            acc[b] += sc.dl * dot[b] - sc.ml * sx[b];
    }
#pragma unroll
    for (int b = 0; b < B; b++) {
        float a = acc[b];
        for (int o = 16; o; o >>= 1)
            a += __shfl_xor_sync(0xffffffffu, a, o);
        if (l == 0)
            y[(long long)b * M.rows + row] = a;
    }
}

__global__ void k_to_bf16(const float *x, uint16_t *o, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        uint32_t u = __float_as_uint(x[i]);
        o[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);   /* round to nearest even */
    }
}

/* ---- host side --------------------------------------------------------------------------- */

struct wr_gpu {
    cudaStream_t st;
    cublasHandle_t blas;
    void *flush;
    size_t flush_bytes;
    char name[320];
    double hbm;
};

struct wr_dmat {
    const wr_matrix *m;
    DevMat M;
    wr_huf H;
    void *buf[16];          /* owned device allocations */
    int nbuf;
    uint8_t *fixed;         /* original fixed-width data (twin / cuBLAS baseline) */
    uint8_t *dec;           /* decoded data of the "full" pipeline */
    uint32_t *lut;          /* 2^L decode table (build_lut) */
    uint8_t *idx;           /* palette pipeline: 4-bit indices transcoded at load */
    uint8_t *idx_tc;        /* transcode pipeline: indices transcoded at run time */
    int *err;
    float *x[4], *y;        /* rotated inputs, output */
    uint16_t *xb;           /* BF16 copy of x for cuBLAS */
    int io_batch;
};

/* The 2^L decode table of a matrix (see lane_next): every L-bit peek decoded
 * with wr_huf_peek, the reference method, so both decode the same. pal:
 * the palette (n_pal entries) for palette pairs, else NULL. */
static std::vector<uint32_t> build_lut(const wr_huf &H, const uint8_t *pal, int n_pal)
{
    std::vector<uint32_t> lut((size_t)1 << H.L);
    for (uint32_t p = 0; p < lut.size(); p++) {
        int len = 0, sym = wr_huf_peek(&H, p, &len);
        if (sym < 0) {
            lut[p] = 0;
            continue;
        }
        uint32_t e = (uint32_t)len;
        if (pal) {
            int i0 = sym & 15, i1 = sym >> 4;
            e |= (uint32_t)(i0 >= n_pal) << 4 | (uint32_t)(i1 >= n_pal) << 5;
            e |= (uint32_t)pal[i0 & 15] << 8 | (uint32_t)pal[i1 & 15] << 16 | (uint32_t)sym << 24;
        } else {
            e |= (uint32_t)sym << 8;
        }
        lut[p] = e;
    }
    return lut;
}

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
    cudaStreamDestroy(g->st);
    free(g);
}

extern "C" const char *wr_gpu_name(const wr_gpu *g) { return g->name; }
extern "C" double wr_gpu_hbm_gbs(const wr_gpu *g) { return g->hbm; }

static int dalloc(wr_dmat *d, void **p, size_t bytes, const void *src, char *err, size_t errlen)
{
    CK(cudaMalloc(p, bytes ? bytes : 4));
    d->buf[d->nbuf++] = *p;
    if (src && bytes)
        CK(cudaMemcpy(*p, src, bytes, cudaMemcpyHostToDevice));
    return 0;
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
    cudaFree(d->xb);
    free(d);
}

extern "C" wr_dmat *wr_gpu_upload(wr_gpu *g, const wr_matrix *m, const uint8_t *fixed, char *err, size_t errlen)
{
    if (m->kind == WR_EXP && m->type != WP_BF16) {
        snprintf(err, errlen, "%s: the device path is BF16 only", m->name);
        return NULL;
    }
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
    if (dalloc(d, &p, 4 * v.n_words, v.words, err, errlen))
        goto fail;
    M.words = (const uint32_t *)p;
    if (dalloc(d, &p, 4 * (v.n_tiles + 1), v.offsets, err, errlen))
        goto fail;
    M.offsets = (const uint32_t *)p;
    if (dalloc(d, &p, 32 * v.n_tiles, v.lane_words, err, errlen))
        goto fail;
    M.lane_words = (const uint8_t *)p;
    if (dalloc(d, &p, m->aux.payload_len, m->aux.payload, err, errlen))
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
    M.type = (int)m->type;
    M.rows = m->rows;
    M.cols = m->cols;
    M.S = (long long)v.shape.row_sym;
    M.T = v.shape.tile_sym;
    M.tcols = (v.shape.row_sym + M.T - 1) / M.T;
    M.trows = (v.shape.rows + 63) / 64;
    M.ntiles = v.n_tiles;
    M.n_words = v.n_words;
    M.L = m->huf.L;
    if (M.L < 1 || M.L > 11) {
        snprintf(err, errlen, "%s: code lengths up to %d bits; the device decoder takes up to 11", m->name, M.L);
        goto fail;
    }
    {
        const bool pal = m->kind == WR_EXP && m->s.palette_n;
        std::vector<uint32_t> lut = build_lut(m->huf, pal ? m->s.palette : NULL, pal ? m->s.n_palette : 0);
        if (dalloc(d, &p, 4 * lut.size(), lut.data(), err, errlen))
            goto fail;
        d->lut = (uint32_t *)p;
    }
    if (m->kind == WR_Q) {
        M.wps = m->dg.wps;
        M.bits = m->dg.bits;
        M.n = m->dg.n;
        M.sub_n = m->dg.sub_n;
        M.side_bytes = m->dg.side;
        M.block_bytes = m->dg.bytes;
        const uint8_t zero[32] = {0};
        const wr_scale z = wr_sub_scale(M.type, zero, 0);
        M.qoff = z.off;
        M.qnl = z.nl;
        if (dev_wps(M.type) != m->dg.wps) {
            snprintf(err, errlen, "%s: codes a symbol: device %d, wr_geom_of %d", m->name, dev_wps(M.type), m->dg.wps);
            goto fail;
        }
    } else {
        const struct wp_bf16_split &s = m->s;
        const uint8_t *base = m->aux.payload;
        M.wps = s.palette_n ? 2 : 1;
        M.bits = s.palette_n ? 4 : 8;   /* palette index pairs or exponent bytes */
        M.palette_n = s.palette_n;
        M.n_palette = s.n_palette;
        M.group = s.group;
        M.gshift = -1;
        for (int b = 0; b < 62; b++)
            if (s.group == (int64_t)1 << b)
                M.gshift = b;
        M.gpr = s.groups_per_row;
        M.palette = M.side;
        M.vmap = M.side + (s.vmap - base);
        M.vbytes = M.side + (s.vbytes - base);
        /* the sign/mantissa bytes in an allocation of their own, so the kernels can read
           them 8 and 16 at a time (aligned) */
        if (dalloc(d, &p, s.raw_bytes, s.raw, err, errlen))
            goto fail;
        M.raw = (const uint8_t *)p;
        if (dalloc(d, &p, 8 * (size_t)(m->rows + 1), m->vrow, err, errlen))
            goto fail;
        M.vrow = (const unsigned long long *)p;
        if (s.palette_n && fixed) {
            /* the palette pipelines: 4-bit indices of every weight, row stride a multiple
               of 4 bytes; "palette" gets them transcoded here (at load), "transcode" at run time */
            M.istride = wr_palette_stride(m);
            std::vector<uint8_t> ix((size_t)(M.istride * m->rows), 0);
            if (wr_palette_index(m, fixed, ix.data())) {
                snprintf(err, errlen, "%s: palette indices do not rebuild from the restored bytes", m->name);
                goto fail;
            }
            if (dalloc(d, &p, ix.size(), ix.data(), err, errlen))
                goto fail;
            d->idx = (uint8_t *)p;
            if (dalloc(d, &p, ix.size(), NULL, err, errlen))
                goto fail;
            d->idx_tc = (uint8_t *)p;
        }
    }
    return d;
fail:
    wr_gpu_free(d);
    return NULL;
}

/* Device buffers for a batch: 4 rotated nonzero inputs, y, a BF16 x. */
static int ensure_io(wr_dmat *d, int batch, char *err, size_t errlen)
{
    if (d->io_batch >= batch)
        return 0;
    for (int i = 0; i < 4; i++)
        cudaFree(d->x[i]);
    cudaFree(d->y);
    cudaFree(d->xb);
    d->io_batch = 0;
    size_t nx = (size_t)batch * (size_t)d->M.cols, ny = (size_t)batch * (size_t)d->M.rows;
    std::vector<float> hx(nx);
    for (int i = 0; i < 4; i++) {
        CK(cudaMalloc(&d->x[i], nx * 4));
        wr_make_x(hx.data(), nx, 100 + (uint64_t)i, d->m->kind == WR_EXP);
        CK(cudaMemcpy(d->x[i], hx.data(), nx * 4, cudaMemcpyHostToDevice));
    }
    CK(cudaMalloc(&d->y, ny * 4));
    CK(cudaMalloc(&d->xb, nx * 2));
    d->io_batch = batch;
    return 0;
}

/* Kernel launches. Batches 1, 2, 4, 8 are compiled; a chunk of another size
 * runs as several (3 = 2 + 1, ...). */
#define FOR_TYPES(X)                                                                               \
    X(WP_Q4_0) X(WP_Q4_1) X(WP_Q5_0) X(WP_Q5_1) X(WP_Q8_0) X(WP_IQ4_NL) X(WP_Q2_K) X(WP_Q3_K)      \
    X(WP_Q4_K) X(WP_Q5_K) X(WP_Q6_K) X(WP_IQ4_XS)

template <int B>
static void fused_b(wr_gpu *g, wr_dmat *d, const float *x, float *y)
{
    const DevMat &M = d->M;
    dim3 grid((unsigned)M.tcols, (unsigned)((M.trows + FUSED_WARPS - 1) / FUSED_WARPS)), block(32 * FUSED_WARPS);
    if (d->m->kind == WR_EXP) {
        if (M.palette_n)
            k_fused_exp<B, true><<<grid, block, 0, g->st>>>(M, d->lut, x, y);
        else
            k_fused_exp<B, false><<<grid, block, 0, g->st>>>(M, d->lut, x, y);
        return;
    }
    switch (M.type) {
#define FQ(t) case t: k_fused_q<t, B><<<grid, block, 0, g->st>>>(M, d->lut, x, y); break;
        FOR_TYPES(FQ)
#undef FQ
    }
}

template <int B>
static void twin_b(wr_gpu *g, wr_dmat *d, const uint8_t *blocks, const float *x, float *y)
{
    const DevMat &M = d->M;
    dim3 grid((unsigned)((M.rows + TWIN_WARPS - 1) / TWIN_WARPS)), block(32 * TWIN_WARPS);
    switch (M.type) {
#define TQ(t) case t: k_twin<t, B><<<grid, block, 0, g->st>>>(M, blocks, x, y); break;
        FOR_TYPES(TQ)
#undef TQ
    }
}

template <int B>
static void palette_b(wr_gpu *g, wr_dmat *d, const uint8_t *idx, const float *x, float *y)
{
    const DevMat &M = d->M;
    dim3 grid((unsigned)((M.rows + TWIN_WARPS - 1) / TWIN_WARPS)), block(32 * TWIN_WARPS);
    if (M.cols % 8 == 0)
        k_palette<B, true><<<grid, block, 0, g->st>>>(M, idx, x, y);
    else
        k_palette<B, false><<<grid, block, 0, g->st>>>(M, idx, x, y);
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

/* Restore the fixed-width data: lut = 0 the limit-decoding k_restore (the
 * reference method, every type), lut = 1 the table-decoding k_restore_exp
 * for BF16 (the "full" pipeline; ggml blocks always take k_restore). */
static int launch_restore(wr_gpu *g, wr_dmat *d, uint8_t *out, int lut = 1)
{
    const DevMat &M = d->M;
    if (!M.ntiles)
        return 0;
    if (lut && d->m->kind == WR_EXP) {
        dim3 grid((unsigned)M.tcols, (unsigned)((M.trows + FUSED_WARPS - 1) / FUSED_WARPS));
        if (M.palette_n)
            k_restore_exp<true><<<grid, 32 * FUSED_WARPS, 0, g->st>>>(M, d->lut, (uint16_t *)out);
        else
            k_restore_exp<false><<<grid, 32 * FUSED_WARPS, 0, g->st>>>(M, d->lut, (uint16_t *)out);
        return 0;
    }
    k_restore<<<(unsigned)M.ntiles, 32, 0, g->st>>>(M, d->H, out, d->m->kind == WR_EXP);
    return 0;
}

static int cublas_gemm(wr_gpu *g, wr_dmat *d, const uint16_t *W, const float *x, int batch, float *y, char *err,
                       size_t errlen)
{
    long long n = (long long)batch * d->M.cols;
    k_to_bf16<<<(unsigned)((n + 255) / 256), 256, 0, g->st>>>(x, d->xb, n);
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t s = cublasGemmEx(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)d->M.rows, batch, (int)d->M.cols, &one, W,
                                    CUDA_R_16BF, (int)d->M.cols, d->xb, CUDA_R_16BF, (int)d->M.cols, &zero, y,
                                    CUDA_R_32F, (int)d->M.rows, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "cublasGemmEx: status %d", (int)s);
        return -1;
    }
    return 0;
}

extern "C" int wr_gpu_has_pipe(const wr_dmat *d, int pipe)
{
    switch (pipe) {
    case WR_PIPE_FUSED: case WR_PIPE_FULL: return 1;
    case WR_PIPE_TWIN: return d->fixed != NULL;
    case WR_PIPE_TRANSCODE: case WR_PIPE_PALETTE: return d->idx != NULL;
    default: return 0;
    }
}

/* Enqueue one pipeline run on device buffers (no synchronisation). */
static int launch(wr_gpu *g, wr_dmat *d, int pipe, const float *x, int batch, float *y, char *err, size_t errlen)
{
    const DevMat &M = d->M;
    const bool exp = d->m->kind == WR_EXP;
    if (!wr_gpu_has_pipe(d, pipe)) {
        snprintf(err, errlen, "pipeline %d not available for this matrix", pipe);
        return -1;
    }
    if (pipe == WR_PIPE_FUSED) {
        CK(cudaMemsetAsync(y, 0, sizeof(float) * (size_t)batch * (size_t)M.rows, g->st));
        CHUNKED(fused_b, batch, x, y, )
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
            if (cublas_gemm(g, d, (const uint16_t *)data, x, batch, y, err, errlen))
                return -1;
        } else {
            CHUNKED(twin_b, batch, x, y, data, )
        }
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

extern "C" int wr_gpu_graph_pass(wr_gpu *g, wr_dmat **d, int n, int runs, double *graph_us, double *stream_us,
                                 char *err, size_t errlen)
{
    for (int i = 0; i < n; i++)
        if (ensure_io(d[i], 1, err, errlen))
            return -1;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(g->st, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < n; i++)
        if (launch(g, d[i], WR_PIPE_FUSED, d[i]->x[0], 1, d[i]->y, err, errlen)) {
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
            if (launch(g, d[i], WR_PIPE_FUSED, d[i]->x[0], 1, d[i]->y, err, errlen))
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
