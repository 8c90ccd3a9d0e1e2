/*
 * stream.h - the wpack tensor stream: self-describing records over a pipe,
 * and the same bytes with a trailing index as a random-access file (bundle).
 *
 * Byte layout (all integers little-endian; man/man5/wpack-stream.5):
 *
 *   stream  := header record* end-record index-trailer
 *   header  := "WPACKSTR" u32 version(=2) u32 align        (16 bytes)
 *   record  := u32 tag "WREC" | u16 kind | u16 n_dims | u32 type
 *              | u32 name_len | u64 ne[4] | u32 attr_len | u32 reserved(0)
 *              | u64 payload_len | u64 payload_xxh64        (72 bytes)
 *              | name[name_len] | attrs[attr_len]
 *              | u64 header_xxh64 (XXH64, seed 0, of every byte above)
 *              | zero padding up to a multiple of `align` from stream start
 *              | payload[payload_len] | zero padding to a multiple of `align`
 *   end     := a record of kind WP_REC_END whose payload is the index:
 *              u64 count | u64 entries_len | zstd frame of the entries,
 *              per record in stream order:
 *              u64 offset (of its tag) | u16 kind | u16 0 | u32 name_len | name
 *   trailer := u64 offset of the end record | "WPACKEND"     (16 bytes)
 *
 * A reader in one pass (a pipe) stops at the end record; a reader of a file
 * may seek to the trailer, read the index and fetch any record by name.
 * Payloads start at multiples of `align` (64 by default) from the stream's
 * first byte, so a bundle can be mmapped and uploaded to a GPU as it is.
 *
 * Memory: a reader holds one record at a time; a writer holds the index
 * (names and offsets, not payloads).
 *
 * Attributes are text: lines "key=value\n", keys [a-z0-9_.]+, values without
 * newlines. Filters pass every record they do not act on through unchanged.
 */
#ifndef WPACK_STREAM_H
#define WPACK_STREAM_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WP_STREAM_MAGIC   "WPACKSTR"
#define WP_STREAM_VERSION 2u
#define WP_STREAM_ALIGN   64u
#define WP_TRAILER_MAGIC  "WPACKEND"
#define WP_MAX_DIMS       4
/* The largest dimension any reader takes (2^40): a GGUF's and a stream's
 * readers refuse more, safetensorscat does not write it (ggufpack wrote a
 * dimension of 2^52 that ggufcat then refused: a breaker's find). */
#define WP_MAX_DIM        (UINT64_C(1) << 40)
#define WP_MAX_NAME       4096u
/* What a writer says of a record whose attrs_lost is set (after "record 'NAME': "). */
#define WP_ATTRS_LOST     "an attribute could not be set (out of memory, or its attributes past 1 MiB)"

/* Record kinds. Numbers are part of the format: never renumber. */
enum wp_rec_kind {
    WP_REC_GGUF    = 1,  /* a GGUF file's header; attrs version, n_kv, n_tensors,
                            file_size (gptq's also data_start) */
    WP_REC_KV      = 2,  /* GGUF metadata: name = key, type = GGUF value type,
                            payload = the value exactly as GGUF serializes it */
    WP_REC_TENSOR  = 3,  /* a tensor: type = ggml type, ne[], payload = data */
    WP_REC_HESSIAN = 4,  /* H = XᵀX of one weight input (hessian) */
    WP_REC_HIST    = 5,  /* symbol histogram of one matrix (histogram) */
    WP_REC_TABLE   = 6,  /* code lengths of one matrix (huffbuild) */
    WP_REC_CODED   = 7,  /* lane-coded symbols of one matrix (laneinterleave) */
    WP_REC_SIDE    = 8,  /* side data of a coded matrix (histogram) */
    WP_REC_SYMBOLS = 9,  /* raw symbols of one matrix (histogram, bf16split) */
    WP_REC_RAW     = 10, /* raw bytes beside coded symbols (bf16split) */
    WP_REC_Z       = 11, /* another record, its payload zstd-compressed */
    WP_REC_KVPACK  = 12, /* a run of kv records, zstd-compressed together */
    WP_REC_REF     = 13, /* a tensor whose bytes equal an earlier tensor's */
    WP_REC_ROWMAP  = 14, /* which distinct row each row of a tensor is */
    WP_REC_END     = 0xffff
};

/* GGUF value types, as gguf.h numbers them. */
enum wp_gguf_type {
    WP_GGUF_U8 = 0, WP_GGUF_I8 = 1, WP_GGUF_U16 = 2, WP_GGUF_I16 = 3,
    WP_GGUF_U32 = 4, WP_GGUF_I32 = 5, WP_GGUF_F32 = 6, WP_GGUF_BOOL = 7,
    WP_GGUF_STRING = 8, WP_GGUF_ARRAY = 9, WP_GGUF_U64 = 10, WP_GGUF_I64 = 11,
    WP_GGUF_F64 = 12, WP_GGUF_TYPE_COUNT = 13
};

/* One record. Fields are owned by the record; wp_record_free() releases them. */
typedef struct wp_record {
    uint16_t kind;        /* enum wp_rec_kind */
    uint32_t type;        /* ggml type (tensors), GGUF value type (KV), role */
    int      n_dims;      /* 0..4 */
    int64_t  ne[WP_MAX_DIMS]; /* ne[0] = row length (innermost), unused = 1 */
    char    *name;        /* NUL-terminated */
    char    *attrs;       /* "key=value\n"..., NUL-terminated, may be "" */
    uint8_t *payload;
    uint64_t payload_len;
    uint64_t payload_cap; /* bytes allocated for payload (0 when borrowed) */
    int      borrowed;    /* payload points into memory the record does not own (a file
                             mapping, wp_record_map_at): wp_record_free leaves it, and
                             wp_record_alloc replaces it with a buffer of its own */
    uint64_t offset;      /* where the record starts in its stream (readers) */
    int      attrs_lost;  /* an attribute set failed (wp_attr_set: out of memory, or past the
                             1 MiB a reader takes): the writers (wp_writer_put,
                             wp_gguf_out_add) refuse the record, so a caller that drops the
                             failure loses nothing unsaid; carried by wp_record_copy (and
                             bundle.c's copies of a head), reset by wp_record_free and a
                             reader; the other places that replace attributes whole copy
                             them from records a reader gave, which are never marked */
} wp_record;

/* Initialise an empty record: all zero but ne[] = 1; name and attrs NULL
 * (read as "" by every function here), no payload. */
void wp_record_init(wp_record *r);
/* Release what a record owns; it may be initialised again. */
void wp_record_free(wp_record *r);
/* Set the name (copied). Returns 0, or -1 when longer than WP_MAX_NAME
 * bytes or out of memory (the old name kept). */
int  wp_record_set_name(wp_record *r, const char *name);
/* Make room for `len` payload bytes and set payload_len; returns the buffer
 * or NULL when out of memory. Old contents are not kept. */
uint8_t *wp_record_alloc(wp_record *r, uint64_t len);
/* Make d (initialised) a copy of s: kind, type, shape, offset, name,
 * attributes and payload, all copied. Returns 0, or -1 when out of memory
 * (d then holds part of s: free it). */
int wp_record_copy(wp_record *d, const wp_record *s);
/* Move *from into *to: to takes from's fields and buffers (what to held
 * is overwritten, not freed), from is left empty (initialised). Never fails. */
void wp_record_move(wp_record *to, wp_record *from);
/* What a reader refuses of a tensor record r's header, whether read or
 * restored from a zstd record: a type ggml.h does not number ("unknown ggml
 * type 99", written into buf of n bytes), no dimensions, or no name ("a
 * tensor needs a name"); NULL when none, or when r is no tensor record. */
const char *wp_tensor_head_problem(const wp_record *r, char *buf, size_t n);
/* What a reader refuses of a tensor record r's payload, whether read or
 * restored from a zstd record: a row that is part of a block ("row length
 * 64 is not a multiple of the Q4_K block size 256", the GGUF writer's
 * words) or a payload of other than the bytes its type and shape need,
 * wp_ggml_row_size(type, ne[0]) x rows ("16 payload bytes, but F32 2 x 2
 * needs 16"), written into buf of n bytes (about 120 bytes; cut to fit);
 * NULL when none, or when r is no tensor record or its header is refused
 * (wp_tensor_head_problem). */
const char *wp_tensor_payload_problem(const wp_record *r, char *buf, size_t n);
/* Number of elements ne[0]·…·ne[n_dims-1] (1 for n_dims 0). */
int64_t wp_record_nelem(const wp_record *r);

/* Attribute value for key, or NULL. The pointer is into r->attrs and the
 * value runs to the next '\n' (not NUL-terminated): use the typed getters. */
const char *wp_attr_find(const wp_record *r, const char *key, size_t *len);
/* Attribute as an integer: 1 with *v set, 0 when absent, -1 when its value
 * is no decimal integer an int64_t holds (written as digits after an
 * optional '-': no blank or '+'). */
int     wp_attr_int(const wp_record *r, const char *key, int64_t *v);
/* Attribute as an integer; `def` when absent or not an integer. */
int64_t wp_attr_i64(const wp_record *r, const char *key, int64_t def);
/* What a reader refuses of record r's counts: a gguf record's version, n_kv,
 * n_tensors or file_size, or a tensor's offset, present but no count (0 or
 * more: "attribute offset=-64 is not a count", written into buf of n bytes);
 * NULL when none is. Every stream reader checks it, and the GGUF writer of
 * records made otherwise. */
const char *wp_attr_counts_problem(const wp_record *r, char *buf, size_t n);
/* Attribute as a double; `def` when absent or not a number. */
double  wp_attr_f64(const wp_record *r, const char *key, double def);
/* Copy attribute value into buf of n bytes, NUL-terminated (cut to n - 1
 * bytes when longer: compare with wp_attr_find's len where that matters);
 * returns 1 if present, 0 (buf untouched) if not. */
int     wp_attr_str(const wp_record *r, const char *key, char *buf, size_t n);
/* Set (replace or append) key=value; value must not contain '\n'.
 * Returns 0, or -1 on a bad key/value, when the attributes would pass 1 MiB
 * (a reader's limit), or out of memory, and then marks r (attrs_lost). _i64
 * writes v in decimal, _f64 as %.10g (10 significant digits), with the same
 * returns. */
int     wp_attr_set(wp_record *r, const char *key, const char *value);
int     wp_attr_set_i64(wp_record *r, const char *key, int64_t v);
int     wp_attr_set_f64(wp_record *r, const char *key, double v);
/* Remove key if present. */
void    wp_attr_del(wp_record *r, const char *key);

/* Name of a record kind ("tensor", "kv" …) for listings; "?" if unknown. */
const char *wp_rec_kind_name(unsigned kind);
/* 1 for a kind of enum wp_rec_kind (the one list: wp_rec_kind_name's), 0 for
 * any other; readers refuse a record of an unknown kind. */
int wp_rec_kind_known(unsigned kind);
/* 1 for the kinds of the coding pipeline and of bundles (hist, table, coded,
 * side, symbols, raw, zstd, kvpack, ref, rowmap): records a program that
 * reads GGUF-form streams (ggufpack, gptq) cannot act on; such a program
 * stops on them ("unbundle --stream it first") rather than drop them. */
int wp_rec_is_coded(unsigned kind);
/* 1 for the kinds only a bundle holds (coded, zstd, kvpack, ref: what
 * laneinterleave writes): records histogram, huffbuild and laneinterleave
 * stop on. */
int wp_rec_is_bundle(unsigned kind);


/* ---- reading ------------------------------------------------------------ */

typedef struct wp_reader wp_reader;

/* Start reading a stream from f (not closed by the reader), plain or
 * zstd-framed (zframe.h). `path` names the input in error messages ("-" or
 * NULL reads as "stdin"). Reads and checks the header. Returns NULL on failure with a message in err (one line). */
wp_reader *wp_reader_open(FILE *f, const char *path, char *err, size_t errlen);
/* The same for f, a zstd frame's content decompressed to a file
 * (wp_zframe_plain) of the input named path: its messages say that offsets
 * are "of the decompressed stream", and what the frame holds when that is
 * no stream ("a zstd-compressed GGUF file: zstd -d it, ..."). */
wp_reader *wp_reader_open_decompressed(FILE *f, const char *path, char *err, size_t errlen);

/* Read the next record into r (its buffers are reused). Checks the header
 * and payload checksums, kinds, shapes and sizes.
 * Returns 1 for a record, 0 at the end record (the index is read and
 * checked), -1 on error (wp_reader_error tells why: truncated stream,
 * checksum mismatch, bad record ...). */
int wp_reader_next(wp_reader *rd, wp_record *r);

/* Read only the next record's header (name, kind, type, shape, attrs,
 * payload_len) without its payload; the payload must then be fetched with
 * wp_reader_payload() or skipped by the next call. Returns as wp_reader_next. */
int wp_reader_next_header(wp_reader *rd, wp_record *r);
/* Read (and check: its XXH64) the payload of the record whose header was
 * just read into r (r->payload_len bytes, into r's own buffer). Returns 0,
 * or -1 (message in wp_reader_error): out of memory, a read error, a
 * truncated stream, a checksum that does not match. */
int wp_reader_payload(wp_reader *rd, wp_record *r);

/* The last error, one line, naming the input ("stdin: truncated ..."). */
const char *wp_reader_error(const wp_reader *rd);
/* The stream's declared payload alignment. */
unsigned wp_reader_align(const wp_reader *rd);
/* Finish; returns 0. Does not close the FILE. */
int wp_reader_close(wp_reader *rd);

/* Whether the file at path is a wpack stream whose first record is a
 * Hessian (hessian's output): 1, or 0 (another stream, no stream, or a file
 * that cannot be read, or is no regular file: a FIFO is not opened again).
 * Reads its header and first record's header only.
 * For naming a file given where another kind goes. */
int wp_file_is_hessians(const char *path);

/* ---- random access (file form) ------------------------------------------ */

typedef struct wp_index_entry {
    uint64_t offset;
    uint16_t kind;
    char    *name;
} wp_index_entry;

typedef struct wp_index {
    uint64_t        count;
    wp_index_entry *e;
} wp_index;

/* Whether the seekable file f is one zstd frame and holds a wpack stream (a
 * distribution bundle, laneinterleave --dist): 0 not a zstd frame, 1 a
 * frame whose content starts with the stream magic, -1 a frame whose
 * content does not (or does not decompress). f is left at its start. */
int  wp_stream_framed(FILE *f);
/* For a reader of another format given f, a file that starts with a zstd
 * frame: what it is and the way on, "a zstd-framed wpack stream, such as a
 * --dist bundle: unbundle it" (wp_stream_framed) or "a zstd frame: zstd -d
 * it". f is left at its start. */
const char *wp_zframe_hint(FILE *f);
/* Read the trailing index of a stream file (seekable f), checked to tile the
 * stream (every entry at the record that starts where the one before ends,
 * of the entry's kind and name; wpack-stream(5)), so an entry's offset leads
 * to that record, and the end record ending where the trailer starts (no
 * data between them: `cat a b` is refused, as readers in order refuse it).
 * Returns 0 or -1 with a one-line message in err. */
int  wp_index_read(FILE *f, const char *path, wp_index *ix, char *err, size_t errlen);
/* First entry with this kind and name, or NULL. kind 0 matches any kind. */
const wp_index_entry *wp_index_find(const wp_index *ix, unsigned kind, const char *name);
/* Free what wp_index_read allocated in ix (its entries and names). */
void wp_index_free(wp_index *ix);
/* Whether the stream whose index is ix is not a bundle: 1 with why (one line,
 * truncated to len) or 0. A kv record (laneinterleave packs a GGUF's
 * key/values into a kvpack record) is a tensor stream's, ggufcat's or gptq's;
 * a hist or table record is histogram's or huffbuild's output; and a stream
 * without any record of a bundle's kinds (wp_rec_is_bundle) was never
 * through laneinterleave, which writes a kvpack record, empty if need be,
 * into every bundle (wpack-bundle(5)). For readers of bundles (verify,
 * wprun): "FILE: " and why is their one line. */
int wp_index_not_bundle(const wp_index *ix, char *why, size_t len);
/* The same for one record, of this kind and name: 1 with why for a kv,
 * hist or table record, else 0 (for a reader in order whose index did not
 * read, as verify's of a cut stream). */
int wp_rec_not_bundle(unsigned kind, const char *name, char *why, size_t len);
/* Read the record starting at `offset` of a stream file, checked as
 * wp_reader_next does. Returns 0, or -1 with a message in err. */
int  wp_record_read_at(FILE *f, const char *path, uint64_t offset, wp_record *r,
                       char *err, size_t errlen);
/* wp_record_read_at of a plain stream file f that is also mapped whole at
 * map (size bytes: mmap of f, read-only or private), with the payload left
 * in the mapping: r->payload points at its bytes there (r->borrowed set,
 * payload_cap 0), checked against the header's checksum as
 * wp_record_read_at checks a copy, and its padding checked to be zero; the
 * header is read through f. No copy of the payload is made, so the mapping
 * must outlive every use of it (wprun's load: the coded lanes of a bundle,
 * uploaded or decoded from the page cache); a stream aligned to less than 4
 * bytes is read as a copy, so that a payload's 32-bit words are aligned
 * (wp_record_read_at's). Errors as wp_record_read_at
 * ("truncated stream: payload ends at byte N ...", "payload checksum
 * mismatch"). Returns 0, or -1 with a message in err. */
int  wp_record_map_at(FILE *f, const uint8_t *map, uint64_t size, const char *path, uint64_t offset,
                      wp_record *r, char *err, size_t errlen);
/* The same two for f, a zstd-framed bundle's content decompressed to a file
 * (wp_zframe_plain) of the bundle named path: messages say that their offsets
 * and sizes are "of the decompressed stream", as readers in order say it. */
int  wp_index_read_decompressed(FILE *f, const char *path, wp_index *ix, char *err, size_t errlen);
int  wp_record_read_at_decompressed(FILE *f, const char *path, uint64_t offset, wp_record *r,
                                    char *err, size_t errlen);


/* ---- writing ------------------------------------------------------------ */

typedef struct wp_writer wp_writer;

/* Start a stream on f (not closed by the writer) with payload alignment
 * `align` (a power of two 1…4096; 0 means WP_STREAM_ALIGN). Writes the
 * header. `path` names the output in errors. NULL on failure (message in err). */
wp_writer *wp_writer_open(FILE *f, const char *path, unsigned align, char *err, size_t errlen);
/* The same stream inside one zstd frame at level zlevel (1..22; 0 = plain,
 * as wp_writer_open): a distribution bundle (zframe.h). Readers take it as
 * they take a plain stream; it has no random access (wp_index_read refuses
 * it). */
wp_writer *wp_writer_open_framed(FILE *f, const char *path, unsigned align, int zlevel, char *err, size_t errlen);
/* Append one record. Returns 0, or -1 (wp_writer_error) on a write error or
 * a bad record: name, attributes or shape out of bounds, or an attribute
 * lost (attrs_lost: "record 'NAME': " WP_ATTRS_LOST). */
int wp_writer_put(wp_writer *w, const wp_record *r);
/* Bytes written so far (the offset of the next record). */
uint64_t wp_writer_offset(const wp_writer *w);
/* Write the end record, the index and the trailer, flush. Frees w.
 * Returns 0, or -1 (message copied into err when err != NULL). */
int wp_writer_close(wp_writer *w, char *err, size_t errlen);
/* The last error, one line. */
const char *wp_writer_error(const wp_writer *w);

#ifdef __cplusplus
}
#endif
#endif
