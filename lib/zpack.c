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

/* The most bytes the blocks of the zstd frame at src can regenerate (a raw or
 * RLE block its stated size, a compressed one at most ZSTD_BLOCKSIZE_MAX),
 * or UINT64_MAX when its block headers run past len or a block type is
 * reserved. */
static uint64_t frame_bound(const uint8_t *src, size_t len)
{
    /* the frame header (RFC 8878 3.1.1): magic, descriptor, window byte
       unless single-segment, dictionary id, content size */
    static const size_t did[4] = {0, 1, 2, 4}, fcs[4] = {0, 2, 4, 8};
    if (len < 5 || src[0] != 0x28 || src[1] != 0xB5 || src[2] != 0x2F || src[3] != 0xFD)
        return UINT64_MAX;
    const unsigned fhd = src[4], single = fhd >> 5 & 1;
    size_t at = 5 + !single + did[fhd & 3] + (fhd >> 6 == 0 ? single : fcs[fhd >> 6]);
    uint64_t bound = 0;
    if (at > len)
        return UINT64_MAX;
    for (;;) {
        if (len - at < 3)
            return UINT64_MAX;
        uint32_t bh = (uint32_t)src[at] | (uint32_t)src[at + 1] << 8 | (uint32_t)src[at + 2] << 16;
        uint32_t type = bh >> 1 & 3, size = bh >> 3;
        size_t body = type == 1 ? 1 : size;
        at += 3;
        if (type == 3 || body > len - at)
            return UINT64_MAX;
        at += body;
        bound += type == 2 ? ZSTD_BLOCKSIZE_MAX : size;
        if (bh & 1)
            return bound;
    }
}

/* A size the frame declares but its blocks cannot hold is refused as well:
 * callers allocate it (a few corrupt bytes claimed 16 GB, or 1 TB and a
 * misleading "out of memory"). */
uint64_t wp_zcontent_size(const void *src, size_t len)
{
    unsigned long long size = ZSTD_getFrameContentSize(src, len);
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN)
        return UINT64_MAX;
    if (size == 0)   /* (also a skippable frame) */
        return 0;
    return (uint64_t)size <= frame_bound(src, len) ? (uint64_t)size : UINT64_MAX;
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
