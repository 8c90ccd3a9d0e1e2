/*
 * gguf_file.h - GGUF files to tensor streams and back (the only GGUF parser and
 * writer in wpack).
 *
 * Format source: llama.cpp ggml/include/gguf.h and ggml/src/gguf.cpp (GGUF v2
 * and v3, little-endian): "GGUF" u32 version, u64 n_tensors, u64 n_kv, the
 * key/values (string key, u32 value type, value), the tensor infos (string
 * name, u32 n_dims, i64 ne[n_dims], u32 ggml type, u64 offset), padding to
 * general.alignment (default 32), then the tensor data at those offsets.
 *
 * A GGUF file becomes this stream (stream.h):
 *   one WP_REC_GGUF record   name = file's base name, attrs version, n_kv,
 *                            n_tensors, file_size (the alignment is the
 *                            general.alignment kv's, default 32)
 *   one WP_REC_KV per key    in file order; type = GGUF value type; payload =
 *                            the value's bytes exactly as in the file (arrays:
 *                            u32 element type, u64 count, elements)
 *   one WP_REC_TENSOR each   in tensor-info order; type = ggml type; ne[] as
 *                            GGUF has it; payload = the tensor's bytes; attr
 *                            offset=N only where the file's data offset is not
 *                            the one a standard writer would choose
 * and wp_gguf_out turns such a stream back into the same bytes.
 */
#ifndef WPACK_GGUF_FILE_H
#define WPACK_GGUF_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WP_GGUF_DEFAULT_ALIGNMENT 32u
/* GGUF's magic, a file's first 4 bytes (gguf.h GGUF_MAGIC). */
#define WP_GGUF_MAGIC "GGUF"

/* Whether the n bytes at h begin with GGUF's magic: 1 or 0 (0 when n < 4). The one test
 * of it every reader that names a file's kind makes (the stream, safetensors and imatrix
 * readers, the filters, wprun). */
static inline int wp_gguf_magic(const uint8_t *h, size_t n)
{
    return n >= 4 && !memcmp(h, WP_GGUF_MAGIC, 4);
}
/* Whether the n bytes at h begin as a GGUF file's header does: the magic, then a version
 * of 1 to 3 (u32, little-endian), as no text does ("GGUF notes: ..."). 1 or 0 (0 when
 * n < 8). For telling a GGUF from a text given where a text goes. */
static inline int wp_gguf_head(const uint8_t *h, size_t n)
{
    return wp_gguf_magic(h, n) && n >= 8 && h[4] >= 1 && h[4] <= 3 && !h[5] && !h[6] && !h[7];
}
/* llama.cpp's gguf reader refuses a tensor name of this many bytes or more
 * (ggml.h GGML_MAX_NAME; gguf.cpp gguf_init_from_file_impl) */
#define WP_GGML_MAX_NAME 64

/* ---- values -------------------------------------------------------------- */

/* Bytes taken by one GGUF value of `type` at buf (len bytes available),
 * walking arrays and strings. Returns the size, or -1 when the value runs
 * past len or is malformed (unknown type, nested array too deep). */
int64_t wp_gguf_value_size(uint32_t type, const uint8_t *buf, uint64_t len);

/* A short human-readable rendering of a value (strings quoted and cut at
 * 48 bytes, their control bytes and NULs as \xNN; arrays as
 * "[type x count]") into out (n bytes; 8 or more, 200 for a string whole). */
void wp_gguf_value_str(uint32_t type, const uint8_t *buf, uint64_t len, char *out, size_t n);

/* GGUF value type name ("u32", "string", "array" ...), "?" if unknown. */
const char *wp_gguf_type_name(uint32_t type);

/* The value of key/value record kv (WP_REC_KV: type = GGUF value type,
 * payload = the value as GGUF serialises it) as an unsigned integer: a
 * u8 .. i64 value, or the first element of a non-empty array of them,
 * little-endian, signed types read as their unsigned bits (as
 * gguf_get_val_u32 and llama-quantize read general.alignment). -1 when
 * kv holds none. */
int64_t wp_gguf_kv_uint(const wp_record *kv);

/* The string value of kv into buf (n bytes, NUL-terminated): 0, or -1
 * when kv is no string or its value does not fit in n - 1 bytes (buf then
 * untouched). */
int wp_gguf_kv_str(const wp_record *kv, char *buf, size_t n);

/* Set kv up as a key/value record of `key`: a string value str, or with str
 * NULL a u32 value v, serialised as GGUF does (a string: u64 length, then
 * its bytes; a u32: 4 bytes little-endian). Returns 0, -1 when out of
 * memory or the key is too long (wp_record_set_name). */
int wp_gguf_kv_set(wp_record *kv, const char *key, const char *str, uint32_t v);

/* ---- layout (gguf.cpp's gguf_write_to_buf) ---------------------------------- */

#define WP_GGUF_HEADER_BYTES 24u   /* magic, u32 version, u64 n_tensors, u64 n_kv */

/* Bytes key/value record kv takes in a GGUF file: its key (u64 length and
 * bytes), u32 value type, and the value (kv->payload_len bytes). */
uint64_t wp_gguf_kv_bytes(const wp_record *kv);

/* Bytes the tensor info of a tensor `name` of n_dims dimensions takes: its
 * name (u64 length and bytes), u32 n_dims, n_dims u64 ne, u32 type, u64
 * offset. The data section starts at the header, key/values and tensor
 * infos rounded up to the file's alignment. */
uint64_t wp_gguf_tinfo_bytes(const char *name, int n_dims);

/* ---- reading -------------------------------------------------------------- */

typedef struct wp_gguf_in wp_gguf_in;

/* Open a GGUF file (a regular file: its offsets are checked against its
 * size) and check its whole header, so nothing is written for a bad file:
 * magic, version 2 or 3, counts against the file size, every key/value
 * (string lengths and counts inside the file, known value types, duplicate
 * keys, general.alignment) and every tensor info (known ggml type, row
 * length a multiple of the block size, offset aligned and its data inside
 * the file, duplicate names). NULL on failure with a one-line message in
 * err naming the file ("x.gguf: not a GGUF file (bad magic)"); the caller
 * closes what it gets with wp_gguf_close. Format: gguf.cpp's
 * gguf_init_from_file_impl. */
wp_gguf_in *wp_gguf_open(const char *path, char *err, size_t errlen);

/* wp_gguf_open for any input a filter takes: path "-" is standard input; a
 * pipe, FIFO or other non-regular file, and a file holding one zstd frame
 * (`zstd m.gguf`'s m.gguf.zst), are first copied (decompressed) into an
 * unlinked temporary file (spool.h: disk holds the GGUF once more while it
 * is read), since a GGUF is read by its offsets. A plain regular file, named
 * or redirected in, is read where it lies. Errors as wp_gguf_open's, and:
 * "stdin: a terminal, not a GGUF file ...", a corrupt, cut or second zstd
 * frame (zframe.h's messages), a temporary file that cannot be made or
 * written. Messages name standard input "stdin". */
wp_gguf_in *wp_gguf_open_any(const char *path, char *err, size_t errlen);

/* Next record of the file as a stream (see top of file), into r.
 * Returns 1 for a record, 0 after the last tensor, -1 on error: a read
 * error or out of memory (wp_gguf_open checked the header);
 * wp_gguf_error() tells which. r must be initialised (wp_record_init); its
 * old contents are freed. */
int wp_gguf_next(wp_gguf_in *g, wp_record *r);

/* The same, but a tensor record comes without its data (payload_len 0;
 * name, type and shape as wp_gguf_next gives them): what a program needs to
 * plan (gptq --check) without reading the weights. */
int wp_gguf_next_header(wp_gguf_in *g, wp_record *r);

/* Read the tensor called name into r (as wp_gguf_next would emit it),
 * independently of the sequential position. Returns 1, 0 when the file has
 * no such tensor, -1 on a read error or out of memory (wp_gguf_error). */
int wp_gguf_read_tensor(wp_gguf_in *g, const char *name, wp_record *r);

/* Size of the GGUF file in bytes. */
uint64_t wp_gguf_file_size(const wp_gguf_in *g);

/* The message of the last -1 (one line naming the file), owned by g. */
const char *wp_gguf_error(const wp_gguf_in *g);
/* Close the file and free g; NULL is a no-op. */
void wp_gguf_close(wp_gguf_in *g);

/* ---- writing -------------------------------------------------------------- */

typedef struct wp_gguf_out wp_gguf_out;

/* A GGUF writer that spools metadata and tensor data to unnamed temporary
 * files (memory: the tensor infos only), so records can arrive one at a
 * time. NULL on failure (message in err). */
wp_gguf_out *wp_gguf_out_new(char *err, size_t errlen);

/* Take one record: WP_REC_GGUF (version), WP_REC_KV, WP_REC_TENSOR.
 * Returns 1 when taken, 0 when the record is not GGUF content (ignored: other
 * kinds, and a safetensors file's header, WP_ST_HEADER_KEY, in a stream
 * without a WP_REC_GGUF record),
 * -1 on a bad record, which leaves o as it was (malformed value, duplicate
 * key or name, payload size not matching type and shape, row length not a
 * multiple of the block, an offset out of the layout, a count attribute
 * that is none: wp_attr_counts_problem; an attribute lost, attrs_lost; a
 * safetensors dtype or shape no GGUF holds, wp_st_carried; out of memory),
 * or on a write error of the spool files, after which o can only be
 * freed; message in wp_gguf_out_error. */
int wp_gguf_out_add(wp_gguf_out *o, const wp_record *r);

/* Whether the tensors and key/values taken are as many as the stream's
 * WP_REC_GGUF record says (its n_tensors and n_kv, from wp_gguf_in, or
 * gptq's counts). Returns 0 (also when there was no such record or
 * attribute) or -1 (message: wp_gguf_out_error). Call it before writing, so
 * that a stream that lost a tensor or a key/value on the way does not become
 * a GGUF that llama.cpp refuses or misreads. */
int wp_gguf_out_complete(wp_gguf_out *o);

/* Whether n_tensors tensor and n_kv key/value records are as many as a
 * WP_REC_GGUF record's n_tensors and n_kv say (want_*, -1 when not given):
 * 0, or -1 with "the gguf record says 48 tensors, the stream holds 47 (a
 * tensor record lost or added on the way)" (or of key/values) in err.
 * wp_gguf_out_complete's check, and gptq's of its input. */
int wp_gguf_counts_check(int64_t want_tensors, uint64_t n_tensors, int64_t want_kv, uint64_t n_kv, char *err,
                         size_t errlen);

/* Write the whole GGUF file to out. Returns 0 or -1. */
int wp_gguf_out_finish(wp_gguf_out *o, FILE *out);

/* NULL, or one line on what the file written is valid GGUF but llama.cpp
 * will not load: tensor names of WP_GGML_MAX_NAME bytes or more (their
 * count, the first and its length; gguf.cpp gguf_init_from_file_impl).
 * Valid until the next call or wp_gguf_out_free. */
const char *wp_gguf_out_warning(wp_gguf_out *o);

/* The message of the last -1 of a writer call (one line), owned by o. */
const char *wp_gguf_out_error(const wp_gguf_out *o);
/* Free o and its spool files (the output FILE is the caller's); NULL is a
 * no-op. */
void wp_gguf_out_free(wp_gguf_out *o);

#ifdef __cplusplus
}
#endif
#endif
