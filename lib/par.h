/*
 * par.h - split a range of rows over threads.
 *
 * The quantizers treat the rows of a weight matrix independently (ggml's
 * quantize_chunk does too: llama-quantize hands each thread whole rows), so
 * a loop over rows can run on several CPUs with each thread given one
 * contiguous share. The shares depend only on the row count and the number
 * of threads, and every row's result only on that row: the output is the
 * same bytes for any thread count.
 */
#ifndef WPACK_PAR_H
#define WPACK_PAR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The work of one share: rows [lo, hi) of the caller's loop; part is the
 * share's number, 0 .. parts - 1 (an index into per-thread scratch). */
typedef void (*wp_par_fn)(void *ctx, int64_t lo, int64_t hi, int part);

/* Run fn over rows [0, n) in `threads` contiguous shares, share k being
 * [k·n/T, (k+1)·n/T) with T = min(threads, n) (at least 1): share 0 on the
 * calling thread, the others on threads created for this call and joined
 * before it returns. threads ≤ 1 or n ≤ 1 calls fn(ctx, 0, n, 0) alone.
 * When a thread cannot be created its share runs on the calling thread
 * after share 0 (the result is the same; only slower). Returns the number of
 * shares T. Shares run at the same time: fn must not write what another
 * share reads or writes. */
int wp_par_rows(int threads, int64_t n, wp_par_fn fn, void *ctx);

/* The number of online CPUs (sysconf(_SC_NPROCESSORS_ONLN)), from 1 to 512:
 * the default of the programs' --threads, as llama-quantize's is
 * std::thread::hardware_concurrency(). */
int wp_par_cpus(void);

/* The programs' default --threads: WPACK_THREADS from the environment when it
 * is set and not empty (a count of 1 to 512, leading zeros dropped, as the
 * pipelines read it; zstd reads ZSTD_NBTHREADS so), else dflt.  --threads
 * given overrides both.  Returns the count, or -1 with one line in err
 * ("WPACK_THREADS 'x': expected a count of threads, 1 to 512") when the
 * variable is set to anything else. */
int wp_par_env_threads(int dflt, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
