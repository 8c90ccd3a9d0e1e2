/* half.c - fp16/bf16 <-> float (see half.h). Plain integer arithmetic on the
 * IEEE bit patterns; checked exhaustively against libggml-base in
 * tests/unit/test_blocks.c. */
#include "half.h"

#include <string.h>

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float wp_fp16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;

    if (exp == 0x1f)                       /* inf, NaN (quieted) */
        return u2f(sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0));
    if (exp != 0)                          /* normal: rebias 15 -> 127 */
        return u2f(sign | ((exp + 112) << 23) | (man << 13));
    if (man == 0)
        return u2f(sign);
    /* subnormal: man * 2^-24, normalise */
    int e = 113;                           /* biased exponent of 2^-14 */
    while (!(man & 0x400)) { man <<= 1; e--; }
    return u2f(sign | ((uint32_t)e << 23) | ((man & 0x3ff) << 13));
}

uint16_t wp_f32_to_fp16(float f)
{
    uint32_t x = f2u(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;

    if (ax > 0x7f800000u)                  /* NaN */
        return sign | 0x7e00;
    if (ax >= 0x477ff000u)                 /* rounds to >= 2^16: inf */
        return sign | 0x7c00;
    if (ax >= 0x38800000u) {               /* normal half (>= 2^-14) */
        uint32_t r = ax + 0xfffu + ((ax >> 13) & 1);
        return sign | (uint16_t)((r - 0x38000000u) >> 13);
    }
    if (ax < 0x33000000u)                  /* <= 2^-25 rounds to zero */
        return sign;
    /* subnormal half: units of 2^-24 */
    uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
    int shift = 126 - (int)e;              /* 14 .. 24 */
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++;
    return sign | (uint16_t)q;
}

float wp_bf16_to_f32(uint16_t b)
{
    return u2f((uint32_t)b << 16);
}

uint16_t wp_f32_to_bf16(float f)
{
    uint32_t u = f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 64);
    return (uint16_t)((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}
