/* rowmap.c - repeated rows of a tensor stored once (see rowmap.h). */
#include "rowmap.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i); }
static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int wp_rowmap_make(const wp_record *t, wp_record *map, wp_record *reduced)
{
    if (t->n_dims < 2 || t->ne[0] <= 0)
        return 0;
    uint64_t rows = (uint64_t)(wp_record_nelem(t) / t->ne[0]);
    if (rows < 2 || rows > UINT32_MAX || t->payload_len % rows)
        return 0;
    size_t rb = (size_t)(t->payload_len / rows);
    /* open addressing on row hashes; slots hold a distinct row's index + 1 */
    uint64_t cap = 1;
    while (cap < 2 * rows)
        cap <<= 1;
    uint32_t *slot = calloc(cap, sizeof *slot), *first = malloc(rows * sizeof *first);
    uint32_t *idx = malloc(rows * sizeof *idx);
    if (!slot || !first || !idx) {
        free(slot), free(first), free(idx);
        return -1;
    }
    uint32_t n = 0;
    for (uint64_t r = 0; r < rows; r++) {
        const uint8_t *row = t->payload + r * rb;
        uint64_t h = XXH3_64bits(row, rb) & (cap - 1);
        for (;;) {
            if (!slot[h]) {
                slot[h] = n + 1;
                first[n] = (uint32_t)r;
                idx[r] = n++;
                break;
            }
            uint32_t u = slot[h] - 1;
            if (!memcmp(t->payload + (uint64_t)first[u] * rb, row, rb)) {
                idx[r] = u;
                break;
            }
            h = (h + 1) & (cap - 1);
        }
    }
    free(slot);
    /* made only when the repeated rows' bytes exceed a byte a row (the map
     * itself is 4 bytes a row before compression) */
    int rc = 0;
    if (n < rows && (uint64_t)(rows - n) * rb > rows) {
        rc = -1;
        map->kind = WP_REC_ROWMAP;
        reduced->kind = t->kind;
        map->type = reduced->type = t->type;
        map->n_dims = t->n_dims;
        memcpy(map->ne, t->ne, sizeof t->ne);
        reduced->n_dims = 2;
        for (int i = 0; i < WP_MAX_DIMS; i++)
            reduced->ne[i] = 1;
        reduced->ne[0] = t->ne[0];
        reduced->ne[1] = n;
        free(map->attrs);
        free(reduced->attrs);
        map->attrs = NULL;
        reduced->attrs = strdup(t->attrs ? t->attrs : "");
        reduced->attrs_lost = t->attrs_lost;
        if (reduced->attrs && !wp_record_set_name(map, t->name) && !wp_record_set_name(reduced, t->name) &&
            wp_record_alloc(map, rows * 4) && wp_record_alloc(reduced, (uint64_t)n * rb)) {
            for (uint64_t r = 0; r < rows; r++)
                put32(map->payload + 4 * r, idx[r]);
            for (uint32_t u = 0; u < n; u++)
                memcpy(reduced->payload + (uint64_t)u * rb, t->payload + (uint64_t)first[u] * rb, rb);
            /* (their failures were dropped: 1 for a reduced tensor without its rowmap=1) */
            if (!wp_attr_set_i64(map, "distinct_rows", n) && !wp_attr_set_i64(reduced, "rowmap", 1))
                rc = 1;
        }
    }
    free(first);
    free(idx);
    return rc;
}

int wp_rowmap_check(const wp_record *map, uint32_t type, int64_t rows, int64_t cols, char *err, size_t errlen)
{
    const uint64_t n = map->ne[0] > 0 ? (uint64_t)(wp_record_nelem(map) / map->ne[0]) : 0;
    if (map->n_dims < 2 || map->ne[0] != cols || map->type != type || n > UINT32_MAX || map->payload_len != 4 * n ||
        n < (uint64_t)rows) {
        snprintf(err, errlen, "record '%s': row map does not fit its tensor", map->name);
        return -1;
    }
    for (uint64_t r = 0; r < n; r++)
        if (get32(map->payload + 4 * r) >= (uint64_t)rows) {
            snprintf(err, errlen, "record '%s': row map points past the distinct rows", map->name);
            return -1;
        }
    return 0;
}

uint32_t wp_rowmap_row(const wp_record *map, uint64_t r) { return get32(map->payload + 4 * r); }

int wp_rowmap_expand(const wp_record *map, const wp_record *reduced, wp_record *full, char *err, size_t errlen)
{
    uint64_t rows = map->ne[0] > 0 ? (uint64_t)(wp_record_nelem(map) / map->ne[0]) : 0;
    uint64_t n = reduced->ne[0] > 0 ? (uint64_t)(wp_record_nelem(reduced) / reduced->ne[0]) : 0;
    /* the map is untrusted: its row count must fit the payload and the
     * expanded tensor a sane size before anything is allocated */
    if (map->n_dims < 2 || rows > UINT32_MAX || map->payload_len % 4 || map->payload_len / 4 != rows ||
        reduced->ne[0] != map->ne[0] || reduced->type != map->type || !n || reduced->payload_len % n ||
        (reduced->payload_len / n && rows > (UINT64_C(1) << 40) / (reduced->payload_len / n))) {
        snprintf(err, errlen, "record '%s': row map does not fit its tensor", map->name);
        return -1;
    }
    uint64_t rb = reduced->payload_len / n;
    full->kind = WP_REC_TENSOR;
    full->type = map->type;
    full->n_dims = map->n_dims;
    memcpy(full->ne, map->ne, sizeof map->ne);
    free(full->attrs);
    full->attrs = strdup(reduced->attrs ? reduced->attrs : "");
    if (!full->attrs || wp_record_set_name(full, map->name) || !wp_record_alloc(full, rows * rb)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    wp_attr_del(full, "rowmap");
    for (uint64_t r = 0; r < rows; r++) {
        uint32_t u = get32(map->payload + 4 * r);
        if (u >= n) {
            snprintf(err, errlen, "record '%s': row map points past the distinct rows", map->name);
            return -1;
        }
        memcpy(full->payload + r * rb, reduced->payload + (uint64_t)u * rb, rb);
    }
    return 0;
}
