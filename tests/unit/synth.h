/*
 * synth.h - the random numbers of wpack's synthetic test weights: xorshift64
 * uniforms, Box-Muller Gaussians, and Student-t(4) for the heavy tails of
 * trained weights. Header-only, for tests/tools and tests/unit; each program
 * seeds synth_state once (its outputs, and so tests/bitrates.tsv, depend on it).
 */
#ifndef WPACK_SYNTH_H
#define WPACK_SYNTH_H

#include <math.h>
#include <stdint.h>

static uint64_t synth_state = 0x9E3779B97F4A7C15ull;

/* Uniform in (0, 1). */
static inline double urand(void)
{
    synth_state ^= synth_state << 13, synth_state ^= synth_state >> 7, synth_state ^= synth_state << 17;
    return ((synth_state >> 11) + 0.5) / 9007199254740992.0;
}

/* Standard normal (Box-Muller). */
static inline double gauss(void) { return sqrt(-2 * log(urand())) * cos(6.283185307179586 * urand()); }

/* Student-t with 4 degrees of freedom: heavy tails like trained weights. */
static inline double student4(void)
{
    double z = gauss(), c = 0;
    for (int i = 0; i < 4; i++) {
        double g = gauss();
        c += g * g;
    }
    return z / sqrt(c / 4);
}

#endif
