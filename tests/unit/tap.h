/*
 * tap.h - the tiny TAP emitter of wpack's C unit tests.
 *
 * Each tests/unit/test_NAME.c is one program; CHECK prints "ok N - what" or
 * "not ok N - what" (TAP, as bats --tap prints), and tap_done() returns the
 * exit status. tests/run counts these lines together with the bats ones.
 */
#ifndef WPACK_TAP_H
#define WPACK_TAP_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_n, tap_failed;

/* The tests' random numbers: Marsaglia's xorshift64 (shifts 13, 7, 17) on
 * the caller's state *s (nonzero); returns the new state. Each test keeps
 * its own seed, so its inputs do not depend on the others. */
static inline uint64_t tap_xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static inline int tap_check(int ok, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    printf("%s %d - ", ok ? "ok" : "not ok", ++tap_n);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (!ok) {
        printf("# failed at %s:%d\n", file, line);
        tap_failed++;
    }
    fflush(stdout);
    return ok;
}

/* CHECK(cond, "printf format", ...): one TAP test line. */
#define CHECK(cond, ...) tap_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

/* SKIP("reason"): one TAP skip line (counts as passed, reported as skipped). */
#define SKIP(...) do { printf("ok %d - # skip ", ++tap_n); printf(__VA_ARGS__); printf("\n"); } while (0)

static inline int tap_done(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}

#endif
