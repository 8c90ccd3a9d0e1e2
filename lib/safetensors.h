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
 *   first one WP_REC_KV named
 *       WP_ST_HEADER_KEY, type WP_GGUF_STRING, payload the file's first
 *       8 + N bytes (u64 N, the JSON as in the file, padding included),
 *       which is GGUF's serialization of that string: with it, the
 *       stream's tensors give the file back byte for byte (wp_st_out)
 *   one WP_REC_KV per __metadata__ entry, in header order: name
 *       "safetensors.metadata.KEY", type WP_GGUF_STRING, payload the value
 *       as GGUF serializes a string (u64 length, the bytes, no NUL)
 *   one WP_REC_TENSOR per tensor, in data-offset order: type the ggml type
 *       (F32, F16, BF16; also F64, I8, I16, I32, I64, which map one to one;
 *       the bytes of U8, U16, U32, U64, BOOL and F8_* as the integer type of
 *       their width, WP_ST_DTYPE_ATTR naming the dtype; more than 4
 *       dimensions folded into 4, WP_ST_SHAPE_ATTR the shape),
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
/* Name of the key/value that holds a file's whole header (see above). A GGUF
 * does not carry it: wp_gguf_out_add passes it over. */
#define WP_ST_HEADER_KEY   "safetensors.header"
/* Attributes of a tensor record that a GGUF cannot hold (wp_gguf_out_add refuses it): its
 * dtype when no ggml type is it (U8, U16, U32, U64, BOOL, F8_E4M3, F8_E5M2, F8_E8M0: the
 * bytes go as I8, I16, I32 or I64, of the same width), and its shape as the header writes
 * it ("[2,3,4,5,6]") when it has more than WP_MAX_DIMS dimensions (the outer ones are
 * folded into ne[3], their product). */
#define WP_ST_DTYPE_ATTR   "safetensors_dtype"
#define WP_ST_SHAPE_ATTR   "safetensors_shape"
/* Most dimensions of a tensor read (the format sets no limit). */
#define WP_ST_MAX_DIMS     16
/* Bytes of the longest such attribute's value, its NUL included ("[d0,...]"). */
#define WP_ST_CARRIED_MAX  (WP_ST_MAX_DIMS * 21 + 2)

/* What a tensor record carries of a safetensors file that no GGUF holds (the
 * attributes above): 0 nothing, 1 a dtype (WP_ST_DTYPE_ATTR, its name into
 * value, "U8"), 2 a shape of more than WP_MAX_DIMS dimensions
 * (WP_ST_SHAPE_ATTR, "[2,3,2,2,2]"); value is n bytes (WP_ST_CARRIED_MAX
 * holds any). For the writers and quantizers that must refuse such bytes
 * (wp_gguf_out_add, gptq). */
int wp_st_carried(const wp_record *r, char *value, size_t n);

typedef struct wp_st_in wp_st_in;

/* ggml type (ggml_type.h) of a tensor record for a safetensors dtype name
 * ("F16" -> WP_F16, case-sensitive as the format spells it; a dtype carried
 * as bytes, "U8", "BOOL", "F8_E4M3" ..., -> the integer type of its width);
 * -1 for a dtype wpack does not read (F4, F6_*, anything unknown). */
int wp_st_dtype_type(const char *dtype);

/* Open a .safetensors file and check its whole header before any tensor is
 * read: header length against the file size, the JSON (well-formed as RFC
 * 8259 and serde_json, the safetensors reader, require, where cJSON is
 * lenient: strings UTF-8 with no raw control byte, no NUL or \u0000, no
 * unknown escape; numbers without leading zeros; an object,
 * __metadata__ a string->string map), each tensor's dtype, shape
 * (non-negative integers below 2^53 written without fraction or exponent,
 * at most WP_ST_MAX_DIMS dims: past 4 they are folded into ne[3], the
 * shape kept in an attribute, WP_ST_SHAPE_ATTR) and data_offsets (the same integers; begin <= end,
 * end - begin = bytes of dtype x shape, end within the data section, so a
 * truncated file is caught here), no two tensors overlapping, no duplicate
 * names, metadata keys or fields of a tensor ("dtype" twice).
 * Returns NULL on failure with a one-line message in err naming the file
 * ("x.safetensors: tensor 'w': dtype F4 is not supported ..."). */
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
 * which is initialised first (free it before reusing it). The header's
 * record comes first (safetensorscat of several files passes it over: it
 * is one file's), then metadata records, then tensors; each tensor is read with one seek and one read.
 * Returns 1 for a record, 0 after the last tensor, -1 on error (short read:
 * the file changed or was truncated; out of memory); wp_st_error() says
 * which. */
int wp_st_next(wp_st_in *s, wp_record *r);

/* Read the tensor called name into r (initialised first), as wp_st_next
 * gives it, independently of the sequential position. Returns 1, 0 when the
 * file has no such tensor, -1 on a read error or out of memory
 * (wp_st_error). The first call sorts the names (memory: one pointer a
 * tensor); each is then a binary search and one read. For verify, as
 * wp_gguf_read_tensor is for a GGUF. */
int wp_st_read_tensor(wp_st_in *s, const char *name, wp_record *r);

/* ---- writing: a stream back into its .safetensors file ---------------------
 * The inverse of the reader, for a stream that holds one file's header
 * (WP_ST_HEADER_KEY): the file is written as it goes (8 + N bytes of the
 * header kept byte for byte, then each tensor's payload), so memory holds
 * the parsed header only. The header is checked as wp_st_open checks a
 * file's; each tensor must be the next one the header lists in data-offset
 * order (the order the reader gives them), with its name, dtype, shape and
 * byte count. The file is then the one the stream was read from, byte for
 * byte: the format allows no gap between tensors, so nothing else is in
 * it. */
typedef struct wp_st_out wp_st_out;

/* A writer, or NULL out of memory. */
wp_st_out *wp_st_out_new(void);

/* Whether r is the header key/value (WP_ST_HEADER_KEY): a stream whose first
 * record it is came from one safetensors file. */
int wp_st_is_header(const wp_record *r);

/* Take record r and write what it adds to f: the header record first
 * (written whole), then the tensors. __metadata__ key/values
 * (WP_ST_META_PREFIX, which the header holds) and records other than kv and
 * tensor are passed over (0). Returns 1 when written, 0 when passed over,
 * -1 with wp_st_out_error: a record before the header or a second header,
 * a header that does not parse (its problem, as wp_st_open words it, after
 * "safetensors.header: "), another key/value, a tensor the header does not
 * list next, or of another dtype or shape (quantized by gptq: no longer the
 * file's), a write error. */
int wp_st_out_add(wp_st_out *o, const wp_record *r, FILE *f);

/* After the last record: 0 when every tensor the header lists was
 * written, else -1 (wp_st_out_error names the first missing one, or says
 * there was no header). The caller flushes and commits f. */
int wp_st_out_finish(wp_st_out *o);

/* The last error, one line, without a file name (the caller adds the
 * stream's). */
const char *wp_st_out_error(const wp_st_out *o);

/* Free o; NULL is ignored. */
void wp_st_out_free(wp_st_out *o);

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
