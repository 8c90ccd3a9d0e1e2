/*
 * blas_room.c - whether OpenBLAS can work under the address-space limit
 * (blas_room.h says why and how).
 */
#include "blas_room.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* OpenBLAS's own (cblas.h of its pthreads build; declared here, as hessian.c
 * declares openblas_set_num_threads, so no include path names the build) */
int openblas_get_num_threads(void);
int openblas_get_parallel(void);   /* 0 sequential, 1 pthreads, 2 OpenMP */

#define BUFFER_MIB 128u   /* OpenBLAS's BUFFER_SIZE (x86-64), a thread */

static int workers_short;   /* wp_blas_room_init found a worker without its buffer: of */
static int workers;         /* this many workers */
static int room_ok;         /* wp_blas_room returned 0 once */

/* The address-space limit in bytes, or 0 when there is none. */
static uint64_t as_limit(void)
{
    struct rlimit r;
    return getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY ? (uint64_t)r.rlim_cur : 0;
}

/* The process's size (VmSize) in bytes, or 0 when /proc cannot tell. */
static uint64_t vm_size(void)
{
    unsigned long long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    if (fscanf(f, "%llu", &pages) != 1)
        pages = 0;
    fclose(f);
    return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* A new thread's stack, as glibc sizes it (OpenBLAS starts its workers with
 * the default attributes). */
static uint64_t stack_size(void)
{
    pthread_attr_t a;
    size_t s = 0;
    if (pthread_attr_init(&a) == 0) {
        pthread_attr_getstacksize(&a, &s);
        pthread_attr_destroy(&a);
    }
    return s;
}

void wp_blas_room_init(void)
{
    const uint64_t lim = as_limit();
    const int t = openblas_get_num_threads();
    /* the pthreads build alone starts its workers, and their buffers, at once (an OpenMP build's
       threads were taken for workers that had mapped nothing, and every run under a limit was
       refused: a reviewer's find) */
    if (!lim || t < 2 || openblas_get_parallel() != 1)
        return;
    /* the workers map their buffers as they start, which may be after main has: waited for, up
       to a second in steps of 2 ms (a first check at once saw a worker not yet started, and
       refused a run that fitted) */
    const uint64_t want = (uint64_t)(t - 1) * (((uint64_t)BUFFER_MIB << 20) + stack_size());
    const struct timespec step = {0, 2000000};
    uint64_t vm = vm_size();
    for (int i = 0; vm && vm < want && i < 500; i++) {
        nanosleep(&step, NULL);
        vm = vm_size();
    }
    workers_short = vm && vm < want;
    workers = t - 1;
}

int wp_blas_room(char *err, size_t errlen)
{
    if (room_ok)
        return 0;
    const uint64_t lim = as_limit(), vm = vm_size();
    const unsigned long long lim_mib = (unsigned long long)(lim >> 20), vm_mib = (unsigned long long)(vm >> 20);
    if (lim && workers_short) {
        snprintf(err, errlen,
                 "under ulimit -v %llu MiB, OpenBLAS's worker threads (%d) could not all map their %u MiB "
                 "buffers (one without spins): set OPENBLAS_NUM_THREADS to fewer threads (1: none), or "
                 "raise the limit",
                 lim_mib, workers, BUFFER_MIB);
        return -1;
    }
    /* the caller's buffer and a MiB beside it (the mapping's page, the call's own); what is left
       said to a tenth (whole MiB said "leaves 128 MiB ... below the 128 MiB": a breaker's find) */
    if (lim && vm && (vm > lim || lim - vm < ((uint64_t)(BUFFER_MIB + 1) << 20))) {
        snprintf(err, errlen,
                 "ulimit -v leaves %.1f MiB beside the %llu MiB in use, below the %u MiB OpenBLAS's work "
                 "needs (its %u MiB buffer and 1 MiB beside): raise the limit",
                 vm > lim ? 0.0 : (double)(lim - vm) / 1048576.0, vm_mib, BUFFER_MIB + 1, BUFFER_MIB);
        return -1;
    }
    room_ok = 1;
    return 0;
}
