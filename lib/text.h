/*
 * text.h - whether a file's first bytes look like a text, for naming a file
 * given where another kind goes (a calibration text as Hessians, as an
 * importance matrix, as a safetensors file).
 */
#ifndef WPACK_TEXT_H
#define WPACK_TEXT_H

#include <stddef.h>
#include <stdint.h>

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

#ifdef __cplusplus
}
#endif
#endif
