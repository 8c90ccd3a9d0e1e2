/* test_par.c - lib/par.c: wp_par_rows covers [0, n) exactly once in
 * contiguous shares k·n/T .. (k+1)·n/T, share k numbered k, share 0 on the
 * calling thread; T = min(threads, n), at least 1. */
#include "par.h"
#include "tap.h"

#include <pthread.h>
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
    return tap_done();
}
