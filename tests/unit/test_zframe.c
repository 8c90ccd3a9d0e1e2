/* test_zframe.c - zstd-framed streams (lib/zframe.c, wp_writer_open_framed):
 * the framed and the plain writer give the same stream content; the reader
 * takes both, in any read sizes; truncation, damage and trailing bytes are
 * named; tiny plain inputs (under 4 bytes) are served whole. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "stream.h"
#include "tap.h"
#include "zframe.h"
#include "zpack.h"

/* A stream of 40 records with payloads of a few sizes, framed or not. */
static FILE *make(int zlevel)
{
    FILE *f = tmpfile();
    char err[256];
    wp_writer *w = wp_writer_open_framed(f, "t", 8, zlevel, err, sizeof err);
    static uint8_t pay[70000];
    for (size_t i = 0; i < sizeof pay; i++)
        pay[i] = (uint8_t)(i * 2654435761u >> 13);
    for (int i = 0; w && i < 40; i++) {
        wp_record r;
        char name[32];
        wp_record_init(&r);
        r.kind = WP_REC_TENSOR;
        r.type = 0;
        r.n_dims = 1;
        r.ne[0] = (int64_t)((i * 977) % 17000);
        snprintf(name, sizeof name, "blk.%d.w", i);
        r.name = name;
        r.attrs = (char *)"";
        r.payload = pay;
        r.payload_len = (uint64_t)r.ne[0] * 4;
        wp_writer_put(w, &r);
    }
    wp_writer_close(w, err, sizeof err);
    rewind(f);
    return f;
}

static uint8_t *slurp(FILE *f, size_t *n)
{
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    uint8_t *b = malloc(*n + 1);
    rewind(f);
    if (fread(b, 1, *n, f) != *n)
        *n = 0;
    rewind(f);
    return b;
}

/* Records read (or -1 with err set). */
static int count(FILE *f, char *err, size_t errlen)
{
    wp_reader *rd = wp_reader_open(f, "x", err, errlen);
    wp_record r;
    int n = 0, k;
    if (!rd)
        return -1;
    wp_record_init(&r);
    while ((k = wp_reader_next(rd, &r)) == 1)
        n++;
    if (k < 0) {
        snprintf(err, errlen, "%s", wp_reader_error(rd));
        n = -1;
    }
    wp_record_free(&r);
    wp_reader_close(rd);
    return n;
}

static FILE *from(const uint8_t *b, size_t n)
{
    FILE *f = tmpfile();
    fwrite(b, 1, n, f);
    rewind(f);
    return f;
}

int main(void)
{
    char err[512];
    size_t np, nz;
    FILE *p = make(0), *z = make(9);
    uint8_t *bp = slurp(p, &np), *bz = slurp(z, &nz);
    CHECK(nz > 4 && !memcmp(bz, "\x28\xb5\x2f\xfd", 4) && nz < np, "framed: zstd magic, %zu bytes < plain %zu", nz, np);
    CHECK(count(p, err, sizeof err) == 40, "plain stream: 40 records");
    CHECK(count(z, err, sizeof err) == 40, "framed stream: 40 records");

    /* the frame holds the plain stream byte for byte */
    rewind(z);
    wp_zsrc *s = wp_zsrc_open(z);
    uint8_t *dec = malloc(np + 16);
    size_t got = 0, k;
    for (size_t step = 1; (k = wp_zsrc_read(s, dec + got, step)) > 0; step = step * 3 % 4093 + 1)
        got += k;   /* odd read sizes */
    CHECK(wp_zsrc_framed(s) && got == np && !memcmp(dec, bp, np) && wp_zsrc_finish(s) == 0,
          "decompressed in odd-sized reads = the plain stream (%zu bytes)", got);
    wp_zsrc_free(s);

    /* random access: the plain form through wp_zframe_plain */
    rewind(z);
    FILE *t = wp_zframe_plain(z, "z", err, sizeof err);
    wp_index ix;
    memset(&ix, 0, sizeof ix);
    CHECK(t && t != z && wp_index_read(t, "t", &ix, err, sizeof err) == 0 && ix.count == 40,
          "wp_zframe_plain: a temporary plain bundle with its index (40 entries: %s)", t ? "ok" : err);
    wp_index_free(&ix);
    if (t)
        fclose(t);
    CHECK(wp_index_read(z, "z.bundle", &ix, err, sizeof err) == -1 && strstr(err, "z.bundle: a zstd-framed"),
          "wp_index_read refuses a framed bundle by name (%s)", err);
    rewind(p);
    CHECK(wp_zframe_plain(p, "p", err, sizeof err) == p, "wp_zframe_plain: a plain bundle is itself");

    /* damage */
    for (size_t cut = 1; cut < nz; cut += nz / 7 + 1) {
        FILE *c = from(bz, nz - cut);
        int n = count(c, err, sizeof err);
        CHECK(n == -1 && strstr(err, "x: ") == err && (strstr(err, "truncated") || strstr(err, "corrupt")),
              "framed, last %zu bytes cut: %s", cut, err);
        fclose(c);
    }
    uint8_t *j = malloc(nz + 3);
    memcpy(j, bz, nz);
    memcpy(j + nz, "abc", 3);
    FILE *c = from(j, nz + 3);
    CHECK(count(c, err, sizeof err) == -1 && strstr(err, "bytes after the zstd frame"), "junk after the frame: %s", err);
    fclose(c);
    memcpy(j, bz, nz);
    j[nz / 2] ^= 0x10;
    c = from(j, nz);
    CHECK(count(c, err, sizeof err) == -1 && (strstr(err, "corrupt") || strstr(err, "checksum")),
          "a flipped bit inside the frame: %s", err);
    fclose(c);

    /* a plain input of 2 bytes: both served, then a clean end */
    c = from((const uint8_t *)"WP", 2);
    s = wp_zsrc_open(c);
    uint8_t two[8];
    CHECK(!wp_zsrc_framed(s) && wp_zsrc_read(s, two, 8) == 2 && !memcmp(two, "WP", 2) && !wp_zsrc_error(s),
          "a 2-byte plain input reads back whole");
    wp_zsrc_free(s);
    fclose(c);
    CHECK(count(from((const uint8_t *)"\x28\xb5\x2f\xfd", 4), err, sizeof err) == -1 && strstr(err, "x: "),
          "a bare zstd magic: %s", err);

    /* a second frame after the first, its magic cut by the reader's input buffer (a first
       frame of 131076 to 131078 bytes ends within 3 bytes of the buffer's first refill, at
       131079 after the 4 bytes peeked), or whole: each said as what it is (it was "bytes
       after the zstd frame"; the cut one still was, a reviewer's find) */
    {
        static uint8_t rnd[131200], two_f[140000], back[131200 + 16];
        uint32_t x = 2463534242u;
        for (size_t i = 0; i < sizeof rnd; i++) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            rnd[i] = (uint8_t)x;
        }
        size_t cut_m = 0, cut_len = 0;   /* random bytes: stored blocks, one more byte a byte more */
        for (size_t m = 131000; m < sizeof rnd && !cut_m; m++) {
            const size_t z1 = ZSTD_compress(two_f, sizeof two_f, rnd, m, 1);
            if (!ZSTD_isError(z1) && z1 >= 131076 && z1 <= 131078)
                cut_m = m, cut_len = z1;
        }
        CHECK(cut_m > 0, "a first frame of %zu bytes (131076 to 131078), of %zu random bytes", cut_len, cut_m);
        for (int cut = 0; cut < 2 && cut_m; cut++) {
            const size_t m = cut ? cut_m : 1000;
            const size_t first = ZSTD_compress(two_f, sizeof two_f, rnd, m, 1);
            const size_t len = first + ZSTD_compress(two_f + first, sizeof two_f - first, "second", 6, 1);
            FILE *c2 = from(two_f, len);
            wp_zsrc *s2 = wp_zsrc_open(c2);
            size_t got = wp_zsrc_read(s2, back, m + 16);
            CHECK(got == m && !memcmp(back, rnd, m) && wp_zsrc_error(s2) &&
                      strstr(wp_zsrc_error(s2), "more than one zstd frame"),
                  "a second frame after a first of %zu bytes%s: %s", first,
                  cut ? " (its magic cut by the input buffer)" : "", wp_zsrc_error(s2) ? wp_zsrc_error(s2) : "no error");
            wp_zsrc_free(s2);
            fclose(c2);
        }
    }

    /* skippable frames have magics 0x184D2A50..5F: any first byte 0x5?, not only 0x50
       (a mutation test's find: h[0] == 0x50 took 5F as no skippable frame, and a
       skippable frame 0x184D2A53 after the zstd frame as "bytes after the zstd frame") */
    CHECK(wp_zframe_skippable((const uint8_t[]){0x5F, 0x2A, 0x4D, 0x18}, 4) == 1,
          "5f 2a 4d 18 is a skippable frame's magic (1)");
    {
        uint8_t two_f[256], back[16];
        const size_t first = ZSTD_compress(two_f, sizeof two_f, "first", 5, 1);
        memcpy(two_f + first, "\x53\x2a\x4d\x18\x04\x00\x00\x00skip", 12);   /* magic, size 4, 4 bytes */
        FILE *c2 = from(two_f, first + 12);
        wp_zsrc *s2 = wp_zsrc_open(c2);
        const size_t got = wp_zsrc_read(s2, back, sizeof back);
        const char *e = wp_zsrc_error(s2);
        CHECK(got == 5 && !memcmp(back, "first", 5) && e &&
                  !strcmp(e, "a skippable zstd frame after the first: wpack reads one frame; zstd -d it, then read the stream"),
              "a skippable frame 53 2a 4d 18 after the zstd frame: \"a skippable zstd frame after the first: wpack reads one "
              "frame; zstd -d it, then read the stream\" (got: %s)", e ? e : "no error");
        wp_zsrc_free(s2);
        fclose(c2);
    }

    free(j);
    free(dec);
    free(bp);
    free(bz);
    fclose(p);
    fclose(z);
    /* wp_zpack's grouping of 7 bytes by 2: the byte 0s, the byte 1s, then the partial record
       as it is; wp_zunpack gives them back (a dropped tail went untested: a mutation test's find) */
    {
        const uint8_t in[7] = {10, 11, 12, 13, 14, 15, 16}, grouped[7] = {10, 12, 14, 11, 13, 15, 16};
        uint8_t raw[7] = {0}, back[7] = {0};
        size_t zl = 0;
        uint8_t *zp = wp_zpack(in, sizeof in, 2, 3, &zl);
        const size_t got = zp ? ZSTD_decompress(raw, sizeof raw, zp, zl) : 0;
        CHECK(zp && got == 7 && !memcmp(raw, grouped, 7), "wp_zpack groups 7 bytes by 2: 10 12 14 11 13 15 16");
        CHECK(zp && wp_zcontent_size(zp, zl) == 7 && wp_zunpack(zp, zl, 2, back, 7) == 0 && !memcmp(back, in, 7),
              "wp_zunpack ungroups them, its tail byte 16 last");
        CHECK(zp && wp_zunpack(zp, zl, 2, back, 6) == -1, "wp_zunpack refuses a size other than the frame's");
        free(zp);
        /* 1000 bytes of one value: zstd writes an RLE block (1 byte of body for 1000 of content),
           whose size the frame check takes (a mutation test's find) */
        uint8_t same[1000], out[1000];
        memset(same, 7, sizeof same);
        zp = wp_zpack(same, sizeof same, 1, 3, &zl);
        CHECK(zp && zl < 30 && wp_zcontent_size(zp, zl) == 1000 && wp_zunpack(zp, zl, 1, out, 1000) == 0 &&
                  !memcmp(out, same, 1000),
              "1000 equal bytes: a %zu-byte frame declaring 1000, unpacked", zp ? zl : 0);
        free(zp);
        /* frames that declare more than their blocks hold, refused; the honest ones' sizes
           taken (each a mutation test's find): a single-segment frame of one RLE block of 100
           bytes (its body 1 byte), declaring 100 then 200; the 7-byte raw frame above with its
           1-byte content size made 255 */
        uint8_t rle[10] = {0x28, 0xb5, 0x2f, 0xfd, 0x20, 100, 0x23, 0x03, 0x00, 7}, hundred[100];
        const uint64_t r100 = wp_zcontent_size(rle, sizeof rle);
        const int u100 = wp_zunpack(rle, sizeof rle, 1, hundred, 100);
        rle[5] = 200;
        CHECK(r100 == 100 && u100 == 0 && hundred[0] == 7 && hundred[99] == 7 &&
                  wp_zcontent_size(rle, sizeof rle) == UINT64_MAX,
              "an RLE block of 100: declared 100 taken, 200 refused");
        zp = wp_zpack(in, sizeof in, 1, 3, &zl);
        const int fits = zp && zl > 6 && zp[4] == 0x24 && zp[5] == 7 && wp_zcontent_size(zp, zl) == 7;
        if (zp)
            zp[5] = 255;
        CHECK(fits && wp_zcontent_size(zp, zl) == UINT64_MAX, "a raw block of 7 declared as 255 is refused");
        free(zp);
    }
    return tap_done();
}
