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
#include "zpack.h"

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
        size_t zl;
        uint8_t *z = wp_zpack(r.payload, (size_t)r.payload_len, grp, 19, &zl);
        if (!z)
            return 1;
        tensor_z += zl < r.payload_len ? zl : r.payload_len;
        tensor_raw += r.payload_len;
        free(z);
    }
    if (k < 0) {
        fprintf(stderr, "zgroup: %s\n", wp_gguf_error(g));
        return 1;
    }
    /* metadata: the file minus the tensor data, read as one block */
    uint64_t meta_len = wp_gguf_file_size(g) - tensor_raw;
    FILE *f = fopen(argv[1], "rb");
    uint8_t *meta = malloc(meta_len ? meta_len : 1);
    size_t zl = 0;
    if (!f || fread(meta, 1, meta_len, f) != meta_len)
        return 1;
    uint8_t *z = wp_zpack(meta, meta_len, 1, 19, &zl);
    printf("%" PRIu64 " %zu %" PRIu64 "\n", zl + tensor_z, zl, tensor_z);
    free(z);
    free(meta);
    fclose(f);
    wp_record_free(&r);
    wp_gguf_close(g);
    return 0;
}
