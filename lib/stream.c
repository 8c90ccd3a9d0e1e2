/* stream.c - the wpack tensor stream: records, attributes, reader, writer,
 * trailing index. Layout and contracts: stream.h and wpack-stream(5). */
#include "stream.h"

#include "ggml_type.h"
#include "gguf_file.h"
#include "safetensors.h"
#include "text.h"
#include "zframe.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>
#include <zstd.h>

/* Offsets into a stream, bundle or GGUF go through off_t (fseeko, ftello): a
 * 32-bit build without -D_FILE_OFFSET_BITS=64 (the Makefile's) could not read
 * a bundle over 2 GiB, a 7B model's (a note's left alone). */
_Static_assert(sizeof(off_t) >= 8, "off_t must hold a file offset over 2 GiB: build with -D_FILE_OFFSET_BITS=64");

#define REC_TAG      0x43455257u  /* "WREC" little-endian */
#define REC_FIXED    72u
#define MAX_ATTRS    (1u << 20)
#define MAX_PAYLOAD  (UINT64_C(1) << 40)

/* ---- little-endian helpers ---------------------------------------------- */

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> 8 * i); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

static uint64_t pad_to(uint64_t off, unsigned align) { return (align - off % align) % align; }

static const char *input_name(const char *path) { return (!path || !strcmp(path, "-")) ? "stdin" : path; }

/* ---- records ------------------------------------------------------------ */

void wp_record_init(wp_record *r)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < WP_MAX_DIMS; i++)
        r->ne[i] = 1;
}

void wp_record_free(wp_record *r)
{
    free(r->name);
    free(r->attrs);
    if (!r->borrowed)
        free(r->payload);
    wp_record_init(r);
}

int wp_record_set_name(wp_record *r, const char *name)
{
    size_t n = strlen(name);
    if (n > WP_MAX_NAME)
        return -1;
    char *p = realloc(r->name, n + 1);
    if (!p)
        return -1;
    memcpy(p, name, n + 1);
    r->name = p;
    return 0;
}

uint8_t *wp_record_alloc(wp_record *r, uint64_t len)
{
    if (r->borrowed) {   /* a mapping's bytes: a buffer of its own instead */
        r->payload = NULL;
        r->payload_cap = 0;
        r->borrowed = 0;
    }
    if (len > r->payload_cap || !r->payload) {
        uint64_t cap = len ? len : 1;
        uint8_t *p = realloc(r->payload, (size_t)cap);
        if (!p)
            return NULL;
        r->payload = p;
        r->payload_cap = cap;
    }
    r->payload_len = len;
    return r->payload;
}

const char *wp_tensor_head_problem(const wp_record *r, char *buf, size_t n)
{
    if (r->kind != WP_REC_TENSOR)
        return NULL;
    if (!wp_ggml_blck_size(r->type)) {
        snprintf(buf, n, "unknown ggml type %" PRIu32, r->type);
        return buf;
    }
    if (r->n_dims < 1)   /* (its payload went unchecked to ggufpack: a breaker's find) */
        return "no dimensions (a tensor has 1 to 4; a scalar is shape 1)";
    return r->name && r->name[0] ? NULL : "a tensor needs a name";
}

const char *wp_tensor_payload_problem(const wp_record *r, char *buf, size_t n)
{
    if (r->kind != WP_REC_TENSOR || wp_tensor_head_problem(r, buf, n))
        return NULL;
    const uint64_t nelem = (uint64_t)wp_record_nelem(r), rows = r->ne[0] ? nelem / (uint64_t)r->ne[0] : 0;
    const char *tn = wp_ggml_type_name(r->type);
    /* a row of part of a block: "needs 0" said it badly (a Q4_K of 64 columns, a breaker's
       find); the words are the GGUF writer's */
    const int blck = wp_ggml_blck_size(r->type);
    if (blck > 1 && r->ne[0] % blck) {
        snprintf(buf, n, "row length %" PRId64 " is not a multiple of the %s block size %d", r->ne[0], tn, blck);
        return buf;
    }
    uint64_t need = 0;
    /* (2^62 F32 elements need 2^64 bytes, which wrapped to 0: such a tensor of no payload was
       read, a mutation tester's find) */
    if (r->ne[0] && __builtin_mul_overflow((uint64_t)wp_ggml_row_size(r->type, r->ne[0]), rows, &need)) {
        snprintf(buf, n, "%" PRIu64 " payload bytes, but %s %" PRId64 " x %" PRIu64 " needs 2^64 bytes or more",
                 r->payload_len, tn, r->ne[0], rows);
        return buf;
    }
    if (need != r->payload_len) {
        snprintf(buf, n, "%" PRIu64 " payload bytes, but %s %" PRId64 " x %" PRIu64 " needs %" PRIu64, r->payload_len,
                 tn, r->ne[0], rows, need);
        return buf;
    }
    return NULL;
}

void wp_record_move(wp_record *to, wp_record *from)
{
    *to = *from;
    wp_record_init(from);
}

int wp_record_copy(wp_record *d, const wp_record *s)
{
    d->kind = s->kind;
    d->type = s->type;
    d->n_dims = s->n_dims;
    memcpy(d->ne, s->ne, sizeof d->ne);
    d->offset = s->offset;
    d->attrs_lost = s->attrs_lost;
    free(d->attrs);
    d->attrs = strdup(s->attrs ? s->attrs : "");
    if (!d->attrs || wp_record_set_name(d, s->name ? s->name : "") || !wp_record_alloc(d, s->payload_len))
        return -1;
    if (s->payload_len)
        memcpy(d->payload, s->payload, (size_t)s->payload_len);
    return 0;
}

int64_t wp_record_nelem(const wp_record *r)
{
    int64_t n = 1;
    for (int i = 0; i < r->n_dims; i++)
        n *= r->ne[i];
    return n;
}

int wp_rec_is_coded(unsigned kind)
{
    switch (kind) {
    case WP_REC_HIST: case WP_REC_TABLE: case WP_REC_CODED: case WP_REC_SIDE: case WP_REC_SYMBOLS:
    case WP_REC_RAW: case WP_REC_Z: case WP_REC_KVPACK: case WP_REC_REF: case WP_REC_ROWMAP:
        return 1;
    default:
        return 0;
    }
}

int wp_rec_is_bundle(unsigned kind)
{
    return kind == WP_REC_CODED || kind == WP_REC_Z || kind == WP_REC_KVPACK || kind == WP_REC_REF;
}

int wp_rec_kind_known(unsigned kind) { return strcmp(wp_rec_kind_name(kind), "?") != 0; }

const char *wp_rec_kind_name(unsigned kind)
{
    switch (kind) {
    case WP_REC_GGUF: return "gguf";
    case WP_REC_KV: return "kv";
    case WP_REC_TENSOR: return "tensor";
    case WP_REC_HESSIAN: return "hessian";
    case WP_REC_HIST: return "hist";
    case WP_REC_TABLE: return "table";
    case WP_REC_CODED: return "coded";
    case WP_REC_SIDE: return "side";
    case WP_REC_SYMBOLS: return "symbols";
    case WP_REC_RAW: return "raw";
    case WP_REC_Z: return "zstd";
    case WP_REC_KVPACK: return "kvpack";
    case WP_REC_REF: return "ref";
    case WP_REC_ROWMAP: return "rowmap";
    case WP_REC_END: return "end";
    default: return "?";
    }
}

/* ---- attributes ---------------------------------------------------------- */

const char *wp_attr_find(const wp_record *r, const char *key, size_t *len)
{
    size_t kl = strlen(key);
    const char *p = r->attrs;
    while (p && *p) {
        const char *nl = strchr(p, '\n');
        const char *end = nl ? nl : p + strlen(p);
        if ((size_t)(end - p) > kl && !strncmp(p, key, kl) && p[kl] == '=') {
            if (len)
                *len = (size_t)(end - (p + kl + 1));
            return p + kl + 1;
        }
        p = nl ? nl + 1 : end;
    }
    return NULL;
}

int wp_attr_str(const wp_record *r, const char *key, char *buf, size_t n)
{
    size_t len;
    const char *v = wp_attr_find(r, key, &len);
    if (!v)
        return 0;
    if (n) {
        if (len >= n)
            len = n - 1;
        memcpy(buf, v, len);
        buf[len] = 0;
    }
    return 1;
}

int wp_attr_int(const wp_record *r, const char *key, int64_t *v)
{
    char buf[32], *end;
    size_t len;
    if (!wp_attr_find(r, key, &len))
        return 0;
    if (len >= sizeof buf || !wp_attr_str(r, key, buf, sizeof buf))   /* (70 digits were read as their first 63) */
        return -1;
    const char *d = buf + (buf[0] == '-');
    if (!isdigit((unsigned char)*d))   /* strtoll took " 5" and "+5" */
        return -1;
    errno = 0;
    long long x = strtoll(buf, &end, 10);
    if (*end || errno)
        return -1;
    *v = (int64_t)x;
    return 1;
}

int64_t wp_attr_i64(const wp_record *r, const char *key, int64_t def)
{
    int64_t v;
    return wp_attr_int(r, key, &v) == 1 ? v : def;
}

const char *wp_attr_counts_problem(const wp_record *r, char *buf, size_t n)
{
    static const char *const gguf[] = {"version", "n_kv", "n_tensors", "file_size", NULL};
    static const char *const tensor[] = {"offset", NULL};
    const char *const *keys = r->kind == WP_REC_GGUF ? gguf : r->kind == WP_REC_TENSOR ? tensor : NULL;
    for (int k = 0; keys && keys[k]; k++) {
        int64_t v;
        const int rc = wp_attr_int(r, keys[k], &v);
        if (rc < 0 || (rc > 0 && v < 0)) {
            size_t len = 0;
            const char *val = wp_attr_find(r, keys[k], &len);
            snprintf(buf, n, "attribute %s=%.*s%s is not a count", keys[k], (int)(len > 40 ? 40 : len), val,
                     len > 40 ? "..." : "");
            return buf;
        }
    }
    return NULL;
}

double wp_attr_f64(const wp_record *r, const char *key, double def)
{
    char buf[64], *end;
    if (!wp_attr_str(r, key, buf, sizeof buf) || !buf[0])
        return def;
    double v = strtod(buf, &end);
    return *end ? def : v;
}

/* Whether c may be in an attribute key: [a-z0-9_.] (wpack-stream(5)). */
static int key_char(char c)
{
    return islower((unsigned char)c) || isdigit((unsigned char)c) || c == '_' || c == '.';
}

static int key_ok(const char *k)
{
    if (!*k)
        return 0;
    for (; *k; k++)
        if (!key_char(*k))
            return 0;
    return 1;
}

/* Whether attribute text a is lines "key=value\n", each key as key_ok and
 * each value free of newlines (as wp_attr_set writes them): 0 when it is, 1
 * when it is not (a record no writer made), 2 when a key is given twice
 * (wp_attr_set replaces a key; readers took the first of two, so a second
 * z_group or xxh32 went unseen: a breaker's find). */
static int attrs_problem(const char *a)
{
    const char *start = a;
    while (*a) {
        const char *k = a;
        while (key_char(*a))
            a++;
        if (a == k || *a != '=')
            return 1;
        size_t klen = (size_t)(a - k);
        for (const char *p = start; p < k; p = strchr(p, '\n') + 1)
            if (!strncmp(p, k, klen) && p[klen] == '=')
                return 2;
        a = strchr(a, '\n');
        if (!a)
            return 1;
        a++;
    }
    return 0;
}

void wp_attr_del(wp_record *r, const char *key)
{
    size_t kl = strlen(key);
    char *p = r->attrs;
    while (p && *p) {
        char *nl = strchr(p, '\n');
        char *next = nl ? nl + 1 : p + strlen(p);
        if (!strncmp(p, key, kl) && p[kl] == '=') {
            memmove(p, next, strlen(next) + 1);
            continue;
        }
        p = next;
    }
}

int wp_attr_set(wp_record *r, const char *key, const char *value)
{
    /* a failure marks the record, which the writers refuse: over 30 callers set attributes
       without checking (a reviewer found wp_z_wrap returning 0 for a zstd record without z_of) */
    if (!key_ok(key) || strchr(value, '\n'))
        return r->attrs_lost = 1, -1;
    wp_attr_del(r, key);
    size_t old = r->attrs ? strlen(r->attrs) : 0;
    size_t add = strlen(key) + 1 + strlen(value) + 1;
    if (old + add > MAX_ATTRS)
        return r->attrs_lost = 1, -1;
    char *p = realloc(r->attrs, old + add + 1);
    if (!p)
        return r->attrs_lost = 1, -1;
    sprintf(p + old, "%s=%s\n", key, value);
    r->attrs = p;
    return 0;
}

int wp_attr_set_i64(wp_record *r, const char *key, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    return wp_attr_set(r, key, buf);
}

int wp_attr_set_f64(wp_record *r, const char *key, double v)
{
    char buf[40];
    snprintf(buf, sizeof buf, "%.10g", v);
    return wp_attr_set(r, key, buf);
}

/* ---- record header coding (shared by reader and writer) ------------------ */

/* Bytes of a record header before its payload padding. */
static uint64_t header_len(size_t name_len, size_t attr_len)
{
    return REC_FIXED + name_len + attr_len + 8;
}

/* Serialise r's header (with payload checksum sum) into buf (header_len bytes). */
static void encode_header(const wp_record *r, uint64_t sum, uint8_t *buf)
{
    size_t nl = r->name ? strlen(r->name) : 0, al = r->attrs ? strlen(r->attrs) : 0;
    put32(buf, REC_TAG);
    put16(buf + 4, r->kind);
    put16(buf + 6, (uint16_t)r->n_dims);
    put32(buf + 8, r->type);
    put32(buf + 12, (uint32_t)nl);
    for (int i = 0; i < WP_MAX_DIMS; i++)
        put64(buf + 16 + 8 * i, (uint64_t)(i < r->n_dims ? r->ne[i] : 1));
    put32(buf + 48, (uint32_t)al);
    put32(buf + 52, 0);
    put64(buf + 56, r->payload_len);
    put64(buf + 64, sum);
    if (nl)
        memcpy(buf + REC_FIXED, r->name, nl);
    if (al)
        memcpy(buf + REC_FIXED + nl, r->attrs, al);
    put64(buf + REC_FIXED + nl + al, XXH64(buf, REC_FIXED + nl + al, 0));
}

/* ---- reader -------------------------------------------------------------- */

struct wp_reader {
    FILE    *f;
    wp_zsrc *src;          /* f as it is, or decompressed (a zstd-framed bundle) */
    char     path[512];
    unsigned align;
    uint64_t off;          /* bytes consumed */
    uint64_t nrec;         /* records read */
    uint64_t pending;      /* payload bytes (plus padding) not yet read */
    uint64_t pending_sum;
    uint64_t left;         /* a plain regular file: its bytes from the stream's start; else 0 */
    struct seen { uint64_t offset, name_hash; uint16_t kind; } *seen;   /* each record, for the index */
    uint64_t seen_cap;
    int      n_gguf;       /* gguf records read */
    int      done;
    int      copy;         /* f is a zstd frame's content decompressed to a file (wp_index_read_decompressed) */
    char     err[768];
};

/* The bytes of f from its current position when it is a plain regular file
 * (else 0, unknown: a pipe, or a zstd frame decompressed as it is read). */
static uint64_t file_left(FILE *f, const wp_zsrc *src)
{
    struct stat st;
    off_t at = ftello(f);
    if ((src && wp_zsrc_framed(src)) || at < 0 || fstat(fileno(f), &st) || !S_ISREG(st.st_mode) || st.st_size < at)
        return 0;
    return (uint64_t)(st.st_size - at);
}

static int rfail(wp_reader *rd, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(rd->err, sizeof rd->err, "%s: ", rd->path);
    va_start(ap, fmt);
    vsnprintf(rd->err + n, sizeof rd->err - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* Read exactly n bytes; -1 with a message on EOF or error. */
static int rread(wp_reader *rd, void *buf, size_t n, const char *what)
{
    size_t got = n ? wp_zsrc_read(rd->src, buf, n) : 0;
    rd->off += got;
    if (got != n) {
        /* offsets count stream bytes: in a framed bundle, those of the decompressed stream */
        const char *of = wp_zsrc_framed(rd->src) || rd->copy ? " of the decompressed stream" : "";
        if (wp_zsrc_error(rd->src))
            return rfail(rd, "%s (%s, byte %" PRIu64 "%s)", wp_zsrc_error(rd->src), what, rd->off, of);
        return rfail(rd, "truncated stream: %s ends at byte %" PRIu64 "%s (upstream failed or file cut short)", what,
                     rd->off, of);
    }
    return 0;
}

/* Skip n bytes; padding (what names it) must be zero, so that every bit of a
 * stream is covered by a check. */
static int rskip(wp_reader *rd, uint64_t n, const char *what)
{
    uint8_t buf[4096];
    int must_be_zero = strstr(what, "padding") != NULL;
    while (n) {
        size_t k = n > sizeof buf ? sizeof buf : (size_t)n;
        if (rread(rd, buf, k, what))
            return -1;
        for (size_t i = 0; must_be_zero && i < k; i++)
            if (buf[i])
                return rfail(rd, "corrupt stream: nonzero %s at byte %" PRIu64, what, rd->off - k + i);
        n -= k;
    }
    return 0;
}


/* Why the first `got` bytes h of a file, or of a zstd frame's content (zstd
 * 1), are not a wpack stream's start: NULL when they are one so far, else
 * the reason, with the way on for a GGUF or safetensors file, compressed
 * or not, and for a frame inside a frame, and "a text file" when they are
 * all printable (one message for every reader). */
static const char *not_stream(const uint8_t *h, size_t got, int zstd)
{
    if (!memcmp(h, WP_STREAM_MAGIC, got < 8 ? got : 8))
        return NULL;
    if (wp_gguf_magic(h, got))   /* a zstd'd GGUF was "a GGUF file: read it with ggufcat" */
        return zstd ? "not a wpack stream (a zstd-compressed GGUF file: read it with ggufcat)"
                    : "not a wpack stream (a GGUF file: read it with ggufcat)";
    if (got >= 9 && wp_st_magic(h))   /* (it was "bad magic") */
        return zstd ? "not a wpack stream (a zstd-compressed safetensors file: zstd -d it, then read it with "
                      "safetensorscat)"
                    : "not a wpack stream (a safetensors file: read it with safetensorscat)";
    if (zstd && wp_zframe_magic(h, got))
        return "not a wpack stream (a zstd frame inside a zstd frame: zstd -d it once)";
    if (wp_zframe_skippable(h, got))   /* (it was "bad magic", though zstd -d reads it: a breaker's find) */
        return "not a wpack stream (a zstd skippable frame first, as pzstd writes: zstd -d it, then read the stream)";
    if (!zstd && wp_foreign_kind(h, got)) {   /* (a gzip'd stream, or m.gguf.xz, was "bad magic") */
        static _Thread_local char why[160];
        snprintf(why, sizeof why, "not a wpack stream (%s)", wp_foreign_kind(h, got));
        return why;
    }
    if (!zstd && wp_text_like(h, got))   /* (it was "bad magic": a helper's nit) */
        return "not a wpack stream (a text file)";
    return zstd ? "a zstd frame that does not hold a wpack stream" : "not a wpack stream (bad magic)";
}

static wp_reader *reader_open(FILE *f, const char *path, int copy, char *err, size_t errlen)
{
    wp_reader *rd = calloc(1, sizeof *rd);
    uint8_t h[16];
    if (!rd) {
        snprintf(err, errlen, "%s: out of memory", input_name(path));
        return NULL;
    }
    rd->f = f;
    rd->copy = copy;
    snprintf(rd->path, sizeof rd->path, "%s", input_name(path));
    uint64_t left = file_left(f, NULL);
    if (!(rd->src = wp_zsrc_open(f))) {
        snprintf(err, errlen, "%s: out of memory", rd->path);
        free(rd);
        return NULL;
    }
    if (rread(rd, h, sizeof h, "stream header")) {
        /* a short input that does not start as a stream does is not a stream at all; an
           empty one is said so (it was "truncated stream: stream header ends at byte 0"):
           a file named on the command line, a zstd frame with nothing in it, or standard
           input (a pipe, or unbundle's copy of one, which it names "stdin") */
        size_t got = rd->off < sizeof h ? (size_t)rd->off : sizeof h;
        struct stat st;
        if (copy && wp_zsrc_framed(rd->src))   /* as below, also of a short inner frame */
            rfail(rd, "not a wpack stream (a zstd frame inside a zstd frame: zstd -d it once)");
        else if (got && !wp_zsrc_error(rd->src) && not_stream(h, got, wp_zsrc_framed(rd->src) || copy))
            rfail(rd, "%s", not_stream(h, got, wp_zsrc_framed(rd->src) || copy));
        else if (!got && !wp_zsrc_error(rd->src))
            rfail(rd, "%s", wp_zsrc_framed(rd->src) ? "a zstd frame with nothing in it, not a wpack stream"
                            : strcmp(rd->path, "stdin") && !fstat(fileno(f), &st) && S_ISREG(st.st_mode)
                                ? "empty file, not a wpack stream"
                                : "empty input, not a wpack stream (upstream failed or wrote nothing)");
        goto fail;
    }
    if (copy && wp_zsrc_framed(rd->src)) {   /* read through only when nothing needed the index */
        rfail(rd, "not a wpack stream (a zstd frame inside a zstd frame: zstd -d it once)");
        goto fail;
    }
    if (not_stream(h, sizeof h, wp_zsrc_framed(rd->src) || copy)) {
        rfail(rd, "%s", not_stream(h, sizeof h, wp_zsrc_framed(rd->src) || copy));
        goto fail;
    }
    if (get32(h + 8) != WP_STREAM_VERSION) {
        rfail(rd, "unsupported stream version %u (this wpack reads %u)", get32(h + 8), WP_STREAM_VERSION);
        goto fail;
    }
    rd->align = get32(h + 12);
    if (!rd->align || rd->align > 4096 || (rd->align & (rd->align - 1))) {
        rfail(rd, "bad stream alignment %u", rd->align);
        goto fail;
    }
    rd->left = wp_zsrc_framed(rd->src) ? 0 : left;
    return rd;
fail:
    snprintf(err, errlen, "%s", rd->err);
    wp_zsrc_free(rd->src);
    free(rd->seen);
    free(rd);
    return NULL;
}

int wp_file_is_hessians(const char *path)
{
    /* (a FIFO opened a second time, its writer done, hung gptq --imatrix for good: a breaker's
       find) */
    struct stat st;
    if (stat(path, &st) || !S_ISREG(st.st_mode))
        return 0;
    wp_record r;
    wp_record_init(&r);
    char err[256];
    FILE *f = fopen(path, "rb");
    wp_reader *rd = f ? wp_reader_open(f, path, err, sizeof err) : NULL;
    const int hess = rd && wp_reader_next_header(rd, &r) > 0 && r.kind == WP_REC_HESSIAN;
    wp_record_free(&r);
    if (rd)
        wp_reader_close(rd);
    if (f)
        fclose(f);
    return hess;
}

wp_reader *wp_reader_open(FILE *f, const char *path, char *err, size_t errlen)
{
    return reader_open(f, path, 0, err, errlen);
}

wp_reader *wp_reader_open_decompressed(FILE *f, const char *path, char *err, size_t errlen)
{
    return reader_open(f, path, 1, err, errlen);
}

const char *wp_reader_error(const wp_reader *rd) { return rd->err; }
unsigned wp_reader_align(const wp_reader *rd) { return rd->align; }

int wp_reader_close(wp_reader *rd)
{
    if (rd) {
        wp_zsrc_free(rd->src);
        free(rd->seen);
    }
    free(rd);
    return 0;
}

/* A record as messages name it: "record 'NAME'", or for a record without a
 * name "the gguf record" or "the kvpack record" (a stream's one of each: the
 * GGUF's header and metadata), "the index (end record)", else "an unnamed
 * KIND record" ("record ''" told a user nothing). Returns buf (n bytes). */
static const char *rec_label(const wp_record *r, char *buf, size_t n)
{
    if (r->name && r->name[0])
        snprintf(buf, n, "record '%s'", r->name);
    else if (r->kind == WP_REC_GGUF || r->kind == WP_REC_KVPACK)
        snprintf(buf, n, "the %s record", wp_rec_kind_name(r->kind));
    else if (r->kind == WP_REC_END)   /* as wpack-stream(5) names it (it was "an unnamed end record") */
        snprintf(buf, n, "the index (end record)");
    else if (wp_rec_kind_known(r->kind))
        snprintf(buf, n, "an unnamed %s record", wp_rec_kind_name(r->kind));
    else
        snprintf(buf, n, "an unnamed record");
    return buf;
}

/* Parse a header already in buf (fixed part read); reads name/attrs/sum. */
static int read_header(wp_reader *rd, wp_record *r)
{
    uint8_t fixed[REC_FIXED];
    uint64_t start = rd->off;
    if (rd->pending && rskip(rd, rd->pending, "payload"))
        return -1;
    rd->pending = 0;
    start = rd->off;
    if (rread(rd, fixed, REC_FIXED, "record header"))
        return -1;
    if (get32(fixed) != REC_TAG)
        return rfail(rd, "corrupt stream: no record at byte %" PRIu64, start);
    uint32_t nl = get32(fixed + 12), al = get32(fixed + 48);
    unsigned nd = get16(fixed + 6);
    if (nl > WP_MAX_NAME || al > MAX_ATTRS || nd > WP_MAX_DIMS)
        return rfail(rd, "corrupt record header at byte %" PRIu64, start);
    size_t hl = (size_t)header_len(nl, al);
    uint8_t *h = malloc(hl);
    if (!h)
        return rfail(rd, "out of memory");
    memcpy(h, fixed, REC_FIXED);
    if (rread(rd, h + REC_FIXED, hl - REC_FIXED, "record header")) {
        free(h);
        return -1;
    }
    if (XXH64(h, hl - 8, 0) != get64(h + hl - 8)) {
        free(h);
        return rfail(rd, "corrupt record header at byte %" PRIu64 " (checksum mismatch)", start);
    }
    char *name = malloc(nl + 1), *attrs = malloc(al + 1);
    if (!name || !attrs) {
        free(h), free(name), free(attrs);
        return rfail(rd, "out of memory");
    }
    memcpy(name, h + REC_FIXED, nl);
    name[nl] = 0;
    memcpy(attrs, h + REC_FIXED + nl, al);
    attrs[al] = 0;
    free(r->name);
    free(r->attrs);
    r->name = name;
    r->attrs = attrs;
    r->attrs_lost = 0;
    r->kind = get16(fixed + 4);
    r->n_dims = (int)nd;
    r->type = get32(fixed + 8);
    for (int i = 0; i < WP_MAX_DIMS; i++)
        r->ne[i] = (int64_t)get64(fixed + 16 + 8 * i);
    r->payload_len = get64(fixed + 56);
    r->offset = start;
    rd->pending_sum = get64(fixed + 64);
    free(h);
    if (strlen(name) != nl || (al && strlen(attrs) != al))
        return rfail(rd, "corrupt record header at byte %" PRIu64 " (NUL in name)", start);
    /* wpack-stream(5): reserved is 0 and attributes are key=value lines (both were taken
     * as they came: a breaker's find) */
    if (get32(fixed + 52) != 0)
        return rfail(rd, "corrupt record header at byte %" PRIu64 " (reserved field not 0)", start);
    char lb[WP_MAX_NAME + 32];
    const char *rl = rec_label(r, lb, sizeof lb);
    int ap = attrs_problem(attrs);
    if (ap)
        return rfail(rd, ap == 1 ? "%s: attributes are not key=value lines" : "%s: an attribute given twice", rl);
    for (int i = 0; i < WP_MAX_DIMS; i++)
        if (r->ne[i] < 0 || (uint64_t)r->ne[i] > WP_MAX_DIM || (i >= r->n_dims && r->ne[i] != 1))
            return rfail(rd, "%s: bad shape", rl);
    uint64_t nelem = 1;
    for (int i = 0; i < r->n_dims; i++) {
        uint64_t n = (uint64_t)r->ne[i];
        if (n && nelem > (UINT64_C(1) << 62) / n)
            return rfail(rd, "%s: shape has more than 2^62 elements", rl);
        nelem *= n;
    }
    if (r->payload_len > MAX_PAYLOAD)
        return rfail(rd, "%s: payload of %" PRIu64 " bytes is implausible", rl, r->payload_len);
    if (rd->left && r->payload_len > rd->left - rd->off)   /* before any allocation of that size */
        return rfail(rd, "truncated stream: %s at byte %" PRIu64 " claims %" PRIu64
                     " payload bytes, the file has %" PRIu64 " after its header", rl, start, r->payload_len,
                     rd->left - rd->off);
    if (!wp_rec_kind_known(r->kind))   /* (a forged kind was passed on, then dropped) */
        return rfail(rd, "%s at byte %" PRIu64 ": unknown record kind %u (corrupt, or from a newer wpack)",
                     rl, start, (unsigned)r->kind);
    if (r->kind == WP_REC_GGUF && (r->payload_len || rd->n_gguf++))
        return rfail(rd, "corrupt stream: %s gguf record at byte %" PRIu64,
                     r->payload_len ? "a payload in the" : "a second", start);
    /* a tensor of a type ggml does not have, or of no name, went through every filter to
       ggufpack, the last to refuse it (a breaker's find); ggufcat refuses both in a GGUF */
    char tb[48];
    const char *tp = wp_tensor_head_problem(r, tb, sizeof tb);
    if (tp && nl)
        return rfail(rd, "%s: %s", rl, tp);
    if (tp)   /* a record of no name, placed */
        return rfail(rd, "%s at byte %" PRIu64 ": %s", rl, start, tp);
    /* (offset=-64 and n_tensors=abc were dropped unsaid, the layout then the standard one or
       the count check off: every reader refuses them, a breaker's and a reviewer's find) */
    char ab[128];
    if ((tp = wp_attr_counts_problem(r, ab, sizeof ab)))
        return rfail(rd, "%s: %s", rl, tp);
    char pb[160];
    if ((tp = wp_tensor_payload_problem(r, pb, sizeof pb)))
        return rfail(rd, "%s: %s", rl, tp);
    if (rskip(rd, pad_to(rd->off, rd->align), "record padding"))
        return -1;
    rd->pending = r->payload_len + pad_to(r->payload_len, rd->align);
    if (r->kind != WP_REC_END) {   /* what the index must say of it */
        if (rd->nrec == rd->seen_cap) {
            uint64_t cap = rd->seen_cap ? 2 * rd->seen_cap : 64;
            struct seen *p = realloc(rd->seen, (size_t)cap * sizeof *p);
            if (!p)
                return rfail(rd, "out of memory");
            rd->seen = p, rd->seen_cap = cap;
        }
        rd->seen[rd->nrec] = (struct seen){start, XXH64(name, nl, 0), (uint16_t)r->kind};
    }
    rd->nrec++;
    return 0;
}

/* r's payload (all of it) against the checksum its header gave (rd->pending_sum). */
static int payload_sum_check(wp_reader *rd, const wp_record *r)
{
    char lb[WP_MAX_NAME + 32];
    if (XXH64(r->payload, (size_t)r->payload_len, 0) == rd->pending_sum)
        return 0;
    if (r->kind == WP_REC_END)
        return rfail(rd, "the index (end record): payload checksum mismatch (corrupt data)");
    return rfail(rd, "%s: payload checksum mismatch (corrupt data)", rec_label(r, lb, sizeof lb));
}

int wp_reader_payload(wp_reader *rd, wp_record *r)
{
    /* From a pipe or a zstd frame the length is unchecked: the buffer grows with what
     * arrives (from 64 MiB, doubling), so a lying header ends as a truncated stream, not
     * as an allocation of its length. */
    const uint64_t want = r->payload_len;
    uint64_t have = 0;
    char lb[WP_MAX_NAME + 32];
    do {
        uint64_t next = rd->left ? want : have ? 2 * have : UINT64_C(1) << 26;
        if (next > want)
            next = want;
        if (!wp_record_alloc(r, next))
            return rfail(rd, "%s: out of memory for %" PRIu64 " bytes", rec_label(r, lb, sizeof lb), next);
        if (rread(rd, r->payload + have, (size_t)(next - have), "payload"))
            return -1;
        have = next;
    } while (have < want);
    if (payload_sum_check(rd, r))
        return -1;
    uint64_t pad = pad_to(r->payload_len, rd->align);
    rd->pending = 0;
    return rskip(rd, pad, "payload padding");
}

/* wp_reader_payload for a record whose payload is left in map (size bytes,
 * the whole stream file): r->payload borrowed from it, checked as a copy is,
 * its padding read through rd as a copy's is (wp_record_map_at). */
static int payload_map(wp_reader *rd, wp_record *r, const uint8_t *map, uint64_t size)
{
    const uint64_t at = rd->off, len = r->payload_len;
    if (at > size || len > size - at)
        return rfail(rd, "truncated stream: payload ends at byte %" PRIu64 " (upstream failed or file cut short)",
                     size);
    if (!r->borrowed)
        free(r->payload);
    r->payload = (uint8_t *)(uintptr_t)(map + at);   /* (const in the mapping: never written) */
    r->payload_cap = 0;
    r->borrowed = 1;
    if (payload_sum_check(rd, r))
        return -1;
    rd->pending = 0;
    if (fseeko(rd->f, (off_t)(at + len), SEEK_SET))
        return rfail(rd, "cannot seek to byte %" PRIu64 ": %s", at + len, strerror(errno));
    rd->off = at + len;
    return rskip(rd, pad_to(len, rd->align), "payload padding");
}

static int index_parse(const uint8_t *pl, uint64_t len, uint64_t end_offset, wp_index *ix);
static int record_read_at(FILE *f, const char *path, int copy, uint64_t offset, wp_record *r, uint64_t *end,
                          char *err, size_t errlen);
static int index_tiles(FILE *f, const char *path, int copy, const wp_index *ix, uint64_t end_offset, char *err,
                       size_t errlen);

/* Check the end record's index against what was read: every record's
 * offset, kind and name (a re-sealed index that lies fails here). */
static int check_end(wp_reader *rd, wp_record *r)
{
    uint8_t t[16];
    wp_index ix;
    if (r->payload_len < 16 || get64(r->payload) != rd->nrec - 1 ||
        index_parse(r->payload, r->payload_len, r->offset, &ix))
        return rfail(rd, "corrupt stream: index does not match the records");
    for (uint64_t i = 0; i < ix.count; i++) {
        const struct seen *e = &rd->seen[i];
        if (ix.e[i].offset != e->offset || ix.e[i].kind != e->kind ||
            XXH64(ix.e[i].name, strlen(ix.e[i].name), 0) != e->name_hash) {
            wp_index_free(&ix);
            return rfail(rd, "corrupt stream: index entry %" PRIu64 " does not match the record at byte %" PRIu64,
                         i, e->offset);
        }
    }
    wp_index_free(&ix);
    if (rread(rd, t, sizeof t, "trailer"))
        return -1;
    /* the trailer's own damage named (it was "corrupt stream: bad trailer"), as readers by index say it */
    if (memcmp(t + 8, WP_TRAILER_MAGIC, 8))
        return rfail(rd, "damaged or missing index trailer: the last 8 bytes%s are not \"%s\"",
                     wp_zsrc_framed(rd->src) ? " of the decompressed stream" : "", WP_TRAILER_MAGIC);
    if (get64(t) != r->offset)   /* offsets of the decompressed stream in a framed bundle, as rread's */
        return rfail(rd, "damaged index trailer: it points at byte %" PRIu64 ", the index (end record) is at byte %" PRIu64
                     "%s", get64(t), r->offset, wp_zsrc_framed(rd->src) ? " of the decompressed stream" : "");
    if (wp_zsrc_finish(rd->src))   /* a framed bundle: the frame ends with the stream */
        return rfail(rd, "%s", wp_zsrc_error(rd->src));
    rd->done = 1;
    return 0;
}

int wp_reader_next_header(wp_reader *rd, wp_record *r)
{
    if (rd->done)
        return 0;
    if (read_header(rd, r))
        return -1;
    if (r->kind == WP_REC_END) {
        if (wp_reader_payload(rd, r) || check_end(rd, r))
            return -1;
        return 0;
    }
    return 1;
}

int wp_reader_next(wp_reader *rd, wp_record *r)
{
    int k = wp_reader_next_header(rd, r);
    if (k != 1)
        return k;
    return wp_reader_payload(rd, r) ? -1 : 1;
}

/* ---- random access ------------------------------------------------------- */

/* Parse an end record's payload (u64 count, u64 entries_len, a zstd frame of
 * the entries) into ix: entries_len bounded by what count entries can take and
 * used up exactly, offsets increasing and below end_offset. 0 or -1. */
static int index_parse(const uint8_t *pl, uint64_t len, uint64_t end_offset, wp_index *ix)
{
    memset(ix, 0, sizeof *ix);
    if (len < 16)
        return -1;
    /* before any allocation: every entry's record lies before the end record (a header is 80
     * bytes at least) and holds the entry's name, so neither count nor names can outgrow it
     * (a forged index read by offset, as wprun and a ref's restore do, asked for terabytes) */
    uint64_t n = get64(pl), raw_len = get64(pl + 8);
    if (n > end_offset / 80 || raw_len < 16 * n || raw_len > n * (16 + WP_MAX_NAME) || raw_len > 16 * n + end_offset ||
        ZSTD_getFrameContentSize(pl + 16, (size_t)len - 16) != raw_len)
        return -1;
    uint8_t *raw = malloc(raw_len ? (size_t)raw_len : 1);
    if (!raw || ZSTD_decompress(raw, (size_t)raw_len, pl + 16, (size_t)len - 16) != raw_len ||
        !(ix->e = calloc(n ? (size_t)n : 1, sizeof *ix->e))) {
        free(raw);
        return -1;
    }
    const uint8_t *p = raw, *end = raw + raw_len;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t nl = end - p >= 16 ? get32(p + 12) : 0;
        if (end - p < 16 || (uint64_t)(end - p - 16) < nl || nl > WP_MAX_NAME || get64(p) >= end_offset ||
            (i && get64(p) <= ix->e[i - 1].offset))
            break;
        ix->e[i].offset = get64(p);
        ix->e[i].kind = get16(p + 8);
        ix->e[i].name = strndup((const char *)p + 16, nl);
        ix->count = i + 1;
        if (!ix->e[i].name)
            break;
        p += 16 + nl;
    }
    free(raw);
    if (ix->count != n || p != end) {
        wp_index_free(ix);
        return -1;
    }
    return 0;
}

int wp_stream_framed(FILE *f)
{
    if (!wp_zframe_is(f))
        return 0;
    uint8_t m[8];
    wp_zsrc *z = wp_zsrc_open(f);
    const int is = z && wp_zsrc_read(z, m, sizeof m) == sizeof m && !memcmp(m, WP_STREAM_MAGIC, 8);
    wp_zsrc_free(z);
    rewind(f);
    return is ? 1 : -1;
}

const char *wp_zframe_hint(FILE *f)
{
    return wp_stream_framed(f) > 0 ? "a zstd-framed wpack stream, such as a --dist bundle: unbundle it"
                                   : "a zstd frame: zstd -d it";
}

/* The message for f, a zstd frame that holds no wpack stream: what its content's first bytes
 * are (not_stream), or why they do not decompress (a cut frame was said to hold nothing),
 * else that it holds nothing. f is left at its start. */
static void frame_holds(FILE *f, const char *path, char *err, size_t errlen)
{
    uint8_t h[16];
    wp_zsrc *z = wp_zsrc_open(f);
    const size_t n = z ? wp_zsrc_read(z, h, sizeof h) : 0;
    const char *zerr = z ? wp_zsrc_error(z) : "out of memory", *why = n ? not_stream(h, n, 1) : NULL;
    snprintf(err, errlen, "%s: %s", path, zerr ? zerr : why ? why
                                         : n ? "a zstd frame that does not hold a wpack stream"   /* "WPAC" alone */
                                             : "a zstd frame with nothing in it, not a wpack stream");
    wp_zsrc_free(z);
    rewind(f);
}

/* Why stream file f (size bytes), whose last 8 bytes are not the trailer's
 * magic, ends as it does, into err: its records walked from the start by
 * their headers alone (each header's checksum checked, payloads skipped by
 * seeking), so a file cut short, or one with bytes after its trailer, is
 * named as a reader in order names it, in the same words (the index reader
 * called both a "damaged or missing index trailer": a note's left alone):
 *   "truncated stream: record 'X' at byte N claims P payload bytes, the file
 *    has Q after its header";
 *   "truncated stream: record header ends at byte S (upstream failed or file
 *    cut short)", also for a file cut where a record starts, and alike for
 *    "record padding", "payload", "payload padding" and "trailer";
 *   "corrupt record header at byte N (checksum mismatch)";
 *   "corrupt stream: data after its end (N bytes after the trailer at byte T)";
 *   "bad stream alignment A".
 * Where the walk meets no record, or a whole trailer in its place, the
 * trailer itself is what is damaged: the message says so. of: "" or
 * " of the decompressed stream". */
static void trailer_missing(FILE *f, uint64_t size, const char *path, const char *of, char *err, size_t errlen)
{
    const char *upstream = " (upstream failed or file cut short)";
    uint8_t h[16];
    char lb[WP_MAX_NAME + 32];
    uint64_t o = 16;
    const unsigned align = !fseeko(f, 0, SEEK_SET) && fread(h, 1, 16, f) == 16 ? get32(h + 12) : 0;
    if (!align || align > 4096 || (align & (align - 1))) {   /* as the stream header's reader says it */
        snprintf(err, errlen, "%s: bad stream alignment %u", path, align);
        return;
    }
    for (;;) {
        uint8_t fx[REC_FIXED];
        const size_t want = size - o < REC_FIXED ? (size_t)(size - o) : REC_FIXED;
        if (fseeko(f, (off_t)o, SEEK_SET) || fread(fx, 1, want, f) != want || (want >= 4 && get32(fx) != REC_TAG))
            break;   /* no record here: the trailer (or what came before it) is damaged */
        const char *cut = NULL;   /* the part the file ends in */
        const uint32_t nl = want < REC_FIXED ? 0 : get32(fx + 12), al = want < REC_FIXED ? 0 : get32(fx + 48);
        if (want == REC_FIXED && (nl > WP_MAX_NAME || al > MAX_ATTRS)) {
            snprintf(err, errlen, "%s: corrupt record header at byte %" PRIu64, path, o);
            return;
        }
        const uint64_t hl = header_len(nl, al);
        if (want < REC_FIXED || hl > size - o) {   /* (o == size too: cut where a record starts) */
            snprintf(err, errlen, "%s: truncated stream: record header ends at byte %" PRIu64 "%s%s", path, size, of,
                     upstream);
            return;
        }
        uint8_t *hd = malloc(hl);   /* the whole header, for its checksum and name */
        if (!hd || fseeko(f, (off_t)o, SEEK_SET) || fread(hd, 1, hl, f) != hl) {
            snprintf(err, errlen, "%s: %s at byte %" PRIu64, path, hd ? "read error" : "out of memory", o);
            free(hd);
            return;
        }
        const int sum_ok = XXH64(hd, hl - 8, 0) == get64(hd + hl - 8);
        char name[WP_MAX_NAME + 1];
        memcpy(name, hd + REC_FIXED, nl);
        name[nl] = 0;
        free(hd);
        if (!sum_ok) {
            snprintf(err, errlen, "%s: corrupt record header at byte %" PRIu64 " (checksum mismatch)", path, o);
            return;
        }
        wp_record r = {.name = name, .kind = get16(fx + 4)};
        rec_label(&r, lb, sizeof lb);
        const uint64_t len = get64(fx + 56), after = size - o - hl;
        const uint64_t pl = o + hl + pad_to(o + hl, align), next = pl + len + pad_to(len, align);
        if (len > after)   /* the in-order reader's check, before its record padding */
            snprintf(err, errlen, "%s: truncated stream: %s at byte %" PRIu64 " claims %" PRIu64 " payload bytes, the "
                     "%s has %" PRIu64 " after its header", path, lb, o, len, of[0] ? "decompressed stream" : "file",
                     after);
        else if ((cut = pl > size ? "record padding" : pl + len > size ? "payload" : next > size ? "payload padding" : NULL))
            snprintf(err, errlen, "%s: truncated stream: %s ends at byte %" PRIu64 "%s%s", path, cut, size, of,
                     upstream);
        else if (r.kind == WP_REC_END && size - next > 16)
            snprintf(err, errlen, "%s: corrupt stream: data after its end (%" PRIu64 " %s after the trailer at byte %"
                     PRIu64 "%s)", path, size - next - 16, size - next - 16 == 1 ? "byte" : "bytes", next, of);
        else if (r.kind == WP_REC_END && size - next < 16)
            snprintf(err, errlen, "%s: truncated stream: trailer ends at byte %" PRIu64 "%s%s", path, size, of,
                     upstream);
        else if (r.kind == WP_REC_END)
            break;   /* a whole trailer in its place: its magic is what is damaged */
        else {
            o = next;
            continue;
        }
        return;
    }
    snprintf(err, errlen, "%s: damaged or missing index trailer: the last 8 bytes%s are not \"%s\"", path, of,
             WP_TRAILER_MAGIC);
}

/* copy: f is a zstd frame's content decompressed to a file (wp_zframe_plain), named by path,
 * so offsets and sizes in messages are said to be "of the decompressed stream". */
static int index_read(FILE *f, const char *path, int copy, wp_index *ix, char *err, size_t errlen)
{
    const char *of = copy ? " of the decompressed stream" : "";
    uint8_t t[16];
    wp_record r;
    memset(ix, 0, sizeof *ix);
    path = input_name(path);
    const int framed = wp_stream_framed(f);
    if (framed) {
        if (framed > 0 && copy)   /* a --dist bundle zstd'd again (it was told to "unbundle it") */
            snprintf(err, errlen, "%s: not a wpack stream (a zstd frame inside a zstd frame: zstd -d it once)", path);
        else if (framed > 0)
            snprintf(err, errlen, "%s: a zstd-framed distribution bundle (laneinterleave --dist) has no random "
                     "access: unbundle it, or `zstd -d` it to a plain bundle", path);
        else   /* what the frame holds, as readers in order say it (it was said of a zstd'd GGUF) */
            frame_holds(f, path, err, errlen);
        return -1;
    }
    off_t size;
    uint8_t head[16] = {0};
    const size_t nh = fseeko(f, 0, SEEK_SET) ? 0 : fread(head, 1, sizeof head, f);
    if (not_stream(head, nh, copy)) {   /* a short file too, when what it has is not the magic */
        /* worded as the stream reader words it, with the way on (wprun said only "a GGUF
           file, not a wpack stream") */
        snprintf(err, errlen, "%s: %s", path, not_stream(head, nh, copy));
        return -1;
    }
    if (fseeko(f, 0, SEEK_END) || (size = ftello(f)) < 0) {
        snprintf(err, errlen, "%s: not a seekable wpack stream file", path);
        return -1;
    }
    /* shorter than a stream header and a trailer: said as read in order (it was "truncated wpack
       stream (shorter than a header and a trailer)", where tsinfo < FILE said where: a
       re-tester's find) */
    if (size == 0) {
        snprintf(err, errlen, "%s: empty file, not a wpack stream", path);
        return -1;
    }
    if (size < 16) {
        snprintf(err, errlen, "%s: truncated stream: stream header ends at byte %" PRIu64 "%s (upstream failed or "
                 "file cut short)", path, (uint64_t)size, of);
        return -1;
    }
    if (size < 32) {
        trailer_missing(f, (uint64_t)size, path, of, err, errlen);
        return -1;
    }
    if (fseeko(f, -16, SEEK_END) || fread(t, 1, 16, f) != 16) {
        snprintf(err, errlen, "%s: cannot read its last 16 bytes: %s", path, strerror(errno ? errno : EIO));
        return -1;
    }
    /* cut short, bytes appended or its end damaged: read in order, only the last is left (the
       others are a truncated stream, data after its end), and it is said alike */
    if (memcmp(t + 8, WP_TRAILER_MAGIC, 8)) {
        trailer_missing(f, (uint64_t)size, path, of, err, errlen);
        return -1;
    }
    /* the trailer's offset: a record's tag there, or the trailer is what is damaged (it was
       called a truncated stream, or a stream without a record at some byte) */
    const uint64_t at = get64(t);
    uint8_t tag[4];
    if (at >= (uint64_t)size) {
        snprintf(err, errlen, "%s: damaged index trailer: it points at byte %" PRIu64 ", past the end of the %s (%"
                 PRIu64 " bytes)", path, at, copy ? "decompressed stream" : "file", (uint64_t)size);
        return -1;
    }
    if (at < 16 || (uint64_t)size - at < REC_FIXED + 16 || fseeko(f, (off_t)at, SEEK_SET) ||
        fread(tag, 1, 4, f) != 4 || get32(tag) != REC_TAG) {
        snprintf(err, errlen, "%s: damaged index trailer: it points at byte %" PRIu64 " of %" PRIu64 "%s, where no "
                 "record starts", path, at, (uint64_t)size, of);
        return -1;
    }
    wp_record_init(&r);
    uint64_t rend;
    if (record_read_at(f, path, copy, at, &r, &rend, err, errlen)) {
        wp_record_free(&r);
        return -1;
    }
    if (r.kind == WP_REC_END && rend + 16 != (uint64_t)size) {   /* cat a b: b's trailer, a's index */
        if (rend + 16 < (uint64_t)size)
            snprintf(err, errlen, "%s: corrupt stream: data after its end (%" PRIu64 " bytes between the index and "
                     "the trailer)", path, (uint64_t)size - 16 - rend);
        else
            snprintf(err, errlen, "%s: corrupt index: the end record runs into the trailer", path);
        wp_record_free(&r);
        return -1;
    }
    int bad = r.kind != WP_REC_END || index_parse(r.payload, r.payload_len, r.offset, ix);
    uint64_t end = r.offset;
    wp_record_free(&r);
    if (!bad && index_tiles(f, path, copy, ix, end, err, errlen)) {
        wp_index_free(ix);
        return -1;
    }
    if (bad) {
        snprintf(err, errlen, "%s: corrupt index", path);
        return -1;
    }
    return 0;
}

int wp_index_read(FILE *f, const char *path, wp_index *ix, char *err, size_t errlen)
{
    return index_read(f, path, 0, ix, err, errlen);
}

int wp_index_read_decompressed(FILE *f, const char *path, wp_index *ix, char *err, size_t errlen)
{
    return index_read(f, path, 1, ix, err, errlen);
}

const wp_index_entry *wp_index_find(const wp_index *ix, unsigned kind, const char *name)
{
    for (uint64_t i = 0; i < ix->count; i++)
        if ((!kind || ix->e[i].kind == kind) && ix->e[i].name && !strcmp(ix->e[i].name, name))
            return &ix->e[i];
    return NULL;
}

void wp_index_free(wp_index *ix)
{
    for (uint64_t i = 0; i < ix->count; i++)
        free(ix->e[i].name);
    free(ix->e);
    memset(ix, 0, sizeof *ix);
}

int wp_rec_not_bundle(unsigned kind, const char *name, char *why, size_t len)
{
    if (kind == WP_REC_KV) {
        snprintf(why, len, "a tensor stream, not a bundle (its key/value records are not packed: "
                           "laneinterleave makes the bundle)");
        return 1;
    }
    if (kind == WP_REC_HIST || kind == WP_REC_TABLE) {   /* wp_restore_put's words too */
        snprintf(why, len, "record '%s': a %s record: not a bundle (histogram's or huffbuild's output: "
                           "laneinterleave makes the bundle)", name, wp_rec_kind_name(kind));
        return 1;
    }
    return 0;
}

int wp_index_not_bundle(const wp_index *ix, char *why, size_t len)
{
    int packed = 0;
    for (uint64_t i = 0; i < ix->count; i++) {
        if (wp_rec_not_bundle(ix->e[i].kind, ix->e[i].name, why, len))
            return 1;
        packed |= wp_rec_is_bundle(ix->e[i].kind);
    }
    if (!packed)
        snprintf(why, len, "a tensor stream, not a bundle (it has no kvpack, coded, zstd or ref record: "
                           "laneinterleave makes the bundle)");
    return !packed;
}

/* Set up rd to read the record at `offset` of the stream file f (its header
 * checked first). 0, or -1 with a message in err; wp_zsrc_free(rd->src) and
 * free(rd->seen) after. */
static int reader_at(FILE *f, const char *path, int copy, uint64_t offset, wp_reader *rd_out, char *err,
                     size_t errlen)
{
    wp_reader rd;
    uint8_t h[16];
    memset(&rd, 0, sizeof rd);
    rd.f = f;
    rd.copy = copy;
    snprintf(rd.path, sizeof rd.path, "%s", input_name(path));
    if (fseeko(f, 0, SEEK_SET) || fread(h, 1, 16, f) != 16 || memcmp(h, WP_STREAM_MAGIC, 8)) {
        snprintf(err, errlen, "%s: not a wpack stream", rd.path);
        return -1;
    }
    if (get32(h + 8) != WP_STREAM_VERSION) {
        snprintf(err, errlen, "%s: unsupported stream version %u (this wpack reads %u)", rd.path, get32(h + 8),
                 WP_STREAM_VERSION);
        return -1;
    }
    rd.align = get32(h + 12);
    if (!rd.align || rd.align > 4096 || (rd.align & (rd.align - 1)) || fseeko(f, (off_t)offset, SEEK_SET)) {
        snprintf(err, errlen, "%s: bad stream header or offset", rd.path);
        return -1;
    }
    rd.off = offset;
    uint64_t left = file_left(f, NULL);
    rd.left = left ? left + offset : 0;
    if (!(rd.src = wp_zsrc_plain(f))) {
        snprintf(err, errlen, "%s: out of memory", rd.path);
        return -1;
    }
    *rd_out = rd;
    return 0;
}

/* wp_record_read_at, also giving where the record ends (its padding included) in *end. */
static int record_read_at(FILE *f, const char *path, int copy, uint64_t offset, wp_record *r, uint64_t *end,
                          char *err, size_t errlen)
{
    wp_reader rd;
    if (reader_at(f, path, copy, offset, &rd, err, errlen))
        return -1;
    int rc = read_header(&rd, r) || wp_reader_payload(&rd, r) ? -1 : 0;
    if (rc)
        snprintf(err, errlen, "%s", rd.err);
    *end = rd.off;
    wp_zsrc_free(rd.src);
    free(rd.seen);
    return rc;
}

int wp_record_map_at(FILE *f, const uint8_t *map, uint64_t size, const char *path, uint64_t offset, wp_record *r,
                     char *err, size_t errlen)
{
    wp_reader rd;
    if (reader_at(f, path, 0, offset, &rd, err, errlen))
        return -1;
    /* a stream aligned to 1 or 2 bytes is read as a copy: its u32 words (a bundle's lane words
       and offsets) would be loaded misaligned in place (undefined behaviour: a breaker's UBSan find) */
    int rc = read_header(&rd, r) || (rd.align < 4 ? wp_reader_payload(&rd, r) : payload_map(&rd, r, map, size)) ? -1 : 0;
    if (rc)
        snprintf(err, errlen, "%s", rd.err);
    wp_zsrc_free(rd.src);
    free(rd.seen);
    return rc;
}

int wp_record_read_at(FILE *f, const char *path, uint64_t offset, wp_record *r, char *err, size_t errlen)
{
    uint64_t end;
    return record_read_at(f, path, 0, offset, r, &end, err, errlen);
}

int wp_record_read_at_decompressed(FILE *f, const char *path, uint64_t offset, wp_record *r, char *err,
                                   size_t errlen)
{
    uint64_t end;
    return record_read_at(f, path, 1, offset, r, &end, err, errlen);
}

/* The index tiles the stream: entry 0 at byte 16, each next entry where the
 * record before it ends (its header, padding and payload as its header says),
 * the last one's end at the end record, each header's kind and name the
 * entry's. Only headers are read. Without it, entries could lead to copies of
 * records hidden in another's payload, which readers by index (wprun) would
 * take while readers in order refuse the file. 0, or -1 with a message in
 * err: a header's own problem, or which entry does not tile. */
static int index_tiles(FILE *f, const char *path, int copy, const wp_index *ix, uint64_t end_offset, char *err,
                       size_t errlen)
{
    wp_reader rd;   /* one reader, moved from header to header */
    if (reader_at(f, path, copy, 16, &rd, err, errlen))
        return -1;
    uint64_t at = 16, i = 0;
    wp_record r;
    wp_record_init(&r);
    int rc = 0;
    for (; i < ix->count; i++) {
        if (ix->e[i].offset != at || fseeko(f, (off_t)at, SEEK_SET))
            break;
        rd.off = at;
        rd.pending = 0;
        if (read_header(&rd, &r)) {
            snprintf(err, errlen, "%s", rd.err);
            rc = -1;
            break;
        }
        if (r.kind != ix->e[i].kind || strcmp(r.name, ix->e[i].name))
            break;
        at = rd.off + r.payload_len + pad_to(r.payload_len, rd.align);
    }
    wp_record_free(&r);
    wp_zsrc_free(rd.src);
    free(rd.seen);
    if (rc == 0 && (i < ix->count || at != end_offset)) {
        snprintf(err, errlen, "%s: corrupt index: entry %" PRIu64 " does not match the record at byte %" PRIu64 "%s",
                 input_name(path), i, at, copy ? " of the decompressed stream" : "");
        rc = -1;
    }
    return rc;
}

/* ---- writer -------------------------------------------------------------- */

struct wp_writer {
    FILE     *f;
    wp_zsink *sink;        /* f as it is, or one zstd frame (wp_writer_open_framed) */
    char      path[512];
    unsigned  align;
    uint64_t  off;
    uint8_t  *index;       /* serialised index entries */
    size_t    index_len, index_cap;
    uint64_t  count;
    char      err[768];
};

static int wfail(wp_writer *w, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(w->err, sizeof w->err, "%s: ", w->path);
    va_start(ap, fmt);
    vsnprintf(w->err + n, sizeof w->err - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static int wwrite(wp_writer *w, const void *buf, size_t n)
{
    if (n && wp_zsink_write(w->sink, buf, n))
        return wfail(w, "write error: %s", strerror(errno));
    w->off += n;
    return 0;
}

static int wpad(wp_writer *w)
{
    static const uint8_t zero[4096];
    return wwrite(w, zero, (size_t)pad_to(w->off, w->align));
}

wp_writer *wp_writer_open(FILE *f, const char *path, unsigned align, char *err, size_t errlen)
{
    return wp_writer_open_framed(f, path, align, 0, err, errlen);
}

wp_writer *wp_writer_open_framed(FILE *f, const char *path, unsigned align, int zlevel, char *err, size_t errlen)
{
    wp_writer *w = calloc(1, sizeof *w);
    uint8_t h[16];
    if (!align)
        align = WP_STREAM_ALIGN;
    if (!w || align > 4096 || (align & (align - 1)) || !(w->sink = wp_zsink_open(f, zlevel))) {
        snprintf(err, errlen, "%s: %s", path ? path : "stdout",
                 !w ? "out of memory" : w->sink || align > 4096 || (align & (align - 1)) ? "bad alignment"
                                                                                    : "bad zstd level or out of memory");
        free(w);
        return NULL;
    }
    w->f = f;
    w->align = align;
    snprintf(w->path, sizeof w->path, "%s", (!path || !strcmp(path, "-")) ? "stdout" : path);
    memcpy(h, WP_STREAM_MAGIC, 8);
    put32(h + 8, WP_STREAM_VERSION);
    put32(h + 12, align);
    if (wwrite(w, h, sizeof h)) {
        snprintf(err, errlen, "%s", w->err);
        wp_zsink_free(w->sink);
        free(w);
        return NULL;
    }
    return w;
}

uint64_t wp_writer_offset(const wp_writer *w) { return w->off; }
const char *wp_writer_error(const wp_writer *w) { return w->err; }

static int index_add(wp_writer *w, uint64_t off, uint16_t kind, const char *name)
{
    size_t nl = strlen(name), need = w->index_len + 16 + nl;
    if (need > w->index_cap) {
        size_t cap = need * 2 + 256;
        uint8_t *p = realloc(w->index, cap);
        if (!p)
            return wfail(w, "out of memory");
        w->index = p;
        w->index_cap = cap;
    }
    uint8_t *e = w->index + w->index_len;
    put64(e, off);
    put16(e + 8, kind);
    put16(e + 10, 0);
    put32(e + 12, (uint32_t)nl);
    memcpy(e + 16, name, nl);
    w->index_len = need;
    w->count++;
    return 0;
}

static int put_record(wp_writer *w, const wp_record *r)
{
    size_t nl = r->name ? strlen(r->name) : 0, al = r->attrs ? strlen(r->attrs) : 0;
    if (nl > WP_MAX_NAME || al > MAX_ATTRS || r->n_dims < 0 || r->n_dims > WP_MAX_DIMS)
        return wfail(w, "record '%s': bad name, attributes or shape", r->name ? r->name : "");
    if (r->attrs_lost)
        return wfail(w, "record '%s': %s", r->name ? r->name : "", WP_ATTRS_LOST);
    size_t hl = (size_t)header_len(nl, al);
    uint8_t *h = malloc(hl);
    if (!h)
        return wfail(w, "out of memory");
    encode_header(r, XXH64(r->payload_len ? (const void *)r->payload : "", (size_t)r->payload_len, 0), h);
    int rc = wwrite(w, h, hl) || wpad(w) || wwrite(w, r->payload, (size_t)r->payload_len) || wpad(w);
    free(h);
    return rc ? -1 : 0;
}

int wp_writer_put(wp_writer *w, const wp_record *r)
{
    if (r->kind == WP_REC_END)
        return wfail(w, "end records are written by the writer itself");
    if (index_add(w, w->off, r->kind, r->name ? r->name : ""))
        return -1;
    return put_record(w, r);
}

int wp_writer_close(wp_writer *w, char *err, size_t errlen)
{
    wp_record end;
    uint8_t t[16];
    int rc = -1;
    wp_record_init(&end);
    end.kind = WP_REC_END;
    end.name = (char *)"";
    end.attrs = (char *)"";
    uint64_t end_off = w->off;
    size_t cap = ZSTD_compressBound(w->index_len);
    uint8_t *p = malloc(16 + cap);
    if (!p) {
        wfail(w, "out of memory");
        goto out;
    }
    put64(p, w->count);
    put64(p + 8, w->index_len);
    size_t z = ZSTD_compress(p + 16, cap, w->index_len ? w->index : (uint8_t *)"", w->index_len, 19);
    if (ZSTD_isError(z)) {
        wfail(w, "cannot compress the index");
        goto out;
    }
    end.payload = p;
    end.payload_len = 16 + z;
    put64(t, end_off);
    memcpy(t + 8, WP_TRAILER_MAGIC, 8);
    if (put_record(w, &end) || wwrite(w, t, sizeof t))
        goto out;
    if (wp_zsink_finish(w->sink)) {
        wfail(w, "write error: %s", strerror(errno));
        goto out;
    }
    rc = 0;
out:
    if (rc && err)
        snprintf(err, errlen, "%s", w->err);
    wp_zsink_free(w->sink);
    free(p);
    free(w->index);
    free(w);
    return rc;
}
