/*
 * zframe.h - a byte source or sink over a FILE that may be one zstd frame.
 *
 * A distribution bundle (laneinterleave --dist) is a whole wpack stream
 * inside one zstd frame: the record headers, names and attributes that the
 * stream repeats compress to a few bytes a record, the entropy-coded
 * payloads pass through. The stream reader takes either form through
 * wp_zsrc: a source that starts with the zstd frame magic (28 b5 2f fd) is
 * decompressed as it is read; any other is read as it is. `zstd -d` turns
 * a framed bundle into the plain one, byte for byte.
 *
 * Errors: reads return fewer bytes than asked at the end or on an error;
 * wp_zsrc_error() then says which (NULL at a clean end). Sources: libzstd's
 * streaming API (ZSTD_decompressStream, ZSTD_compressStream2).
 */
#ifndef WPACK_ZFRAME_H
#define WPACK_ZFRAME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wp_zsrc wp_zsrc;
typedef struct wp_zsink wp_zsink;

/* Wrap f (not closed): peeks its first 4 bytes to tell the two forms
 * apart. NULL when out of memory. */
wp_zsrc *wp_zsrc_open(FILE *f);
/* Wrap f as a plain source without peeking (random access at an offset).
 * NULL when out of memory. */
wp_zsrc *wp_zsrc_plain(FILE *f);
/* Read up to n bytes (all n unless at the end or on an error), as fread. */
size_t wp_zsrc_read(wp_zsrc *s, void *buf, size_t n);
/* 1 when the source is a zstd frame. */
int wp_zsrc_framed(const wp_zsrc *s);
/* NULL, or what stopped the last short read ("read error: ...", "corrupt
 * zstd frame: ..."). */
const char *wp_zsrc_error(const wp_zsrc *s);
/* At the end of the content (a stream's trailer): 0 when no byte follows
 * it, and for a framed source when the frame ends there (its checksum
 * checked), else -1 with the problem in wp_zsrc_error. A plain source
 * reads one byte to know (on a pipe, until the writer closes it). */
int wp_zsrc_finish(wp_zsrc *s);
/* Free s and its zstd state (f is the caller's); NULL is a no-op. */
void wp_zsrc_free(wp_zsrc *s);

/* 1 when the seekable file f starts with a zstd frame (a framed bundle);
 * f is left at its start. */
int wp_zframe_is(FILE *f);
/* 1 when the first n bytes h start with a zstd frame's magic (28 b5 2f fd,
 * RFC 8878), for other readers' messages ("a zstd frame: zstd -d it"). */
int wp_zframe_magic(const uint8_t *h, size_t n);
/* 1 when they start with a zstd skippable frame's magic (5? 2a 4d 18, RFC
 * 8878), which zstd -d passes over. */
int wp_zframe_skippable(const uint8_t *h, size_t n);

/* f's content from where it stands (a pipe too), decompressed when it is one
 * zstd frame, copied into an unlinked temporary file (spool.h), rewound; f is
 * the caller's. *total receives the bytes copied. NULL with "PATH: reason" in
 * err: a corrupt, cut or second frame (wp_zsrc_error's words), a temporary
 * file that cannot be made or written. */
FILE *wp_zsrc_spool(FILE *f, const char *path, uint64_t *total, char *err, size_t errlen);

/* For random access (bundle indexes): when the seekable file f holds a
 * zstd frame, its content decompressed into an unnamed temporary file,
 * rewound (f is left open; the caller closes both); else f itself, rewound.
 * NULL with a one-line reason in err (naming path) on a corrupt frame, a
 * frame with nothing in it, or when no temporary file can be made. */
FILE *wp_zframe_plain(FILE *f, const char *path, char *err, size_t errlen);

/* Wrap f (not closed): level 0 writes bytes as they are, 1..22 writes
 * them into one zstd frame at that level (with its content checksum).
 * NULL when out of memory or the level is out of range. */
wp_zsink *wp_zsink_open(FILE *f, int level);
/* Write n bytes. 0, or -1 (errno set, or EIO for a compression error). */
int wp_zsink_write(wp_zsink *s, const void *buf, size_t n);
/* End the frame (framed sinks) and flush f. 0 or -1 as wp_zsink_write. */
int wp_zsink_finish(wp_zsink *s);
/* Free s and its zstd state without finishing the frame (f is the
 * caller's); NULL is a no-op. */
void wp_zsink_free(wp_zsink *s);

#ifdef __cplusplus
}
#endif
#endif
