/* gguf_file.c - GGUF reading (file → records) and writing (records → file).
 * Format: llama.cpp ggml/src/gguf.cpp (gguf_init_from_file_impl,
 * gguf_write_to_buf); see gguf_file.h for the stream mapping. */
#include "gguf_file.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ggml_type.h"
#include "names.h"
#include "safetensors.h"
#include "spool.h"
#include "text.h"
#include "zframe.h"

#define MAX_STRING   (UINT64_C(1) << 31)

static const int64_t scalar_size[WP_GGUF_TYPE_COUNT] = {
    [WP_GGUF_U8] = 1, [WP_GGUF_I8] = 1, [WP_GGUF_U16] = 2, [WP_GGUF_I16] = 2,
    [WP_GGUF_U32] = 4, [WP_GGUF_I32] = 4, [WP_GGUF_F32] = 4, [WP_GGUF_BOOL] = 1,
    [WP_GGUF_STRING] = 0, [WP_GGUF_ARRAY] = 0, [WP_GGUF_U64] = 8,
    [WP_GGUF_I64] = 8, [WP_GGUF_F64] = 8,
};

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i); }
static void wr64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> 8 * i); }
static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

int64_t wp_gguf_kv_uint(const wp_record *kv)
{
    const uint8_t *p = kv->payload;
    uint64_t n = kv->payload_len;
    uint32_t t = kv->type;
    if (t == WP_GGUF_ARRAY) {
        if (n < 12 || rd64(p + 4) == 0)
            return -1;
        t = rd32(p);
        p += 12;
        n -= 12;
    }
    switch (t) {
    case WP_GGUF_U8: case WP_GGUF_I8: return n >= 1 ? p[0] : -1;
    case WP_GGUF_U16: case WP_GGUF_I16: return n >= 2 ? (p[0] | p[1] << 8) : -1;
    case WP_GGUF_U32: case WP_GGUF_I32: return n >= 4 ? (int64_t)rd32(p) : -1;
    case WP_GGUF_U64: case WP_GGUF_I64: return n >= 8 ? (int64_t)rd64(p) : -1;
    }
    return -1;
}

int wp_gguf_kv_str(const wp_record *kv, char *buf, size_t n)
{
    if (kv->type != WP_GGUF_STRING || kv->payload_len < 8 || !n)
        return -1;
    const uint64_t l = rd64(kv->payload);
    if (l >= n || l > kv->payload_len - 8)
        return -1;
    memcpy(buf, kv->payload + 8, (size_t)l);
    buf[l] = 0;
    return 0;
}

int wp_gguf_kv_set(wp_record *kv, const char *key, const char *str, uint32_t v)
{
    kv->kind = WP_REC_KV;
    kv->type = str ? WP_GGUF_STRING : WP_GGUF_U32;
    kv->n_dims = 0;
    const size_t n = str ? strlen(str) : 4;
    if (wp_record_set_name(kv, key) || !wp_record_alloc(kv, str ? 8 + n : 4))
        return -1;
    if (str) {
        wr64(kv->payload, (uint64_t)n);
        memcpy(kv->payload + 8, str, n);
    } else {
        wr32(kv->payload, v);
    }
    return 0;
}

uint64_t wp_gguf_kv_bytes(const wp_record *kv) { return 8 + strlen(kv->name ? kv->name : "") + 4 + kv->payload_len; }

uint64_t wp_gguf_tinfo_bytes(const char *name, int n_dims)
{
    return 8 + strlen(name) + 4 + 8 * (uint64_t)n_dims + 4 + 8;
}

const char *wp_gguf_type_name(uint32_t type)
{
    static const char *n[WP_GGUF_TYPE_COUNT] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32",
                                               "bool", "string", "array", "u64", "i64", "f64"};
    return type < WP_GGUF_TYPE_COUNT ? n[type] : "?";
}

int64_t wp_gguf_value_size(uint32_t type, const uint8_t *buf, uint64_t len)
{
    if (type >= WP_GGUF_TYPE_COUNT)
        return -1;
    if (type == WP_GGUF_STRING) {
        if (len < 8 || rd64(buf) > len - 8)
            return -1;
        return (int64_t)(8 + rd64(buf));
    }
    if (type != WP_GGUF_ARRAY)
        return (uint64_t)scalar_size[type] <= len ? scalar_size[type] : -1;
    if (len < 12)
        return -1;
    uint32_t et = rd32(buf);
    uint64_t n = rd64(buf + 4), off = 12;
    if (et >= WP_GGUF_TYPE_COUNT || et == WP_GGUF_ARRAY)
        return -1;
    if (et != WP_GGUF_STRING) {
        if (n > (len - off) / (uint64_t)scalar_size[et])
            return -1;
        return (int64_t)(off + n * (uint64_t)scalar_size[et]);
    }
    for (uint64_t i = 0; i < n; i++) {
        int64_t s = wp_gguf_value_size(WP_GGUF_STRING, buf + off, len - off);
        if (s < 0)
            return -1;
        off += (uint64_t)s;
    }
    return (int64_t)off;
}

static void scalar_str(uint32_t t, const uint8_t *p, char *out, size_t n)
{
    union { uint32_t u; float f; } u32;
    union { uint64_t u; double f; } u64;
    switch (t) {
    case WP_GGUF_U8: snprintf(out, n, "%u", p[0]); break;
    case WP_GGUF_I8: snprintf(out, n, "%d", (int8_t)p[0]); break;
    case WP_GGUF_U16: snprintf(out, n, "%u", (unsigned)(p[0] | p[1] << 8)); break;
    case WP_GGUF_I16: snprintf(out, n, "%d", (int16_t)(p[0] | p[1] << 8)); break;
    case WP_GGUF_U32: snprintf(out, n, "%" PRIu32, rd32(p)); break;
    case WP_GGUF_I32: snprintf(out, n, "%" PRId32, (int32_t)rd32(p)); break;
    case WP_GGUF_F32: u32.u = rd32(p); snprintf(out, n, "%g", u32.f); break;
    case WP_GGUF_BOOL: snprintf(out, n, "%s", p[0] ? "true" : "false"); break;
    case WP_GGUF_U64: snprintf(out, n, "%" PRIu64, rd64(p)); break;
    case WP_GGUF_I64: snprintf(out, n, "%" PRId64, (int64_t)rd64(p)); break;
    case WP_GGUF_F64: u64.u = rd64(p); snprintf(out, n, "%g", u64.f); break;
    default: snprintf(out, n, "?");
    }
}

void wp_gguf_value_str(uint32_t type, const uint8_t *buf, uint64_t len, char *out, size_t n)
{
    if (!n)
        return;
    if (wp_gguf_value_size(type, buf, len) < 0) {
        snprintf(out, n, "(malformed)");
    } else if (type == WP_GGUF_STRING) {
        /* a control byte, NUL included, as \xNN, as names are written (a NUL cut the
           value, and "lla\0ma" listed as "lla"; a newline was a blank: a breaker's find) */
        const uint64_t sl = rd64(buf);
        const int show = sl > 48 ? 48 : (int)sl;
        size_t k = 0;
        if (n < 8) {
            out[0] = 0;
            return;
        }
        out[k++] = '"';
        for (int i = 0; i < show && k + 5 < n; i++) {
            const unsigned char c = buf[8 + i];
            if (c < 32 || c == 127)
                k += (size_t)snprintf(out + k, n - k, "\\x%02x", c);
            else
                out[k++] = (char)c;
        }
        snprintf(out + k, n - k, "%s\"", sl > 48 ? "..." : "");
    } else if (type == WP_GGUF_ARRAY) {
        snprintf(out, n, "[%s x %" PRIu64 "]", wp_gguf_type_name(rd32(buf)), rd64(buf + 4));
    } else {
        scalar_str(type, buf, out, n);
    }
}

/* ---- reading -------------------------------------------------------------- */

struct tinfo {
    char    *name;
    int      n_dims;
    int64_t  ne[WP_MAX_DIMS];
    uint32_t type;
    uint64_t offset, size;
};

struct wp_gguf_in {
    FILE    *f;
    char     path[512];
    char     err[768];
    uint64_t file_size, pos;
    uint32_t version;
    uint64_t n_kv, n_tensors;
    uint64_t alignment;
    uint64_t next_kv, next_tensor;
    int      header_sent;
    int      zst;               /* decompressed from a zstd frame: the gguf record's name drops ".zst" */
    char   **keys;              /* keys, in file order */
    wp_names *key_set;          /* the same, for duplicates */
    uint32_t *kv_type;          /* value type of each key */
    uint64_t *kv_off, *kv_len;  /* where each value lies in the file */
    struct tinfo *ti;           /* tensor infos, parsed after the KVs */
    uint64_t data_start;
    uint8_t *buf;               /* value buffer */
    uint64_t buf_len, buf_cap;
};

static int gfail(wp_gguf_in *g, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(g->err, sizeof g->err, "%s: ", g->path);
    va_start(ap, fmt);
    vsnprintf(g->err + n, sizeof g->err - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static uint64_t remaining(const wp_gguf_in *g) { return g->file_size - g->pos; }

/* The file ends before the n bytes of `what` at the current position. */
static int past_end(wp_gguf_in *g, const char *what, uint64_t n)
{
    return gfail(g, "truncated file: the %s at byte %" PRIu64 " needs %" PRIu64 " bytes, the file ends at byte %" PRIu64,
                 what, g->pos, n, g->file_size);
}

/* Read n bytes at the current position into dst. */
static int gread(wp_gguf_in *g, void *dst, uint64_t n, const char *what)
{
    if (n > remaining(g))   /* (said "header runs past the end (byte 4)" of an 8-byte file) */
        return past_end(g, what, n);
    if (n && fread(dst, 1, (size_t)n, g->f) != n)
        return gfail(g, "read error in %s: %s", what, ferror(g->f) ? strerror(errno) : "unexpected end");
    g->pos += n;
    return 0;
}

/* Append n bytes from the file to the value buffer. */
static int gread_buf(wp_gguf_in *g, uint64_t n, const char *what)
{
    if (n > remaining(g))
        return past_end(g, what, n);
    if (g->buf_len + n > g->buf_cap) {
        uint64_t cap = (g->buf_len + n) * 2 + 64;
        uint8_t *p = realloc(g->buf, (size_t)cap);
        if (!p)
            return gfail(g, "out of memory reading %s", what);
        g->buf = p;
        g->buf_cap = cap;
    }
    if (gread(g, g->buf + g->buf_len, n, what))
        return -1;
    g->buf_len += n;
    return 0;
}

static int gread_u32(wp_gguf_in *g, uint32_t *v, const char *what)
{
    uint8_t b[4];
    if (gread(g, b, 4, what))
        return -1;
    *v = rd32(b);
    return 0;
}

static int gread_u64(wp_gguf_in *g, uint64_t *v, const char *what)
{
    uint8_t b[8];
    if (gread(g, b, 8, what))
        return -1;
    *v = rd64(b);
    return 0;
}

/* A GGUF string (u64 length + bytes) into a new NUL-terminated string. */
static char *gread_string(wp_gguf_in *g, const char *what)
{
    uint64_t n;
    if (gread_u64(g, &n, what))
        return NULL;
    if (n > remaining(g) || n > MAX_STRING) {
        gfail(g, "%s length %" PRIu64 " is larger than the file", what, n);
        return NULL;
    }
    char *s = malloc((size_t)n + 1);
    if (!s) {
        gfail(g, "out of memory");
        return NULL;
    }
    if (gread(g, s, n, what)) {
        free(s);
        return NULL;
    }
    s[n] = 0;
    if (strlen(s) != n) {
        gfail(g, "%s contains a NUL byte", what);
        free(s);
        return NULL;
    }
    return s;
}

/* Read one value of `type` into the value buffer (appending). */
static int gread_value(wp_gguf_in *g, uint32_t type, const char *key)
{
    if (type >= WP_GGUF_TYPE_COUNT)
        return gfail(g, "key '%s': unknown value type %" PRIu32, key, type);
    if (type == WP_GGUF_STRING) {
        uint64_t n;
        if (gread_buf(g, 8, "string length"))
            return -1;
        n = rd64(g->buf + g->buf_len - 8);
        if (n > remaining(g))
            return gfail(g, "key '%s': string length %" PRIu64 " is larger than the file", key, n);
        return gread_buf(g, n, "string");
    }
    if (type != WP_GGUF_ARRAY)
        return gread_buf(g, (uint64_t)scalar_size[type], "value");
    if (gread_buf(g, 12, "array header"))
        return -1;
    uint32_t et = rd32(g->buf + g->buf_len - 12);
    uint64_t n = rd64(g->buf + g->buf_len - 8);
    if (et >= WP_GGUF_TYPE_COUNT || et == WP_GGUF_ARRAY)
        return gfail(g, "key '%s': bad array element type %" PRIu32, key, et);
    if (et != WP_GGUF_STRING) {
        if (n > remaining(g) / (uint64_t)scalar_size[et])
            return gfail(g, "key '%s': array of %" PRIu64 " elements is larger than the file", key, n);
        return gread_buf(g, n * (uint64_t)scalar_size[et], "array");
    }
    if (n > remaining(g) / 8)
        return gfail(g, "key '%s': array of %" PRIu64 " strings is larger than the file", key, n);
    for (uint64_t i = 0; i < n; i++)
        if (gread_value(g, WP_GGUF_STRING, key))
            return -1;
    return 0;
}

/* Parse and check key/value i at the current position; remember where its
 * value lies. */
static int read_kv(wp_gguf_in *g, uint64_t i)
{
    uint32_t type;
    char *key = gread_string(g, "key");
    if (!key)
        return -1;
    g->keys[i] = key;
    if (strlen(key) > WP_MAX_NAME)
        return gfail(g, "key of %zu bytes is longer than %u", strlen(key), WP_MAX_NAME);
    const int64_t was = wp_names_put(g->key_set, key, (int64_t)i);
    if (was == -2)
        return gfail(g, "out of memory");
    if (was >= 0)
        return gfail(g, "duplicate key '%s'", key);
    if (gread_u32(g, &type, "value type"))
        return -1;
    g->kv_type[i] = type;
    g->kv_off[i] = g->pos;
    g->buf_len = 0;
    if (gread_value(g, type, key))
        return -1;
    g->kv_len[i] = g->buf_len;
    if (!strcmp(key, "general.alignment")) {
        uint32_t a = type == WP_GGUF_U32 ? rd32(g->buf) : 0;
        if (!a || (a & (a - 1)))
            return gfail(g, "general.alignment must be a power-of-two u32");
        g->alignment = a;
    }
    return 0;
}

static int read_tensor_infos(wp_gguf_in *g);

static wp_gguf_in *open_header(wp_gguf_in *g, char *err, size_t errlen);

wp_gguf_in *wp_gguf_open(const char *path, char *err, size_t errlen)
{
    if (!*path) {   /* (it said ": No such file or directory") */
        snprintf(err, errlen, "an empty file name (give the file's name)");
        return NULL;
    }
    wp_gguf_in *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    snprintf(g->path, sizeof g->path, "%s", path);
    g->alignment = WP_GGUF_DEFAULT_ALIGNMENT;
    if (!strcmp(path, "-")) {   /* (said "No such file or directory") */
        gfail(g, "not a regular file (standard input: give the file's name)");
        goto fail;
    }
    g->f = fopen(path, "rb");
    if (!g->f) {
        gfail(g, "%s", strerror(errno));
        goto fail;
    }
    return open_header(g, err, errlen);
fail:
    snprintf(err, errlen, "%s", g->err);
    wp_gguf_close(g);
    return NULL;
}

/* The header of g's open file g->f (named g->path), checked: wp_gguf_open's work
 * after the file is open. Closes g on failure. */
static wp_gguf_in *open_header(wp_gguf_in *g, char *err, size_t errlen)
{
    struct stat st;
    uint8_t h[24];
    const int got = fstat(fileno(g->f), &st) == 0;
    if (got && S_ISDIR(st.st_mode)) {   /* (said "not a regular file") */
        gfail(g, "is a directory");
        goto fail;
    }
    if (!got || !S_ISREG(st.st_mode)) {
        /* (why: verify <(cat m.gguf) said "not a regular file" alone, a fresh user's find) */
        gfail(g, "not a regular file (a GGUF is read by its offsets: give the file itself)");
        goto fail;
    }
    g->file_size = (uint64_t)st.st_size;
    if (!g->file_size) {   /* (it said "truncated file"), as the stream reader says it */
        gfail(g, "empty file, not a GGUF file");
        goto fail;
    }
    if (gread(g, h, 4, "magic"))
        goto fail;
    if (!wp_gguf_magic(h, 4)) {
        /* a safetensors file, also one cut short (said only "bad magic"; safetensorscat names a
           GGUF the same way) */
        const size_t got = 4 + fread(h + 4, 1, 5, g->f);
        const int st = got == 9 && g->file_size > 9 && wp_st_magic(h);
        /* a compressed file or an archive by its kind (gzip and zip were "bad magic": a breaker's
           and a new user's finds; xz, bzip2 and lz4 were until a note's left alone) */
        const char *kind = wp_foreign_kind(h, got);
        /* (g->zst: what a zstd frame held, ggufcat having decompressed it) */
        gfail(g, "not a GGUF file (%s)",
              !memcmp(h, WP_STREAM_MAGIC, 4) ? g->zst ? "a zstd-framed wpack stream, such as a --dist bundle: unbundle it"
                                             /* (hessian's output named: "use ggufpack or unbundle" sent a
                                                fresh user to ggufpack, which refused it) */
                                             : wp_file_is_hessians(g->path) ? "Hessians, hessian's output: they go to gptq --hessian"
                                                      : "a wpack stream: use ggufpack or unbundle"
                 : st ? g->zst ? "a zstd-compressed safetensors file: zstd -d it, then read it with safetensorscat"
                               : "a safetensors file: read it with safetensorscat"
                 : wp_zframe_magic(h, 4) ? wp_zframe_hint(g->f)   /* was "bad magic" */
                 : kind ? kind
                 : wp_zframe_skippable(h, 4) ? "a zstd skippable frame first, as pzstd writes: zstd -dc it, then read "
                                               "the GGUF"   /* (was "bad magic": a breaker's find) */
                                         : "bad magic");
        goto fail;
    }
    if (gread(g, h + 4, 20, "header"))
        goto fail;
    g->version = rd32(h + 4);
    if (g->version != 2 && g->version != 3) {
        gfail(g, "unknown GGUF version %" PRIu32 " (wpack reads versions 2 and 3)", g->version);
        goto fail;
    }
    g->n_tensors = rd64(h + 8);
    g->n_kv = rd64(h + 16);
    /* A key/value takes at least 8 + 4 + 1 bytes, a tensor info 8 + 4 + 8 + 4 + 8. */
    if (g->n_kv > remaining(g) / 13) {
        gfail(g, "key/value count %" PRIu64 " is larger than the file allows", g->n_kv);
        goto fail;
    }
    if (g->n_tensors > remaining(g) / 32) {
        gfail(g, "tensor count %" PRIu64 " is larger than the file allows", g->n_tensors);
        goto fail;
    }
    g->keys = calloc(g->n_kv ? g->n_kv : 1, sizeof *g->keys);
    g->kv_type = calloc(g->n_kv ? g->n_kv : 1, sizeof *g->kv_type);
    g->kv_off = calloc(g->n_kv ? g->n_kv : 1, sizeof *g->kv_off);
    g->kv_len = calloc(g->n_kv ? g->n_kv : 1, sizeof *g->kv_len);
    g->ti = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *g->ti);
    g->key_set = wp_names_new();
    if (!g->keys || !g->kv_type || !g->kv_off || !g->kv_len || !g->ti || !g->key_set) {
        gfail(g, "out of memory");
        goto fail;
    }
    /* Check the whole header now, so that nothing is written for a bad file. */
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (read_kv(g, i))
            goto fail;
    if (read_tensor_infos(g))
        goto fail;
    return g;
fail:
    snprintf(err, errlen, "%s", g->err);
    wp_gguf_close(g);
    return NULL;
}

/* f's bytes (a zstd frame decompressed) in a spool, rewound (wp_zsrc_spool), the way on of
 * its messages a GGUF's; NULL with the reason in err, naming name. f is the caller's. */
static FILE *spool_copy(FILE *f, const char *name, char *err, size_t errlen)
{
    uint64_t total;
    FILE *t = wp_zsrc_spool(f, name, &total, err, errlen);
    char *tail = t ? NULL : strstr(err, "zstd -d it, then read the stream");   /* zframe.c's, a stream's */
    if (tail)
        snprintf(tail, errlen - (size_t)(tail - err), "zstd -dc it, then read the GGUF");
    return t;
}

wp_gguf_in *wp_gguf_open_any(const char *path, char *err, size_t errlen)
{
    const int std_in = !strcmp(path, "-");
    struct stat st;
    FILE *f = NULL;
    if (std_in) {
        if (isatty(STDIN_FILENO)) {
            snprintf(err, errlen, "stdin: a terminal, not a GGUF file (give a FILE, or pipe or redirect one in)");
            return NULL;
        }
        f = stdin;
    } else if (*path && stat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
        f = fopen(path, "rb");
    }
    if (!f)   /* its messages: an empty name, no such file, a directory, cannot open */
        return wp_gguf_open(path, err, errlen);
    const int regular = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode);
    const int framed = regular && wp_zframe_is(f);   /* (f left at its start) */
    if (regular && !framed && std_in) {
        /* a file redirected in: read where it lies, from its start */
        const int fd = dup(STDIN_FILENO);
        f = fd >= 0 ? fdopen(fd, "rb") : NULL;
        if (!f) {
            snprintf(err, errlen, "stdin: %s", strerror(errno));
            if (fd >= 0)
                close(fd);
            return NULL;
        }
        rewind(f);
    } else if (!regular || framed) {   /* (a plain named file is read where it lies, as it is) */
        FILE *t = spool_copy(f, std_in ? "stdin" : path, err, errlen);
        if (!std_in)
            fclose(f);
        if (!t)
            return NULL;
        f = t;
    }
    wp_gguf_in *g = calloc(1, sizeof *g);
    if (!g) {
        fclose(f);
        snprintf(err, errlen, "%s: out of memory", std_in ? "stdin" : path);
        return NULL;
    }
    snprintf(g->path, sizeof g->path, "%s", std_in ? "stdin" : path);
    g->alignment = WP_GGUF_DEFAULT_ALIGNMENT;
    g->f = f;
    g->zst = framed;
    return open_header(g, err, errlen);
}

const char *wp_gguf_error(const wp_gguf_in *g) { return g->err; }

void wp_gguf_close(wp_gguf_in *g)
{
    if (!g)
        return;
    if (g->f)
        fclose(g->f);
    for (uint64_t i = 0; g->keys && i < g->n_kv; i++)
        free(g->keys[i]);
    for (uint64_t i = 0; g->ti && i < g->n_tensors; i++)
        free(g->ti[i].name);
    free(g->keys);
    wp_names_free(g->key_set);
    free(g->kv_type);
    free(g->kv_off);
    free(g->kv_len);
    free(g->ti);
    free(g->buf);
    free(g);
}

/* Check that the n bytes at file offset `at` are zero. */
static int zeros(wp_gguf_in *g, uint64_t at, uint64_t n, const char *what)
{
    uint8_t buf[4096];
    if (n && fseeko(g->f, (off_t)at, SEEK_SET))
        return gfail(g, "read error in %s", what);
    while (n) {
        size_t k = n > sizeof buf ? sizeof buf : (size_t)n;
        if (fread(buf, 1, k, g->f) != k)
            return gfail(g, "read error in %s", what);
        for (size_t i = 0; i < k; i++)
            if (buf[i])
                return gfail(g, "nonzero byte in the %s at byte %" PRIu64 " (would not round-trip)", what,
                             at + (uint64_t)i);
        at += k;
        n -= k;
    }
    return 0;
}

static int cmp_tinfo_name(const void *a, const void *b)
{
    return strcmp((*(struct tinfo *const *)a)->name, (*(struct tinfo *const *)b)->name);
}

/* Parse and check every tensor info; sets data_start. */
static int read_tensor_infos(wp_gguf_in *g)
{
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        struct tinfo *t = &g->ti[i];
        uint32_t nd;
        t->name = gread_string(g, "tensor name");
        if (!t->name || gread_u32(g, &nd, "tensor info"))
            return -1;
        if (strlen(t->name) > WP_MAX_NAME)
            return gfail(g, "tensor name of %zu bytes is longer than %u", strlen(t->name), WP_MAX_NAME);
        if (!t->name[0])   /* (ggufcat passed it, and every stream reader refuses it) */
            return gfail(g, "tensor %" PRIu64 ": an empty name", i);
        if (nd < 1 || nd > WP_MAX_DIMS)
            return gfail(g, "tensor '%s': %" PRIu32 " dimensions (1 to 4 allowed)", t->name, nd);
        t->n_dims = (int)nd;
        for (int d = 0; d < WP_MAX_DIMS; d++)
            t->ne[d] = 1;
        for (uint32_t d = 0; d < nd; d++) {
            uint64_t v;
            if (gread_u64(g, &v, "tensor shape"))
                return -1;
            if (v > WP_MAX_DIM)
                return gfail(g, "tensor '%s': dimension %" PRIu32 " of %" PRIu64 " is implausible", t->name, d, v);
            t->ne[d] = (int64_t)v;
        }
        if (gread_u32(g, &t->type, "tensor type") || gread_u64(g, &t->offset, "tensor offset"))
            return -1;
        if (!wp_ggml_blck_size(t->type))
            return gfail(g, "tensor '%s': unknown ggml type %" PRIu32, t->name, t->type);
        int blck = wp_ggml_blck_size(t->type);
        if (t->ne[0] % blck)
            return gfail(g, "tensor '%s': row length %" PRId64 " is not a multiple of the %s block size %d",
                         t->name, t->ne[0], wp_ggml_type_name(t->type), blck);
        uint64_t rows = 1, nelem = (uint64_t)t->ne[0];
        for (int d = 1; d < t->n_dims; d++) {
            uint64_t n = (uint64_t)t->ne[d];
            if ((n && rows > (UINT64_C(1) << 62) / n) || (n && nelem > (UINT64_C(1) << 62) / n))
                return gfail(g, "tensor '%s': shape has more than 2^62 elements", t->name);
            rows *= n;
            nelem *= n;
        }
        uint64_t rs = wp_ggml_row_size(t->type, t->ne[0]);
        if (rows && rs > g->file_size / rows)
            return gfail(g, "tensor '%s': %" PRIu64 " rows of %" PRIu64 " bytes run past the end of the file",
                         t->name, rows, rs);
        t->size = rs * rows;
        if (t->offset % g->alignment)
            return gfail(g, "tensor '%s': data offset %" PRIu64 " is not aligned to %" PRIu64,
                         t->name, t->offset, g->alignment);
    }
    g->data_start = align_up(g->pos, g->alignment);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        struct tinfo *t = &g->ti[i];
        if (t->offset > g->file_size || g->data_start > g->file_size - t->offset ||
            t->size > g->file_size - g->data_start - t->offset)
            return gfail(g, "tensor '%s': data at offset %" PRIu64 " (+%" PRIu64 " bytes) runs past the end of the file",
                         t->name, t->offset, t->size);
    }
    /* Everything between the header and the tensors, between tensors, and
     * after the last one must be the zero padding a GGUF writer puts there,
     * in tensor-info order: that is what ggufpack writes back, so anything
     * else would not round-trip byte for byte. */
    if (zeros(g, g->pos, g->data_start - g->pos, "padding after the tensor infos"))
        return -1;
    uint64_t end = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        struct tinfo *t = &g->ti[i];
        if (t->offset < end)
            return gfail(g, "tensor '%s': data at offset %" PRIu64 " overlaps the tensor before it",
                         t->name, t->offset);
        if (t->offset - end > (UINT64_C(1) << 20))
            return gfail(g, "tensor '%s': a gap of %" PRIu64 " bytes before its data (more than 1 MiB)",
                         t->name, t->offset - end);
        if (zeros(g, g->data_start + end, t->offset - end, "padding between tensors"))
            return -1;
        end = t->offset + t->size;
    }
    uint64_t tail = g->file_size - g->data_start - end;
    if (tail >= g->alignment)
        return gfail(g, "%" PRIu64 " bytes after the last tensor's data (not GGUF padding)", tail);
    if (zeros(g, g->data_start + end, tail, "padding after the last tensor"))
        return -1;

    struct tinfo **s = malloc((g->n_tensors ? g->n_tensors : 1) * sizeof *s);
    if (!s)
        return gfail(g, "out of memory");
    for (uint64_t i = 0; i < g->n_tensors; i++)
        s[i] = &g->ti[i];
    qsort(s, g->n_tensors, sizeof *s, cmp_tinfo_name);
    for (uint64_t i = 1; i < g->n_tensors; i++)
        if (!strcmp(s[i - 1]->name, s[i]->name)) {
            gfail(g, "duplicate tensor name '%s'", s[i]->name);
            free(s);
            return -1;
        }
    free(s);
    return 0;
}

static int next_kv(wp_gguf_in *g, wp_record *r)
{
    uint64_t i = g->next_kv++;
    wp_record_free(r);
    r->kind = WP_REC_KV;
    r->type = g->kv_type[i];
    if (wp_record_set_name(r, g->keys[i]) || !wp_record_alloc(r, g->kv_len[i]))
        return gfail(g, "key '%s': out of memory", g->keys[i]);
    if (fseeko(g->f, (off_t)g->kv_off[i], SEEK_SET) ||
        (g->kv_len[i] && fread(r->payload, 1, (size_t)g->kv_len[i], g->f) != g->kv_len[i]))
        return gfail(g, "key '%s': read error", g->keys[i]);
    return 1;
}

/* Tensor i as a record; with its data unless header_only (then payload_len 0). */
static int tensor_record(wp_gguf_in *g, uint64_t i, wp_record *r, int header_only)
{
    struct tinfo *t = &g->ti[i];
    uint64_t canon = i ? align_up(g->ti[i - 1].offset + g->ti[i - 1].size, g->alignment) : 0;
    wp_record_free(r);
    r->kind = WP_REC_TENSOR;
    r->type = t->type;
    r->n_dims = t->n_dims;
    memcpy(r->ne, t->ne, sizeof r->ne);
    if (wp_record_set_name(r, t->name))
        return gfail(g, "out of memory");
    if (t->offset != canon)
        wp_attr_set_i64(r, "offset", (int64_t)t->offset);
    if (header_only)
        return wp_record_alloc(r, 0) ? 1 : gfail(g, "out of memory");
    if (!wp_record_alloc(r, t->size))
        return gfail(g, "tensor '%s': out of memory for %" PRIu64 " bytes", t->name, t->size);
    if (fseeko(g->f, (off_t)(g->data_start + t->offset), SEEK_SET) ||
        (t->size && fread(r->payload, 1, (size_t)t->size, g->f) != t->size))
        return gfail(g, "tensor '%s': read error", t->name);
    return 1;
}

static int next_tensor(wp_gguf_in *g, wp_record *r, int header_only)
{
    return tensor_record(g, g->next_tensor++, r, header_only);
}

int wp_gguf_read_tensor(wp_gguf_in *g, const char *name, wp_record *r)
{
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (!strcmp(g->ti[i].name, name))
            return tensor_record(g, i, r, 0);
    return 0;
}

uint64_t wp_gguf_file_size(const wp_gguf_in *g) { return g->file_size; }

static int next_record(wp_gguf_in *g, wp_record *r, int header_only)
{
    if (!g->header_sent) {
        g->header_sent = 1;
        const char *base = strrchr(g->path, '/');
        char name[sizeof g->path];
        snprintf(name, sizeof name, "%s", base ? base + 1 : g->path);
        const size_t nl = strlen(name);
        if (g->zst && nl > 4 && !strcmp(name + nl - 4, ".zst"))   /* m.gguf.zst's record: m.gguf */
            name[nl - 4] = 0;
        wp_record_free(r);
        r->kind = WP_REC_GGUF;
        /* (the attributes' failures were dropped: a gguf record without its counts) */
        if (wp_record_set_name(r, name) || !wp_record_alloc(r, 0) ||
            wp_attr_set_i64(r, "version", g->version) || wp_attr_set_i64(r, "n_kv", (int64_t)g->n_kv) ||
            wp_attr_set_i64(r, "n_tensors", (int64_t)g->n_tensors) ||
            wp_attr_set_i64(r, "file_size", (int64_t)g->file_size))
            return gfail(g, "out of memory");
        return 1;
    }
    if (g->next_kv < g->n_kv)
        return next_kv(g, r);
    if (g->next_tensor < g->n_tensors)
        return next_tensor(g, r, header_only);
    return 0;
}

int wp_gguf_next(wp_gguf_in *g, wp_record *r) { return next_record(g, r, 0); }
int wp_gguf_next_header(wp_gguf_in *g, wp_record *r) { return next_record(g, r, 1); }

/* ---- writing -------------------------------------------------------------- */

struct wp_gguf_out {
    FILE    *kv, *data;       /* spools: serialised KVs, tensor data */
    uint64_t n_kv, kv_bytes;
    uint32_t version;
    uint64_t alignment;
    uint64_t file_size;       /* of the source file, when known */
    int64_t  want_tensors;    /* the gguf record's n_tensors, -1 when not given */
    int64_t  want_kv;         /* its n_kv, -1 when not given */
    struct tinfo *ti;
    uint64_t n_tensors, cap;
    uint64_t data_end;
    wp_names *keys, *tensor_names;   /* the names so far, for duplicates */
    char     err[768];
    char     warn[512];       /* wp_gguf_out_warning's line */
};

const char *wp_gguf_out_warning(wp_gguf_out *o)
{
    uint64_t n = 0;
    const char *first = NULL;
    for (uint64_t i = 0; i < o->n_tensors; i++)
        if (strlen(o->ti[i].name) >= WP_GGML_MAX_NAME && !n++)
            first = o->ti[i].name;
    if (!n)
        return NULL;
    snprintf(o->warn, sizeof o->warn, "%" PRIu64 " tensor name%s of %d bytes or more ('%.255s', %zu): llama.cpp "
             "refuses to load such a file", n, n == 1 ? "" : "s", WP_GGML_MAX_NAME, first, strlen(first));
    return o->warn;
}

static int ofail(wp_gguf_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->err, sizeof o->err, fmt, ap);
    va_end(ap);
    return -1;
}

wp_gguf_out *wp_gguf_out_new(char *err, size_t errlen)
{
    wp_gguf_out *o = calloc(1, sizeof *o);
    if (!o) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (!(o->kv = wp_spool(err, errlen)) || !(o->data = wp_spool(err, errlen))) {
        wp_gguf_out_free(o);
        return NULL;
    }
    if (!(o->keys = wp_names_new()) || !(o->tensor_names = wp_names_new())) {
        snprintf(err, errlen, "out of memory");
        wp_gguf_out_free(o);
        return NULL;
    }
    o->version = 3;
    o->want_tensors = -1;
    o->want_kv = -1;
    o->alignment = WP_GGUF_DEFAULT_ALIGNMENT;
    return o;
}

const char *wp_gguf_out_error(const wp_gguf_out *o) { return o->err; }

void wp_gguf_out_free(wp_gguf_out *o)
{
    if (!o)
        return;
    if (o->kv)
        fclose(o->kv);
    if (o->data)
        fclose(o->data);
    for (uint64_t i = 0; i < o->n_tensors; i++)
        free(o->ti[i].name);
    wp_names_free(o->keys);
    wp_names_free(o->tensor_names);
    free(o->ti);
    free(o);
}

static int fput_string(FILE *f, const char *s)
{
    uint8_t b[8];
    size_t n = strlen(s);
    wr64(b, n);
    return fwrite(b, 1, 8, f) != 8 || fwrite(s, 1, n, f) != n;
}

static int add_kv(wp_gguf_out *o, const wp_record *r)
{
    uint8_t b[4];
    /* a safetensors file's header (safetensorscat of one file), which is that file's layout, not
       the GGUF's; a GGUF's own key of that name (a gguf record came first) is kept */
    if (o->want_kv < 0 && !strcmp(r->name, WP_ST_HEADER_KEY))
        return 0;
    if (r->type >= WP_GGUF_TYPE_COUNT)
        return ofail(o, "key '%s': unknown GGUF value type %" PRIu32, r->name, r->type);
    if (wp_gguf_value_size(r->type, r->payload, r->payload_len) != (int64_t)r->payload_len)
        return ofail(o, "key '%s': malformed %s value", r->name, wp_gguf_type_name(r->type));
    if (wp_names_get(o->keys, r->name) >= 0)
        return ofail(o, "duplicate key '%s'", r->name);
    if (!strcmp(r->name, "general.alignment")) {
        uint32_t a = r->type == WP_GGUF_U32 ? rd32(r->payload) : 0;
        if (!a || (a & (a - 1)))
            return ofail(o, "general.alignment must be a power-of-two u32");
        if (o->n_tensors)
            return ofail(o, "general.alignment arrives after tensors");
        o->alignment = a;
    }
    if (wp_names_put(o->keys, r->name, (int64_t)o->n_kv) == -2)   /* the last check: a refused key is not kept */
        return ofail(o, "out of memory");
    o->n_kv++;
    wr32(b, r->type);
    if (fput_string(o->kv, r->name) || fwrite(b, 1, 4, o->kv) != 4 ||
        (r->payload_len && fwrite(r->payload, 1, (size_t)r->payload_len, o->kv) != r->payload_len))
        return ofail(o, "temporary file in %s: write error: %s", wp_spool_where(), strerror(errno));
    return 1;
}

static int add_tensor(wp_gguf_out *o, const wp_record *r)
{
    char tb[48];
    const char *tp = wp_tensor_head_problem(r, tb, sizeof tb);   /* as a stream reader says it */
    if (tp)
        return ofail(o, "tensor '%s': %s", r->name, tp);
    /* a safetensors dtype or shape no GGUF holds, carried for the file's round trip
       (safetensors.h): a GGUF would call its bytes what they are not */
    char st[WP_ST_CARRIED_MAX];
    const int carried = wp_st_carried(r, st, sizeof st);
    if (carried == 1)
        return ofail(o, "tensor '%s': safetensors dtype %s, which no GGUF type is (safetensorscat carries its bytes "
                        "as %s for the file's round trip: safetensorspack writes the file)", r->name, st,
                     wp_ggml_type_name(r->type) ? wp_ggml_type_name(r->type) : "?");
    if (carried == 2)
        return ofail(o, "tensor '%s': safetensors shape %s, more dimensions than a GGUF holds (%d; safetensorspack "
                        "writes the file)", r->name, st, WP_MAX_DIMS);
    int blck = wp_ggml_blck_size(r->type);
    if (r->ne[0] % blck)
        return ofail(o, "tensor '%s': row length %" PRId64 " is not a multiple of the %s block size %d",
                     r->name, r->ne[0], wp_ggml_type_name(r->type), blck);
    uint64_t size = r->ne[0] ? wp_ggml_row_size(r->type, r->ne[0]) * (uint64_t)(wp_record_nelem(r) / r->ne[0]) : 0;
    if (r->ne[0] == 0)
        size = 0;
    if (size != r->payload_len)
        return ofail(o, "tensor '%s': %" PRIu64 " payload bytes, but %s %" PRId64 "x%" PRId64 " needs %" PRIu64,
                     r->name, r->payload_len, wp_ggml_type_name(r->type), r->ne[0], r->ne[1], size);
    if (wp_names_get(o->tensor_names, r->name) >= 0)
        return ofail(o, "duplicate tensor name '%s'", r->name);
    uint64_t off = o->n_tensors ? align_up(o->ti[o->n_tensors - 1].offset + o->ti[o->n_tensors - 1].size,
                                           o->alignment) : 0;
    const int64_t want = wp_attr_i64(r, "offset", -1);   /* a count, or absent (wp_gguf_out_add) */
    if (want >= 0) {
        /* a file's own layout, kept when it is plausible: aligned, after the
         * previous tensor, and no more than 1 MiB of gap */
        if ((uint64_t)want % o->alignment || (uint64_t)want < off || (uint64_t)want - off > (UINT64_C(1) << 20))
            return ofail(o, "tensor '%s': data offset %" PRId64 " overlaps the previous tensor, is misaligned"
                            " or leaves a gap of more than 1 MiB", r->name, want);
        off = (uint64_t)want;
    }
    if (o->n_tensors == o->cap) {
        uint64_t cap = o->cap * 2 + 16;
        struct tinfo *t = realloc(o->ti, cap * sizeof *t);
        if (!t)
            return ofail(o, "out of memory");
        o->ti = t;
        o->cap = cap;
    }
    struct tinfo *t = &o->ti[o->n_tensors];
    memset(t, 0, sizeof *t);
    /* the name kept last, once nothing can refuse the tensor (a refused one's name stayed) */
    if (!(t->name = strdup(r->name)) || wp_names_put(o->tensor_names, r->name, (int64_t)o->n_tensors) == -2) {
        free(t->name);
        t->name = NULL;
        return ofail(o, "out of memory");
    }
    o->n_tensors++;
    t->n_dims = r->n_dims;
    memcpy(t->ne, r->ne, sizeof t->ne);
    t->type = r->type;
    t->offset = off;
    t->size = size;
    if (fseeko(o->data, (off_t)off, SEEK_SET) ||
        (size && fwrite(r->payload, 1, (size_t)size, o->data) != size))
        return ofail(o, "temporary file in %s: write error: %s", wp_spool_where(), strerror(errno));
    if (off + size > o->data_end)
        o->data_end = off + size;
    return 1;
}

int wp_gguf_out_add(wp_gguf_out *o, const wp_record *r)
{
    char ab[128];
    const char *ap = wp_attr_counts_problem(r, ab, sizeof ab);   /* as a stream reader refuses it */
    if (ap)
        return ofail(o, "record '%s': %s", r->name, ap);
    if (r->attrs_lost)
        return ofail(o, "record '%s': %s", r->name, WP_ATTRS_LOST);
    switch (r->kind) {
    case WP_REC_GGUF: {
        const int64_t v = wp_attr_i64(r, "version", 3);
        if (v != 2 && v != 3)
            return ofail(o, "unknown GGUF version %" PRId64, v);
        o->version = (uint32_t)v;
        o->file_size = (uint64_t)wp_attr_i64(r, "file_size", 0);
        o->want_tensors = wp_attr_i64(r, "n_tensors", -1);
        o->want_kv = wp_attr_i64(r, "n_kv", -1);
        return 1;
    }
    case WP_REC_KV: return add_kv(o, r);
    case WP_REC_TENSOR: return add_tensor(o, r);
    default: return 0;
    }
}

int wp_gguf_counts_check(int64_t want_tensors, uint64_t n_tensors, int64_t want_kv, uint64_t n_kv, char *err,
                         size_t errlen)
{
    if (want_tensors >= 0 && (uint64_t)want_tensors != n_tensors) {
        snprintf(err, errlen, "the gguf record says %" PRId64 " tensors, the stream holds %" PRIu64
                 " (a tensor record lost or added on the way)", want_tensors, n_tensors);
        return -1;
    }
    if (want_kv >= 0 && (uint64_t)want_kv != n_kv) {
        snprintf(err, errlen, "the gguf record says %" PRId64 " key/values, the stream holds %" PRIu64
                 " (a key/value record lost or added on the way)", want_kv, n_kv);
        return -1;
    }
    return 0;
}

int wp_gguf_out_complete(wp_gguf_out *o)
{
    return wp_gguf_counts_check(o->want_tensors, o->n_tensors, o->want_kv, o->n_kv, o->err, sizeof o->err);
}

static int put_zeros(FILE *f, uint64_t n)
{
    static const char z[4096];
    while (n) {
        size_t k = n > sizeof z ? sizeof z : (size_t)n;
        if (fwrite(z, 1, k, f) != k)
            return -1;
        n -= k;
    }
    return 0;
}

static int copy_file(FILE *from, FILE *to, uint64_t n)
{
    char buf[1 << 16];
    if (fseeko(from, 0, SEEK_SET))
        return -1;
    while (n) {
        size_t k = n > sizeof buf ? sizeof buf : (size_t)n;
        size_t got = fread(buf, 1, k, from);
        if (got == 0 || fwrite(buf, 1, got, to) != got)
            return -1;
        n -= got;
    }
    return 0;
}

int wp_gguf_out_finish(wp_gguf_out *o, FILE *out)
{
    uint8_t h[WP_GGUF_HEADER_BYTES], b[8];
    uint64_t pos;
    memcpy(h, WP_GGUF_MAGIC, 4);
    wr32(h + 4, o->version);
    wr64(h + 8, o->n_tensors);
    wr64(h + 16, o->n_kv);
    if (fflush(o->kv) || fflush(o->data))
        return ofail(o, "temporary file in %s: write error: %s", wp_spool_where(), strerror(errno));
    uint64_t kv_len = (uint64_t)ftello(o->kv);
    if (fwrite(h, 1, sizeof h, out) != sizeof h || copy_file(o->kv, out, kv_len))
        goto werr;
    pos = sizeof h + kv_len;
    for (uint64_t i = 0; i < o->n_tensors; i++) {
        struct tinfo *t = &o->ti[i];
        if (fput_string(out, t->name))
            goto werr;
        wr32(b, (uint32_t)t->n_dims);
        if (fwrite(b, 1, 4, out) != 4)
            goto werr;
        for (int d = 0; d < t->n_dims; d++) {
            wr64(b, (uint64_t)t->ne[d]);
            if (fwrite(b, 1, 8, out) != 8)
                goto werr;
        }
        wr32(b, t->type);
        if (fwrite(b, 1, 4, out) != 4)
            goto werr;
        wr64(b, t->offset);
        if (fwrite(b, 1, 8, out) != 8)
            goto werr;
        pos += wp_gguf_tinfo_bytes(t->name, t->n_dims);
    }
    uint64_t data_start = align_up(pos, o->alignment);
    /* the data file ends at the last byte written; an empty last tensor sits at an aligned
       offset past it, up to which the data is zeros (every GGUF writer of such a tensor
       failed, "write error: Success": a breaker's find) */
    if (fseeko(o->data, 0, SEEK_END))
        goto werr;
    const uint64_t written = (uint64_t)ftello(o->data);
    if (put_zeros(out, data_start - pos) || copy_file(o->data, out, written) ||
        put_zeros(out, o->data_end - written))
        goto werr;
    /* Trailing padding as the source file had it (standard writers pad the
     * last tensor to the alignment). */
    uint64_t end = data_start + o->data_end;
    if (o->file_size > end && o->file_size - end < o->alignment) {
        if (put_zeros(out, o->file_size - end))
            goto werr;
    }
    if (fflush(out))
        goto werr;
    return 0;
werr:
    return ofail(o, "write error: %s", strerror(errno));
}
