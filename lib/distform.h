/*
 * distform.h - the forms a bundle stores a tensor in (laneinterleave(1)):
 * a matrix lane-coded (its side or raw record, then its coded record), or
 * fixed-width (a plain tensor record, stored=fixed), either zstd'd where
 * that is smaller; and for a distribution bundle (--dist) the smallest of a
 * matrix's forms. Format: wpack-bundle(5).
 */
#ifndef WPACK_DISTFORM_H
#define WPACK_DISTFORM_H

#include <stddef.h>
#include <stdint.h>

#include "bundle.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The zstd level of a bundle's zstd records. */
#define WP_FORM_ZLEVEL 19

/* z_group of a tensor's zstd record: the bytes of an element of a plain
 * type (F32 4, F16 and BF16 2), 1 for a block type. */
unsigned wp_form_group(uint32_t type);

/* Whether r is better stored zstd'd: r of at least 64 payload bytes whose
 * zstd record (grouped by `group`, wp_z_wrap at WP_FORM_ZLEVEL), made into z
 * (initialised), is smaller by more than 32 bytes. Returns 1 (z holds it),
 * else 0 (z may hold a larger one: free it either way); a zstd or memory
 * failure is 0, r as it is. */
int wp_form_zstd_smaller(const wp_record *r, unsigned group, wp_record *z);

/* Bytes of the fixed-width tensor a symbols record stands for: its type's
 * blocks (codec q) or its weights (codec exp: 2 or 4 bytes each). Returns 0;
 * -1 with "type without a code view" or "unknown codec 'X'" in err (n
 * bytes). */
int wp_form_fixed_bytes(const wp_record *sym, uint64_t *bytes, char *err, size_t n);

/* A matrix's fixed-width tensor, restored from its side or raw record and
 * symbols: t, a plain tensor record with attribute stored=fixed, owned by
 * the restorer until wp_form_fixed_close. */
typedef struct {
    wp_restore *rs;
    wp_record   h, s;   /* the restorer's copies of the two records */
    wp_record  *t;
} wp_form_fixed;

/* Restore f->t from held (side or raw) and sym (symbols), which are copied,
 * not consumed. Returns 0; -1 with the restorer's phrase in err (n bytes), or
 * "out of memory" (f still to close). */
int wp_form_fixed_open(wp_form_fixed *f, const wp_record *held, const wp_record *sym, char *err, size_t n);
void wp_form_fixed_close(wp_form_fixed *f);

/* A matrix's smallest --dist form: (its side or raw record, zstd'd when
 * smaller by more than 32 bytes) + (its symbols lane-coded, or zstd'd when
 * smaller by more than 64 bytes) against its fixed-width tensor (zstd'd when
 * smaller, tried only under 4 times the first: zstd rarely shrinks ggml
 * blocks 4 times), the split form counted 120 bytes more (a record's header
 * and index). held, sym and coded (the lane-coded symbols) are consumed
 * (freed); fixed is wp_form_fixed_bytes(sym). The records to write are moved
 * into out[0 .. *n_out) (2: side and symbols forms; 1: the tensor). Returns
 * 0; -1 with one phrase in err (n bytes): "out of memory", the restorer's. */
int wp_form_dist(wp_record *held, wp_record *sym, wp_record *coded, uint64_t fixed, wp_record out[2], int *n_out,
                 char *err, size_t n);

#ifdef __cplusplus
}
#endif
#endif
