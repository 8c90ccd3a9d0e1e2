/*
 * linger.so - loaded (LD_PRELOAD) into llama.cpp's own llama-perplexity by the live
 * tests (tests/ppl.bats, llrun): at exit the process waits until llama.cpp's log thread
 * has printed what it holds.
 *
 * llama.cpp's common/log.cpp prints every LOG line from a worker thread, and its main
 * logger is never destroyed, so never joined (common_log_main() leaks it on purpose,
 * llama.cpp issue 22142). On a busy machine main() returned and the process ended
 * before that thread ran: the last lines, llama-perplexity's "Final estimate: PPL = ..."
 * and "Same top p: ...", were lost in 6 runs out of 6 (CI, bats running two files at a
 * time beside the unit tests). An atexit handler runs in main's thread before the
 * process ends, while the log thread is still alive; while it sleeps, the log thread
 * gets a core and writes.
 *
 * The wait: stdout and stderr (regular files: the tests redirect the log to one) are
 * watched every 20 ms until their sizes have not changed for 100 ms, at most 5 s; when
 * neither is a regular file it sleeps 200 ms. WPACK_LINGER_TRACE=1 prints
 * "linger: waited N ms" on stderr (its test reads it). Not part of wpack: a test tool.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

/* the size of fd when it is a regular file, else -1 */
static long long size_of(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? (long long)st.st_size : -1;
}

static void nap_ms(int ms) {
    struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&t, &t) != 0) { }
}

static void linger(void) {
    long long out = size_of(1), err = size_of(2);
    int waited = 0;
    if (out < 0 && err < 0) {
        nap_ms(200);
        waited = 200;
    } else {
        int quiet = 0;
        while (quiet < 100 && waited < 5000) {
            nap_ms(20);
            waited += 20;
            long long o = size_of(1), e = size_of(2);
            quiet = o == out && e == err ? quiet + 20 : 0;
            out = o, err = e;
        }
    }
    const char *trace = getenv("WPACK_LINGER_TRACE");
    if (trace && trace[0] == '1')
        fprintf(stderr, "linger: waited %d ms\n", waited);
}

__attribute__((constructor)) static void linger_at_exit(void) {
    atexit(linger);
}
