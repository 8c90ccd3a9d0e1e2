/*
 * kernels.cuh - wprun's CUDA kernels (device code only; runtime/gpu.cu
 * holds the host wrappers, see gpu.h). Also compiled for the host by
 * tests/runtime/test_emu.cpp, which runs the kernels' own source with one
 * host thread per CUDA thread (tests/runtime/simt.h), so every kernel is
 * executed in `make check` on machines without a GPU.
 *
 * Layout (lanes.h): a tile is 64 rows x 256 weights, lane k holds tile rows
 * 2k and 2k+1; the tile stores word i of every active lane together (ragged
 * interleave). One warp decodes one tile, thread k = lane k: the warp gets
 * group i's active mask as __ballot_sync(~0u, W_k > i) and lane k's word as
 * G(i) + __popc(mask & lanemask_lt) (wr_group_word). Two ways to read the
 * words (lane_open):
 *   global  the masks and group starts G(i) go to shared memory once per
 *           tile (D ballots, D <= 240), then each thread loads its own words
 *           from global memory, two ahead (pipeline "fused");
 *   staged  the warp first copies the tile's words into shared memory,
 *           group by group (one coalesced read a group), word i of lane k at
 *           [i * 32 + k]; decoding then reads only shared memory (pipeline
 *           "staged"; dynamic shared memory of 32 x (dmax + 1) words a
 *           warp, staged_depth); k_fused_q reads these lanes by position,
 *           two symbols a window (lane_pair_at), without a bit buffer;
 *   ring    the same layout in a ring of RING_WORDS words a lane (word i of
 *           lane k at [(i % RING_WORDS) * 32 + k], 4 KiB a warp whatever
 *           the tile, and the warp's groups as for global): every
 *           ring_every sub-blocks (1 to 8, by type) each lane copies its
 *           words up to RING_WORDS past its read position (ring_fill,
 *           asynchronous, waited for one sub-block later), so the loads
 *           overlap the decode and the reads are of shared memory
 *           (pipeline "ring", k_fused_q only), by position as staged
 *           (lane_pair_at). Every word a lane reads is in its ring, landed,
 *           whatever the data: F sub-blocks of codes of <= 11 bits move a
 *           lane on by <= F w words (ring_every), so the fill before,
 *           RING_WORDS words past the window, holds them (the words past W
 *           are never decoded; the fill zeroes the slots of words W .. W +
 *           2, which a lane's last window loads).
 * Other lanes are read with wr_dev.h's bit reader (wr_bits), the code the
 * CPU tests run (wr_dev_decode_tile); the unrolled loops check for a refill
 * once every two symbols (a refill leaves >= 32 bits, two codes of <= 11). The
 * reference restore kernel decodes each L-bit peek against the per-length
 * limits (wr_huf_peek, the hardware unit's method).
 *
 * Kernels:
 *   k_restore       lane decode against the per-length limits -> exact ggml
 *                   blocks (wp_block_assemble) or floats (BF16, F16, F32), in global
 *                   memory (the reference decoder, and the "full" pipeline
 *                   for blocks, F16 and F32)
 *   k_restore_exp   table decode -> BF16 over a band of tile rows, grid-stride
 *                   (the "full" and "split" pipelines for BF16)
 *   k_fused_q<T,B,ST>   fused decode + GEMV, batch B in {1,2,4,8}, type T a
 *                   template argument: codes looked up as values, weights only
 *                   in registers; ST: lane words staged in shared memory (1)
 *                   or a ring (2)
 *   k_fused_private<T,B>  the same through a lane-private copy of the table,
 *                   lane k reading bank k only (pipeline "private",
 *                   wr_bits_take_private), persistent blocks of up to 32 warps
 *   k_fused_exp<B,PAL,ST>  exponent-only decode, BF16/F16/F32 rebuilt in
 *                   registers, GEMV
 *   k_transcode     lanes -> 4-bit palette indices in global memory
 *   k_palette<B>    GEMV from 4-bit palette indices + raw bytes (no Huffman)
 *   k_twin<T,B>     the twin: the same GEMV reading fixed-width ggml blocks
 *   k_recon<PAL>    the reconstructive GEMM: BF16 rebuilt in shared memory,
 *                   wmma on tensor cores, 32 vectors a launch
 *   cuBLAS          GEMM in the matrix's type (cublasGemmEx, FP32 accumulate)
 *                   for "full", "split" and the baseline
 * The GEMV, transcode and BF16 restore kernels decode through a 2^L lookup
 * table in shared memory built on the host from the limits (wr_lut_build).
 *
 * Measured on an H100 (2026-12-05, README.md): every kernel bit-exact /
 * within 1e-4 of float64. At batch 1 (4096 x 14336) the palette GEMV takes
 * 0.88x cuBLAS BF16, and the fastest coded pipeline of each quantized type
 * 0.62-1.42x the twin (ring for codes of 4 bits and more, staged for Q2_K
 * and Q3_K; Q2_K, Q3_K and Q5_K under 0.9x; Q4_K 1.08x, 1.37x on the H200
 * the day before); private, whose lookups have no bank conflicts, runs
 * within 6 % of fused, so the conflicts do not bound it. The ring holds a
 * matrix's tiles in one round at batch 1 (32 warps a SM; ring and global
 * lanes keep their groups in dynamic shared memory as deep as the matrix's
 * lanes, fused_smem_bytes). Nsight Compute's stall samples per SASS
 * instruction of k_fused_q ring Q4_K: 12 % on the store of load_lut's
 * one-word-at-a-time loop at the start; since then, not timed, the table
 * and the x slice are copied asynchronously, all in flight with the
 * tile's opening (load_lut_async, stage_x). runtime/JOURNAL.md has the
 * static counts of the changes before. On the CPU,
 * wr_dev_decode_tile runs the decode path and tests/runtime/test_emu.cpp
 * runs these kernels' source with one host thread per CUDA thread;
 * gpucheck.sh times them on a GPU.
 *
 * TODO (not implemented, deliberately absent rather than half-working):
 *   - a hard SM partition for the split (green contexts): the split now caps
 *     the decode grid at one block per SM of its share and sets cuBLAS's SM
 *     count target to the rest, which the block scheduler need not honour;
 *   - recon, split, transcode and palette for F16/F32 (BF16 only).
 */
#ifndef WPACK_KERNELS_CUH
#define WPACK_KERNELS_CUH

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_pipeline.h>
#include <cuda_runtime.h>
#include <mma.h>
#endif

#include <stdint.h>
#include <stdio.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "wprun.h"

#ifndef WR_DYN_SMEM   /* a kernel's dynamic shared memory (the emulator defines its own) */
#define WR_DYN_SMEM(T, name) extern __shared__ T name[]
#endif

#define FUSED_WARPS 4
#define TWIN_WARPS 4
#define RING_WORDS 32   /* ring lanes: words of a lane in shared memory (a power of 2) */
#define MAX_DEPTH WP_LANE_MAX_WORDS

/* ---- device view of a matrix ------------------------------------------------------ */

struct DevMat {
    const uint32_t *words, *offsets;
    const uint8_t *lane_words;
    const uint8_t *side;                     /* WR_Q side bytes */
    const uint8_t *palette, *vmap, *vbytes, *raw;
    const unsigned long long *vrow;          /* WR_EXP: vbytes offset of row r */
    const uint32_t *vcnt, *vcol;             /* palette pipelines (wr_palette_fix): verbatim groups before
                                                row r (rows + 1); a group's first column */
    const float *vdelta;                     /* palette pipelines: w - w_pal of each verbatim group's
                                                weights, vstride floats a group */
    long long vstride;
    float *part;                             /* k_palette / k_twin with column splits: the splits' sums
                                                (splits x B x rows) */
    unsigned *cnt;                           /* ... and per warp's rows the splits done (0 between launches) */
    int type, wps, bits, n, sub_n, side_bytes, block_bytes, palette_n, n_palette;  /* wps codes of bits bits per symbol */
    long long rows, cols, S, gpr, group;
    long long istride;                       /* palette index bytes a row (a multiple of 4) */
    unsigned long long n_words;              /* lane words of the matrix */
    int gshift;                              /* log2(group) when a power of 2, else -1 */
    int qoff, qnl;                           /* WR_Q: c(q) = kv[q] when qnl, else q - qoff */
    int L;                                   /* lookup-table bits (= max code length) */
    int dmax;                                /* most words of any lane (staged lanes' depth) */
    int esize, raw_bits;                     /* WR_EXP: element bytes (2, 4), raw bits a weight (8, 11, 24) */
    unsigned T;
    unsigned long long tcols, trows, ntiles;
    int *err;
};

/* Words a staged lane keeps in shared memory: M.dmax, and one more that
 * lane_open zeroes at the lane's end (slot W), so that a read past the end
 * is a read of slot min(i, W), not a branch (lane_word, lane_pair_at: 48
 * fewer SASS instructions in k_fused_q<Q4_K, 1, staged>, 120 in Q8_0's,
 * sm_90a, made alone, with the bit buffer). */
__host__ __device__ inline int staged_depth(const DevMat &M) { return M.dmax + 1; }

/* Group i of a tile's ragged interleave (lane_open): the lanes holding a
 * word i (a ballot mask) and the group's first word in the tile. A warp
 * keeps one a group, D <= M.dmax of them (read as one 8-byte load). */
struct __align__(8) Group {
    uint32_t mask;
    uint32_t start;
};

/* A warp's groups in static shared memory, room for the deepest lane
 * (k_restore, k_restore_exp, k_transcode, k_recon; k_fused_q, k_fused_exp
 * and k_fused_private keep M.dmax of them in dynamic shared memory,
 * warp_group_bytes). */
struct Groups {
    Group e[MAX_DEPTH];
};

/* Pipeline "private" (k_fused_private): the lane-private decode table
 * (wr_dev.h's wr_bits_take_private, 2^L x 64 bytes) and, per warp, its
 * Groups, x slice and sub-block sums, in dynamic shared memory; at most
 * private_warps(B) warps a block (registers: 64 a thread at 1024
 * threads), fewer where the device's shared memory per block is smaller
 * (private_block_warps). */
__host__ __device__ constexpr int private_warps(int B) { return B <= 2 ? 32 : 16; }

__host__ __device__ inline size_t private_lut_bytes(int L) { return (size_t)64 << L; }

/* A warp's groups in dynamic shared memory (k_fused_q and k_fused_exp's
 * global and ring lanes, k_fused_private), bytes: M.dmax of them, lane_open
 * reads no deeper, rounded up to 16. */
__host__ __device__ inline size_t warp_group_bytes(const DevMat &M)
{
    return ((size_t)(M.dmax > 0 ? M.dmax : 1) * sizeof(Group) + 15) & ~(size_t)15;
}

/* Bytes of every warp's lane words in a k_fused_q / k_fused_exp launch's
 * dynamic shared memory (fused_smem_bytes), for FUSED_WARPS warps: ST 1
 * (staged) 32 lanes x staged_depth(M) words a warp, ST 2 (ring) 32 x
 * RING_WORDS, ST 0 (global lanes) none. */
__host__ __device__ inline size_t fused_words_bytes(const DevMat &M, int ST)
{
    return ST == 1 ? (size_t)FUSED_WARPS * 32 * (size_t)staged_depth(M) * 4
           : ST == 2 ? (size_t)FUSED_WARPS * 32 * RING_WORDS * 4 : 0;
}

/* Dynamic shared memory of a k_fused_q / k_fused_exp launch, bytes: the
 * warps' lane words (fused_words_bytes), then, for global and ring lanes
 * (ST 0, 2), each warp's groups (warp_group_bytes; staged lanes keep none).
 * Staged may pass the default 48 KiB: gpu.cu's launch_smem allows it.
 * gpu.cu and the emulator launch with it. Why the groups are sized by the
 * matrix: as static arrays of MAX_DEPTH (240) they took 7,680 bytes a block
 * whatever the lanes, and ring's blocks of 33,344 bytes fitted 6 a SM: 24
 * warps, 1.13 rounds of the 3,584 tiles of a 4096 x 14336 matrix on 132
 * SMs, so a second round for 416 of them. With the synthetic Q4_K's groups
 * (dmax 58, 1,856 bytes) a block takes 27,520 and 8 fit: 32 warps, one
 * round; the registers allow 8 at batch 1 (sm_90a, ptxas's counts; 228 KiB
 * a SM, 1 KiB a block reserved; runtime/JOURNAL.md's table of rounds has
 * every type). */
static inline size_t fused_smem_bytes(const DevMat &M, int ST)
{
    return fused_words_bytes(M, ST) + (ST == 1 ? 0 : (size_t)FUSED_WARPS * warp_group_bytes(M));
}

/* Warp w's part of a k_fused_q / k_fused_exp launch's dynamic shared memory
 * dyn (fused_smem_bytes): its lane words, the w-th of fused_words_bytes'
 * (none for global lanes), and its groups, the w-th after every warp's
 * lane words (none for staged lanes). test_runtime_emu checks that no two
 * parts overlap. */
__host__ __device__ inline uint32_t *fused_lane_words(const DevMat &M, uint32_t *dyn, int ST, unsigned w)
{
    return ST == 0 ? nullptr : dyn + fused_words_bytes(M, ST) / 4 / FUSED_WARPS * w;
}
__host__ __device__ inline Group *fused_groups(const DevMat &M, uint32_t *dyn, int ST, unsigned w)
{
    if (ST == 1)
        return nullptr;
    uint8_t *b = reinterpret_cast<uint8_t *>(dyn) + fused_words_bytes(M, ST);
    return reinterpret_cast<Group *>(b + (size_t)w * warp_group_bytes(M));
}

/* k_fused_private's part of a warp: its groups (warp_group_bytes), xs[B][256],
 * xsum[B][16] (read 16 bytes at a time). */
__host__ __device__ inline size_t private_warp_bytes(const DevMat &M, int B)
{
    return warp_group_bytes(M) + (size_t)B * (256 + 16) * 4;
}

static inline size_t private_smem_bytes(const DevMat &M, int B, int warps)
{
    return private_lut_bytes(M.L) + (size_t)warps * private_warp_bytes(M, B);
}

/* Warps a block of k_fused_private at batch B on a device allowing
 * smem_optin bytes of shared memory a block, static_bytes of them the
 * kernel's own: the most that fit, at most private_warps(B) and the
 * matrix's tiles; 0 when not even one warp fits. At L = 11 and the deepest
 * lane (M.dmax 240 words): H200/H100 (227 KiB) 32 warps at batch 1, 24 at
 * 2, 16 at 4, 9 at 8; A100/Orin (163 KiB) 11, 8, 5, 3. With the synthetic
 * Q4_K's (dmax 57) H200 gets 32, 32, 16, 11 and A100 23, 13, 7, 3. */
static inline int private_block_warps(const DevMat &M, int B, size_t smem_optin, size_t static_bytes)
{
    const size_t fixed = private_lut_bytes(M.L) + static_bytes;
    if (smem_optin < fixed + private_warp_bytes(M, B))
        return 0;
    unsigned long long w = (smem_optin - fixed) / private_warp_bytes(M, B);
    if (w > (unsigned long long)private_warps(B))
        w = (unsigned long long)private_warps(B);
    if (w > M.ntiles)
        w = M.ntiles ? M.ntiles : 1;
    return (int)w;
}

/* The launch shape of k_fused_private: w_fit warps a block fit
 * (private_block_warps), a SM holds nb such blocks: grid = min(SMs x nb,
 * tiles) blocks of w = min(w_fit, ceil(tiles / grid)) warps, then no more
 * blocks than w-warp blocks the tiles fill. So a matrix of fewer tiles than
 * the device's warps runs one tile a warp on every SM it can (4096 x 14336,
 * 3,584 tiles, on an H200 at batch 1: 128 blocks of 28 warps; 4096 x 4096:
 * 128 of 8), and a larger one loops its warps over tiles. */
static inline void private_shape(unsigned long long ntiles, int w_fit, int sms, int nb, int *w, unsigned *grid)
{
    unsigned long long g = (unsigned long long)(sms > 0 ? sms : 1) * (unsigned long long)(nb > 0 ? nb : 1);
    if (g > ntiles)
        g = ntiles ? ntiles : 1;
    unsigned long long ww = (ntiles + g - 1) / g;
    if (ww > (unsigned long long)w_fit)
        ww = (unsigned long long)w_fit;
    if (ww < 1)
        ww = 1;
    const unsigned long long need = (ntiles + ww - 1) / ww;
    *w = (int)ww;
    *grid = (unsigned)(need < g ? (need ? need : 1) : g);
}

/* The pair table of the lane-private table (wr_plut_pair: 2^(L-1) words,
 * row r's value for all 32 lanes) from a matrix's 2^L-entry table. */
static inline std::vector<uint32_t> plut_host(const uint32_t *lut, int L)
{
    std::vector<uint32_t> v((size_t)1 << (L - 1));
    for (size_t r = 0; r < v.size(); r++)
        v[r] = wr_plut_pair(lut[2 * r], lut[2 * r + 1]);
    return v;
}

/* A thread's lane: its W words read from global memory (the ragged
 * interleave, through the warp's Groups, PD = 2 or 4 words ahead), or, staged
 * (ST), from this warp's copy of the tile's words in shared memory, word i
 * at sw[i * 32] (sw = base + k). The bit reader is wr_dev.h's wr_bits, the
 * code the CPU tests run. */
struct Lane {
    const uint32_t *tw;       /* global, ring: the tile's words */
    const Group *g;           /* global, ring: the warp's group masks and starts */
    uint32_t *sw;             /* staged: word 0 of this lane in shared memory; ring: its ring
                                 column (word i at sw[(i % RING_WORDS) * 32]) */
    uint32_t W;
    uint32_t full;            /* global, ring: groups [0, full) hold a word of every lane (the tile's
                                 shortest lane has full words), so word i < full of lane k is word
                                 32 i + k of the tile, found without reading the group's start;
                                 taken before a corrupt tile's W is set to 0, so it may exceed W:
                                 read a word i < full only when i < W as well) */
    uint32_t issued;          /* ring: words [0, issued) copied (asynchronously), those >= W zeroed */
    uint32_t q0, q1, q2, q3;  /* words next .. next + PD - 1, loaded ahead (PD: prefetch distance,
                                 2 or 4; q2, q3 unused at 2) */
    wr_bits b;
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

/* Global and ring lanes: the index in the tile's words of word i of this
 * thread's lane (i < W): 32 i + k in the leading full groups, else through
 * the group's start and mask in shared memory (wr_group_word). Why: the
 * refill read both for every word (two shared loads on its path to the
 * global load); the synthetic Q4_K's lanes hold 40-57 words, so most words
 * are in full groups (test_runtime_emu's traffic counts). */
__device__ __forceinline__ uint32_t lane_word_index(const Lane &L, uint32_t i)
{
    if (i < L.full)
        return 32 * i + (threadIdx.x & 31);
    WR_PROBE(WR_SITE_GROUP, &L.g[i]);
    const Group e = L.g[i];
    return wr_group_word(e.start, e.mask, threadIdx.x & 31);
}

/* Word i of this thread's lane (0 past its end). ST: 0 global, 1 staged,
 * 2 ring (from its slot, unchecked: past its end, whatever the slot holds;
 * the kernel keeps word i there, landed, while it can be read). */
template <int ST>
__device__ __forceinline__ uint32_t lane_word(const Lane &L, uint32_t i)
{
    if (ST == 1) {
        i = i < L.W ? i : L.W;   /* slot W holds 0 (lane_open) */
        WR_PROBE(WR_SITE_SWORD, &L.sw[i * 32]);
        return L.sw[i * 32];
    }
    if (ST == 2) {
        WR_PROBE(WR_SITE_SWORD, &L.sw[(i & (RING_WORDS - 1)) * 32]);
        return L.sw[(i & (RING_WORDS - 1)) * 32];
    }
    if (i >= L.W)
        return 0u;
    const uint32_t *p = L.tw + lane_word_index(L, i);
    WR_PROBE(WR_SITE_GWORD, p);
    return __ldg(p);
}

/* Ring lanes: copy this lane's words [issued, t), t = its next unread word
 * (next + held: the words next .. next + held - 1 are in registers already;
 * at the lane's opening none, 0) + RING_WORDS, at most W, into its ring column (cp.async,
 * committed as one batch; the caller waits for it with
 * __pipeline_wait_prior), and zero the slots of words W .. W + 2 as t
 * passes them (pair_word's 0 past the end; plain stores, at once). The slot
 * a copy or a zero overwrites holds a word already read, landed (word y -
 * 32 <= next + 1, in the window's registers), and no copy in flight writes
 * it: a copy is in flight only from the fill before, of words >= its t =
 * N_before + 34, and N - N_before <= (F + 1) w <= 31 (ring_every), so
 * those are past y - 32 and before y. Each lane copies only its own
 * words: a loop over the words of all lanes' ranges, one group a copy
 * instruction (coalesced), ran 20 times a Q4_K sub-block for about 4 words
 * a lane, the lanes being that far apart (test_runtime_emu); this one runs
 * as many times as the lane furthest ahead needs, and not being
 * warp-collective, any lane may skip it. CH: words of full groups a trip
 * of the first loop copies, each copy predicated (a fill copies about 4 to
 * 15 words: ring_every). */
template <int CH = 4>
__device__ __forceinline__ void ring_fill(Lane &L, uint32_t next, uint32_t held)
{
    uint32_t t = next + held + RING_WORDS;
    t = t < L.W + 3 ? t : L.W + 3;
    const uint32_t tw = t < L.W ? t : L.W;   /* words [W, t): 0 */
    uint32_t i = L.issued;
    /* the words of full groups (word i of lane k at 32 i + k) first, in a loop of their own,
       and neither loop unrolled: with lane_word_index's test and group lookup, the one loop
       took 76 to 123 SASS instructions a 4 words, as ptxas varied it with the kernel around
       it; now 14 a word of a full group, 33-35 of another (sm_90a, runtime/sassloops.py;
       ring Q4_K's loop over a sub-block 525 -> 390, Q8_0's 716 -> 526). The first loop then
       CH words a trip, from a 64-bit source pointer moved on by CH groups (32-bit word
       indices kept ptxas from moving it on: it worked each address out again): a trip of 4
       copies 33-34 instructions, 2 copies 21, 8 copies 57, against 14-16 a copy */
    const uint32_t tf = tw < L.full ? tw : L.full, i1 = i > tf ? i : tf;
#pragma unroll 1
    for (const uint32_t *src = L.tw + (threadIdx.x & 31) + 32ull * i; i < tf; i += CH, src += 32 * CH) {
#pragma unroll
        for (uint32_t j = 0; j < (uint32_t)CH; j++)
            if (i + j < tf) {
                WR_PROBE(WR_SITE_COPY, src + 32 * j);
                __pipeline_memcpy_async(&L.sw[((i + j) & (RING_WORDS - 1)) * 32], src + 32 * j, 4);
            }
    }
    i = i1;
#pragma unroll 1
    for (; i < tw; i++) {
        const uint32_t *src = L.tw + lane_word_index(L, i);
        WR_PROBE(WR_SITE_COPY, src);
        __pipeline_memcpy_async(&L.sw[(i & (RING_WORDS - 1)) * 32], src, 4);
    }
#pragma unroll 1
    for (; i < t; i++)   /* past the end: pair_word's 0 */
        L.sw[(i & (RING_WORDS - 1)) * 32] = 0u;
    L.issued = t > L.issued ? t : L.issued;
    __pipeline_commit();
}

/* Warp-collective: open tile t for this thread's lane. Global: the group
 * masks and starts go to g. Staged: each thread copies its own words to sw
 * (this warp's 32 x staged_depth(M) words of shared memory) with
 * asynchronous copies (cp.async), all in flight at once, group i's copies
 * one coalesced read, and zeroes the slot after its last word. Ring: the group masks and starts go to g as for global, and the first
 * RING_WORDS words of each lane to its ring column sw (ring_fill, waited
 * for). Corrupt offsets or lane counts read no word and set bad. */
template <int ST, int PD = 2>
__device__ __forceinline__ void lane_open(const DevMat &M, unsigned long long t, Group *g, uint32_t *sw, Lane &L,
                                          unsigned &bad)
{
    const unsigned k = threadIdx.x & 31;
    const uint32_t cap = (uint32_t)M.dmax;   /* staged lanes' depth, and the groups kept */
    uint32_t W = M.lane_words[t * 32 + k];
    const uint32_t o0 = M.offsets[t], o1 = M.offsets[t + 1];
    const bool span_ok = o0 <= o1 && o1 <= M.n_words;
    const uint32_t span = span_ok ? o1 - o0 : 0u;
    bad |= W > cap || !span_ok;
    W = W > cap ? cap : W;
    const uint32_t *tw = M.words + (span_ok ? o0 : 0u);
    /* groups [0, full) hold a word of every lane (full = the shortest lane's W): word i of
       lane k is the tile's word 32 i + k, found without a ballot; staged lanes copy them
       unchecked when the span holds them all (else the tile is corrupt: L.W = 0 below, no
       word read). Why: with a ballot, a popcount and a bounds check a word, a group took
       about 28 SASS instructions, in this loop about 7 (k_fused_q<Q4_K, 1, staged>, sm_90a,
       from the sizes at unroll 1, 2 and 4); 97.5 % of the synthetic Q4_K's lane words are in
       full groups (test_runtime_emu's traffic counts) */
    const uint32_t D = __reduce_max_sync(0xffffffffu, W), full = __reduce_min_sync(0xffffffffu, W);
    uint32_t G = 32 * full;
    bad |= G > span;
    if (ST == 1 && G <= span) {
#pragma unroll 4
        for (uint32_t i = 0; i < full; i++) {
            WR_PROBE(WR_SITE_COPY, tw + 32 * i + k);
            __pipeline_memcpy_async(&sw[i * 32 + k], tw + 32 * i + k, 4);
        }
    }
    /* the ragged groups [full, D): group i's active lanes by ballot, its start G */
#pragma unroll 4
    for (uint32_t i = full; i < D; i++) {
        const uint32_t m = __ballot_sync(0xffffffffu, W > i);
        if (ST == 1) {
            if (W > i) {
                const uint32_t j = wr_group_word(G, m, k);
                if (j < span) {
                    WR_PROBE(WR_SITE_COPY, tw + j);
                    __pipeline_memcpy_async(&sw[i * 32 + k], tw + j, 4);
                } else {
                    sw[i * 32 + k] = 0u;
                }
            }
        } else if (k == 0) {
            g[i] = Group{m, G};
        }
        G += __popc(m);
    }
    if (ST == 1) {
        __pipeline_commit();
        __pipeline_wait_prior(0);
    }
    __syncwarp();
    bad |= G != span;
    L.tw = tw;
    L.g = g;
    L.sw = sw + k;
    L.W = bad ? 0 : W;   /* corrupt offsets: read no word (the kernel flags the tile) */
    if (ST == 1)
        sw[L.W * 32 + k] = 0u;   /* slot W, read for every word past the end (lane_word, lane_pair_at) */
    L.full = full;
    wr_bits_init(&L.b);
    L.issued = 0;
    if (ST == 2) {   /* the first RING_WORDS words of each lane */
        ring_fill(L, 0, 0);
        __pipeline_wait_prior(0);
    }
    L.q0 = lane_word<ST>(L, 0);
    L.q1 = lane_word<ST>(L, 1);
    L.q2 = PD == 4 ? lane_word<ST>(L, 2) : 0u;
    L.q3 = PD == 4 ? lane_word<ST>(L, 3) : 0u;
}

/* Push the next word when fewer than 32 bits are buffered. (A branchless
 * form for staged lanes, selects and a predicated shared load, came to
 * more instructions a check than this branch: 21 against 17, sm_80 SASS.) */
template <int ST, int PD = 2>
__device__ __forceinline__ void lane_fill(Lane &L)
{
    if (wr_bits_low(&L.b)) {
        const uint32_t v = L.q0;
        L.q0 = L.q1;
        if (PD == 4) {
            L.q1 = L.q2;
            L.q2 = L.q3;
            L.q3 = lane_word<ST>(L, L.b.next + 4);
        } else {
            L.q1 = lane_word<ST>(L, L.b.next + 2);
        }
        wr_bits_push(&L.b, v);
    }
}

__device__ __forceinline__ int lane_sym(Lane &L, const wr_huf *h, unsigned &bad)
{
    lane_fill<false>(L);
    int len;
    int s = wr_huf_peek(h, (uint32_t)(L.b.buf >> (64 - h->L)), &len);
    bad |= s < 0;
    L.b.buf <<= len;
    L.b.nbits -= len;
    return s < 0 ? 0 : s;
}

/* The canonical-form checks of lanes.h after a lane's last code. */
__device__ __forceinline__ void lane_close(const Lane &L, unsigned &bad)
{
    bad |= (unsigned)wr_bits_close(&L.b, L.W);
}

__device__ __forceinline__ void load_huf(wr_huf *dst, const wr_huf &src)
{
    const uint32_t *s = reinterpret_cast<const uint32_t *>(&src);
    uint32_t *d = reinterpret_cast<uint32_t *>(dst);
    for (unsigned i = threadIdx.x; i < sizeof(wr_huf) / 4; i += blockDim.x)
        d[i] = s[i];
}

/* The element (esize bytes, little-endian) at byte offset at of the verbatim bytes. */
__device__ __forceinline__ uint32_t vbytes_at(const DevMat &M, unsigned long long at)
{
    const uint8_t *p = M.vbytes + at;
    uint32_t v = (uint32_t)(p[0] | p[1] << 8);
    if (M.esize == 4)
        v |= (uint32_t)(p[2] | p[3] << 8) << 16;
    return v;
}

/* The raw sign+mantissa bits of weight (row, col) (wr_raw_get: 8, 11 or 24 bits). */
__device__ __forceinline__ uint32_t raw_of(const DevMat &M, long long row, long long col)
{
    return wr_raw_get(M.raw, (unsigned long long)(row * M.cols + col), M.raw_bits);
}

/* The original bytes of a weight in a verbatim group (slow path, rare):
 * the group's bytes follow those of the row's earlier verbatim groups. The
 * fields come by value: a __noinline__ call given the kernel's DevMat by
 * reference makes every kernel that can reach it copy its whole parameter
 * block to local memory. */
struct VMeta {
    const uint8_t *vmap, *vbytes;
    const unsigned long long *vrow;
    long long group, gpr;
    int esize;
};

__device__ __forceinline__ VMeta vmeta(const DevMat &M)
{
    VMeta v = {M.vmap, M.vbytes, M.vrow, M.group, M.gpr, M.esize};
    return v;
}

__device__ __noinline__ uint32_t verbatim_elem(VMeta v, long long row, long long col, bool &is_v)
{
    long long gi = col / v.group;
    unsigned long long bit = (unsigned long long)(row * v.gpr + gi);
    is_v = (v.vmap[bit / 8] >> (bit % 8)) & 1;
    if (!is_v)
        return 0;
    unsigned long long before = 0;
    for (unsigned long long b = (unsigned long long)(row * v.gpr); b < bit; b++)
        before += (v.vmap[b / 8] >> (b % 8)) & 1;
    const uint8_t *p = v.vbytes + v.vrow[row] + (unsigned long long)v.esize * (before * v.group + (col - gi * v.group));
    uint32_t e = (uint32_t)(p[0] | p[1] << 8);
    if (v.esize == 4)
        e |= (uint32_t)(p[2] | p[3] << 8) << 16;
    return e;
}

/* Element bits (BF16, F16 or F32) of weight (row, col) of an exponent-coded
 * matrix, from the decoded symbol of its column (sym), its raw bits or its
 * verbatim group. */
__device__ __forceinline__ uint32_t exp_bits(const DevMat &M, long long row, long long col, int sym, unsigned &bad)
{
    if (M.palette_n) {
        bool is_v;
        const uint32_t vb = verbatim_elem(vmeta(M), row, col, is_v);
        if (is_v)
            return vb;
        int idx = (sym >> (4 * (col & 1))) & 15;
        bad |= idx >= M.n_palette;
        return wr_float_rebuild(M.type, M.palette[idx], raw_of(M, row, col));
    }
    return wr_float_rebuild(M.type, (uint32_t)sym, raw_of(M, row, col));
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
    lane_open<false>(M, t, g.e, nullptr, L, bad);
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
            wp_block_assemble(M.type, M.side + b * (unsigned long long)M.side_bytes, q, blk);
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
            const uint32_t v = exp_bits(M, row, col, sym, bad);
            uint8_t *o = out + (unsigned long long)M.esize * (unsigned long long)(row * M.cols + col);
            for (int b = 0; b < M.esize; b++)
                o[b] = (uint8_t)(v >> (8 * b));
        }
    }
    if (bad)
        atomicOr(M.err, 1);
}

/* ---- fast decode: a 2^L lookup table in shared memory ----------------------------------
 * The GEMV kernels decode with one shared-memory load a symbol: entry p of
 * the table (p = the next L bits) is wr_dev.h's wr_lut_entry (length, flags,
 * payload), built on the host by wr_lut_build from the same limit tables, so
 * it decodes exactly what wr_huf_peek decodes; the CPU tests run the same
 * table and bit reader (wr_dev_decode_tile). */

/* One symbol through the table, after a fill check (any loop). */
template <int ST, int PD = 2>
__device__ __forceinline__ uint32_t lane_next(Lane &L, const uint32_t *lut, int Lb, unsigned &bad)
{
    lane_fill<ST, PD>(L);
    const uint32_t e = wr_bits_take(&L.b, lut, Lb);
    bad |= e & WR_LUT_BAD;
    return e;
}

/* One symbol without a fill check: for the second of each pair of
 * symbols, after lane_next took the first (a fill leaves >= 32 bits, two
 * codes of <= 11). The unrolled loops check once every two symbols. */
__device__ __forceinline__ uint32_t lane_take(Lane &L, const uint32_t *lut, int Lb, unsigned &bad)
{
    const uint32_t e = wr_bits_take(&L.b, lut, Lb);
    bad |= e & WR_LUT_BAD;
    return e;
}

/* Symbol i of an unrolled run (i a compile-time index from 0): fill check at
 * even i only. */
template <int ST, int PD = 2>
__device__ __forceinline__ uint32_t lane_at(Lane &L, int i, const uint32_t *lut, int Lb, unsigned &bad)
{
    return i % 2 == 0 ? lane_next<ST, PD>(L, lut, Lb, bad) : lane_take(L, lut, Lb, bad);
}

/* lane_at without the check of the entry's bad flag, for a lane that
 * lane_close checks at its end (k_fused_q, k_fused_private): a peek that no
 * code starts with has an entry of length 0, so the lane stops there for
 * good and ends short of its words, or with padding bits set (the peek's),
 * which lane_close flags (test_runtime_emu's check_no_code). The palette
 * kernels keep lane_at: a palette flag does not stop the lane. Why: the
 * check was an instruction a symbol (k_fused_q<Q4_K, 1, staged>, sm_90a). */
template <int ST, int PD = 2>
__device__ __forceinline__ uint32_t lane_at_unchecked(Lane &L, int i, const uint32_t *lut, int Lb)
{
    if (i % 2 == 0)
        lane_fill<ST, PD>(L);
    return wr_bits_take(&L.b, lut, Lb);
}

/* Word i of a lane read by lane_pair_at, 0 from word W on (the ring: words
 * W .. W + 2): staged (ST 1) from slot min(i, W), slot W holding 0; ring
 * (2) from slot i % RING_WORDS, which ring_fill zeroes for words W, W + 1
 * and W + 2 (word W is what a lane at exactly 32 W bits peeks; W + 1 and
 * W + 2 are loaded into its window beside it, so nothing stale is; a lane
 * further on is flagged by wr_pos_close whatever it reads; past W + 2 the
 * ring's slots hold whatever they held). Why 0 and not whatever a ring
 * slot holds: a lane one word short, whose next peek fell on a stale slot
 * without a code, stopped at exactly 32 W bits and passed wr_pos_close (a
 * reviewer's find, test_runtime_emu's check_short_lane); a 0 peek always
 * has a code, so the lane runs on past its end and is flagged. Zeroed by
 * the fill, not tested here (i >= W, a select), the ring's loop over a
 * sub-block is 2-3 SASS instructions a pair shorter: Q4_K 326 -> 308
 * without its copy loops, Q8_0 481 -> 436 (sm_90a, batch 1,
 * runtime/sassloops.py). */
template <int ST>
__device__ __forceinline__ uint32_t pair_word(const Lane &L, uint32_t i)
{
    const uint32_t slot = ST == 1 ? (i < L.W ? i : L.W) : i & (RING_WORDS - 1);
    WR_PROBE(WR_SITE_SWORD, &L.sw[slot * 32]);
    const uint32_t v = L.sw[slot * 32];
    return v;
}

/* Staged and ring lanes of k_fused_q, read by position (no bit buffer, no
 * fill check). A pair of symbols at a time: the 64 bits from the position
 * are words np and np + 1 of the lane (a, b, in registers) shifted left by
 * the position % 32 (hi:lo, a funnel shift); the first symbol's peek is
 * hi's top L bits, the second's the L bits after the first's length (a
 * funnel shift), and the position moves on by both lengths (hi:lo holds >=
 * 33 bits from it, two codes of <= 11). np then moves on by 0 or 1: a, b
 * become b, c where it does, c being word np + 2, loaded one pair ahead
 * (pair_word: 0 from W on; a staged lane reads slot min(i, W), which lane_open
 * zeroes at W, so a corrupt lane reads no other memory), so no load waits
 * on the pair before it.
 *
 * The position is kept as s, the sum of the entries read: bits 0..5 of an
 * entry of k_fused_q's table are its code length (<= 11) alone, 0 without
 * a code (WR_LUT_BAD is bit 6; test_runtime_cpu checks every table), and
 * the bits above hold the codes' values, whose sums carry only upward; so
 * s's bits 0..5 are the position's. The funnel shifts take their amount mod 32 (SHF.W), so s
 * and the first entry serve as they are, and since a pair moves the
 * position by <= 22 bits, np moves on exactly when s's bit 5 flips
 * (lane_pair_pos makes the position at the end). Per pair that is one
 * add of three and one test, where the position took two length masks,
 * an add, a mask, a shift and a compare.
 *
 * A peek without a code has length 0, so the lane stops there;
 * finish_gemv's wr_pos_close flags it, or a lane ending short, long or with
 * padding bits set. Why a window: the buffer's fill check every second
 * symbol (a compare, a branch and, when any lane of the warp needs it,
 * which is nearly always, a push into the 64-bit buffer and the next word's
 * load) took more: k_fused_q<Q4_K, 1, staged>'s loop over a sub-block (16
 * symbols) came to 274 SASS instructions against 362 (sm_90a, from the
 * kernel's size at unroll 1 and 2). The sum s left staged's loop as it was
 * (285 instructions as built, runtime/sassloops.py: ptxas had made as much
 * of the masks) and took a few off the ring's. */
struct PairWin {
    uint32_t a, b, c;   /* the lane's words np, np + 1, np + 2 (c loaded ahead; pair_word: 0 past W, the
                           ring's to W + 2) */
    uint32_t np;        /* the position / 32 */
    uint32_t s;         /* the entries' sum: bits 0..4 the position % 32, bit 5 np's parity */
    uint32_t hi, lo;    /* the 64 bits from the position at the pair's first symbol */
    uint32_t e0;        /* the pair's first entry (bits 0..4: its code length) */
};

/* The window's words at the lane's start (after lane_open). */
template <int ST>
__device__ __forceinline__ void lane_pair_open(const Lane &L, PairWin &w)
{
    w.np = 0;
    w.s = 0;
    w.a = pair_word<ST>(L, 0);
    w.b = pair_word<ST>(L, 1);
    w.c = pair_word<ST>(L, 2);
}

/* what the sum s relies on at compile time: a pair's two codes move the position by < 32
   bits, and a length fits bits 0..3; that bits 4..5 of the table's entries are 0 is
   test_runtime_cpu's check of every table */
static_assert(2 * WR_LUT_MAX_BITS < 32 && WR_LUT_MAX_BITS <= (int)WR_LUT_LEN, "lane_pair_at's position sum");

template <int ST>
__device__ __forceinline__ uint32_t lane_pair_at(const Lane &L, int i, const uint32_t *lut, int Lb, PairWin &w)
{
    if (i % 2 == 0) {
        w.hi = wr_funnel_l(w.b, w.a, w.s);
        w.lo = wr_funnel_l(0u, w.b, w.s);   /* b << (s % 32) */
        const uint32_t *ep = lut + (w.hi >> (32 - Lb));
        WR_PROBE(WR_SITE_LUT, ep);
        w.e0 = *ep;
        return w.e0;
    }
    const uint32_t *ep = lut + (wr_funnel_l(w.lo, w.hi, w.e0) >> (32 - Lb));
    WR_PROBE(WR_SITE_LUT, ep);
    const uint32_t e = *ep;
    const uint32_t s = w.s + w.e0 + e;
    /* the next pair's words: np moves on by 0 or 1 (a pair reads <= 22 bits); the word
       after them loaded now, for the pair after this one */
    /* adv is the flipped bit itself (32 or 0): as a bool, ptxas made (x >> 5) & 1 and a
       compare of it, two instructions a pair more (sub-block loops, sm_90a, sassloops.py:
       staged Q4_K 270 -> 254, ring Q4_K 395 -> 379, staged Q8_0 397 -> 365; every
       k_fused_q<T, 1 or 8, staged or ring> 4 to 32 fewer) */
    const uint32_t adv = (s ^ w.s) & 32u;
    w.s = s;
    w.np += adv >> 5;
    w.a = adv ? w.b : w.a;
    w.b = adv ? w.c : w.b;
    w.c = pair_word<ST>(L, w.np + 2);
    return e;
}

/* The lane's position (bits read) after lane_pair_at's last pair, for
 * finish_gemv's checks. */
__device__ __forceinline__ uint32_t lane_pair_pos(const PairWin &w) { return 32u * w.np + (w.s & 31u); }

/* lane_at_unchecked through the lane-private table plut (pipeline
 * "private"): lane k reads bank k only (wr_bits_take_private). */
template <int ST, int PD = 2>
__device__ __forceinline__ uint32_t lane_at_private(Lane &L, int i, const uint32_t *plut, unsigned k, int Lb)
{
    if (i % 2 == 0)
        lane_fill<ST, PD>(L);
    return wr_bits_take_private(&L.b, plut, k, Lb);
}

/* Stage the lane-private table into shared memory, block-wide: row r of
 * the pair table src (2^(L-1) words, plut_host) to words r * 32 .. r * 32
 * + 31, as 16-byte stores. */
__device__ __forceinline__ void load_plut(uint32_t *dst, const uint32_t *__restrict__ src, int Lb)
{
    const unsigned n4 = 8u << (Lb - 1);   /* 8 stores a row of 32 words */
    for (unsigned i = threadIdx.x; i < n4; i += blockDim.x) {
        const uint32_t w = __ldg(src + i / 8);
        reinterpret_cast<uint4 *>(dst)[i] = make_uint4(w, w, w, w);
    }
}

/* Stage the decode table src (2^Lb words, global) into dst (shared, 16-byte
 * aligned: its __align__(16)), block-wide, as asynchronous copies
 * (cp.async) all in flight at once: 16 bytes each where the table holds a
 * multiple of 4 words (src is cudaMalloc's, so aligned too), else 4;
 * committed as one batch, which the caller waits for
 * (__pipeline_wait_prior) before the __syncthreads after which any thread
 * reads the table. Why: a loop of 4-byte loads, each stored before the next
 * was issued, took 16 round trips to L2 at L = 11 (128 threads), and
 * the store waiting on its load was the instruction the most warp stall
 * samples fell on in k_fused_q (staged, ring and fused Q4_K, 4096 x 14336,
 * batch 1: 12 % of ring's samples, H100, 2026-12-05): the kernels run
 * about one wave, so every warp waited so at its start with nothing to
 * issue. */
__device__ __forceinline__ void load_lut_async(uint32_t *dst, const uint32_t *__restrict__ src, int Lb)
{
    const unsigned n = 1u << Lb;
    if (n % 4 == 0) {
        for (unsigned i = threadIdx.x; i < n / 4; i += blockDim.x)
            __pipeline_memcpy_async(dst + 4 * i, src + 4 * i, 16);
    } else {
        for (unsigned i = threadIdx.x; i < n; i += blockDim.x)
            __pipeline_memcpy_async(dst + i, src + i, 4);
    }
    __pipeline_commit();
}

/* load_lut_async, waited for (this thread's copies; the caller syncs the
 * block). */
__device__ __forceinline__ void load_lut(uint32_t *dst, const uint32_t *__restrict__ src, int Lb)
{
    load_lut_async(dst, src, Lb);
    __pipeline_wait_prior(0);
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
 * under 8 weights): then every weight takes verbatim_elem. */
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
    V.vb = M.vrow[row] + (unsigned long long)M.esize * before * (unsigned long long)M.group;
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

/* The element bits of weight (row, col) when it is in a verbatim group of V
 * (*is_v = 1), else *is_v = 0. */
__device__ __forceinline__ uint32_t vrow_bits(const DevMat &M, const VRow &V, long long row, long long col, bool &is_v)
{
    if (!V.ok)
        return verbatim_elem(vmeta(M), row, col, is_v);
    const long long local = col - V.g0 * M.group;
    const int gi = (int)(M.gshift >= 0 ? local >> M.gshift : local / M.group);
    is_v = (V.mask >> gi) & 1;
    if (!is_v)
        return 0;
    const unsigned long long at =
        V.vb + (unsigned long long)M.esize *
                   ((unsigned long long)__popc(V.mask & ((1u << gi) - 1)) * (unsigned long long)M.group +
                    (unsigned long long)(local - (long long)gi * M.group));
    return vbytes_at(M, at);
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

/* Weights a row of the tile column starting at weight c0w: 256, fewer at the right edge. */
__device__ __forceinline__ int tile_nw(const DevMat &M, long long c0w)
{
    return (int)(M.cols - c0w < 256 ? M.cols - c0w : 256);
}

__device__ __forceinline__ TilePos tile_pos(const DevMat &M)
{
    TilePos p;
    p.warp = threadIdx.x / 32;
    p.k = threadIdx.x % 32;
    p.tc = blockIdx.x;
    p.tr = (unsigned long long)blockIdx.y * FUSED_WARPS + p.warp;
    p.c0w = (long long)p.tc * 256;
    p.nw = tile_nw(M, p.c0w);
    return p;
}

/* Warp-collective: open the warp's tile (tile row P.tr, column P.tc) for
 * this thread's lane (lane_open), with the warp's groups g (global and
 * ring lanes; M.dmax of them at least) and its lane words sw in shared
 * memory (staged: 32 x staged_depth(M), ring: 32 x RING_WORDS; global:
 * none). Returns false, opening nothing, when the warp is past the last
 * tile row. */
template <int ST, int PD = 2>
__device__ __forceinline__ bool tile_open(const DevMat &M, const TilePos &P, Group *g, uint32_t *sw, TileGeo &tg,
                                          Lane &L, unsigned &bad)
{
    if (P.tr >= M.trows)
        return false;
    const unsigned long long t = P.tr * M.tcols + P.tc;
    tg = tile_geo(M, t);
    lane_open<ST, PD>(M, t, g, sw, L, bad);
    return true;
}

/* tile_open in a k_fused_q / k_fused_exp launch: warp P.warp's groups and
 * lane words in the dynamic shared memory dyn (fused_smem_bytes). */
template <int ST, int PD = 2>
__device__ __forceinline__ bool fused_tile_open(const DevMat &M, const TilePos &P, uint32_t *dyn, TileGeo &tg,
                                                Lane &L, unsigned &bad)
{
    return tile_open<ST, PD>(M, P, fused_groups(M, dyn, ST, P.warp), fused_lane_words(M, dyn, ST, P.warp), tg, L, bad);
}

/* Stage the tile column's slice of the B input vectors in shared memory
 * (zeros past the row end), block-wide: asynchronous copies (cp.async, 4
 * bytes: a row of x starts at any word) committed as one batch, which the
 * caller waits for (__pipeline_wait_prior) before it syncs the block. Why
 * asynchronous: as loads, each stored before the next, they were B * 2
 * round trips at the kernel's start (load_lut_async). */
template <int B>
__device__ __forceinline__ void stage_x(float (*xs)[256], const DevMat &M, const float *x, const TilePos &p)
{
    for (int i = threadIdx.x; i < B * 256; i += blockDim.x) {
        int b = i / 256, j = i % 256;
        if (j < p.nw)
            __pipeline_memcpy_async(&xs[b][j], x + (long long)b * M.cols + p.c0w + j, 4);
        else
            xs[b][j] = 0.0f;
    }
    __pipeline_commit();
}

/* End of a GEMV tile: check the lane, add thread k's sums of rows 2k, 2k+1
 * to y (zeroed before the launch), flag a corrupt tile. POS 1 (staged) or 2
 * (ring): the lane was read by position, pos its bits read (lane_pair_pos). */
template <int B, int POS = 0>
__device__ __forceinline__ void finish_gemv(const DevMat &M, const TileGeo &tg, unsigned k, const Lane &L,
                                            const float (&acc)[2][B], unsigned bad, float *y, uint32_t pos = 0)
{
    if (POS)   /* the same checks from the position */
        bad |= (unsigned)wr_pos_close(pos, L.W, pair_word<POS>(L, pos >> 5));
    else
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

/* Codes a symbol of a type holds (8 / bits, as wr_geom_of's wps and
 * lib/codes.h's wp_codes_wps), as a constant for the templates. */
__host__ __device__ constexpr int dev_wps(int type) { return wp_block_geom_of(type).bits ? 8 / wp_block_geom_of(type).bits : 0; }

/* Bits a code of a type, whether its codes map to values through the
 * non-linear table kv (wr_kv) rather than q - qoff, and the weights a
 * sub-block holds: block_layout.h's geometry, as constants for the
 * templates. */
__host__ __device__ constexpr int dev_bits(int type) { return wp_block_geom_of(type).bits; }
__host__ __device__ constexpr bool dev_nl(int type) { return wp_block_geom_of(type).nl != 0; }
__host__ __device__ constexpr int dev_sub_n(int type) { return wp_block_geom_of(type).sub_n; }

/* Sub-blocks a ring lane's fill serves in k_fused_q: the largest power of 2
 * F with (F + 1) x w <= RING_WORDS - 1, w being the most words a
 * sub-block's codes move a lane on (its symbols x WR_LUT_MAX_BITS bits, /
 * 32 rounded up): Q2_K 8 (w 2), Q3_K 8 (3), the 4-bit types and Q6_K 4
 * (6), Q5 and Q8_0 1 (11). Why it holds: a fill at window word N copies up
 * to word N + RING_WORDS + 1; the sub-block of the next fill, F sub-blocks
 * on (N' <= N + F w), reads up to N' + w + 2 before that fill is waited
 * for, and every other sub-block waits for the fill before it reads.
 * Why: a fill costs about 29 SASS instructions whatever it copies, plus a
 * trip of its copy loop for every 4 words (ring_fill); Q4_K's sub-block
 * reads about 4 words, Q2_K's 1 (k_fused_q at batch 1, sm_90a). */
__host__ __device__ constexpr int ring_every(int type)
{
    const int w = (dev_sub_n(type) / dev_wps(type) * WR_LUT_MAX_BITS + 31) / 32;
    int f = 1;
    while ((2 * f + 1) * w <= RING_WORDS - 1)
        f *= 2;
    return f;
}
static_assert(ring_every(WP_Q2_K) == 8 && ring_every(WP_Q3_K) == 8 && ring_every(WP_Q4_K) == 4 &&
                  ring_every(WP_Q6_K) == 4 && ring_every(WP_Q4_0) == 4 && ring_every(WP_Q8_0) == 1 &&
                  ring_every(WP_Q5_K) == 1,
              "ring_every's sub-blocks a fill");

/* Code q's value c(q) (wr_sub_scale's c): q - qoff made exact with the
 * 2^23 trick (the float with bits 0x4B000000 | q is 2^23 + q; moff = 2^23 +
 * qoff), two full-rate instructions where an int-to-float conversion runs
 * at a quarter of the FP32 rate, or kv16[q] for the non-linear 4-bit types
 * (16 words in 16 banks: no bank conflict whatever the lanes' codes).
 * The twin k_twin, k_fused_private and Q2_K's k_fused_q convert so; the
 * other k_fused_q take the same floats from their table (code_val). */
template <int TYPE>
__device__ __forceinline__ float q_val(uint32_t q, float moff, const float *kv16)
{
    return dev_nl(TYPE) ? kv16[q] : __uint_as_float(0x4B000000u | q) - moff;
}

/* Code u of table entry e as its value c(q). BYTES: e is an entry of
 * k_fused_q's table (wr_lut_values), which holds the values themselves for
 * one or two codes a symbol: one AND, or for a pair's second code a shift
 * and an AND (wr_lut_value; IQ4's second code through kv16); else (Q2_K,
 * and the lane-private table of k_fused_private) code u of the symbol at
 * bits 24.. through q_val. The two give the same floats, so fused and
 * private sum the same products. Why the values: a code in a byte of its
 * own took a byte permute and a subtraction (the 2^23 trick); the AND saves
 * the subtraction, and IQ4's first code its shared-memory lookup
 * (k_fused_q<Q4_K, 1, staged>, sm_90a: 32 fewer SASS instructions a
 * sub-block of 32 weights). Before that, a symbol-indexed value table
 * (vt[256], float2 for pairs) cost k_fused_q about 5 of its 12.8 shared
 * wavefronts a warp-symbol in bank conflicts (Nsight Compute, Q4_K, 4096 x
 * 14336, batch 1, H200); without it its shared wavefronts fell from 11.8 M
 * to 5.2 M and its time from 119 to 97 us, staged 135 -> 108. */
template <int TYPE, bool BYTES>
__device__ __forceinline__ float code_val(uint32_t e, int u, float moff, const float *kv16)
{
    constexpr int bits = dev_bits(TYPE);
    if (BYTES && dev_wps(TYPE) <= 2)
        return wr_lut_value(e, u, dev_wps(TYPE), dev_nl(TYPE), kv16);
    return q_val<TYPE>((e >> (24 + bits * u)) & ((1u << bits) - 1u), moff, kv16);
}

/* Bytes to allocate for a matrix's side bytes on the device: len rounded up
 * to 16, so side_row's aligned 16-byte loads covering a tile row's bytes
 * stay inside the buffer (the padding is zeroed, never used). */
static inline size_t side_alloc_bytes(size_t len) { return (len + 15) & ~(size_t)15; }

/* The side bytes (d, scales, mins: wr_sub_scale's input) of one tile row,
 * nb blocks from sp, copied into this thread's array out (registers and
 * local memory: 32 bytes, the most a 256-weight row holds, Q4_1 and Q5_1's
 * 8 x 4), byte b of out = sp[b] (bytes past the row's blocks: whatever
 * follows them, never read). They are read as the aligned 16-byte chunks
 * that cover them (1 to 3; the buffer is padded, side_alloc_bytes), then
 * shifted down by sp's offset in its chunk (the buffer's start, M.side,
 * is 16-aligned: cudaMalloc's, or the emulator's 256): a Q4_K or Q5_K row of
 * 256 weights is one load (16 bytes, 16-aligned), Q8_0 and Q4_0 one when
 * the matrix has a multiple of 256 columns (else one or two), Q6_K's 18
 * bytes two. Why: thread k reads rows 2k, 2k+1, so every load is a request
 * of 32 rows (32 lines); read in place, wr_sub_scale issued 6-7 byte loads
 * a sub-block, about 3,300 L1 wavefronts a Q4_K tile at batch 1 against
 * about 900 for the decode-table lookups, and a request average near the 17
 * sectors Nsight Compute measured; 4-byte loads of a copy made that 256
 * lines a tile, these 16-byte ones 64 (test_runtime_emu's traffic
 * counts). wr_sub_scale's reads of the copy take one wavefront each (the
 * same offset in every thread). */
template <int TYPE>
__device__ __forceinline__ void side_row(uint32_t (&out)[8], const uint8_t *sp, int nb)
{
    const wr_geom G = wr_geom_of(TYPE);
    constexpr int NC = 3;   /* chunks at most: 32 bytes from an offset of up to 15 */
    const int bytes = nb * G.side, most = 256 / G.n * G.side;
    const unsigned mis = (unsigned)((uintptr_t)sp & 15);
    const uint4 *c = reinterpret_cast<const uint4 *>(sp - mis);
    const unsigned n = (mis + (unsigned)bytes + 15) / 16;
    uint32_t w[4 * NC];   /* out[i] takes w[i + ws], w[i + ws + 1]: at most w[7 + 3 + 1] */
#pragma unroll
    for (int i = 0; i < NC; i++) {
        uint4 v = make_uint4(0u, 0u, 0u, 0u);
        if ((unsigned)i < n) {
            WR_PROBE(WR_SITE_SIDE, c + i);
            v = __ldg(c + i);
        }
        w[4 * i] = v.x;
        w[4 * i + 1] = v.y;
        w[4 * i + 2] = v.z;
        w[4 * i + 3] = v.w;
    }
    const unsigned ws = mis / 4, bs = 8 * (mis % 4);   /* the shift: whole words, then bytes */
#pragma unroll
    for (int i = 0; i < 8; i++) {
        if (4 * i >= most)
            break;
        const uint32_t lo = ws == 0 ? w[i] : ws == 1 ? w[i + 1] : ws == 2 ? w[i + 2] : w[i + 3];
        const uint32_t hi = ws == 0 ? w[i + 1] : ws == 1 ? w[i + 2] : ws == 2 ? w[i + 3] : w[i + 4];
        out[i] = bs ? (lo >> bs) | (hi << (32 - bs)) : lo;
    }
}

/* Words of a lane the fused GEMVs load ahead (Lane's PD): 4 for global lanes
 * (ST 0) at batch 1-2 (a refill's load then has about 18 Q4_K codes of
 * decode to arrive, 9 at 2), 2 at batch 4-8 (4 spilled there, ptxas
 * sm_90a) and for staged lanes (shared memory). */
__host__ __device__ constexpr int fused_pd(int ST, int B) { return ST == 0 && B <= 2 ? 4 : 2; }

/* One tile of the fused GEMV for this thread's lane L (opened by
 * lane_open): rows 2k, 2k+1 of tile tg (first weight column c0w, nw weights
 * a row) against the column's x slice xs and its sub-block sums xsum, codes
 * decoded through `table` (PT: the lane-private table, wr_bits_take_private;
 * else the shared 2^L table), sums added to y (finish_gemv). The body of
 * k_fused_q and k_fused_private. */
template <int TYPE, int B, int ST, int PD, bool PT>
__device__ __forceinline__ void fused_q_tile(const DevMat &M, Lane &L, const TileGeo &tg, unsigned k, long long c0w,
                                             int nw, const float (*xs)[256], const float (*xsum)[16],
                                             const uint32_t *table, const float *kv16, unsigned bad,
                                             float *__restrict__ y)
{
    constexpr int WPS = dev_wps(TYPE);
    const wr_geom G = wr_geom_of(TYPE);
    const float moff = 8388608.0f + (float)M.qoff;
    float acc[2][B] = {};
    PairWin win;   /* staged and ring: lane_pair_at's window */
    if (ST != 0)
        lane_pair_open<ST>(L, win);
    const unsigned long long bpr = (unsigned long long)(M.cols / G.n);
    const int nsub = nw / G.sub_n;
#pragma unroll
    for (int rr = 0; rr < 2; rr++) {
        const unsigned r = 2 * k + rr;
        if (r >= tg.h)
            break;
        const unsigned long long row = tg.r0 + r;
        uint32_t side[8];
        side_row<TYPE>(side, M.side + (row * bpr + (unsigned long long)c0w / G.n) * (unsigned)G.side, nw / G.n);
        const uint8_t *sp = reinterpret_cast<const uint8_t *>(side);
        for (int sb = 0; sb < nsub; sb++) {
            if (ST == 2) {
                /* every ring_every(TYPE) sub-blocks of a row, copies for the coming ones, up to
                   word N + 33 (N: the window's np now): this sub-block reads words up to N + w +
                   2 (lane_pair_at: a pair reads <= 22 bits, so a sub-block of S symbols moves np
                   on by <= w = S x 11 / 32 rounded up), copied by the fill before (up to N_prev +
                   33, N - N_prev <= F w), landed once it is waited for; the sub-blocks after it
                   wait for this fill (up to N + F w + 2, ring_every); the copies in flight
                   overwrite only the slots of words <= N + 1, which the window holds in
                   registers already (a, b) */
                if (sb % ring_every(TYPE) == 0) {
                    ring_fill(L, win.np, 2);
                    __pipeline_wait_prior(1);
                } else {
                    __pipeline_wait_prior(0);
                }
            }
            /* the sub-block's block in the tile row: always 0 for the 256-weight blocks (a tile
               row is at most 256 weights, tile_nw); said so, the compiler reads such a block's
               d and dmin once a row: staged Q4_K's loop over a sub-block 285 -> 270 SASS
               instructions, Q5_K 421 -> 405, Q6_K 216 -> 208, ring Q6_K 315 -> 306 (sm_90a,
               batch 1, runtime/sassloops.py) */
            const int jb = G.n >= 256 ? 0 : sb * G.sub_n / G.n;
            const int sib = sb * G.sub_n % G.n / G.sub_n;
            const wr_scale sc = wr_sub_scale(TYPE, sp + jb * G.side, sib);
            float dot[B];
#pragma unroll
            for (int b = 0; b < B; b++)
                dot[b] = 0.0f;
#pragma unroll
            for (int i = 0; i < G.sub_n / WPS; i++) {
                const uint32_t e = PT        ? lane_at_private<ST, PD>(L, i, table, k, M.L)
                                   : ST != 0 ? lane_pair_at<ST>(L, i, table, M.L, win)
                                             : lane_at_unchecked<ST, PD>(L, i, table, M.L);
#pragma unroll
                for (int u = 0; u < WPS; u++) {
                    const float c = code_val<TYPE, !PT>(e, u, moff, kv16);
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
    if (ST == 2)
        __pipeline_wait_prior(0);   /* no copy in flight when the tile ends */
    finish_gemv<B, ST>(M, tg, k, L, acc, bad, y, ST != 0 ? lane_pair_pos(win) : 0u);
}

template <int TYPE, int B, int ST>
__global__ void __launch_bounds__(32 * FUSED_WARPS, B <= 2 ? 8 : 4) k_fused_q(DevMat M, const uint32_t *__restrict__ glut,
                                                              const float *__restrict__ x, float *__restrict__ y)
{
    constexpr int PD = fused_pd(ST, B);
    const wr_geom G = wr_geom_of(TYPE);
    __shared__ __align__(16) uint32_t lut[1 << WR_LUT_MAX_BITS];
    __shared__ float kv16[16];   /* the non-linear types' code values (code_val) */
    WR_DYN_SMEM(uint32_t, dyn);   /* lane words (ST 1, 2) and groups (ST 0, 2): fused_smem_bytes */
    __shared__ float xs[B][256];
    __shared__ float xsum[B][16];
    const TilePos P = tile_pos(M);
    /* the table and the x slice copied while the warp opens its tile: their copies, the lane
       words' and the lane counts' loads in flight together, one wait for all (a warp past the
       last tile row opens none, and still joins the block's syncs) */
    load_lut_async(lut, glut, M.L);
    stage_x<B>(xs, M, x, P);
    if (threadIdx.x < 16)
        kv16[threadIdx.x] = wr_kv((int)threadIdx.x);
    TileGeo tg;
    unsigned bad = 0;
    Lane L;
    const bool open = fused_tile_open<ST, PD>(M, P, dyn, tg, L, bad);
    __pipeline_wait_prior(0);
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
    if (!open)
        return;
    fused_q_tile<TYPE, B, ST, PD, false>(M, L, tg, P.k, P.c0w, P.nw, xs, xsum, lut, kv16, bad, y);
}

/* Stage tile column c0w's slice of the B input vectors in this warp's xs
 * (zeros past the row end, nw weights), and its sub-block sums (sub_n 16
 * or 32 weights) in xsum, added in k_fused_q's order (weight 0, 1, ...
 * from 0.0f) so the two pipelines' sums are equal bit for bit: lane k
 * reads weights 8k .. 8k + 7 back and goes on from the sum of the lane
 * before it (a shuffle a step, sub_n / 8 steps). Warp-collective; the
 * caller syncs the warp before and after. */
template <int B>
__device__ __forceinline__ void stage_x_warp(float (*xs)[256], float (*xsum)[16], const DevMat &M,
                                             const float *__restrict__ x, long long c0w, int nw, int sub_n, unsigned k)
{
    const int per = sub_n / 8;   /* lanes a sub-block: 4 or 2 */
#pragma unroll
    for (int b = 0; b < B; b++) {
        /* coalesced: weight 32 i + k from global memory to xs, bank k */
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int j = 32 * i + (int)k;
            xs[b][j] = j < nw ? __ldg(x + (long long)b * M.cols + c0w + j) : 0.0f;
        }
    }
    __syncwarp();
#pragma unroll
    for (int b = 0; b < B; b++) {
        /* this lane's weights 8k .. 8k + 7, as two 16-byte reads (xs is 16-byte aligned) */
        const float4 *q = reinterpret_cast<const float4 *>(&xs[b][8 * k]);
        const float4 q0 = q[0], q1 = q[1];
        const float v[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
        float s = 0.0f;
        for (int step = 0; step < per; step++) {
            const float prev = __shfl_up_sync(0xffffffffu, s, 1);
            if ((int)k % per == step) {
                float a = step ? prev : 0.0f;
#pragma unroll
                for (int i = 0; i < 8; i++)
                    a += v[i];
                s = a;
            }
        }
        if ((int)k % per == per - 1)
            xsum[b][(int)k / per] = s;
    }
}

/* Pipeline "private": fused decode + GEMV through the lane-private table
 * (wr_bits_take_private; gpairs the pair table, plut_host), persistent:
 * each block copies the table into shared memory once, then each of its
 * warps takes tiles t = blockIdx.x * warps + warp, + gridDim.x * warps, ...
 * (row-major over the matrix), with its own x slice and sums
 * (stage_x_warp), so that one 2^L x 64-byte table serves every tile a
 * block runs and the grid spreads the tiles over the SMs (private_shape).
 * Dynamic shared memory: private_smem_bytes (table, then per warp groups,
 * xs, xsum); blocks of up to private_warps(B) warps (gpu.cu's
 * private_launch). */
template <int TYPE, int B>
__global__ void __launch_bounds__(32 * private_warps(B), 1)
    k_fused_private(DevMat M, const uint32_t *__restrict__ gpairs, const float *__restrict__ x, float *__restrict__ y)
{
    constexpr int PD = fused_pd(0, B);
    const wr_geom G = wr_geom_of(TYPE);
    __shared__ float kv16[16];
    WR_DYN_SMEM(uint32_t, sm);
    const unsigned warp = threadIdx.x / 32, k = threadIdx.x % 32, nwarps = blockDim.x / 32;
    load_plut(sm, gpairs, M.L);
    if (threadIdx.x < 16)
        kv16[threadIdx.x] = wr_kv((int)threadIdx.x);
    __syncthreads();
    uint8_t *wb = reinterpret_cast<uint8_t *>(sm) + private_lut_bytes(M.L) + (size_t)warp * private_warp_bytes(M, B);
    Group *g = reinterpret_cast<Group *>(wb);
    float (*xs)[256] = reinterpret_cast<float (*)[256]>(wb + warp_group_bytes(M));
    float (*xsum)[16] = reinterpret_cast<float (*)[16]>(wb + warp_group_bytes(M) + (size_t)B * 256 * 4);
    for (unsigned long long t = (unsigned long long)blockIdx.x * nwarps + warp; t < M.ntiles;
         t += (unsigned long long)gridDim.x * nwarps) {
        const long long c0w = (long long)(t % M.tcols) * 256;
        const int nw = tile_nw(M, c0w);
        __syncwarp();   /* every lane done with the last tile's xs and group masks */
        stage_x_warp<B>(xs, xsum, M, x, c0w, nw, G.sub_n, k);
        __syncwarp();
        const TileGeo tg = tile_geo(M, t);
        unsigned bad = 0;
        Lane L;
        lane_open<0, PD>(M, t, g, nullptr, L, bad);
        fused_q_tile<TYPE, B, 0, PD, true>(M, L, tg, k, c0w, nw, xs, xsum, sm, kv16, bad, y);
    }
}

/* ---- fused exponent-only decode + GEMV (BF16, F16, F32) ---------------------------------------
 * The same tiling; each decoded symbol gives one exponent (palette 0) or two
 * (palette pairs, transcoded by the lookup table); each weight is rebuilt in
 * registers from the exponent and its raw bits. Rows with verbatim groups
 * (vrow[r + 1] > vrow[r]) take the slow path for weights of those groups.
 * BF16 with 8 | cols reads 8 raw bytes at a time; F16 (11 raw bits a
 * weight), F32 (24) and other widths go weight by weight (exp_weight_any). */

/* The element bits of weight (row, col): its original bits when it is in a
 * verbatim group of V, else `bits` (rebuilt from exponent u of the decoded
 * table entry e), with a palette index outside the palette flagged in bad. */
template <bool PAL>
__device__ __forceinline__ uint32_t exp_or_verbatim(const DevMat &M, const VRow &V, bool hasv, long long row,
                                                    long long col, uint32_t e, int u, uint32_t bits, unsigned &bad)
{
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

/* BF16 bits of weight (row, col) from its decoded table entry e (exponent
 * u of the symbol), its raw byte and the row's verbatim groups V. */
template <bool PAL>
__device__ __forceinline__ uint32_t exp_weight(const DevMat &M, const VRow &V, bool hasv, long long row,
                                               long long col, uint32_t e, int u, uint32_t raw, unsigned &bad)
{
    const uint32_t bits = (raw & 0x80u) << 8 | ((e >> (8 + 8 * u)) & 255u) << 7 | (raw & 0x7fu);
    return exp_or_verbatim<PAL>(M, V, hasv, row, col, e, u, bits, bad);
}

/* The same for any float type (M.type BF16, F16 or F32; the per-weight
 * path), the raw bits read in place (raw_of). */
template <bool PAL>
__device__ __forceinline__ uint32_t exp_weight_any(const DevMat &M, const VRow &V, bool hasv, long long row,
                                                   long long col, uint32_t e, int u, unsigned &bad)
{
    const uint32_t bits = wr_float_rebuild(M.type, (e >> (8 + 8 * u)) & 255u, raw_of(M, row, col));
    return exp_or_verbatim<PAL>(M, V, hasv, row, col, e, u, bits, bad);
}

/* The weight-by-weight walk of one row of a lane's tile (w symbols): each
 * symbol through lane_next, then f(j, e, u) for its weights j (u-th of the
 * symbol; a palette pair's weight at j >= nw, past an odd row end, is
 * padding). The slow path of k_fused_exp and restore_exp_tile. */
template <bool ST, bool PAL, class F>
__device__ __forceinline__ void lane_row_each(Lane &L, const uint32_t *lut, int Lb, unsigned w, int nw, unsigned &bad,
                                              F f)
{
    constexpr int WPS = PAL ? 2 : 1;
    for (unsigned c = 0; c < w; c++) {
        const uint32_t e = lane_next<ST>(L, lut, Lb, bad);
#pragma unroll
        for (int u = 0; u < WPS; u++) {
            const int j = (int)c * WPS + u;
            if (PAL && j >= nw)
                break;
            f(j, e, u);
        }
    }
}

template <int B, bool PAL, bool ST>
__global__ void __launch_bounds__(32 * FUSED_WARPS, B <= 2 ? 7 : 4) k_fused_exp(DevMat M, const uint32_t *__restrict__ glut,
                                                                const float *__restrict__ x, float *__restrict__ y)
{
    constexpr int WPS = PAL ? 2 : 1;
    __shared__ __align__(16) uint32_t lut[1 << WR_LUT_MAX_BITS];
    WR_DYN_SMEM(uint32_t, dyn);   /* lane words (ST) or groups: fused_smem_bytes */
    __shared__ float xs[B][256];
    const TilePos P = tile_pos(M);
    const unsigned k = P.k;
    const long long c0w = P.c0w;
    const int nw = P.nw;
    /* as k_fused_q: the table's and x's copies in flight while the warp opens its tile */
    load_lut_async(lut, glut, M.L);
    stage_x<B>(xs, M, x, P);
    TileGeo tg;
    unsigned bad = 0;
    Lane L;
    const bool open = fused_tile_open<ST>(M, P, dyn, tg, L, bad);
    __pipeline_wait_prior(0);
    __syncthreads();
    if (!open)
        return;
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
        if (M.type == WP_BF16 && M.cols % 8 == 0) {   /* 8 raw bytes at a time (aligned: own allocation, 8 | cols) */
            for (unsigned c0 = 0; c0 < tg.w; c0 += 8 / WPS) {
                const uint2 rv = __ldg(reinterpret_cast<const uint2 *>(rawp + c0 * WPS));
                const uint32_t rw[2] = {rv.x, rv.y};
#pragma unroll
                for (int cc = 0; cc < 8 / WPS; cc++) {
                    const uint32_t e = lane_at<ST>(L, cc, lut, M.L, bad);
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
            lane_row_each<ST, PAL>(L, lut, M.L, tg.w, nw, bad, [&](int j, uint32_t e, int u) {
                const float v = wr_float_value(M.type, exp_weight_any<PAL>(M, V, hasv, row, c0w + j, e, u, bad));
#pragma unroll
                for (int b = 0; b < B; b++)
                    acc[rr][b] = fmaf(v, xs[b][j], acc[rr][b]);
            });
        }
    }
    finish_gemv<B>(M, tg, k, L, acc, bad, y);
}

/* ---- fast BF16 restore (the "full" and "split" pipelines' decode) -------------------------
 * The tiling and table decode of k_fused_exp over tile rows [tr0, tr1): each
 * block walks (tile column, FUSED_WARPS tile rows) units with a grid stride,
 * so a grid smaller than the units keeps the decode on fewer SMs (the split
 * pipelines); each weight's BF16 bits are stored straight to out (thread k
 * writes rows 2k, 2k+1). */

template <bool PAL>
__device__ __forceinline__ void restore_exp_tile(const DevMat &M, const uint32_t *lut, uint16_t *__restrict__ out,
                                                 Groups *g, unsigned long long tc, unsigned long long tr)
{
    constexpr int WPS = PAL ? 2 : 1;
    const unsigned k = threadIdx.x % 32;
    const long long c0w = (long long)tc * 256;
    const int nw = (int)(M.cols - c0w < 256 ? M.cols - c0w : 256);
    const unsigned long long t = tr * M.tcols + tc;
    TileGeo tg = tile_geo(M, t);
    unsigned bad = 0;
    Lane L;
    lane_open<false>(M, t, g->e, nullptr, L, bad);
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
                    const uint32_t e = lane_at<false>(L, cc, lut, M.L, bad);
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
            lane_row_each<false, PAL>(L, lut, M.L, tg.w, nw, bad, [&](int j, uint32_t e, int u) {
                dst[j] = (uint16_t)exp_weight<PAL>(M, V, hasv, row, c0w + j, e, u, __ldg(rawp + j), bad);
            });
        }
    }
    lane_close(L, bad);
    if (bad)
        atomicOr(M.err, 1);
}

template <bool PAL>
__global__ void __launch_bounds__(32 * FUSED_WARPS, 7) k_restore_exp(DevMat M, const uint32_t *__restrict__ glut,
                                                                  uint16_t *__restrict__ out, unsigned long long tr0,
                                                                  unsigned long long tr1)
{
    __shared__ __align__(16) uint32_t lut[1 << WR_LUT_MAX_BITS];
    __shared__ Groups g[FUSED_WARPS];
    const unsigned warp = threadIdx.x / 32;
    load_lut(lut, glut, M.L);
    __syncthreads();
    const unsigned long long units = (tr1 - tr0 + FUSED_WARPS - 1) / FUSED_WARPS * M.tcols;
    for (unsigned long long u = blockIdx.x; u < units; u += gridDim.x) {
        const unsigned long long tr = tr0 + u / M.tcols * FUSED_WARPS + warp;
        if (tr < tr1)
            restore_exp_tile<PAL>(M, lut, out, &g[warp], u % M.tcols, tr);
        __syncwarp();   /* g is rewritten for the next unit */
    }
}

/* ---- palette transcode: lanes -> 4-bit palette indices in global memory ---------------------
 * One warp a tile, as the fused kernels; each decoded pair symbol is the
 * byte idx[2j] | idx[2j+1] << 4, written to the index array (row stride
 * istride bytes) that the palette kernel reads. */

__global__ void __launch_bounds__(32 * FUSED_WARPS, 8) k_transcode(DevMat M, const uint32_t *__restrict__ glut,
                                                                uint8_t *__restrict__ idx)
{
    __shared__ __align__(16) uint32_t lut[1 << WR_LUT_MAX_BITS];
    __shared__ Groups g[FUSED_WARPS];
    const TilePos P = tile_pos(M);
    const unsigned k = P.k;
    load_lut(lut, glut, M.L);
    __syncthreads();
    TileGeo tg;
    unsigned bad = 0;
    Lane L;
    if (!tile_open<0>(M, P, g[P.warp].e, nullptr, tg, L, bad))
        return;
    for (unsigned r = 2 * k; r < tg.h && r < 2 * k + 2; r++) {
        uint8_t *dst = idx + (tg.r0 + r) * (unsigned long long)M.istride + tg.c0;
        if (tg.w % 4 == 0) {   /* 4 symbols a store (aligned: 4 | istride, 128 | c0) */
            for (unsigned c = 0; c < tg.w; c += 4) {
                uint32_t w = 0;
#pragma unroll
                for (int cc = 0; cc < 4; cc++) {
                    const uint32_t e = lane_at<false>(L, cc, lut, M.L, bad);
                    bad |= (e >> 4) & 3;   /* an index without a palette entry (slots of verbatim
                                              groups and pad nibbles hold 0) */
                    w |= (e >> 24) << (8 * cc);
                }
                *reinterpret_cast<uint32_t *>(dst + c) = w;
            }
        } else {
            for (unsigned c = 0; c < tg.w; c++) {
                const uint32_t e = lane_next<false>(L, lut, M.L, bad);
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
 * One warp a GEMV_ROWS (R = 4) consecutive rows over one column range: block
 * (bx, by) = TWIN_WARPS warps on rows 4 TWIN_WARPS bx .., columns
 * [by span, by span + span), span a multiple of 256 (split-K; gemv_grid
 * picks it, one wave of the warps the kernel's registers let a SM hold).
 * Each 256-column step lane l takes weights j0 .. j0 + 7 (j0 = c0 + 8 l) of
 * the 4 rows: the 4 index words and 4 x 8 raw bytes, loaded PD steps ahead
 * for B <= 2 (with x[j0 .. j0 + 7] for B = 1; PD = 1 or 2, gpu.cu's
 * palette_ahead), so later steps' bytes are in flight while this one
 * computes; then x[b][j0 .. j0 + 7] once per vector (2 x float4 when 8 |
 * cols) for the 4 rows. A weight is rebuilt with an index extract, one
 * shared load of its exponent field, one prmt and one or (raw_sm, pal_w8).
 * Verbatim groups do not enter the main loop: it uses every weight as its
 * index says (index 0 in a verbatim group; the raw bytes hold every
 * weight's sign and mantissa), and afterwards pal_fix adds delta x, delta =
 * w - w_pal made at load, for the weights of the rows' verbatim groups in
 * the split, so the loop carries no verbatim state (ptxas, sm_90a, 8 |
 * cols: 96 registers at B = 1, 123 loading 2 steps ahead, up to 128 for B =
 * 8, no spills; other widths spill 8 bytes at B = 8). wr_palette_ok refuses
 * the pipeline where a verbatim slot's weight could be infinite (palette
 * entry 0 = exponent 255); the restore rejects a bundle whose verbatim
 * slots hold another index. Sums: rows_store (one split stores; more add
 * their sums in split order, no zeroing of y first). Rows past the end
 * (rows % 4) recompute the last row, not stored. 12 bits a weight read.
 * Measured (H200, 4096 x 14336, batch 1, median of 30 with L2 flushed):
 * 43.0 us loading 2 steps ahead, 44.8 us 1 ahead, cuBLAS BF16 44.2 us (one
 * run); 42.3 us against 43.9 after the review fix of rows_store and pal_fix;
 * 62.8 us before pal_fix took the list and rows_store dropped the memset
 * (Nsight Compute: 54.6 -> 37.8 us, DRAM 36 -> 53 % of peak). */

#define GEMV_ROWS 4   /* rows a warp in k_palette and k_twin */

/* End of k_palette / k_twin: the warp's R rows x B sums reduced across the
 * warp (shuffles), lane i B + b keeping the sum of row r0 + i, vector b;
 * rows past the end are not stored. One split (gridDim.y = 1): each such
 * lane stores its sum. More: each split writes its sums to M.part (splits
 * x B x rows floats), then
 * counts itself done in M.cnt[warp's rows]; the split that counts last adds
 * the splits' sums in split order, stores y and sets the count back to 0 for
 * the next launch. So y needs no zeroing first (a memset launch less) and
 * the result does not depend on the order the splits finish in. Source: the
 * last-block reduction of CUDA's threadFenceReduction sample. */
template <int R, int B>
__device__ __forceinline__ void rows_store(const DevMat &M, const float (&acc)[R][B], long long r0, unsigned l,
                                           float *__restrict__ y)
{
    static_assert(R * B <= 32, "a lane a row and vector");
    float mine = 0.0f;   /* lane i B + b: the warp's sum of row r0 + i, vector b */
#pragma unroll
    for (int i = 0; i < R; i++) {
#pragma unroll
        for (int b = 0; b < B; b++) {
            float a = acc[i][b];
            for (int o = 16; o; o >>= 1)
                a += __shfl_xor_sync(0xffffffffu, a, o);
            if (l == (unsigned)(i * B + b))
                mine = a;
        }
    }
    const long long row = r0 + (long long)(l / B);
    const unsigned b = l % B;
    const bool have = l < (unsigned)(R * B) && row < M.rows;
    if (gridDim.y == 1) {
        if (have)
            y[(long long)b * M.rows + row] = mine;
        return;
    }
    const long long plane = (long long)B * M.rows;   /* one split's sums */
    if (have)
        M.part[(long long)blockIdx.y * plane + (long long)b * M.rows + row] = mine;
    __threadfence();   /* the sums visible device-wide before the count says so, */
    __syncwarp();      /* and every lane's before lane 0 counts */
    const unsigned long long w = (unsigned long long)(r0 / R);
    unsigned done = 0;
    if (l == 0)
        done = atomicAdd(&M.cnt[w], 1u);
    if (!__ballot_sync(0xffffffffu, l == 0 && done == gridDim.y - 1))
        return;
    if (l == 0)        /* the other splits' sums, seen through the count, before any lane reads them */
        __threadfence();
    __syncwarp();
    if (have) {
        float s = 0.0f;
        for (unsigned k = 0; k < gridDim.y; k++)
            s += __ldcg(M.part + (long long)k * plane + (long long)b * M.rows + row);
        y[(long long)b * M.rows + row] = s;
    }
    if (l == 0)
        M.cnt[w] = 0;
}

/* x[j0 .. j0 + 7] of one vector (AL: 2 x float4, aligned: 8 | cols), 0 past
 * the row's end and on lanes that are off. */
template <bool AL>
__device__ __forceinline__ void pal_x8(const DevMat &M, const float *__restrict__ xr, long long j0, bool on,
                                       float (&xv)[8])
{
    if (AL) {
        float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f), c = a;
        if (on) {
            a = __ldg(reinterpret_cast<const float4 *>(xr + j0));
            c = __ldg(reinterpret_cast<const float4 *>(xr + j0) + 1);
        }
        xv[0] = a.x, xv[1] = a.y, xv[2] = a.z, xv[3] = a.w;
        xv[4] = c.x, xv[5] = c.y, xv[6] = c.z, xv[7] = c.w;
    } else {
#pragma unroll
        for (int u = 0; u < 8; u++)
            xv[u] = on && j0 + u < M.cols ? __ldg(xr + j0 + u) : 0.0f;
    }
}

/* PTX prmt.b32, default mode: byte n of the result is byte s_n & 7 of the
 * eight bytes b:a (a = bytes 0..3), s_n = bits 4n .. 4n + 3 of s; with bit
 * 3 of s_n set, that byte's top bit copied to all 8 bits (sign
 * replication). CUDA's __byte_perm drops bit 3, hence the asm. The host
 * build (the emulator) runs the same definition in C. Source: PTX ISA, prmt. */
__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t s)
{
#ifdef __CUDA_ARCH__
    uint32_t r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(s));
    return r;
#else
    const uint64_t v = (uint64_t)b << 32 | a;
    uint32_t r = 0;
    for (int n = 0; n < 4; n++) {
        const unsigned sn = (s >> (4 * n)) & 15u;
        uint32_t byte = (uint32_t)(v >> (8 * (sn & 7u))) & 255u;
        if (sn & 8u)
            byte = byte & 0x80u ? 255u : 0u;
        r |= byte << (8 * n);
    }
    return r;
#endif
}

/* Sign and mantissa bits of a float from raw byte u (0..3) of r (each byte
 * sign << 7 | 7-bit mantissa, BF16's own order): bits 31 and 16..22, the
 * exponent field left 0. One prmt (the byte to bits 16..23, its sign
 * replicated over 24..31) and one mask. */
__device__ __forceinline__ uint32_t raw_sm(uint32_t r, int u)
{
    return prmt(r, 0u, (8u | (unsigned)u) << 12 | (unsigned)u << 8 | 0x44u) & 0x807f0000u;
}

/* Weights j0 .. j0 + 7 of one row from its index word ix (index of weight
 * j0 + u in bits 4u .. 4u + 3) and (AL) raw bytes r8 (verbatim groups
 * aside); pex: the palette's exponent fields (exponent << 23, shared
 * memory). !AL: 0 past the row's end and on lanes that are off; AL: lanes
 * that are off get a value the caller must not use. A weight is its index,
 * one shared load, raw_sm and an or. */
template <bool AL>
__device__ __forceinline__ void pal_w8(const DevMat &M, const uint32_t *pex, long long row, long long j0, bool on,
                                       uint32_t ix, uint2 r8, float (&w)[8])
{
#pragma unroll
    for (int u = 0; u < 8; u++) {
        const long long j = j0 + u;
        w[u] = 0.0f;
        if (!AL && (!on || j >= M.cols))   /* AL: the caller skips a lane that is off */
            continue;
        uint32_t sm;
        if (AL) {
            sm = raw_sm(u < 4 ? r8.x : r8.y, u % 4);
        } else {
            const uint32_t raw = __ldg(M.raw + row * M.cols + j);
            sm = (raw & 0x80u) << 24 | (raw & 0x7fu) << 16;
        }
        w[u] = __uint_as_float(sm | pex[(ix >> (4 * u)) & 15u]);
    }
}

/* One step's loads of k_palette: the R rows' index words, (AL) their 8 raw
 * bytes, and (B = 1) x[j0 .. j0 + 7]; none (zeros) when `on` is false.
 * ixr, rr: the lane's first index word and raw 8-byte word of each row,
 * advanced by `w` words (w = (j0 - k0) / 8, the same for every row). */
template <int R>
struct PalStep {
    uint32_t ix[R];
    uint2 r8[R];
    float xv[8];
};

template <int R, int B, bool AL>
__device__ __forceinline__ void pal_load(const DevMat &M, const uint32_t *const (&ixr)[R],
                                         const uint2 *const (&rr)[R], const float *__restrict__ x, uint32_t w,
                                         long long j0, bool on, PalStep<R> &s)
{
#pragma unroll
    for (int i = 0; i < R; i++) {
        s.ix[i] = on ? __ldg(ixr[i] + w) : 0u;
        s.r8[i] = AL && on ? __ldg(rr[i] + w) : make_uint2(0, 0);
    }
    if (B == 1)
        pal_x8<AL>(M, x, j0, on, s.xv);
}

/* One 256-column step of k_palette at column c0 (k0 <= c0 < k1): PF (B <= 2)
 * issues the loads of the step PD steps ahead into nx, then computes with
 * cu (loaded PD steps before); B > 2 loads cu first. Called with PD + 1
 * buffers rotated from step to step, so nothing is copied between them. */
template <int R, int B, bool AL, int PD>
__device__ __forceinline__ void pal_step(const DevMat &M, const uint32_t *pex, const uint32_t *const (&ixr)[R],
                                         const uint2 *const (&rr)[R], long long r0, long long rl,
                                         const float *__restrict__ x, long long k0, long long k1, long long c0,
                                         unsigned l, PalStep<R> &cu, PalStep<R> &nx, float (&acc)[R][B])
{
    constexpr int XB = B <= 2 ? B : 1;   /* x vectors loaded with a step */
    constexpr bool PF = B <= 2;          /* prefetch; B > 2 loads a step at its start (registers) */
    const long long j0 = c0 + 8 * l;
    const bool on = j0 < M.cols;
    const uint32_t w = (uint32_t)((c0 - k0) / 8);
    if (PF)   /* the next step's loads first (none past the split's end) */
        pal_load<R, B, AL>(M, ixr, rr, x, w + 32 * PD, j0 + 256 * PD, c0 + 256 * PD < k1 && j0 + 256 * PD < M.cols,
                           nx);
    else
        pal_load<R, B, AL>(M, ixr, rr, x, w, j0, on, cu);
    /* B <= 2: each row's weights used as decoded (x: B = 1 from the step's loads, B = 2
       loaded here); B > 2: the R rows' weights decoded to v, then x loaded once per vector below */
    float xv[XB][8];
    if (B == 1) {
#pragma unroll
        for (int u = 0; u < 8; u++)
            xv[0][u] = cu.xv[u];
    } else if (B == 2) {
#pragma unroll
        for (int b = 0; b < XB; b++)
            pal_x8<AL>(M, x + (long long)b * M.cols, j0, on, xv[b]);
    }
    float v[R][8];
#pragma unroll
    for (int i = 0; i < R; i++) {
        pal_w8<AL>(M, pex, r0 + (i < rl ? i : rl), j0, on, cu.ix[i], cu.r8[i], v[i]);
        if (B <= 2 && on) {
#pragma unroll
            for (int b = 0; b < XB; b++)
#pragma unroll
                for (int u = 0; u < 8; u++)
                    acc[i][b] = fmaf(v[i][u], xv[b][u], acc[i][b]);
        }
    }
    if (B > 2 && on) {
#pragma unroll
        for (int b = 0; b < B; b++) {
            float xb[8];
            pal_x8<AL>(M, x + (long long)b * M.cols, j0, on, xb);
#pragma unroll
            for (int i = 0; i < R; i++)
#pragma unroll
                for (int u = 0; u < 8; u++)
                    acc[i][b] = fmaf(v[i][u], xb[u], acc[i][b]);
        }
    }
}

/* After k_palette's main loop: add (w - w_pal) x[b][j] for every weight j
 * in [k0, k1) of the verbatim groups of the warp's rows r0 .. r0 + min(R -
 * 1, rl) (rl = rows - 1 - r0), where w is the weight and w_pal what the main loop used (its index,
 * 0 in a verbatim group, and its raw byte). delta = w - w_pal was made at
 * load (wr_palette_fix; M.vstride floats a group, zero past the group's
 * end), the groups numbered row by row (M.vcnt: groups before a row; M.vcol:
 * a group's first column), so the warp's groups are one run of numbers.
 * Lanes take (group, 8-weight chunk) items of that run, 32 at a time
 * (a chunk outside the split reads no delta), so every lane's loads are
 * in flight together (a chunk: two float4 of delta,
 * x as two float4 where 8 | cols and 4 | its column, else one float per
 * column in the split), and add their chunks' sums to their own acc[i]
 * (rows_store reduces across lanes). Why: the walk before this, group by
 * group with the warp's lanes over one group's columns and the groups found
 * by scanning vmap a byte at a time, was a chain of dependent loads per
 * group; at 2 % verbatim groups it made the slowest warps' tail (k_palette
 * 54.6 us by Nsight Compute at 4096 x 14336, batch 1, H200, though its main
 * loop issues 7.9 instructions a weight by its sm_80 SASS). */
template <int R, int B, bool AL>
__device__ __forceinline__ void pal_fix(const DevMat &M, const float *__restrict__ x, long long r0, long long rl,
                                        long long k0, long long k1, unsigned l, float (&acc)[R][B])
{
    uint32_t vs[R + 1];   /* the run of groups of row r0 + i: [vs[i], vs[i + 1]) */
#pragma unroll
    for (int i = 0; i <= R; i++)
        vs[i] = M.vcnt[r0 + (i <= rl + 1 ? i : rl + 1)];
    const uint32_t C = (uint32_t)(M.vstride / 8), n = (vs[R] - vs[0]) * C;   /* chunks a group, items */
#pragma unroll 2
    for (uint32_t it = l; it < n; it += 32) {
        const uint32_t v = vs[0] + it / C, c = it % C;
        const long long j0 = (long long)M.vcol[v] + 8 * (long long)c;   /* the chunk's first column */
        if (j0 + 8 <= k0 || j0 >= k1)   /* outside the split: no delta read */
            continue;
        const float4 *dp = reinterpret_cast<const float4 *>(M.vdelta + (long long)v * M.vstride) + 2 * c;
        const float4 da = __ldg(dp), db = __ldg(dp + 1);
        const float d[8] = {da.x, da.y, da.z, da.w, db.x, db.y, db.z, db.w};
        float s[B];
        const bool whole = AL && j0 >= k0 && j0 + 8 <= k1 && (j0 & 3) == 0;
#pragma unroll
        for (int b = 0; b < B; b++) {
            const float *xr = x + (long long)b * M.cols;
            s[b] = 0.0f;
            if (whole) {
                const float4 xa = __ldg(reinterpret_cast<const float4 *>(xr + j0));
                const float4 xb = __ldg(reinterpret_cast<const float4 *>(xr + j0) + 1);
                const float xv[8] = {xa.x, xa.y, xa.z, xa.w, xb.x, xb.y, xb.z, xb.w};
#pragma unroll
                for (int u = 0; u < 8; u++)
                    s[b] = fmaf(d[u], xv[u], s[b]);
            } else {
#pragma unroll
                for (int u = 0; u < 8; u++)
                    if (j0 + u >= k0 && j0 + u < k1)
                        s[b] = fmaf(d[u], __ldg(xr + j0 + u), s[b]);
            }
        }
#pragma unroll
        for (int i = 0; i < R; i++)
            if (v >= vs[i] && v < vs[i + 1])
#pragma unroll
                for (int b = 0; b < B; b++)
                    acc[i][b] += s[b];
    }
}

template <int B, bool AL, int PD = 1>
__global__ void __launch_bounds__(32 * TWIN_WARPS, 4) k_palette(DevMat M, const uint8_t *__restrict__ idx,
                                                                const float *__restrict__ x, float *__restrict__ y,
                                                                long long span)
{
    constexpr int R = GEMV_ROWS;
    __shared__ uint32_t pex[16];   /* the palette's exponent fields: exponent << 23 */
    if (threadIdx.x < 16)
        pex[threadIdx.x] = (uint32_t)(M.palette[threadIdx.x] & 255u) << 23;
    __syncthreads();
    const unsigned wp = threadIdx.x / 32, l = threadIdx.x % 32;
    const long long r0 = ((long long)blockIdx.x * TWIN_WARPS + wp) * R;
    if (r0 >= M.rows)
        return;
    const long long k0 = (long long)blockIdx.y * span, k1 = k0 + span < M.cols ? k0 + span : M.cols;
    const long long rl = M.rows - 1 - r0;   /* row r0 + i reads row r0 + min(i, rl): past the end, the last row
                                               again, not stored */
    /* each row's index word and (AL) raw 8 bytes of the lane's first weight, k0 + 8 l */
    const uint32_t *ixr[R];
    const uint2 *rr[R];
    float acc[R][B];
#pragma unroll
    for (int i = 0; i < R; i++) {
        const long long row = r0 + (i < rl ? i : rl);
        ixr[i] = reinterpret_cast<const uint32_t *>(idx + row * M.istride) + k0 / 8 + l;
        rr[i] = reinterpret_cast<const uint2 *>(M.raw + (AL ? row * M.cols : 0)) + (AL ? k0 / 8 + l : 0);
#pragma unroll
        for (int b = 0; b < B; b++)
            acc[i][b] = 0.0f;
    }
    PalStep<R> sa, sb, sc;
    if (B <= 2) {   /* the first PD steps' loads */
        const long long j0 = k0 + 8 * l;
        pal_load<R, B, AL>(M, ixr, rr, x, 0, j0, j0 < M.cols, sa);
        if (PD == 2)
            pal_load<R, B, AL>(M, ixr, rr, x, 32, j0 + 256, k0 + 256 < k1 && j0 + 256 < M.cols, sb);
    }
    if (PD == 2) {   /* step s computes buffer s % 3 and loads step s + 2 into (s + 2) % 3 */
        for (long long c0 = k0; c0 < k1; c0 += 768) {
            pal_step<R, B, AL, 2>(M, pex, ixr, rr, r0, rl, x, k0, k1, c0, l, sa, sc, acc);
            if (c0 + 256 >= k1)
                break;
            pal_step<R, B, AL, 2>(M, pex, ixr, rr, r0, rl, x, k0, k1, c0 + 256, l, sb, sa, acc);
            if (c0 + 512 >= k1)
                break;
            pal_step<R, B, AL, 2>(M, pex, ixr, rr, r0, rl, x, k0, k1, c0 + 512, l, sc, sb, acc);
        }
    } else {   /* step s computes buffer s % 2 and loads step s + 1 into the other */
        for (long long c0 = k0; c0 < k1; c0 += 512) {
            pal_step<R, B, AL, 1>(M, pex, ixr, rr, r0, rl, x, k0, k1, c0, l, sa, sb, acc);
            if (c0 + 256 >= k1)
                break;
            pal_step<R, B, AL, 1>(M, pex, ixr, rr, r0, rl, x, k0, k1, c0 + 256, l, sb, sa, acc);
        }
    }
    pal_fix<R, B, AL>(M, x, r0, rl, k0, k1, l, acc);
    rows_store<R, B>(M, acc, r0, l, y);
}

/* ---- the twin: the same GEMV on fixed-width ggml blocks -------------------------------
 * Mapped as k_palette: one warp a GEMV_ROWS (R = 4) consecutive rows over
 * columns [by span, by span + span) (split-K, span a multiple of 256
 * and so of every block size; twin_b picks it, gemv_grid). Each 256-column
 * step lane l takes weights w0 .. w0 + 7 (w0 = c0 + 8 l, within one
 * sub-block) of the 4 rows: the 4 rows' scales (blk_scale) and codes
 * (wp_block_code) first, their block bytes in flight together, then x[b][w0 ..
 * w0 + 7] as 2 float4 once per vector and its sum sx once, used for the 4
 * rows: acc += dl * dot - ml * sx, the factored sum of k_fused_q. Why: one
 * row a warp re-read x in every warp with one step's loads in flight (75 us
 * for ~33 MB of Q4_K at 4096 x 14336, batch 1, H200; 4 rows a warp: 59 us;
 * with gemv_grid filling a wave of the warps its 56 registers allow, 4
 * splits instead of 2: 49 us). Codes become values by q_val, not by an
 * int-to-float conversion (a quarter-rate unit; the 49 us above were
 * measured with it); k_fused_q reads the same values from its decode
 * table (wr_lut_values), the one step of the twin's that decoding through
 * a table does away with. Sums: rows_store. Rows past the end recompute the
 * last row, not stored. */

/* The sub-block scale of a fixed-width block, read in place. */
template <int TYPE>
__device__ __forceinline__ wr_scale blk_scale(const uint8_t *blk, int s)
{
    constexpr wp_block_geom g = wp_block_geom_of(TYPE);
    if (g.side_len[1]) {   /* Q2_K: scales[16] at 0, then d and dmin after the codes */
        wr_scale r = {0.0f, 0.0f, 0, 0};
        int sc, mn;
        wp_side_sc_mn(TYPE, blk, s, &sc, &mn);
        r.dl = wr_fp16_to_f32(wr_rd16(blk + g.side_off[1])) * (float)sc;
        r.ml = wr_fp16_to_f32(wr_rd16(blk + g.side_off[1] + 2)) * (float)mn;
        return r;
    }
    return wr_sub_scale(TYPE, blk + g.side_off[0], s);
}

/* 8 bytes at p, aligned to A (2, 4 or 8): one 8-byte load, two 4-byte or
 * four 2-byte ones. */
template <int A>
__device__ __forceinline__ uint2 twin_ld8(const uint8_t *p)
{
    if (A >= 8)
        return __ldg(reinterpret_cast<const uint2 *>(p));
    if (A == 4) {
        const uint32_t *w = reinterpret_cast<const uint32_t *>(p);
        return make_uint2(__ldg(w), __ldg(w + 1));
    }
    const uint16_t *h = reinterpret_cast<const uint16_t *>(p);
    return make_uint2((uint32_t)__ldg(h) | (uint32_t)__ldg(h + 1) << 16, (uint32_t)__ldg(h + 2) | (uint32_t)__ldg(h + 3) << 16);
}

template <int TYPE, int B>
__global__ void __launch_bounds__(32 * TWIN_WARPS) k_twin(DevMat M, const uint8_t *__restrict__ blocks,
                                                          const float *__restrict__ x, float *__restrict__ y,
                                                          long long span)
{
    constexpr int R = GEMV_ROWS;
    /* the 4-bit types of wp_block_code_span8 read a lane's 8 codes as one span (sm_80 SASS, a step
       of 4 x 8 weights: Q4_K 539 -> 373 instructions, Q4_0 389 -> 295, IQ4_XS 485 -> 367);
       Q8_0 keeps its byte loads (a byte is a code; the span came to more). The span's
       alignment in blocks laid end to end from an aligned base: the block size's low bit, at
       most 8 (Q4_0, IQ4_NL 18 B: 2; Q4_1 20 B: 4; IQ4_XS 136 B, Q4_K 144 B: 8), and the
       spans' offsets are as aligned (wp_block_code_span8) */
    constexpr bool SPAN = TYPE == WP_Q4_0 || TYPE == WP_IQ4_NL || TYPE == WP_Q4_1 ||
                          TYPE == WP_Q4_K || TYPE == WP_IQ4_XS;
    constexpr int SPAN_AL = TYPE == WP_Q4_1 ? 4 : TYPE == WP_Q4_K || TYPE == WP_IQ4_XS ? 8 : 2;
    const wr_geom G = wr_geom_of(TYPE);
    __shared__ float kv[16];
    if (threadIdx.x < 16)
        kv[threadIdx.x] = wr_kv((int)threadIdx.x);
    __syncthreads();
    const float moff = 8388608.0f + (float)M.qoff;   /* code values as k_fused_q's (q_val) */
    const long long r0 = ((long long)blockIdx.x * TWIN_WARPS + threadIdx.x / 32) * R;
    const unsigned l = threadIdx.x % 32;
    if (r0 >= M.rows)
        return;
    const long long k0 = (long long)blockIdx.y * span, k1 = k0 + span < M.cols ? k0 + span : M.cols;
    const unsigned bpr = (unsigned)(M.cols / G.n);
    const uint8_t *rb[R];
    float acc[R][B];
#pragma unroll
    for (int i = 0; i < R; i++) {
        const long long row = r0 + i < M.rows ? r0 + i : M.rows - 1;   /* past the end: the last row again */
        rb[i] = blocks + (unsigned long long)row * bpr * G.bytes;
#pragma unroll
        for (int b = 0; b < B; b++)
            acc[i][b] = 0.0f;
    }
    /* lane l takes weights w0 .. w0 + 7 of every 256 in [k0, k1): one sub-block's */
    for (long long w0 = k0 + 8 * l; w0 < k1; w0 += 256) {
        const unsigned jb = (unsigned)(w0 / G.n), wi = (unsigned)(w0 % G.n);
        /* the R rows' scales and codes first: their block bytes in flight together */
        wr_scale sc[R];
        float c[R][8];
#pragma unroll
        for (int i = 0; i < R; i++) {
            const uint8_t *blk = rb[i] + (unsigned long long)jb * G.bytes;
            sc[i] = blk_scale<TYPE>(blk, (int)(wi / G.sub_n));
            int off, sh;
            if (SPAN && wp_block_code_span8(TYPE, (int)wi, &off, &sh) == 0) {
                /* the 8 codes' bytes in one to four loads (twin_ld8), then a shift and mask each */
                const uint2 v = twin_ld8<SPAN_AL>(blk + off);
#pragma unroll
                for (int u = 0; u < 8; u++) {
                    const uint32_t by = ((u < 4 ? v.x : v.y) >> (8 * (u % 4))) & 255u;
                    c[i][u] = q_val<TYPE>(TYPE == WP_Q8_0 ? by ^ 0x80u : (by >> sh) & 15u, moff, kv);
                }
            } else {
#pragma unroll
                for (int u = 0; u < 8; u++)
                    c[i][u] = q_val<TYPE>((uint32_t)wp_block_code(TYPE, blk, (int)wi + u), moff, kv);
            }
        }
        /* x[b][w0 .. w0 + 7] read once (2 x float4) and its sum once, used for the R rows */
#pragma unroll
        for (int b = 0; b < B; b++) {
            const float4 *xp = reinterpret_cast<const float4 *>(x + (long long)b * M.cols + w0);
            const float4 a = __ldg(xp), e = __ldg(xp + 1);
            const float xv[8] = {a.x, a.y, a.z, a.w, e.x, e.y, e.z, e.w};
            float sx = 0.0f;
#pragma unroll
            for (int u = 0; u < 8; u++)
                sx += xv[u];
#pragma unroll
            for (int i = 0; i < R; i++) {
                float dot = 0.0f;
#pragma unroll
                for (int u = 0; u < 8; u++)
                    dot = fmaf(c[i][u], xv[u], dot);
                acc[i][b] += sc[i].dl * dot - sc[i].ml * sx;
            }
        }
    }
    rows_store<R, B>(M, acc, r0, l, y);
}

/* ---- reconstructive GEMM: BF16 tiles rebuilt in shared memory, tensor cores ---------------
 * For batches above the GEMV kernels' 8 (pipeline "recon", BF16): the tiling
 * of k_fused_exp (FUSED_WARPS warps, one tile each, on one tile column),
 * with RECON_N input vectors at a time staged as BF16 in shared memory (the
 * B operand, 256 x RECON_N, column-major). A lane's stream holds row 2k, then
 * row 2k+1, so each warp makes two passes (rr = 0, 1); per pass it rebuilds
 * 16 columns of its 32 rows 2k + rr at a time as BF16 in shared memory (the
 * A operand, exponent decoded, sign/mantissa from the raw byte, verbatim
 * groups copied) and multiplies them with wmma m16n16k16 (BF16 in, FP32
 * accumulate). A pass's 32 x RECON_N sums go through shared memory to y by
 * atomicAdd (y zeroed first; every tile column adds). x is rounded to BF16
 * (exact for the checks' inputs, which wr_make_x rounds to BF16; about 2^-9
 * relative error per element otherwise, as for cuBLAS's BF16 GEMM); products
 * are exact, sums FP32. */

#define RECON_N 32

template <bool PAL>
__global__ void __launch_bounds__(32 * FUSED_WARPS) k_recon(DevMat M, const uint32_t *__restrict__ glut,
                                                            const float *__restrict__ x, int nvec, float *__restrict__ y)
{
    using namespace nvcuda;
    constexpr int WPS = PAL ? 2 : 1;
    __shared__ __align__(16) uint32_t lut[1 << WR_LUT_MAX_BITS];
    __shared__ Groups g[FUSED_WARPS];
    __shared__ __align__(32) __nv_bfloat16 xs[RECON_N][256];          /* B: x[n][c0w + j] at xs[n][j] */
    __shared__ __align__(32) __nv_bfloat16 as[FUSED_WARPS][32][16];   /* A: rows 2k + rr, 16 columns */
    __shared__ __align__(32) float os[FUSED_WARPS][16][RECON_N];      /* sums of 16 rows */
    const TilePos P = tile_pos(M);
    const unsigned warp = P.warp, k = P.k;
    const long long c0w = P.c0w;
    const int nw = P.nw;
    load_lut(lut, glut, M.L);
    for (int i = threadIdx.x; i < RECON_N * 256; i += blockDim.x) {
        const int n = i / 256, j = i % 256;
        xs[n][j] = __float2bfloat16_rn(n < nvec && j < nw ? x[(long long)n * M.cols + c0w + j] : 0.0f);
    }
    __syncthreads();
    TileGeo tg;
    unsigned bad = 0;
    Lane L;
    if (!tile_open<0>(M, P, g[P.warp].e, nullptr, tg, L, bad))
        return;
    for (int rr = 0; rr < 2; rr++) {
        const unsigned r = 2 * k + rr;
        const bool live = r < tg.h;
        const long long row = (long long)tg.r0 + r;
        VRow V = {0u, 1, 0, 0};
        if (PAL && live)
            V = vrow_tile(M, row, c0w, nw);
        const bool hasv = PAL && (V.mask || !V.ok);
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][RECON_N / 16];
#pragma unroll
        for (int mb = 0; mb < 2; mb++)
#pragma unroll
            for (int nb = 0; nb < RECON_N / 16; nb++)
                wmma::fill_fragment(acc[mb][nb], 0.0f);
        for (int kc = 0; kc < 256; kc += 16) {
            /* this lane's 16 weights of row r (zeros past the row end or below the tile) */
            uint16_t wv[16];
#pragma unroll
            for (int cc = 0; cc < 16 / WPS; cc++) {
                const int j0 = kc + cc * WPS;
                uint32_t e = 0;
                if (live && j0 < nw)
                    e = lane_next<false>(L, lut, M.L, bad);
#pragma unroll
                for (int u = 0; u < WPS; u++) {
                    const int j = j0 + u;
                    uint32_t bits = 0;
                    if (live && j < nw)
                        bits = exp_weight<PAL>(M, V, hasv, row, c0w + j, e, u, __ldg(M.raw + row * M.cols + c0w + j),
                                               bad);
                    wv[cc * WPS + u] = (uint16_t)bits;
                }
            }
            __syncwarp();   /* the previous chunk's A is consumed */
#pragma unroll
            for (int j = 0; j < 16; j++)
                as[warp][k][j] = __ushort_as_bfloat16(wv[j]);
            __syncwarp();
#pragma unroll
            for (int mb = 0; mb < 2; mb++) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
                wmma::load_matrix_sync(a, &as[warp][16 * mb][0], 16);
#pragma unroll
                for (int nb = 0; nb < RECON_N / 16; nb++) {
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
                    wmma::load_matrix_sync(b, &xs[16 * nb][kc], 256);
                    wmma::mma_sync(acc[mb][nb], a, b, acc[mb][nb]);
                }
            }
        }
#pragma unroll
        for (int mb = 0; mb < 2; mb++) {   /* lanes 16 mb .. 16 mb + 15 add their row's sums */
#pragma unroll
            for (int nb = 0; nb < RECON_N / 16; nb++)
                wmma::store_matrix_sync(&os[warp][0][16 * nb], acc[mb][nb], RECON_N, wmma::mem_row_major);
            __syncwarp();
            if (live && k / 16 == (unsigned)mb)
                for (int n = 0; n < nvec; n++)
                    atomicAdd(&y[(long long)n * M.rows + row], os[warp][k % 16][n]);
            __syncwarp();   /* os is rewritten next */
        }
    }
    lane_close(L, bad);
    if (bad)
        atomicOr(M.err, 1);
}

/* A row map's gather (rowmap.h): y_all[b][r] = y[b][map[r]], batch x rows_all outputs from the
 * distinct rows' batch x rows (vector b at b * rows_all, b * rows), map the rows_all indices
 * (each below rows: wp_rowmap_check). One thread an output, grid-stride, so any grid covers
 * it. Every pipeline's GEMV of a matrix with a row map ends with it (gpu.cu's launch). CPU
 * reference: wr_cpu_gather. */
__global__ void k_gather(const float *__restrict__ y, const uint32_t *__restrict__ map, long long rows,
                         long long rows_all, int batch, float *__restrict__ y_all)
{
    const long long n = rows_all * batch, step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        const long long b = i / rows_all;
        y_all[i] = y[b * rows + map[i - b * rows_all]];
    }
}

/* x (floats) to the GEMM's 16-bit input type, rounding to nearest even: BF16, or F16 when f16. */
__global__ void k_to_16(const float *x, uint16_t *o, long long n, int f16)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        if (f16) {
            o[i] = __half_as_ushort(__float2half_rn(x[i]));
        } else {
            uint32_t u = __float_as_uint(x[i]);
            o[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
        }
    }
}

/* ---- host side: a matrix's device geometry and the GEMV grid ---------------------------------
 * Shared by gpu.cu (wr_gpu_upload, twin_b, palette_b) and the host emulation
 * of the kernels (tests/runtime/test_emu.cpp), so both launch alike. */

#define GEMV_SM_WARPS 8        /* gemv_grid: aim for this many warps a SM (where the caller does not say) */
#define GEMV_MAX_SM_WARPS 64   /* ... and at most this many (a SM's limit) */

/* devmat_fill's part for a ggml block type (WR_Q): block geometry and code
 * values (qoff, qnl), from block_layout.h's geometry as the templates'
 * dev_* constants are. */
static inline void devmat_fill_q(DevMat &M, const wr_matrix *m)
{
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
}

/* Fill M's scalar fields from a matrix the bundle stores fixed-width
 * (m->stored): shape and type, block geometry (devmat_fill_q) or element
 * bytes; no tiles (ntiles 0). The caller sets err, part and cnt: the twin
 * (k_twin, or cuBLAS for floats) is all that runs on it. */
static inline void devmat_fill_stored(DevMat &M, const wr_matrix *m)
{
    M.type = (int)m->type;
    M.rows = m->rows;
    M.cols = m->cols;
    if (m->kind == WR_Q)
        devmat_fill_q(M, m);
    else
        M.esize = m->type == WP_F32 ? 4 : 2;
}

/* Fill M's scalar fields from m (shape, tiles, table bits, the deepest lane,
 * block geometry or float split geometry) and its pointers into the side
 * bytes (palette, vmap, vbytes), from M.side, which the caller has set; the
 * caller sets the other pointers (words, offsets, lane_words, err, raw,
 * vrow) and istride. -1 with a message: codes longer than WR_LUT_MAX_BITS,
 * or a block type whose codes a symbol the kernels do not agree on. */
static inline int devmat_fill(DevMat &M, const wr_matrix *m, char *err, size_t errlen)
{
    const wp_coded_view &v = m->v;
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
    M.dmax = wr_lane_depth(m);
    if (M.L < 1 || M.L > WR_LUT_MAX_BITS) {
        snprintf(err, errlen, "%s: code lengths up to %d bits; the device decoder takes up to %d", m->name, M.L,
                 WR_LUT_MAX_BITS);
        return -1;
    }
    if (m->kind == WR_Q) {
        devmat_fill_q(M, m);
        return 0;
    }
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
    M.esize = m->type == WP_F32 ? 4 : 2;
    M.raw_bits = s.raw_bits;
    M.vmap = M.side + (s.vmap - base);
    M.vbytes = M.side + (s.vbytes - base);
    return 0;
}

/* The grid of k_twin and k_palette on a device of sms SMs: grid.x =
 * ceil(rows / (GEMV_ROWS TWIN_WARPS)) blocks of rows, grid.y = k column
 * splits so that about sm_warps warps a SM run (gpu.cu passes the warps
 * the kernel's registers let a SM hold: one full wave), each split a whole
 * number of 256-column steps and none empty. Returns the columns a split
 * (a multiple of 256). */
static inline long long gemv_grid(int sms, const DevMat &M, dim3 &grid, int sm_warps = GEMV_SM_WARPS)
{
    sm_warps = std::min(std::max(sm_warps, 1), GEMV_MAX_SM_WARPS);
    const long long bx = (M.rows + GEMV_ROWS * TWIN_WARPS - 1) / (GEMV_ROWS * TWIN_WARPS);
    const long long steps = std::max((M.cols + 255) / 256, 1LL);
    const long long warps = std::max(bx, 1LL) * TWIN_WARPS, want = (long long)sm_warps * sms;
    long long k = std::min(std::max(want / warps, 1LL), steps);   /* at most one wave (where rows allow) */
    const long long per = (steps + k - 1) / k;   /* 256-column steps a split */
    k = (steps + per - 1) / per;
    grid = dim3((unsigned)bx, (unsigned)k);
    return per * 256;
}

/* The palette pipelines' arrays of palette-pair BF16 matrix m, made on the
 * host at load from fixed (wr_restore_bytes's output): ix, the 4-bit
 * indices (wr_palette_index; rows x wr_palette_stride(m) bytes), and the
 * verbatim groups' correction (wr_palette_fix: vcol, n_verbatim columns;
 * delta, n_verbatim x wr_palette_fix_stride(m) floats). -1 with a message
 * naming the matrix. Shared by wr_gpu_upload and the emulator's upload. */
struct PaletteHost {
    std::vector<uint8_t> ix;
    std::vector<uint32_t> vcol;
    std::vector<float> delta;
};
static inline int palette_host(const wr_matrix *m, const uint8_t *fixed, PaletteHost &h, char *err, size_t errlen)
{
    h.ix.assign((size_t)(wr_palette_stride(m) * m->rows), 0);
    if (wr_palette_index(m, fixed, h.ix.data())) {
        snprintf(err, errlen, "%s: palette indices do not rebuild from the restored bytes", m->name);
        return -1;
    }
    const size_t nv = (size_t)m->s.n_verbatim;
    h.vcol.assign(nv, 0);
    h.delta.assign(nv * (size_t)wr_palette_fix_stride(m), 0.0f);
    if (wr_palette_fix(m, fixed, h.vcol.data(), h.delta.data())) {
        snprintf(err, errlen, "%s: the verbatim groups do not match the verbatim map", m->name);
        return -1;
    }
    return 0;
}

/* The most column splits gemv_grid gives M on sms SMs (any sm_warps): the
 * splits' sums buffer (DevMat.part) holds this many x 8 x rows floats. */
static inline long long gemv_max_splits(int sms, const DevMat &M)
{
    dim3 grid;
    gemv_grid(sms, M, grid, GEMV_MAX_SM_WARPS);
    return grid.y;
}

/* Counters of rows_store's split reduction (DevMat.cnt): one a warp's rows. */
static inline long long gemv_counters(const DevMat &M) { return (M.rows + GEMV_ROWS - 1) / GEMV_ROWS; }

#endif
