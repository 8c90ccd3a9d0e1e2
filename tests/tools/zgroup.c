/*
 * zgroup - size of a GGUF compressed ZipNN-style: the tensor data grouped
 * by byte position within an element (2 planes for BF16/F16, 4 for F32) and
 * each plane zstd'd at level 19 as one stream over the whole file, block
 * types' bytes as one more stream, the metadata (everything before the
 * tensor data) zstd'd at level 19 as well. One stream a plane for the whole
 * file, not one a tensor: zstd then finds a tensor that repeats another
 * (stories260K's output.weight is its token_embd.weight), as the bundle
 * stores it once; a tensor at a time paid for it twice, 1.13x the bytes on
 * stories260K BF16 (a fresh user's find: the baseline flattered wpack).
 *
 * Usage: zgroup FILE.gguf     prints: total_bytes metadata_bytes tensor_bytes
 * The baseline that issue 9 compares BF16 bundles with.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ggml_type.h"
#include "gguf_file.h"
#include <string.h>
#include <zstd.h>

/* zstd -19 of n bytes (no zstd checksum, as plain zstd -19 writes none); n when it does not
   compress. */
static size_t zsize(const uint8_t *src, size_t n)
{
    uint8_t *z = malloc(ZSTD_compressBound(n));
    size_t zl = z ? ZSTD_compress(z, ZSTD_compressBound(n), src, n, 19) : n;
    free(z);
    return ZSTD_isError(zl) || zl > n ? n : zl;
}

/* A growing byte buffer: one plane, or the block types' bytes. */
typedef struct {
    uint8_t *p;
    size_t n, cap;
} buf;

static int put(buf *b, uint8_t v)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 1u << 16;
        uint8_t *q = realloc(b->p, cap);
        if (!q)
            return -1;
        b->p = q, b->cap = cap;
    }
    b->p[b->n++] = v;
    return 0;
}

int main(int argc, char **argv)
{
    char err[512];
    if (argc != 2) {
        fprintf(stderr, "usage: zgroup FILE.gguf\n");
        return 2;
    }
    wp_gguf_in *g = wp_gguf_open(argv[1], err, sizeof err);
    if (!g) {
        fprintf(stderr, "zgroup: %s\n", err);
        return 1;
    }
    wp_record r;
    wp_record_init(&r);
    uint64_t tensor_z = 0, tensor_raw = 0;
    buf plane[5][4] = {{{0}}};   /* plane[g][j]: byte j of the g-byte elements; plane[1][0]: block types */
    int k;
    while ((k = wp_gguf_next(g, &r)) > 0) {
        if (r.kind != WP_REC_TENSOR)
            continue;
        unsigned grp = wp_ggml_blck_size(r.type) == 1 ? (unsigned)wp_ggml_type_size(r.type) : 1;
        if (grp != 2 && grp != 4)
            grp = 1;
        for (uint64_t i = 0; i < r.payload_len; i++)
            if (put(&plane[grp][i % grp], r.payload[i])) {
                fprintf(stderr, "zgroup: out of memory\n");
                return 1;
            }
        tensor_raw += r.payload_len;
    }
    for (int gsz = 1; gsz <= 4; gsz++)
        for (int j = 0; j < 4; j++) {
            if (plane[gsz][j].n)
                tensor_z += zsize(plane[gsz][j].p, plane[gsz][j].n);
            free(plane[gsz][j].p);
        }
    if (k < 0) {
        fprintf(stderr, "zgroup: %s\n", wp_gguf_error(g));
        return 1;
    }
    /* metadata: the file minus the tensor data, read as one block */
    uint64_t meta_len = wp_gguf_file_size(g) - tensor_raw;
    FILE *f = fopen(argv[1], "rb");
    uint8_t *meta = malloc(meta_len ? meta_len : 1);
    if (!f || fread(meta, 1, meta_len, f) != meta_len)
        return 1;
    size_t zl = zsize(meta, meta_len);
    printf("%" PRIu64 " %zu %" PRIu64 "\n", zl + tensor_z, zl, tensor_z);
    free(meta);
    fclose(f);
    wp_record_free(&r);
    wp_gguf_close(g);
    return 0;
}
