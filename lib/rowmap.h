/*
 * rowmap.h - rows repeated within one tensor, stored once.
 *
 * Trained embeddings often hold byte-identical rows (tokens never seen in
 * training keep one shared initial value; stories260K's token_embd has 345
 * distinct rows of 512). A tensor with repeated rows becomes two records:
 *   ROWMAP X   type and shape of X; payload: one u32 (little-endian) per row,
 *              the index of its row among the distinct rows; attrs
 *              distinct_rows, xxh32 (histogram: of X's bytes)
 *   TENSOR X   the distinct rows, in first-occurrence order: shape ne[0] ×
 *              distinct rows (2-D), attr rowmap=1
 * and the reduced tensor is coded like any other. A GEMV over X is a GEMV
 * over the distinct rows followed by y[r] = y'[map[r]].
 */
#ifndef WPACK_ROWMAP_H
#define WPACK_ROWMAP_H

#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* If tensor t (n_dims ≥ 2) has repeated rows (compared byte for byte),
 * fill map (a WP_REC_ROWMAP record) and reduced (the distinct rows) and
 * return 1; return 0 when every row is distinct or the map would not pay for
 * itself (nothing written), -1 when out of memory (map and reduced then
 * partly written: the caller frees them, wp_record_free, as always). Source:
 * ours (the embedding's repeated rows; llama.cpp has no such record). */
int wp_rowmap_make(const wp_record *t, wp_record *map, wp_record *reduced);

/* Rebuild the full tensor from a ROWMAP record and the reduced tensor
 * (same name, type). Returns 0, or -1 when they do not fit together
 * (message in err). */
int wp_rowmap_expand(const wp_record *map, const wp_record *reduced, wp_record *full, char *err, size_t errlen);

/* Whether ROWMAP record map fits a reduced tensor of type `type`, `rows`
 * distinct rows of `cols` weights, without expanding it (a reader that runs
 * the distinct rows, as wprun): 2 or more dimensions, that row length and
 * type, one u32 a row, at least `rows` rows, each index below `rows`.
 * Returns 0, or -1 with "record 'X': row map does not fit its tensor" or
 * "record 'X': row map points past the distinct rows" in err. */
int wp_rowmap_check(const wp_record *map, uint32_t type, int64_t rows, int64_t cols, char *err, size_t errlen);

/* Row r's index among the distinct rows, of a map wp_rowmap_check passed. */
uint32_t wp_rowmap_row(const wp_record *map, uint64_t r);

#ifdef __cplusplus
}
#endif
#endif
