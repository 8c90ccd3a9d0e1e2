/*
 * text.h - what a file's first bytes say it is, for naming a file given
 * where another kind goes (a calibration text as Hessians, as an importance
 * matrix, as a safetensors file; a compressed or archived model as a GGUF).
 */
#ifndef WPACK_TEXT_H
#define WPACK_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Whether the n bytes at b (a file's first, say 4 KiB) look like a text: n > 0
 * and no control byte but tab, LF and CR (UTF-8's bytes above 127 pass, DEL
 * does not). A binary file without a NUL byte, or a wpack stream's or GGUF's
 * magic cut short ("WPACKS"), can pass: callers test the magics they know
 * first. */
static inline int wp_text_like(const uint8_t *b, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if ((b[k] < 0x20 && b[k] != '\t' && b[k] != '\n' && b[k] != '\r') || b[k] == 0x7f)
            return 0;
    return n > 0;
}

/* What the n bytes at h (a file's first, at least 6 for xz) say the file is
 * when it is a compressed file or an archive, with the way on, for a
 * reader's "not a GGUF file (...)": a gzip, xz, bzip2 or lz4 file
 * ("a gzip file: gunzip it first") or a zip archive (unzip it; a PyTorch
 * .bin is one, to convert; a zipped GGUF or bundle was told to convert: a
 * re-tester's find); NULL for any other. zstd frames are zframe.h's (wp_zframe_magic).
 * Magics: gzip 1f 8b (RFC 1952), xz fd 37 7a 58 5a 00 (the .xz format),
 * bzip2 "BZh" and a block size digit, lz4 04 22 4d 18 (its frame format),
 * zip "PK" 03 04 (a local file header). */
static inline const char *wp_foreign_kind(const uint8_t *h, size_t n)
{
    static const uint8_t xz[6] = {0xfd, '7', 'z', 'X', 'Z', 0}, lz4[4] = {0x04, 0x22, 0x4d, 0x18};
    if (n >= 2 && h[0] == 0x1f && h[1] == 0x8b)
        return "a gzip file: gunzip it first";
    if (n >= 6 && !memcmp(h, xz, 6))
        return "an xz file: xz -d it first";
    if (n >= 4 && !memcmp(h, "BZh", 3) && h[3] >= '1' && h[3] <= '9')
        return "a bzip2 file: bunzip2 it first";
    if (n >= 4 && !memcmp(h, lz4, 4))
        return "an lz4 file: lz4 -d it first";
    if (n >= 4 && !memcmp(h, "PK\3\4", 4))
        return "a zip archive: unzip it, or if it is a PyTorch .bin, convert that to safetensors or GGUF";
    return NULL;
}

#ifdef __cplusplus
}
#endif
#endif
