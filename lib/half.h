/*
 * half.h - IEEE binary16 (fp16) and bfloat16 conversions, bit-exact with ggml.
 *
 * fp16 and bf16 values travel as their raw 16-bit patterns (uint16_t), as
 * ggml blocks and GGUF tensors store them (little-endian on disk; callers
 * read the two bytes themselves).
 */
#ifndef WPACK_HALF_H
#define WPACK_HALF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* fp16 bits -> float. Exact for every pattern; a NaN keeps its payload with
 * the quiet bit set. Source: ggml_compute_fp16_to_fp32 (ggml-impl.h). */
float wp_fp16_to_f32(uint16_t h);

/* float -> fp16 bits, round to nearest, ties to even; overflow (|f| >= 65520)
 * gives +-inf, NaN gives sign|0x7E00, values below 2^-25 give +-0.
 * Source: ggml_compute_fp32_to_fp16 (GGML_FP32_TO_FP16). */
uint16_t wp_f32_to_fp16(float f);

/* bf16 bits -> float (exact). Source: ggml_compute_bf16_to_fp32. */
float wp_bf16_to_f32(uint16_t b);

/* float -> bf16 bits, round to nearest even; NaN -> upper half | 0x40 (quiet),
 * subnormals kept. Source: ggml_compute_fp32_to_bf16. */
uint16_t wp_f32_to_bf16(float f);

/* Read / write a little-endian 16-bit value at p. */
static inline uint16_t wp_rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline void wp_wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

#ifdef __cplusplus
}
#endif
#endif
