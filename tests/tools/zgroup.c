/*
 * zgroup - size of a GGUF compressed ZipNN-style: every tensor's bytes
 * grouped by byte position within an element (2 for BF16/F16, 4 for F32,
 * none for block types) and zstd'd at level 19 one tensor at a time, the
 * metadata (everything before the tensor data) zstd'd at level 19 as well.
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

/* zstd -19 of n bytes grouped by g (byte j of every g-byte element
 * together), as ZipNN does; no zstd checksum, as plain zstd -19 writes none. */
static size_t zsize(const uint8_t *src, size_t n, unsigned g)
{
    uint8_t *t = malloc(n ? n : 1), *z = malloc(ZSTD_compressBound(n));
    size_t k = 0, recs = g > 1 ? n / g : 0;
    for (unsigned j = 0; g > 1 && j < g; j++)
        for (size_t r = 0; r < recs; r++)
            t[k++] = src[r * g + j];
    memcpy(t + k, src + k, n - k);
    size_t zl = ZSTD_compress(z, ZSTD_compressBound(n), t, n, 19);
    free(t);
    free(z);
    return ZSTD_isError(zl) ? n : zl;
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
    int k;
    while ((k = wp_gguf_next(g, &r)) > 0) {
        if (r.kind != WP_REC_TENSOR)
            continue;
        unsigned grp = wp_ggml_blck_size(r.type) == 1 ? (unsigned)wp_ggml_type_size(r.type) : 1;
        size_t zl = zsize(r.payload, (size_t)r.payload_len, grp);
        tensor_z += zl < r.payload_len ? zl : r.payload_len;
        tensor_raw += r.payload_len;
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
    size_t zl = zsize(meta, meta_len, 1);
    printf("%" PRIu64 " %zu %" PRIu64 "\n", zl + tensor_z, zl, tensor_z);
    free(meta);
    fclose(f);
    wp_record_free(&r);
    wp_gguf_close(g);
    return 0;
}
