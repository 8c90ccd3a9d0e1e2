/*
 * zpack.h - libzstd for the bytes wpack does not entropy-code itself:
 * metadata, 1-D tensors, leftovers, and (in distribution bundles) side data.
 *
 * Optional byte grouping (as ZipNN does for floats): with group g > 1 the
 * input is read as records of g bytes and byte j of every record is stored
 * together (all byte 0s, then all byte 1s …) before compression, which puts
 * the slowly varying high bytes of fp16 scales or float weights side by side.
 * A trailing partial record is stored as it is.
 */
#ifndef WPACK_ZPACK_H
#define WPACK_ZPACK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Compress n bytes (grouped by g ≥ 1) at zstd level (1..22), with zstd's
 * content checksum (XXH64-based, 4 bytes), so decompression detects altered
 * data. Returns a new
 * buffer of *out_len bytes (free() it), or NULL when out of memory or on a
 * zstd error (ZSTD_compress2's). */
uint8_t *wp_zpack(const void *src, size_t n, unsigned g, int level, size_t *out_len);

/* The uncompressed size a zstd frame declares, or UINT64_MAX when src is not
 * a zstd frame that declares it, or declares more than its block headers can
 * regenerate (RFC 8878 3.1.1.2: a raw or RLE block its stated size, a
 * compressed one at most 128 KiB; ZSTD_decompressBound returns
 * the declared size and cannot tell). Check before allocating from it. */
uint64_t wp_zcontent_size(const void *src, size_t len);

/* Decompress into dst, which must hold exactly n bytes, undoing grouping g.
 * Returns 0, or -1 when the data is corrupt or not exactly n bytes. */
int wp_zunpack(const void *src, size_t len, unsigned g, void *dst, size_t n);

#ifdef __cplusplus
}
#endif
#endif
