/*
 * bundle.h - the coded records of a bundle and how a tensor is restored from
 * them (the one place that knows the payload of WP_REC_CODED, WP_REC_SIDE,
 * WP_REC_SYMBOLS, WP_REC_RAW, WP_REC_HIST and WP_REC_TABLE;
 * man/man5/wpack-bundle.5).
 *
 * The entropy-coded path splits a quantized tensor X into
 *   SIDE X      type = ggml type, payload = side bytes of every block (codes.h)
 *   SYMBOLS X   type = ggml type, ne = X's shape, payload = rows × row_sym
 *               symbols; attrs codec=q, xxh32 (of X's bytes: restorers
 *               require it), row_sym, tile_sym, n_weights (wp_q_records)
 * and laneinterleave replaces SYMBOLS X by
 *   CODED X     type, ne, attrs as SYMBOLS plus max_len, n_tiles; payload:
 *                 [0, 128)        256 code lengths, 4 bits each, symbol 2i in
 *                                 the low nibble of byte i
 *                 [128, 128+4(N+1)) N + 1 tile offsets, u32 little-endian,
 *                                 in 32-bit words (lanes.h)
 *                 then 32 · N bytes: the lane word counts W_k of every tile
 *                                 (tile t's 32 at 32t .. 32t+31, lanes.h)
 *                 zero bytes up to a multiple of 4 (none: the head above
 *                                 is always a multiple of 4 bytes)
 *                 the lane words, u32 little-endian, offset[N] of them, in
 *                                 the ragged interleave of lanes.h
 * The lossless path (bf16split) splits a floating-point tensor X into
 *   RAW X       payload: the fields of struct wp_bf16_split that are not
 *               symbols (palette, verbatim map, verbatim bytes, sign+mantissa)
 *   SYMBOLS X   codec=exp: exponent symbols (palette indices in pairs, or
 *               exponent bytes)
 * with the same CODED form for its symbols.
 *
 * Records of one tensor are adjacent and in this order: SIDE or RAW first,
 * then SYMBOLS or CODED. Attribute "offset" of the original tensor record
 * travels on the SYMBOLS/CODED record.
 */
#ifndef WPACK_BUNDLE_H
#define WPACK_BUNDLE_H

#include <stdint.h>

#include "codes.h"
#include "lanes.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WP_CODED_TABLE_BYTES 128u
#define WP_CODED_HEAD_ALIGN  4u   /* the words start at a multiple of 4 */

/* A parsed CODED record; pointers into the record's payload. */
typedef struct {
    wp_lanes_shape  shape;
    uint8_t         lengths[256];
    int             max_len;
    uint64_t        n_tiles;
    const uint32_t *offsets;     /* n_tiles + 1, in words */
    const uint8_t  *lane_words;  /* 32 · n_tiles lane word counts */
    const uint32_t *words;
    uint64_t        n_words;
    uint64_t        table_bytes; /* lengths + offsets + lane counts + padding */
} wp_coded_view;

/* Encode symbols (shape->rows × shape->row_sym) with code lengths (max_len
 * ≤ 15) into r's payload as a CODED record (kind, payload and the attrs
 * row_sym, tile_sym, max_len, n_tiles set; the caller sets name, type,
 * shape and other attrs). Returns 0, or -1 with a message in err (a symbol
 * without a code, bad lengths, out of memory). */
int wp_coded_encode(wp_record *r, const uint8_t *sym, const wp_lanes_shape *shape,
                    const uint8_t lengths[256], int max_len, char *err, size_t errlen);

/* Parse and check a CODED record (lengths valid for max_len, offset[0] = 0
 * and offset[N] = the number of lane words, and lane words enough for
 * rows × row_sym symbols of at least 1 bit each, so a corrupt record is
 * refused before a caller allocates from its shape; the decoder checks the
 * rest). Returns 0, or -1 with a message in err ("record 'X': N lane words
 * cannot hold M symbols"). */
int wp_coded_view_get(const wp_record *r, wp_coded_view *v, char *err, size_t errlen);

/* Decode a CODED record into sym (rows × row_sym bytes) with the reference
 * decoder (per-length limits) or the fast one (lookup table). Returns 0, or
 * -1 with a message in err. */
int wp_coded_decode(const wp_coded_view *v, int reference, uint8_t *sym, char *err, size_t errlen);

/* ---- integrity ------------------------------------------------------------ */

/* Set attribute key to the XXH32 (seed 0, 8 hex digits) of len bytes:
 * the hash of a tensor's original bytes travels with its coded form, and
 * restoring checks it (wp_restore), so an encoder or decoder bug, or a
 * payload altered with its checksums recomputed, never restores silently.
 * Returns 0 or -1 (out of memory). */
int wp_attr_set_hash(wp_record *r, const char *key, const void *data, uint64_t len);
/* 0 when attribute key matches the XXH32 of len bytes, -1 when it differs,
 * 1 when the record has no such attribute (which wp_restore refuses for a
 * symbols, coded or row map record, every writer having set it). */
int wp_attr_check_hash(const wp_record *r, const char *key, const void *data, uint64_t len);

/* The SIDE and SYMBOLS records of quantized tensor t, split by its code view
 * g (wp_codes_geom_get of t's type, t->ne[0] and its rows; t's payload
 * g->block_len bytes of ggml blocks): SIDE payload = every block's side
 * bytes (g->side_len), no attrs; SYMBOLS payload = the g->n_sym code
 * symbols (wp_codes_split), attrs codec=q, xxh32 (of t's payload: restorers
 * check the restored tensor by it), row_sym, tile_sym, n_weights, and
 * offset when t has one. Both take t's type, name and shape. Returns 0; -1
 * when t's payload is not g->block_len bytes, or out of memory (side and
 * sym are then partly set: free them). */
int wp_q_records(const wp_codes_geom *g, const wp_record *t, wp_record *side, wp_record *sym);

/* ---- code tables (histogram, huffbuild) ----------------------------------- */

#define WP_HIST_BYTES  2048u   /* a HIST record's payload: 256 u64 counts */
#define WP_TABLE_BYTES 256u    /* a TABLE record's payload: 256 code lengths */

/* The HIST record of the symbols of matrix t (t's name and type; n_dims 1,
 * ne {256}): payload hist[0..256), the count of each symbol value, u64
 * little-endian (WP_HIST_BYTES); attrs n_symbols (the symbols counted),
 * n_weights (t's weights), entropy (bits a symbol, wp_huf_entropy).
 * histogram writes it, huffbuild reads it (wp_hist_counts). Returns 0, -1
 * when out of memory. */
int wp_hist_record(wp_record *h, const wp_record *t, const uint64_t hist[256], uint64_t n_sym, int64_t n_weights);

/* The counts of HIST record h into hist[256]. Returns 0, -1 when h's
 * payload is not WP_HIST_BYTES bytes. */
int wp_hist_counts(const wp_record *h, uint64_t hist[256]);

/* The TABLE record of HIST record h (its name and type; n_dims 1, ne
 * {256}): payload lengths[0..256), the code length of each symbol value in
 * bits (0: no code), as wp_huf_lengths gives them (WP_TABLE_BYTES); attrs
 * max_len (the limit they were built under), coded_bits (the matrix's
 * symbols coded, wp_huf_coded_bits). huffbuild writes it, laneinterleave
 * codes the matrix's SYMBOLS with it. Returns 0, -1 when out of memory. */
int wp_table_record(wp_record *t, const wp_record *h, const uint8_t lengths[256], int max_len, uint64_t coded_bits);

/* ---- exponent-coded floats (bf16split) ------------------------------------ */

struct wp_bf16_split;

/* The RAW and SYMBOLS records of a split floating-point tensor t (bf16.h):
 * RAW payload = [16-byte palette][verbatim map][verbatim bytes][raw
 * sign+mantissa], attrs palette_n, n_palette, group, n_verbatim, vmap_bytes,
 * vbytes_len; SYMBOLS payload = the exponent symbols, attrs codec=exp,
 * row_sym, tile_sym (128 for palette pairs, 256 for exponent bytes),
 * n_weights, h_exp (H(exponent), bits/weight), limit (raw bits + H),
 * verbatim_frac, offset (when t has one). Returns 0, -1 when out of memory. */
int wp_bf16_records(const struct wp_bf16_split *s, const wp_record *t, wp_record *raw, wp_record *sym);

/* Exponent symbols a tile row of s's SYMBOLS: a tile row is 256 weights,
 * so 128 palette pairs (s->palette_n > 0) or 256 exponent bytes. The
 * writer, the restorer and the runner's kernels take it from here. */
uint32_t wp_bf16_tile_sym(const struct wp_bf16_split *s);

/* The reverse, for readers: s (zeroed by the caller's memset or not; every
 * field but sym and hist set) points into raw's payload for a tensor of
 * `type` and rows x cols weights. Checks the attributes against each other
 * and the payload: palette_n 0..16, n_palette <= palette_n, group 1..2^30
 * when a palette is used, n_verbatim within the groups, the three parts
 * inside the payload, no arithmetic overflow. Returns 0, -1 on a bad record
 * or a type that is not exponent-coded. */
int wp_bf16_from_records(const wp_record *raw, uint32_t type, int64_t rows, int64_t cols, struct wp_bf16_split *s);

/* ---- compressed and shared records --------------------------------------- */

/* Wrap record r (any kind but END) as a WP_REC_Z record z: same name, type
 * and shape; payload zstd (level) of r's payload grouped by `group` bytes
 * (zpack.h); attrs: r's own, plus z_of (r's kind), z_len (its payload
 * bytes), z_group. Returns 0, -1 when out of memory or on a zstd error (z
 * then partly written: free it with wp_record_free). */
int wp_z_wrap(const wp_record *r, unsigned group, int level, wp_record *z);

/* Append one kv record to a KVPACK being built in *buf (*len bytes; start
 * with NULL and 0): serialised as u32 name length, name, u32 GGUF value
 * type, u64 value length, value, all little-endian; *buf is grown with
 * realloc and stays the caller's, to free(). wp_kvpack_finish compresses
 * buf (zstd at level) into out, a WP_REC_KVPACK record (attr n_kv); buf
 * is left as it was. Each returns 0, -1 when out of memory (add: *buf and
 * *len unchanged) or on a zstd error (finish). Source: ours, wpack-bundle(5). */
int wp_kvpack_add(uint8_t **buf, size_t *len, const wp_record *kv);
int wp_kvpack_finish(const uint8_t *buf, size_t len, uint64_t n_kv, int level, wp_record *out);

/* A WP_REC_REF record in out: tensor t (name, type, shape, offset and xxh32
 * attrs) whose bytes equal those of the earlier tensor called same_as (no
 * payload). Returns 0, -1 when out of memory (out then partly written:
 * wp_record_free it). */
int wp_ref_make(const wp_record *t, const char *same_as, wp_record *out);

/* ---- counting weights ----------------------------------------------------- */

/* The kind of record r stands for: for a WP_REC_Z record the kind it wraps
 * (attribute z_of; -1 when it has none), else r->kind. Never fails. */
int wp_record_kind_of(const wp_record *r);

/* Undo a WP_REC_Z record in place: r becomes the record it wraps (kind z_of,
 * payload the z_len bytes unpacked in z_group groups, the z_ attributes
 * dropped), checked as wp_restore_put checks one ("record 'X': bad zstd
 * record attributes", "corrupt zstd payload", and what a reader refuses of
 * the record it wraps). Any other record is left as it is. Returns 0, or -1
 * with a message in err (r then as it was, or partly unwrapped: free it).
 * Format: wpack-bundle(5), laneinterleave --dist's zstd records. */
int wp_record_unwrap(wp_record *r, char *err, size_t errlen);

/* The weights of the tensors a bundle (or a stream) restores, counted
 * record by record from shapes and kinds, without decoding a payload.
 * Zero it before the first record. */
typedef struct {
    int64_t weights;                    /* elements of the tensors so far */
    char    rowmap_of[WP_MAX_NAME + 1]; /* name of the last rowmap seen */
} wp_weight_tally;

/* Add to t->weights the weights record r restores, and return them: a
 * ROWMAP (or a zstd of one) counts every element of its shape, the whole
 * tensor's, and the records of its name that follow it (the distinct rows,
 * wpack-bundle(5)) count 0; a TENSOR, SYMBOLS, CODED or REF record (or a
 * zstd of one) counts the elements of its shape (ne[0] x ne[1] ...); any
 * other record (SIDE, RAW, KV, KVPACK, GGUF, END ...) counts 0. Never
 * fails: it trusts the shapes, which the reader has bounded. */
int64_t wp_weight_tally_add(wp_weight_tally *t, const wp_record *r);

/* ---- restoring tensors -------------------------------------------------- */

typedef struct wp_restore wp_restore;

/* A restorer turns a bundle's records back into the stream they came from:
 * SIDE/RAW + SYMBOLS/CODED pairs into TENSOR records with the exact original
 * bytes, Z records into the record they wrap, a KVPACK into its kv records,
 * a REF into a copy of the tensor it names; every other record passes
 * through. wp_restore_new returns a restorer, NULL when out of memory;
 * wp_restore_free frees it and what it holds: a record it returned
 * (wp_restore_put's *out, wp_restore_more's) is invalid after it unless it
 * was the caller's own input; NULL is a no-op. */
wp_restore *wp_restore_new(void);
void        wp_restore_free(wp_restore *rs);

/* Give the restorer random access to the bundle it reads (a seekable file
 * with a trailing index), needed to resolve REF records. f stays open and
 * owned by the caller. */
void wp_restore_source(wp_restore *rs, FILE *f, const char *path);
/* The same for f, the zstd-framed bundle named path decompressed to a file
 * (wp_zframe_plain): messages say offsets are "of the decompressed stream". */
void wp_restore_source_decompressed(wp_restore *rs, FILE *f, const char *path);

/* Feed one record. Returns 1 when *out holds a record to emit (the input
 * itself, or a restored one), 0 when the record was held (a SIDE/RAW
 * waiting for its symbols, a row map waiting for its tensor) or gave
 * nothing (a KVPACK of no entries), -1 on an error (message in
 * wp_restore_error).
 * After a 1, call wp_restore_more() until it returns NULL: a KVPACK yields
 * several records. reference selects the reference lane decoder. The record
 * in *in may be swapped with internal buffers: treat it as consumed. A
 * tensor comes out as it went into laneinterleave: its stored=fixed mark
 * (a tensor the bundle keeps fixed-width) is dropped. A REF restores the
 * tensor it names from before in->offset (the offset its reader gave it,
 * kept in any copy: a ref names an earlier tensor, wpack-bundle(5)). */
int wp_restore_put(wp_restore *rs, wp_record *in, int reference, wp_record **out);
wp_record *wp_restore_more(wp_restore *rs);

/* Bytes of the SIDE or RAW data (after any zstd) that the last restored
 * tensor was joined with; 0 when it had none. */
uint64_t wp_restore_side_len(const wp_restore *rs);

/* Nonzero when a SIDE/RAW record or a row map is still waiting for the
 * record it goes with (a truncated bundle). */
int wp_restore_pending(const wp_restore *rs);
/* The message of the last -1 from wp_restore_put (one line, without the
 * program's name; "" before any), owned by rs. */
const char *wp_restore_error(const wp_restore *rs);

/* What is wrong with a coded record's codec attribute `codec` ("" when it
 * has none) and the kind of the record before it, aux_kind: NULL for "q"
 * after side data (WP_REC_SIDE) or "exp" after raw data (WP_REC_RAW), else
 * one line in buf of n bytes (about 100): "no codec attribute", "unknown
 * codec 'x'", or "codec 'q' needs side data before it, not raw data".
 * wpack-bundle(5); wp_restore_put's and wprun's check. */
const char *wp_codec_problem(const char *codec, unsigned aux_kind, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
