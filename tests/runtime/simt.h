/*
 * simt.h - a host shim that runs CUDA kernel source (runtime/kernels.cuh)
 * on the CPU with one std::thread per CUDA thread (tests/runtime/test_emu.cpp).
 *
 * Include it before the kernels, with __CUDACC__ and __CUDA_ARCH__ left
 * undefined (wr_dev.h then takes its host branches). What it models:
 *   - qualifiers: __global__, __device__, __host__ vanish, __forceinline__
 *     is inline, __shared__ is static (one copy a kernel instantiation; blocks
 *     run one after another, so one block owns it at a time), __align__(n) is
 *     the GNU aligned attribute; WR_DYN_SMEM(T, name) gives the launch's
 *     dynamic shared memory, a buffer of the launch's size a block (filled
 *     with 0xa5, a canary after it checked when the block ends);
 *   - threadIdx, blockIdx (thread_local), blockDim, gridDim;
 *   - __syncthreads (a std::barrier over the block's threads), warp
 *     collectives (__syncwarp, __ballot_sync, __reduce_max_sync, __reduce_min_sync,
 *     __shfl_xor_sync, __shfl_up_sync: a std::barrier over the warp's 32 threads, values
 *     through per-warp slots, double-buffered by phase so one barrier a
 *     collective suffices); a thread that returns drops out of both
 *     barriers, as an exited CUDA thread does;
 *   - checks a launch reports in simt::stats: a barrier or collective reached
 *     at different source lines by threads of one block / warp (divergence),
 *     a full-mask collective with a lane already exited, an __ldg of a
 *     vector type or an asynchronous copy of 8 or 16 bytes at a misaligned
 *     address (a fault on the device), dynamic
 *     shared memory written past its size or a lane word (WR_SITE_SWORD) read
 *     outside it;
 *   - atomicAdd(float *), atomicAdd(unsigned *), atomicOr(int *) under one
 *     mutex; __threadfence as a host fence, __ldcg as __ldg;
 *   - __pipeline_memcpy_async as a deferred copy: the destination reads
 *     0x5a bytes until a __pipeline_wait_prior(N) covers the copy's batch
 *     (batches closed by __pipeline_commit; all but the newest N applied,
 *     newest first, so of two copies to one place in flight together the
 *     older wins: the device does not order them), so a kernel reading an
 *     async copy before waiting for it reads garbage; a thread that ends
 *     with copies not waited for is counted (Stats::unwaited);
 *   - float2/float4/uint2/uint4 (CUDA's alignment), __ldg, __popc, __ffs,
 *     bit casts, fmaf; __nv_bfloat16, __float2bfloat16_rn,
 *     __ushort_as_bfloat16; __half via lib/half.h (wp_f32_to_fp16);
 *   - nvcuda::wmma m16n16k16 (BF16 A row-major and B column-major from
 *     memory, FP32 accumulator): each thread's fragment object holds the
 *     whole 16 x 16 tile; loads read the whole tile (after the barrier the
 *     kernel itself has); mma_sync computes and store_matrix_sync writes
 *     only the elements a lane owns (element e by lane e % 32), so 32 lanes
 *     store without racing and without an extra barrier (a missing
 *     __syncwarp in the kernel is not masked). Products of BF16 values are
 *     exact in FP32; sums in FP32 in k order (the tensor core's order is
 *     unspecified).
 *   - memory traffic (simt::traffic, when simt::probing is set): the reads
 *     the kernels mark with WR_PROBE (runtime/wr_dev.h: decode-table
 *     lookups, lane words, group starts, asynchronous copies' sources,
 *     side bytes),
 *     grouped into the warp instructions the device would issue: key (site,
 *     step, n), step = the thread's table lookups so far (every lane of a
 *     warp looks up its i-th symbol in the same instruction), n = the
 *     thread's reads of that site in that step (a loop's n-th pass). Each
 *     instruction counts its shared-memory wavefronts (the most distinct
 *     32-bit words in one of the 32 banks) or its distinct 128-byte global
 *     lines and 32-byte sectors. A thread is keyed as written, so reads the
 *     device would issue as one instruction but a thread reaches at
 *     different steps count apart; vector loads count as one read;
 * Launch with simt::run_kernel(grid, block, dyn_smem_bytes, lambda); only
 * blockDim.x is used (y = z = 1), grids may be 3-D. Thread t of each block
 * runs on worker thread t of a pool (kept from block to block: creating 128
 * threads costs more than most blocks' work); a block still running after
 * 120 s aborts (a barrier some thread never reaches hangs on the device too).
 * Cost: a barrier or collective is a round of context switches (~30 us a
 * warp on 2 cores), so a kernel's warp shuffles dominate its emulated time.
 *
 * Not modelled: the timing of the device (memory ordering between barriers is
 * the host's, so a missing barrier shows only when the threads interleave
 * badly), shared memory contents left by an earlier block (static arrays keep
 * them rather than being garbage), bank conflicts of reads WR_PROBE does not
 * mark, register limits
 * (__launch_bounds__ is ignored), alignment of plain (non-__ldg) vector
 * stores, and the device's FMA contraction of a * b - c (host arithmetic is
 * as written).
 */
#ifndef WPACK_SIMT_H
#define WPACK_SIMT_H

#if defined(__CUDACC__) || defined(__CUDA_ARCH__)
#error "simt.h emulates CUDA on the host: compile with a host compiler"
#endif

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <semaphore>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

extern "C" {
#include "half.h"
}

/* ---- qualifiers ---------------------------------------------------------------------------- */

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__   /* empty: a macro for the GNU name would break libstdc++'s __attribute__((__noinline__)) */
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define WR_DYN_SMEM(T, name) T *name = reinterpret_cast<T *>(simt::dyn_smem())
#define WR_PROBE(site, p) simt::probe((site), (p))

/* ---- vector types ---------------------------------------------------------------------------- */

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
    constexpr dim3() = default;
    constexpr dim3(unsigned a, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
static inline float2 make_float2(float a, float b) { return {a, b}; }
static inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
static inline uint2 make_uint2(unsigned a, unsigned b) { return {a, b}; }
static inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }

inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

/* ---- the emulator's state ------------------------------------------------------------------- */

namespace simt {

/* What a launch saw (reset by run_kernel). */
struct Stats {
    std::atomic<long> divergent{0};    /* barrier / collective at different lines in a block or warp */
    std::atomic<long> partial{0};      /* a collective whose mask is not the lanes that took part (an exited lane) */
    std::atomic<long> misaligned{0};   /* __ldg of a vector, or a cp.async, at a misaligned address */
    std::atomic<long> smem_overrun{0}; /* dynamic shared memory written past the launch's size, or a
                                          lane word read outside it (WR_PROBE, WR_SITE_SWORD) */
    std::atomic<long> unwaited{0};     /* a thread that ended with asynchronous copies not waited for */
    std::atomic<long> atomics{0};      /* atomicAdd / atomicOr calls */
    std::atomic<long> threads{0};      /* threads run */
    void reset()
    {
        divergent = 0, partial = 0, misaligned = 0, smem_overrun = 0, unwaited = 0, atomics = 0, threads = 0;
    }
    bool clean() const { return !divergent && !partial && !misaligned && !smem_overrun && !unwaited; }
};
inline Stats stats;

struct Warp {
    std::unique_ptr<std::barrier<>> bar;
    uint32_t slot[2][32];
    uint32_t tag[2][32];
    uint32_t gen[2][32];               /* the phase a lane last wrote (exited lanes: an older one) */
};

enum { DYN_CANARY = 64 };

struct Block {
    unsigned n = 0;                    /* threads */
    std::unique_ptr<std::barrier<>> bar;
    std::vector<uint32_t> tag[2], gen[2];
    std::vector<Warp> warps;
    std::vector<unsigned char> dyn;    /* dynamic shared memory + canary */
    size_t dyn_bytes = 0;
};
inline Block *cur = nullptr;           /* the block running (blocks run one after another) */
inline thread_local uint32_t wphase, bphase;

/* A thread's asynchronous copies not yet waited for (__pipeline_memcpy_async). */
struct AsyncCopy {
    void *dst;
    const void *src;
    size_t n;
    unsigned batch;                    /* the commit batch it belongs to */
};
inline thread_local std::vector<AsyncCopy> copies;
inline thread_local unsigned committed;   /* batches committed so far in this block */
inline std::mutex amu;

inline void *dyn_smem() { return cur->dyn.data(); }

enum { K_SYNCWARP = 1, K_BALLOT, K_MAX, K_MIN, K_SHFL, K_SYNCTHREADS };

/* Warp-collective exchange: v of every lane into out[32] (0 for lanes that
 * did not take part: exited); returns the mask of lanes that took part. One
 * barrier: slots, tags and phases are double-buffered (a lane writes phase
 * p + 2's entries only after passing phase p + 1's barrier, which every lane
 * reaches after reading phase p's). A lane took part when its entry holds
 * this phase; an exited lane's entry holds an older one. */
inline uint32_t warp_xchg(int kind, int line, uint32_t mask, uint32_t v, uint32_t out[32])
{
    const unsigned t = threadIdx.x, l = t % 32;
    Warp &w = cur->warps[t / 32];
    const uint32_t gen = ++wphase, ph = gen & 1;
    w.slot[ph][l] = v;
    w.tag[ph][l] = (uint32_t)kind << 24 | (uint32_t)line;
    w.gen[ph][l] = gen;
    w.bar->arrive_and_wait();
    uint32_t part = 0;
    for (unsigned i = 0; i < 32; i++)
        part |= (uint32_t)(w.gen[ph][i] == gen) << i;
    if (mask != part)
        stats.partial++;
    for (unsigned d = 1; d < 32; d++) {   /* the next lane that took part reached the same line */
        const unsigned o = (l + d) % 32;
        if ((part >> o) & 1) {
            if (w.tag[ph][o] != w.tag[ph][l])
                stats.divergent++;
            break;
        }
    }
    if (out)
        for (unsigned i = 0; i < 32; i++)
            out[i] = (part >> i) & 1 ? w.slot[ph][i] : 0u;
    return part;
}

inline void syncthreads(int line)
{
    Block &b = *cur;
    const unsigned t = threadIdx.x;
    const uint32_t gen = ++bphase, ph = gen & 1;
    b.tag[ph][t] = (uint32_t)K_SYNCTHREADS << 24 | (uint32_t)line;
    b.gen[ph][t] = gen;
    b.bar->arrive_and_wait();
    for (unsigned d = 1; d < b.n; d++) {   /* exited threads do not take part (as on the device) */
        const unsigned o = (t + d) % b.n;
        if (b.gen[ph][o] == gen) {
            if (b.tag[ph][o] != b.tag[ph][t])
                stats.divergent++;
            break;
        }
    }
}

inline void syncwarp(int line, unsigned mask) { warp_xchg(K_SYNCWARP, line, mask, 0, nullptr); }

inline unsigned ballot(int line, unsigned mask, int pred)
{
    uint32_t v[32];
    warp_xchg(K_BALLOT, line, mask, pred ? 1u : 0u, v);
    unsigned r = 0;
    for (unsigned i = 0; i < 32; i++)
        r |= (v[i] & 1u) << i;
    return r & mask;
}

inline unsigned reduce_max(int line, unsigned mask, unsigned x)
{
    uint32_t v[32];
    const uint32_t part = warp_xchg(K_MAX, line, mask, x, v);
    unsigned r = 0;
    for (unsigned i = 0; i < 32; i++)
        if ((mask & part) >> i & 1)
            r = std::max(r, (unsigned)v[i]);
    return r;
}

inline unsigned reduce_min(int line, unsigned mask, unsigned x)
{
    uint32_t v[32];
    const uint32_t part = warp_xchg(K_MIN, line, mask, x, v);
    unsigned r = ~0u;
    for (unsigned i = 0; i < 32; i++)
        if ((mask & part) >> i & 1)
            r = std::min(r, (unsigned)v[i]);
    return r;
}

/* A warp shuffle: lane k gets lane src(k)'s x. */
template <typename T, typename F>
inline T shfl(int line, unsigned mask, T x, F src)
{
    static_assert(sizeof(T) == 4, "32-bit shuffles only");
    uint32_t u, v[32];
    memcpy(&u, &x, 4);
    warp_xchg(K_SHFL, line, mask, u, v);
    const uint32_t r = v[src(threadIdx.x % 32) & 31];
    T y;
    memcpy(&y, &r, 4);
    return y;
}

template <typename T>
inline T shfl_xor(int line, unsigned mask, T x, int lanemask)
{
    return shfl(line, mask, x, [lanemask](unsigned k) { return k ^ ((unsigned)lanemask & 31); });
}

/* __shfl_up_sync: lane k gets lane k - delta's value, lanes below delta their own (CUDA's
   width 32). */
template <typename T>
inline T shfl_up(int line, unsigned mask, T x, unsigned delta)
{
    return shfl(line, mask, x, [delta](unsigned k) { return k >= delta ? k - delta : k; });
}

/* The workers: thread t of every block runs on worker t (a std::thread of
 * its own, kept from block to block: creating 128 threads a block costs
 * more than most blocks' work). */
class Pool {
  public:
    ~Pool()
    {
        quit_ = true;
        for (auto &w : w_)
            w->go.release();
        for (auto &w : w_)
            w->th.join();
    }
    /* run job(t) on workers 0 .. n-1 and wait for all of them */
    void run(unsigned n, void (*job)(void *, unsigned), void *arg)
    {
        while (w_.size() < n) {
            w_.push_back(std::make_unique<Worker>());
            Worker *w = w_.back().get();
            const unsigned t = (unsigned)w_.size() - 1;
            w->th = std::thread([this, w, t] {
                for (;;) {
                    w->go.acquire();
                    if (quit_)
                        return;
                    job_(arg_, t);
                    std::lock_guard<std::mutex> g(mu_);
                    if (--left_ == 0)
                        cv_.notify_all();
                }
            });
        }
        job_ = job;
        arg_ = arg;
        left_ = n;
        for (unsigned t = 0; t < n; t++)
            w_[t]->go.release();
        std::unique_lock<std::mutex> g(mu_);
        if (!cv_.wait_for(g, std::chrono::seconds(120), [this] { return left_ == 0; })) {
            /* a barrier or collective some threads never reach: the device would hang too */
            fprintf(stderr, "simt: block (%u, %u, %u): %u of %u threads still running after 120 s (deadlock)\n",
                    blockIdx_.x, blockIdx_.y, blockIdx_.z, left_, n);
            abort();
        }
    }
    dim3 blockIdx_;   /* for the message above */

  private:
    struct Worker {
        std::thread th;
        std::binary_semaphore go{0};
    };
    std::vector<std::unique_ptr<Worker>> w_;
    void (*job_)(void *, unsigned) = nullptr;
    void *arg_ = nullptr;
    std::mutex mu_;
    std::condition_variable cv_;
    unsigned left_ = 0;
    std::atomic<bool> quit_{false};
};
inline Pool pool;

/* ---- memory traffic (WR_PROBE) ---- */
inline void probe(int site, const void *p);
}  // namespace simt
extern "C" {
#include "wr_dev.h"   /* the sites (WR_SITE_*); its WR_PROBE is simt.h's */
}
namespace simt {

/* What the marked reads of the launches since the last reset cost: per site,
 * warp instructions, the lanes in them, and wavefronts (shared sites) or
 * 128-byte lines and 32-byte sectors (global sites). */
struct Traffic {
    long instr[WR_SITES], lanes[WR_SITES], units[WR_SITES];
    long sectors[WR_SITES];                  /* global sites: distinct 32-byte sectors */
    void reset() { memset(this, 0, sizeof *this); }
};
inline Traffic traffic;
inline bool probing = false;                 /* set by the caller around the launches to count */
inline bool site_global(int site) { return site == WR_SITE_GWORD || site == WR_SITE_COPY || site == WR_SITE_SIDE; }

struct Probe {
    uint32_t step, n;
    uint8_t site;
    uintptr_t addr;
};
inline std::vector<Probe> plog[1024];          /* thread t's reads in this block (its own slot) */
inline thread_local uint32_t pstep, pn[WR_SITES];

/* A test's own look at every marked read (site, address), before the checks
 * below; NULL: none. Called from the emulated threads at once: keep it
 * thread-safe. */
inline void (*probe_hook)(int site, const void *p) = nullptr;

inline void probe(int site, const void *p)
{
    if (probe_hook)
        probe_hook(site, p);
    if (site == WR_SITE_SWORD && cur) {   /* a lane word read outside the launch's dynamic shared memory */
        const unsigned char *a = (const unsigned char *)p;
        if (a < cur->dyn.data() || a + 4 > cur->dyn.data() + cur->dyn_bytes)
            stats.smem_overrun++;
    }
    if (!probing)
        return;
    const unsigned t = threadIdx.x;
    plog[t].push_back({pstep, pn[site]++, (uint8_t)site, (uintptr_t)p});
    if (site == WR_SITE_LUT) {   /* the next step: counts of every site restart */
        pstep++;
        memset(pn, 0, sizeof pn);
    }
}

/* Fold one block's reads into traffic: warp by warp, the reads with one key
 * (site, step, n) are one instruction. */
inline void probe_block(unsigned n)
{
    auto key = [](const Probe &p) { return std::tie(p.site, p.step, p.n); };
    for (unsigned w = 0; w * 32 < n; w++) {
        std::vector<Probe> v;
        for (unsigned t = w * 32; t < n && t < w * 32 + 32; t++) {
            v.insert(v.end(), plog[t].begin(), plog[t].end());
            plog[t].clear();
        }
        std::sort(v.begin(), v.end(), [&](const Probe &a, const Probe &b) { return key(a) < key(b); });
        for (size_t i = 0; i < v.size();) {
            size_t j = i;
            while (j < v.size() && key(v[j]) == key(v[i]))
                j++;
            /* the distinct units of `bytes` bytes the instruction's addresses fall in */
            auto distinct = [&](uintptr_t bytes) {
                std::vector<uintptr_t> u;
                for (size_t a = i; a < j; a++)
                    u.push_back(v[a].addr / bytes);
                std::sort(u.begin(), u.end());
                u.erase(std::unique(u.begin(), u.end()), u.end());
                return u;
            };
            const int site = v[i].site;
            long units = 0;
            if (site_global(site)) {   /* distinct lines and sectors */
                units = (long)distinct(128).size();
                traffic.sectors[site] += (long)distinct(32).size();
            } else {   /* the most distinct words in one bank */
                long per[32] = {0};
                for (uintptr_t x : distinct(4))
                    units = std::max(units, ++per[x % 32]);
            }
            traffic.instr[site]++;
            traffic.lanes[site] += (long)(j - i);
            traffic.units[site] += units;
            i = j;
        }
    }
}

/* Run a kernel: blocks one after another, each with blockDim.x threads.
 * f is called on every thread (a lambda calling the kernel). */
template <typename F>
void run_kernel(dim3 grid, dim3 block, size_t dyn_bytes, F &&f)
{
    if (block.y != 1 || block.z != 1 || block.x < 1 || block.x > 1024) {
        fprintf(stderr, "simt: block (%u, %u, %u) not emulated\n", block.x, block.y, block.z);
        abort();
    }
    stats.reset();
    gridDim = grid;
    blockDim = block;
    const unsigned n = block.x, nw = (n + 31) / 32;
    struct Job {
        std::remove_reference_t<F> *f;
        Block *b;
        dim3 idx;
    };
    for (unsigned bz = 0; bz < grid.z; bz++)
        for (unsigned by = 0; by < grid.y; by++)
            for (unsigned bx = 0; bx < grid.x; bx++) {
                Block b;
                b.n = n;
                b.bar = std::make_unique<std::barrier<>>((ptrdiff_t)n);
                for (int p = 0; p < 2; p++) {
                    b.tag[p].assign(n, 0);
                    b.gen[p].assign(n, 0);
                }
                b.warps = std::vector<Warp>(nw);
                for (unsigned w = 0; w < nw; w++) {
                    b.warps[w].bar = std::make_unique<std::barrier<>>((ptrdiff_t)std::min(32u, n - 32 * w));
                    memset(b.warps[w].gen, 0, sizeof b.warps[w].gen);
                }
                b.dyn_bytes = dyn_bytes;
                b.dyn.assign(dyn_bytes + DYN_CANARY, 0xa5);
                cur = &b;
                Job job = {&f, &b, dim3(bx, by, bz)};
                pool.blockIdx_ = job.idx;
                pool.run(n, [](void *a, unsigned t) {
                    Job &j = *static_cast<Job *>(a);
                    threadIdx = dim3(t);
                    blockIdx = j.idx;
                    wphase = bphase = 0;
                    copies.clear();
                    committed = 0;
                    pstep = 0;
                    memset(pn, 0, sizeof pn);
                    (*j.f)();
                    if (!copies.empty()) {   /* copies in flight at exit: never landed, here */
                        stats.unwaited++;
                        copies.clear();
                    }
                    /* an exited thread leaves both barriers (as on the device) */
                    j.b->bar->arrive_and_drop();
                    j.b->warps[t / 32].bar->arrive_and_drop();
                }, &job);
                stats.threads += n;
                if (probing)
                    probe_block(n);
                for (size_t i = 0; i < DYN_CANARY; i++)
                    if (b.dyn[dyn_bytes + i] != 0xa5) {
                        stats.smem_overrun++;
                        break;
                    }
                cur = nullptr;
            }
}

}  // namespace simt

/* ---- intrinsics ----------------------------------------------------------------------------- */

#define __syncthreads() simt::syncthreads(__LINE__)
#define __syncwarp(...) simt::syncwarp(__LINE__, simt_mask_or_all(__VA_ARGS__))
#define __ballot_sync(mask, pred) simt::ballot(__LINE__, (mask), (pred))
#define __reduce_max_sync(mask, v) simt::reduce_max(__LINE__, (mask), (v))
#define __reduce_min_sync(mask, v) simt::reduce_min(__LINE__, (mask), (v))
#define __shfl_xor_sync(mask, v, o) simt::shfl_xor(__LINE__, (mask), (v), (o))
#define __shfl_up_sync(mask, v, d) simt::shfl_up(__LINE__, (mask), (v), (d))
static inline unsigned simt_mask_or_all() { return 0xffffffffu; }
static inline unsigned simt_mask_or_all(unsigned m) { return m; }

template <typename T>
static inline T __ldg(const T *p)
{
    if ((uintptr_t)p % alignof(T))
        simt::stats.misaligned++;
    T v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline int __popc(unsigned v) { return __builtin_popcount(v); }
static inline int __ffs(int v) { return __builtin_ffs(v); }
static inline float __uint_as_float(unsigned u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline unsigned __float_as_uint(float f)
{
    unsigned u;
    memcpy(&u, &f, 4);
    return u;
}
using std::fmaf;

static inline float atomicAdd(float *p, float v)
{
    std::lock_guard<std::mutex> g(simt::amu);
    simt::stats.atomics++;
    const float o = *p;
    *p = o + v;
    return o;
}
static inline unsigned atomicAdd(unsigned *p, unsigned v)
{
    std::lock_guard<std::mutex> g(simt::amu);
    simt::stats.atomics++;
    const unsigned o = *p;
    *p = o + v;
    return o;
}
/* blocks run one after another: a fence orders nothing more than the host does */
static inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
template <typename T>
static inline T __ldcg(const T *p)
{
    return __ldg(p);
}
static inline int atomicOr(int *p, int v)
{
    std::lock_guard<std::mutex> g(simt::amu);
    simt::stats.atomics++;
    const int o = *p;
    *p = o | v;
    return o;
}

static inline void __pipeline_memcpy_async(void *dst, const void *src, size_t n)
{
    if (((uintptr_t)dst | (uintptr_t)src) % n != 0)   /* cp.async of n bytes needs both n-aligned */
        simt::stats.misaligned++;
    memset(dst, 0x5a, n);
    simt::copies.push_back({dst, src, n, simt::committed});
}
static inline void __pipeline_commit() { simt::committed++; }
static inline void __pipeline_wait_prior(size_t n)
{
    std::vector<simt::AsyncCopy> &c = simt::copies;
    for (size_t i = c.size(); i-- > 0;)
        if (c[i].batch + n < simt::committed)
            memcpy(c[i].dst, c[i].src, c[i].n);
    size_t kept = 0;
    for (size_t i = 0; i < c.size(); i++)
        if (!(c[i].batch + n < simt::committed))
            c[kept++] = c[i];
    c.resize(kept);
}

/* ---- 16-bit floats ---------------------------------------------------------------------------- */

struct __nv_bfloat16 {
    unsigned short x;
};
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short v) { return {v}; }
static inline __nv_bfloat16 __float2bfloat16_rn(float f)
{
    const unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return {(unsigned short)0x7fff};   /* CUDA's canonical NaN */
    return {(unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}
static inline float simt_bf16_float(__nv_bfloat16 b) { return __uint_as_float((unsigned)b.x << 16); }

struct __half {
    unsigned short x;
};
static inline __half __float2half_rn(float f) { return {wp_f32_to_fp16(f)}; }
static inline unsigned short __half_as_ushort(__half h) { return h.x; }

/* ---- wmma (m16n16k16, BF16 in, FP32 accumulate) ---------------------------------------------- */

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

/* The whole tile in every thread: v[r][c] (A: row, k; B: k, column; accumulator: row, column). */
template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
    static_assert(M == 16 && N == 16 && K == 16, "m16n16k16 only");
    float v[16][16];
};

template <typename Use, typename T, typename Layout>
inline void fill_fragment(fragment<Use, 16, 16, 16, T, Layout> &f, float x)
{
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++)
            f.v[i][j] = x;
}

inline void load_matrix_sync(fragment<matrix_a, 16, 16, 16, __nv_bfloat16, row_major> &a, const __nv_bfloat16 *p,
                             unsigned ldm)
{
    for (unsigned i = 0; i < 16; i++)
        for (unsigned k = 0; k < 16; k++)
            a.v[i][k] = simt_bf16_float(p[i * ldm + k]);
}
inline void load_matrix_sync(fragment<matrix_a, 16, 16, 16, __nv_bfloat16, col_major> &a, const __nv_bfloat16 *p,
                             unsigned ldm)
{
    for (unsigned i = 0; i < 16; i++)
        for (unsigned k = 0; k < 16; k++)
            a.v[i][k] = simt_bf16_float(p[k * ldm + i]);
}
inline void load_matrix_sync(fragment<matrix_b, 16, 16, 16, __nv_bfloat16, col_major> &b, const __nv_bfloat16 *p,
                             unsigned ldm)
{
    for (unsigned k = 0; k < 16; k++)
        for (unsigned n = 0; n < 16; n++)
            b.v[k][n] = simt_bf16_float(p[n * ldm + k]);
}
inline void load_matrix_sync(fragment<matrix_b, 16, 16, 16, __nv_bfloat16, row_major> &b, const __nv_bfloat16 *p,
                             unsigned ldm)
{
    for (unsigned k = 0; k < 16; k++)
        for (unsigned n = 0; n < 16; n++)
            b.v[k][n] = simt_bf16_float(p[k * ldm + n]);
}

/* d = a b + c on the elements this lane owns (e = 16 row + column, e % 32 = lane). */
template <typename LA, typename LB>
inline void mma_sync(fragment<accumulator, 16, 16, 16, float> &d,
                     const fragment<matrix_a, 16, 16, 16, __nv_bfloat16, LA> &a,
                     const fragment<matrix_b, 16, 16, 16, __nv_bfloat16, LB> &b,
                     const fragment<accumulator, 16, 16, 16, float> &c)
{
    for (unsigned e = threadIdx.x % 32; e < 256; e += 32) {
        const unsigned i = e / 16, n = e % 16;
        float s = c.v[i][n];
        for (int k = 0; k < 16; k++)
            s += a.v[i][k] * b.v[k][n];   /* exact products (8-bit significands) */
        d.v[i][n] = s;
    }
}

inline void store_matrix_sync(float *p, const fragment<accumulator, 16, 16, 16, float> &f, unsigned ldm, layout_t lay)
{
    for (unsigned e = threadIdx.x % 32; e < 256; e += 32) {
        const unsigned i = e / 16, n = e % 16;
        if (lay == mem_row_major)
            p[i * ldm + n] = f.v[i][n];
        else
            p[n * ldm + i] = f.v[i][n];
    }
}

}  // namespace wmma
}  // namespace nvcuda

#endif
