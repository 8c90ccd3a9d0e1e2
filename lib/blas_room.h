/*
 * blas_room.h - whether OpenBLAS can work under the process's address-space
 * limit (ulimit -v, RLIMIT_AS).
 *
 * OpenBLAS (0.3, the pthreads build Debian links) maps a buffer of 128 MiB
 * (its BUFFER_SIZE on x86-64) for each of its threads: for each worker
 * thread when the library starts, before main; for the calling thread at
 * its first call that needs one. A mapping that fails is retried for ever
 * (blas_memory_alloc's loop): a worker without its buffer spins at 100 % of
 * a CPU, a parallel call then waits for it for good, and a first call
 * without room for the caller's buffer never returns. gptq (GPTQ's
 * Cholesky, its batch updates) and hessian (its sums of outer products)
 * hung so under a ulimit -v that left no room (a re-tester's find): these
 * two functions turn that into one line with the way on, before the first
 * call.
 *
 * Source: OpenBLAS driver/others/memory.c (blas_memory_alloc, alloc_mmap)
 * and blas_server.c (blas_thread_server allocates its buffer as it starts).
 */
#ifndef WPACK_BLAS_ROOM_H
#define WPACK_BLAS_ROOM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Note, in main before any allocation of the program's own (after
 * wp_cli_init and the options, and after any openblas_set_num_threads:
 * a count above the one the library started with starts more workers),
 * whether OpenBLAS's worker threads (its pthreads build's: an OpenMP or
 * sequential build maps nothing at start, and is not checked) mapped their
 * buffers: under a finite RLIMIT_AS, the process's size (VmSize,
 * /proc/self/statm) is at least (threads - 1) x (128 MiB + a thread's
 * stack) when they all did, and at least 128 MiB less when one did not
 * (the program itself is smaller than that at its start: about 50 MiB for
 * gptq and hessian). The workers map as they start, maybe after main has:
 * under a limit, with workers, it waits for their size up to a second.
 * Never fails; without a limit it notes nothing and returns at once. */
void wp_blas_room_init(void);

/* Before the first BLAS or LAPACK call: 0 when there is no address-space
 * limit, or when every worker mapped its buffer (wp_blas_room_init) and
 * the limit leaves the caller's 128 MiB beside the process's size now;
 * else -1 with one line in err (errlen bytes), e.g. "ulimit -v leaves 45.3
 * MiB beside the 52 MiB in use, below the 129 MiB OpenBLAS's work needs
 * (its 128 MiB buffer and 1 MiB beside): raise the limit" or "under ulimit -v 97 MiB, OpenBLAS's worker
 * threads (1) could not all map their 128 MiB buffers (one without spins):
 * set OPENBLAS_NUM_THREADS to fewer threads (1: none), or raise the limit".
 * After a 0, later calls
 * return 0 at once (the buffers are mapped and kept). For one calling
 * thread: the programs make their BLAS calls from main's (gptq's own
 * threads never call it; a second caller would need its own buffer). */
int wp_blas_room(char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
