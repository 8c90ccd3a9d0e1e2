/* zpack.c - zstd with optional byte grouping (see zpack.h). */
#include "zpack.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static void group_bytes(const uint8_t *src, size_t n, unsigned g, uint8_t *dst)
{
    size_t recs = n / g, k = 0;
    for (unsigned j = 0; j < g; j++)
        for (size_t r = 0; r < recs; r++)
            dst[k++] = src[r * g + j];
    memcpy(dst + k, src + recs * g, n - recs * g);
}

static void ungroup_bytes(const uint8_t *src, size_t n, unsigned g, uint8_t *dst)
{
    size_t recs = n / g, k = 0;
    for (unsigned j = 0; j < g; j++)
        for (size_t r = 0; r < recs; r++)
            dst[r * g + j] = src[k++];
    memcpy(dst + recs * g, src + k, n - recs * g);
}

uint8_t *wp_zpack(const void *src, size_t n, unsigned g, int level, size_t *out_len)
{
    const uint8_t *in = src;
    uint8_t *tmp = NULL;
    if (g > 1 && n >= g) {
        tmp = malloc(n);
        if (!tmp)
            return NULL;
        group_bytes(src, n, g, tmp);
        in = tmp;
    }
    size_t cap = ZSTD_compressBound(n);
    uint8_t *out = malloc(cap ? cap : 1);
    if (!out) {
        free(tmp);
        return NULL;
    }
    /* with zstd's own content checksum (4 bytes), checked on decompression */
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    size_t z = cc ? ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level) : 1;
    if (cc && !ZSTD_isError(z))
        z = ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
    if (cc && !ZSTD_isError(z))
        z = ZSTD_compress2(cc, out, cap, in, n);
    else
        z = (size_t)-1;
    ZSTD_freeCCtx(cc);
    free(tmp);
    if (ZSTD_isError(z)) {
        free(out);
        return NULL;
    }
    *out_len = z;
    return out;
}

uint64_t wp_zcontent_size(const void *src, size_t len)
{
    unsigned long long size = ZSTD_getFrameContentSize(src, len);
    return size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN ? UINT64_MAX : (uint64_t)size;
}

int wp_zunpack(const void *src, size_t len, unsigned g, void *dst, size_t n)
{
    unsigned long long size = ZSTD_getFrameContentSize(src, len);
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size != n)
        return -1;
    uint8_t *tmp = (g > 1 && n >= g) ? malloc(n) : NULL;
    if (g > 1 && n >= g && !tmp)
        return -1;
    size_t got = ZSTD_decompress(tmp ? tmp : dst, n, src, len);
    if (ZSTD_isError(got) || got != n) {
        free(tmp);
        return -1;
    }
    if (tmp) {
        ungroup_bytes(tmp, n, g, dst);
        free(tmp);
    }
    return 0;
}
