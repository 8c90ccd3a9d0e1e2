/* zframe.c - a byte source or sink over a FILE that may be one zstd frame
 * (see zframe.h). */
#include "zframe.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "spool.h"

static const uint8_t zmagic[4] = {0x28, 0xb5, 0x2f, 0xfd};

struct wp_zsrc {
    FILE *f;
    uint8_t pre[4];         /* the peeked bytes of a plain source, served first */
    size_t npre, ipre;
    ZSTD_DStream *z;        /* framed: the decompressor and its input */
    uint8_t *in;
    ZSTD_inBuffer ib;
    size_t in_cap, last;    /* last: ZSTD_decompressStream's last hint (0 = frame done) */
    int eof;
    char err[256];
};

wp_zsrc *wp_zsrc_open(FILE *f)
{
    wp_zsrc *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->f = f;
    s->npre = fread(s->pre, 1, 4, f);
    if (s->npre == 4 && !memcmp(s->pre, zmagic, 4)) {
        s->in_cap = ZSTD_DStreamInSize();
        s->in = malloc(s->in_cap);
        s->z = ZSTD_createDStream();
        if (!s->in || !s->z) {
            wp_zsrc_free(s);
            return NULL;
        }
        memcpy(s->in, zmagic, 4);
        s->ib.src = s->in;
        s->ib.size = 4;
        s->ib.pos = 0;
        s->last = 1;
        s->npre = 0;
    }
    return s;
}

wp_zsrc *wp_zsrc_plain(FILE *f)
{
    wp_zsrc *s = calloc(1, sizeof *s);
    if (s)
        s->f = f;
    return s;
}

int wp_zsrc_framed(const wp_zsrc *s) { return s->z != NULL; }
const char *wp_zsrc_error(const wp_zsrc *s) { return s->err[0] ? s->err : NULL; }

/* Refill the compressed input; 0 at its end (or on an error, noted). */
static size_t refill(wp_zsrc *s)
{
    if (s->eof)
        return 0;
    size_t got = fread(s->in, 1, s->in_cap, s->f);
    if (got == 0) {
        s->eof = 1;
        if (ferror(s->f))
            snprintf(s->err, sizeof s->err, "read error: %s", strerror(errno));
    }
    s->ib.src = s->in;
    s->ib.size = got;
    s->ib.pos = 0;
    return got;
}

/* The bytes after a frame's end (some in s->ib) said as what they are: another
 * frame or a skippable one, as pzstd and .zst files joined write (all were
 * "bytes after the zstd frame", and the reader in order called the stream
 * truncated at the first frame's end: a breaker's find), else bytes. */
static void more_frames(wp_zsrc *s)
{
    size_t n = s->ib.size - s->ib.pos;
    if (n < 4 && !s->eof) {   /* a magic cut by the buffer's end: its rest read first */
        memmove(s->in, (const uint8_t *)s->ib.src + s->ib.pos, n);
        const size_t got = fread(s->in + n, 1, s->in_cap - n, s->f);
        s->eof = got == 0;
        s->ib.src = s->in;
        s->ib.pos = 0;
        s->ib.size = n += got;
    }
    const uint8_t *h = (const uint8_t *)s->ib.src + s->ib.pos;
    if (wp_zframe_magic(h, n))
        snprintf(s->err, sizeof s->err, "more than one zstd frame (as .zst files joined are): wpack reads one; "
                 "zstd -d it, then read the stream");
    else if (wp_zframe_skippable(h, n))
        snprintf(s->err, sizeof s->err, "a skippable zstd frame after the first: wpack reads one frame; zstd -d it, "
                 "then read the stream");
    else
        snprintf(s->err, sizeof s->err, "corrupt stream: bytes after the zstd frame");
}

size_t wp_zsrc_read(wp_zsrc *s, void *buf, size_t n)
{
    size_t done = 0;
    if (!s->z) {
        while (done < n && s->ipre < s->npre)
            ((uint8_t *)buf)[done++] = s->pre[s->ipre++];
        if (done < n) {
            size_t got = fread((uint8_t *)buf + done, 1, n - done, s->f);
            done += got;
            if (done < n && ferror(s->f))
                snprintf(s->err, sizeof s->err, "read error: %s", strerror(errno));
        }
        return done;
    }
    ZSTD_outBuffer ob = {buf, n, 0};
    while (ob.pos < n && s->last != 0) {   /* last == 0: the frame is complete */
        size_t ipos = s->ib.pos, opos = ob.pos;
        size_t r = ZSTD_decompressStream(s->z, &ob, &s->ib);
        if (ZSTD_isError(r)) {
            snprintf(s->err, sizeof s->err, "corrupt zstd frame: %s", ZSTD_getErrorName(r));
            break;
        }
        s->last = r;
        if (s->ib.pos == ipos && ob.pos == opos && !refill(s)) {
            /* no progress and no more input: cut inside the frame (readers said "stream
               header ends at byte 0" of a bundle cut in its first zstd block) */
            if (!s->err[0])
                snprintf(s->err, sizeof s->err, "truncated zstd frame: the file is cut short");
            break;
        }
    }
    if (ob.pos < n && s->last == 0 && !s->err[0] && (s->ib.pos < s->ib.size || (!s->eof && refill(s))))
        more_frames(s);   /* the content ends with the frame, and the file does not */
    return ob.pos;
}

int wp_zsrc_finish(wp_zsrc *s)
{
    uint8_t b;
    if (!s->z) {   /* two streams in one pipe (cat a.wps b.wps) read as the first alone */
        if (wp_zsrc_read(s, &b, 1) == 1) {
            snprintf(s->err, sizeof s->err,
                     "corrupt stream: data after its end (streams do not concatenate: one stream a pipe)");
            return -1;
        }
        return s->err[0] ? -1 : 0;
    }
    /* drain: the frame's epilogue (checksum) may still be unread */
    while (s->last != 0) {
        size_t got = wp_zsrc_read(s, &b, 1);
        if (got) {
            snprintf(s->err, sizeof s->err, "corrupt stream: data after the trailer inside the zstd frame");
            return -1;
        }
        if (s->err[0])
            return -1;
        if (s->last != 0) {
            snprintf(s->err, sizeof s->err, "truncated zstd frame: the file is cut short");
            return -1;
        }
    }
    if (s->ib.pos < s->ib.size || (!s->eof && refill(s))) {
        more_frames(s);
        return -1;
    }
    return 0;
}

void wp_zsrc_free(wp_zsrc *s)
{
    if (!s)
        return;
    ZSTD_freeDStream(s->z);
    free(s->in);
    free(s);
}

struct wp_zsink {
    FILE *f;
    ZSTD_CCtx *z;
    uint8_t *out;
    size_t out_cap;
};

wp_zsink *wp_zsink_open(FILE *f, int level)
{
    wp_zsink *s = calloc(1, sizeof *s);
    if (!s || level < 0 || level > ZSTD_maxCLevel()) {
        free(s);
        return NULL;
    }
    s->f = f;
    if (level) {
        s->out_cap = ZSTD_CStreamOutSize();
        s->out = malloc(s->out_cap);
        s->z = ZSTD_createCCtx();
        if (!s->out || !s->z || ZSTD_isError(ZSTD_CCtx_setParameter(s->z, ZSTD_c_compressionLevel, level)) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(s->z, ZSTD_c_checksumFlag, 1))) {
            wp_zsink_free(s);
            return NULL;
        }
    }
    return s;
}

static int zpush(wp_zsink *s, const void *buf, size_t n, ZSTD_EndDirective mode)
{
    ZSTD_inBuffer ib = {buf, n, 0};
    for (;;) {
        ZSTD_outBuffer ob = {s->out, s->out_cap, 0};
        size_t r = ZSTD_compressStream2(s->z, &ob, &ib, mode);
        if (ZSTD_isError(r)) {
            errno = EIO;
            return -1;
        }
        if (ob.pos && fwrite(s->out, 1, ob.pos, s->f) != ob.pos)
            return -1;
        if (mode == ZSTD_e_end ? r == 0 : ib.pos == ib.size)
            return 0;
    }
}

int wp_zsink_write(wp_zsink *s, const void *buf, size_t n)
{
    if (!n)
        return 0;
    if (!s->z)
        return fwrite(buf, 1, n, s->f) == n ? 0 : -1;
    return zpush(s, buf, n, ZSTD_e_continue);
}

int wp_zsink_finish(wp_zsink *s)
{
    if (s->z && zpush(s, "", 0, ZSTD_e_end))
        return -1;
    return fflush(s->f) ? -1 : 0;
}

void wp_zsink_free(wp_zsink *s)
{
    if (!s)
        return;
    ZSTD_freeCCtx(s->z);
    free(s->out);
    free(s);
}

int wp_zframe_magic(const uint8_t *h, size_t n) { return n >= 4 && !memcmp(h, zmagic, 4); }

int wp_zframe_skippable(const uint8_t *h, size_t n)
{
    return n >= 4 && (h[0] & 0xF0) == 0x50 && h[1] == 0x2A && h[2] == 0x4D && h[3] == 0x18;
}

int wp_zframe_is(FILE *f)
{
    uint8_t m[4];
    int framed = fseeko(f, 0, SEEK_SET) == 0 && fread(m, 1, 4, f) == 4 && !memcmp(m, zmagic, 4);
    rewind(f);
    return framed;
}

FILE *wp_zsrc_spool(FILE *f, const char *path, uint64_t *total, char *err, size_t errlen)
{
    wp_zsrc *s = wp_zsrc_open(f);
    char why[600] = "";
    FILE *t = s ? wp_spool(why, sizeof why) : NULL;
    uint8_t buf[1 << 16];
    size_t n;
    *total = 0;
    if (!t) {
        /* (it said "...: No such file or directory for the decompressed bundle") */
        snprintf(err, errlen, "%s: %s", path, s ? why : "out of memory");
        wp_zsrc_free(s);
        return NULL;
    }
    int bad = 0;
    while (!bad && (n = wp_zsrc_read(s, buf, sizeof buf)) > 0) {
        *total += n;
        if (fwrite(buf, 1, n, t) != n) {
            snprintf(err, errlen, "%s: temporary file in %s: write error: %s", path, wp_spool_where(), strerror(errno));
            bad = 1;
        }
    }
    if (!bad && (wp_zsrc_error(s) || (wp_zsrc_framed(s) && wp_zsrc_finish(s)))) {
        snprintf(err, errlen, "%s: %s", path, wp_zsrc_error(s));
        bad = 1;
    }
    if (!bad && fflush(t)) {
        snprintf(err, errlen, "%s: temporary file in %s: write error: %s", path, wp_spool_where(), strerror(errno));
        bad = 1;
    }
    wp_zsrc_free(s);
    if (bad) {
        fclose(t);
        return NULL;
    }
    rewind(t);
    return t;
}

FILE *wp_zframe_plain(FILE *f, const char *path, char *err, size_t errlen)
{
    if (!wp_zframe_is(f))
        return f;
    uint64_t total;
    FILE *t = wp_zsrc_spool(f, path, &total, err, errlen);
    if (t && total == 0) {   /* as the stream reader says it (the spooled copy was an "empty file") */
        snprintf(err, errlen, "%s: a zstd frame with nothing in it, not a wpack stream", path);
        fclose(t);
        return NULL;
    }
    return t;
}
