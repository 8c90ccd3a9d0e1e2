/* par.c - split a range of rows over threads (see par.h). */
#include "par.h"
#include <stdio.h>

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct {
    wp_par_fn fn;
    void *ctx;
    int64_t lo, hi;
    int part;
    pthread_t th;
    int started;
} share;

static void *run_share(void *p)
{
    share *s = p;
    s->fn(s->ctx, s->lo, s->hi, s->part);
    return NULL;
}

int wp_par_rows(int threads, int64_t n, wp_par_fn fn, void *ctx)
{
    int T = threads < 1 ? 1 : threads;
    if (n < T)
        T = n < 1 ? 1 : (int)n;
    if (T == 1) {
        fn(ctx, 0, n, 0);
        return 1;
    }
    share *sh = calloc((size_t)T, sizeof *sh);
    if (!sh) {   /* no memory for the bookkeeping: the same shares, one after another */
        for (int k = 0; k < T; k++)
            fn(ctx, (int64_t)k * n / T, (int64_t)(k + 1) * n / T, k);
        return T;
    }
    for (int k = 0; k < T; k++) {
        sh[k] = (share){fn, ctx, (int64_t)k * n / T, (int64_t)(k + 1) * n / T, k, 0, 0};
        if (k > 0)
            sh[k].started = pthread_create(&sh[k].th, NULL, run_share, &sh[k]) == 0;
    }
    fn(ctx, sh[0].lo, sh[0].hi, 0);
    for (int k = 1; k < T; k++) {
        if (sh[k].started)
            pthread_join(sh[k].th, NULL);
        else
            fn(ctx, sh[k].lo, sh[k].hi, k);
    }
    free(sh);
    return T;
}

int wp_par_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 512 ? 512 : (int)n;
}

int wp_par_env_threads(int dflt, char *err, size_t errlen)
{
    const char *v = getenv("WPACK_THREADS");
    if (!v || !*v)
        return dflt;
    long n = 0;
    const char *p = v;
    while (*p >= '0' && *p <= '9' && n <= 512)
        n = n * 10 + (*p++ - '0');
    if (*p || n < 1 || n > 512) {
        snprintf(err, errlen, "WPACK_THREADS '%s': expected a count of threads, 1 to 512", v);
        return -1;
    }
    return (int)n;
}
