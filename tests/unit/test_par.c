/* test_par.c - lib/par.c: wp_par_rows covers [0, n) exactly once in
 * contiguous shares k·n/T .. (k+1)·n/T, share k numbered k, share 0 on the
 * calling thread; T = min(threads, n), at least 1. */
#include "par.h"
#include "tap.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int hits[1000];
    int64_t lo[64], hi[64];
    int seen[64];
    pthread_t caller, by[64];
} probe;

static void mark(void *p, int64_t lo, int64_t hi, int part)
{
    probe *pr = p;
    for (int64_t r = lo; r < hi; r++)
        pr->hits[r]++;
    pr->lo[part] = lo;
    pr->hi[part] = hi;
    pr->seen[part]++;
    pr->by[part] = pthread_self();
}

int main(void)
{
    static const struct { int threads; int64_t n; int T; } cases[] = {
        {1, 10, 1}, {0, 10, 1}, {-3, 10, 1}, {3, 10, 3}, {4, 1000, 4}, {8, 3, 3}, {5, 1, 1}, {7, 0, 1}, {64, 64, 64},
    };
    static probe pr;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        memset(&pr, 0, sizeof pr);
        const int threads = cases[c].threads;
        const int64_t n = cases[c].n;
        int T = wp_par_rows(threads, n, mark, &pr);
        int ok = T == cases[c].T && pthread_equal(pr.by[0], pthread_self());
        for (int64_t r = 0; r < n; r++)
            ok &= pr.hits[r] == 1;
        for (int k = 0; k < T; k++)
            ok &= pr.seen[k] == 1 && pr.lo[k] == (int64_t)k * n / T && pr.hi[k] == (int64_t)(k + 1) * n / T;
        for (int k = 1; k < T; k++)
            ok &= !pthread_equal(pr.by[k], pthread_self());
        CHECK(ok, "threads %d, n %lld: %d shares (want %d), each row once, share 0 on the caller", threads,
              (long long)n, T, cases[c].T);
    }

    /* WPACK_THREADS, the programs' default --threads (the pipelines' variable, unread by the
       programs alone: a new user's trial) */
    static const struct { const char *v; int want; } env[] = {
        {NULL, 7}, {"", 7}, {"1", 1}, {"3", 3}, {"007", 7}, {"0000000000000000000012", 12}, {"512", 512},
        {"0", -1}, {"513", -1}, {"1000", -1}, {"99999999999999999999999", -1}, {"-2", -1}, {"2x", -1},
        {" 2", -1}, {"abc", -1}, {"2.5", -1},
    };
    for (size_t c = 0; c < sizeof env / sizeof env[0]; c++) {
        char err[128] = "", want_err[128];
        if (env[c].v)
            setenv("WPACK_THREADS", env[c].v, 1);
        else
            unsetenv("WPACK_THREADS");
        const int n = wp_par_env_threads(7, err, sizeof err);
        snprintf(want_err, sizeof want_err, "WPACK_THREADS '%s': expected a count of threads, 1 to 512",
                 env[c].v ? env[c].v : "");
        CHECK(n == env[c].want && (n > 0 ? !err[0] : !strcmp(err, want_err)), "WPACK_THREADS %s%s%s: %d (want %d) '%s'",
              env[c].v ? "'" : "", env[c].v ? env[c].v : "unset", env[c].v ? "'" : "", n, env[c].want, err);
    }
    unsetenv("WPACK_THREADS");
    return tap_done();
}
