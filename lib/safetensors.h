/*
 * safetensors.h - .safetensors files to tensor streams (the only safetensors
 * parser in wpack).
 *
 * Format source: huggingface/safetensors README ("Format") and its Rust
 * reference reader (safetensors/src/tensor.rs):
 *   u64 N (little-endian)      the header's length in bytes
 *   N bytes of JSON            an object: tensor name -> {"dtype": "F16",
 *                              "shape": [d0, d1, ...], "data_offsets":
 *                              [begin, end]}, plus an optional
 *                              "__metadata__": {string: string}; it starts
 *                              with '{' and may be padded with spaces
 *   the data section           tensor bytes, little-endian, row-major (C
 *                              order); [begin, end) is relative to the
 *                              start of this section (byte 8 + N)
 *
 * A safetensors file becomes this stream (stream.h):
 *   one WP_REC_KV per __metadata__ entry, in header order: name
 *       "safetensors.metadata.KEY", type WP_GGUF_STRING, payload the value
 *       as GGUF serializes a string (u64 length, the bytes, no NUL)
 *   one WP_REC_TENSOR per tensor, in data-offset order: type the ggml type
 *       (F32, F16, BF16; also F64, I8, I16, I32, I64, which map one to one),
 *       ne[] the shape reversed (safetensors [rows, cols] -> ne[0] = cols,
 *       ne[1] = rows), a 0-d scalar as n_dims 1, ne[0] = 1; payload the
 *       tensor's bytes exactly as in the file.
 *
 * Memory: the header (N bytes, at most WP_ST_MAX_HEADER) while opening, then
 * the tensor table (names, shapes, offsets) and one tensor at a time.
 */
#ifndef WPACK_SAFETENSORS_H
#define WPACK_SAFETENSORS_H

#include <stdint.h>
#include <stdio.h>

#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest header accepted, in bytes (the Rust reader's MAX_HEADER_SIZE). */
#define WP_ST_MAX_HEADER   100000000u
/* Prefix of the stream names of __metadata__ key/values. */
#define WP_ST_META_PREFIX  "safetensors.metadata."

typedef struct wp_st_in wp_st_in;

/* ggml type (ggml_type.h) for a safetensors dtype name ("F16" -> WP_F16,
 * case-sensitive as the format spells it); -1 for a dtype wpack does not
 * read (BOOL, U8 ... U64, F8_E4M3, F8_E5M2, ... or anything unknown). */
int wp_st_dtype_type(const char *dtype);

/* Open a .safetensors file and check its whole header before any tensor is
 * read: header length against the file size, the JSON (well-formed as RFC
 * 8259 and serde_json, the safetensors reader, require, where cJSON is
 * lenient: strings UTF-8 with no raw control byte, no NUL or \u0000, no
 * unknown escape; numbers without leading zeros; an object,
 * __metadata__ a string->string map), each tensor's dtype, shape
 * (non-negative integers below 2^53 written without fraction or exponent,
 * at most 4 dims) and data_offsets (the same integers; begin <= end,
 * end - begin = bytes of dtype x shape, end within the data section, so a
 * truncated file is caught here), no two tensors overlapping, no duplicate
 * names or metadata keys.
 * Returns NULL on failure with a one-line message in err naming the file
 * ("x.safetensors: tensor 'w': dtype U8 is not supported ..."). */
wp_st_in *wp_st_open(const char *path, char *err, size_t errlen);

/* Whether a file's first 9 bytes h look like a safetensors file's start:
 * an 8-byte little-endian header length from 2 to WP_ST_MAX_HEADER, then
 * the header's '{' (the file may be cut short; wp_st_open says what else is
 * wrong). For other readers' messages (ggufcat: "a safetensors file: read
 * it with safetensorscat"). Format: huggingface/safetensors' header. */
int wp_st_magic(const uint8_t h[9]);

/* Counts of what the file holds: metadata entries and tensors. */
uint64_t wp_st_n_meta(const wp_st_in *s);
uint64_t wp_st_n_tensors(const wp_st_in *s);

/* Metadata entry i (header order, 0 <= i < wp_st_n_meta): the key as in the
 * file (without WP_ST_META_PREFIX) and the value (NUL-terminated; *len gets
 * its length in bytes). NULL when i is out of range. Key and value point
 * into s and are valid until wp_st_close. */
const char *wp_st_meta(const wp_st_in *s, uint64_t i, const char **value, size_t *len);

/* Name of tensor i in data-offset order (0 <= i < wp_st_n_tensors), as the
 * stream will carry it; NULL when i is out of range. */
const char *wp_st_tensor_name(const wp_st_in *s, uint64_t i);

/* Next record of the file as a stream (see the top of this file) into r,
 * which is initialised first (free it before reusing it). Metadata records
 * come first, then tensors; each tensor is read with one seek and one read.
 * Returns 1 for a record, 0 after the last tensor, -1 on error (short read:
 * the file changed or was truncated; out of memory); wp_st_error() says
 * which. */
int wp_st_next(wp_st_in *s, wp_record *r);

/* The last error, one line, naming the file. */
const char *wp_st_error(const wp_st_in *s);
/* The path given to wp_st_open. */
const char *wp_st_path(const wp_st_in *s);
/* Close the file and free everything; NULL is ignored. */
void wp_st_close(wp_st_in *s);

#ifdef __cplusplus
}
#endif
#endif
