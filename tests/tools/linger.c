/*
 * linger.so - loaded (LD_PRELOAD) into llama.cpp's own llama-perplexity by the live
 * tests (tests/ppl.bats, llrun): at exit the process waits until llama.cpp's log thread
 * has printed every line it was given.
 *
 * llama.cpp's common/log.cpp prints every LOG line from a worker thread, and its main
 * logger is never destroyed, so that thread is never joined (common_log_main() leaks it
 * on purpose, llama.cpp issue 22142). On a busy machine main() returned and the process
 * ended before the thread ran: the last lines, llama-perplexity's "Final estimate: PPL =
 * ..." and "Same top p: ...", were lost in 6 runs out of 6 (CI, bats running two files
 * at a time beside the unit tests). An atexit handler registered here runs in main's
 * thread after main returns and before the process ends, while the log thread is alive
 * (this library's constructor runs after the libraries', so its handler runs before
 * their destructors).
 *
 * The handler calls llama.cpp's own common_log_pause(common_log_main()), as llama.cpp's
 * tools do before they exit on purpose: it queues an end mark and joins the thread, so
 * every line queued before it is printed. The two are found with dlsym in the process
 * (libllama-common.so exports them in the shared build `make reftools` makes); where
 * they are not, it falls back to watching stdout and stderr (regular files: the tests
 * redirect the log to one) every 20 ms until their sizes have not changed for 100 ms,
 * at most 5 s, or sleeping 200 ms when neither is a regular file.
 * WPACK_LINGER_TRACE=1 prints what it did on stderr as the last line ("linger: joined
 * the log thread" or "linger: waited N ms"; its test reads it). A test tool, not wpack.
 */
#include <dlfcn.h>
#include <errno.h>
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
    while (nanosleep(&t, &t) != 0 && errno == EINTR) { }
}

/* common_log_pause(common_log_main()) when the process has them: 1, else 0 */
static int join_log_thread(void) {
    void *(*log_main)(void);
    void (*log_pause)(void *);
    *(void **)&log_main = dlsym(RTLD_DEFAULT, "_Z15common_log_mainv");
    *(void **)&log_pause = dlsym(RTLD_DEFAULT, "_Z16common_log_pauseP10common_log");
    if (!log_main || !log_pause)
        return 0;
    log_pause(log_main());
    return 1;
}

/* wait until stdout and stderr are quiet; the milliseconds waited */
static int wait_quiet(void) {
    long long out = size_of(1), err = size_of(2);
    int waited = 0, quiet = 0;
    if (out < 0 && err < 0) {
        nap_ms(200);
        return 200;
    }
    while (quiet < 100 && waited < 5000) {
        nap_ms(20);
        waited += 20;
        long long o = size_of(1), e = size_of(2);
        quiet = o == out && e == err ? quiet + 20 : 0;
        out = o, err = e;
    }
    return waited;
}

static void linger(void) {
    const char *trace = getenv("WPACK_LINGER_TRACE");
    if (join_log_thread()) {
        if (trace && trace[0] == '1')
            fprintf(stderr, "linger: joined the log thread\n");
        return;
    }
    int waited = wait_quiet();
    if (trace && trace[0] == '1')
        fprintf(stderr, "linger: waited %d ms\n", waited);
}

__attribute__((constructor)) static void linger_at_exit(void) {
    atexit(linger);
}
