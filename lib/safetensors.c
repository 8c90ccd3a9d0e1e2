/* safetensors.c - .safetensors files to tensor streams (see safetensors.h).
 * Format: huggingface/safetensors README, "Format"; checks follow its Rust
 * reader (safetensors/src/tensor.rs, Metadata::validate). */
#include "safetensors.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "ggml_type.h"
#include "gguf_file.h"
#include "text.h"
#include "zframe.h"

/* Integers in the header are JSON numbers, which cJSON holds as doubles:
 * anything above 2^53 could not be represented exactly. */
#define MAX_JSON_INT 9007199254740992.0
/* JSON whitespace (RFC 8259); cJSON also skips every other byte below 0x20. */
#define JSON_SPACE(c) ((c) == ' ' || (c) == '\t' || (c) == '\n' || (c) == '\r')

struct st_tensor {
    char    *name;
    uint32_t type;
    int      n_dims;
    int64_t  ne[WP_MAX_DIMS];
    uint64_t begin, end;     /* relative to the data section */
    size_t   order;          /* position in the header (tie-break) */
    const char *carried;     /* a dtype no ggml type is, carried as the integer type of its width */
    char    *shape;          /* a shape of more than WP_MAX_DIMS dimensions, as the header writes it */
};

struct st_meta {
    char  *key, *value;
    size_t value_len;
};

struct wp_st_in {
    FILE     *f;
    char      path[4096];
    char      err[8192];
    uint64_t  file_size, header_len, data_start, data_size;
    struct st_tensor *t;
    uint64_t  nt, next_t;
    struct st_meta *m;
    uint64_t  nm, next_m;
    char     *json;          /* the header, header_len bytes as in the file */
    int       header_done;   /* its record given (wp_st_next) */
    struct st_tensor **by_name;   /* t sorted by name, for wp_st_read_tensor (made on first use) */
};

/* carried: no ggml type is this dtype; its bytes go as the integer type of its width, the
 * record naming the dtype (WP_ST_DTYPE_ATTR): a shard of a bitsandbytes (U8) or FP8 checkpoint
 * was refused whole, where a lossless round trip needs only the bytes (a publisher's trial) */
static const struct { const char *name; uint32_t type; int carried; } dtypes[] = {
    {"F32", WP_F32, 0}, {"F16", WP_F16, 0}, {"BF16", WP_BF16, 0}, {"F64", WP_F64, 0},
    {"I8", WP_I8, 0},   {"I16", WP_I16, 0}, {"I32", WP_I32, 0},   {"I64", WP_I64, 0},
    {"U8", WP_I8, 1},   {"U16", WP_I16, 1}, {"U32", WP_I32, 1},   {"U64", WP_I64, 1},
    {"BOOL", WP_I8, 1}, {"F8_E4M3", WP_I8, 1}, {"F8_E5M2", WP_I8, 1}, {"F8_E8M0", WP_I8, 1},
};

/* The dtypes table's entry of a dtype name, or -1. */
static int dtype_index(const char *dtype)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (!strcmp(dtype, dtypes[i].name))
            return (int)i;
    return -1;
}

int wp_st_dtype_type(const char *dtype)
{
    const int i = dtype_index(dtype);
    return i < 0 ? -1 : (int)dtypes[i].type;
}

/* One line: a name with a newline in it must not split the message. */
static void one_line(char *msg)
{
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

__attribute__((format(printf, 2, 3)))
static int sfail(wp_st_in *s, const char *fmt, ...)
{
    va_list ap;
    int k = snprintf(s->err, sizeof s->err, "%s: ", s->path);
    if (k < 0 || (size_t)k >= sizeof s->err)
        k = 0;
    va_start(ap, fmt);
    vsnprintf(s->err + k, sizeof s->err - (size_t)k, fmt, ap);
    va_end(ap);
    one_line(s->err);
    return -1;
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

int wp_st_magic(const uint8_t h[9])
{
    const uint64_t n = rd64(h);
    return n > 1 && n <= WP_ST_MAX_HEADER && h[8] == '{';
}

/* A JSON number that is a non-negative integer below 2^53, which a double
 * holds exactly: 0 with *v set; 1 for an integer of 2^53 or more (a larger
 * one may have been rounded to its neighbour, 2^53 + 1 to 2^53, so 2^53
 * itself is refused too); -1 for anything else (negative, a fraction, a
 * number mark_fractions found written with '.' or an exponent, not a number). */
static int json_uint(const cJSON *j, uint64_t *v)
{
    if (!cJSON_IsNumber(j))
        return -1;
    double d = j->valuedouble;
    if (!isfinite(d) || d < 0 || d != floor(d))
        return -1;
    if (d >= MAX_JSON_INT)
        return 1;
    *v = (uint64_t)d;
    return 0;
}

static int parse_meta(wp_st_in *s, const cJSON *md)
{
    if (!cJSON_IsObject(md))
        return sfail(s, "__metadata__ is not a JSON object");
    uint64_t n = (uint64_t)cJSON_GetArraySize(md);
    s->m = calloc(n ? n : 1, sizeof *s->m);
    if (!s->m)
        return sfail(s, "out of memory");
    for (const cJSON *e = md->child; e; e = e->next) {
        if (!cJSON_IsString(e) || !e->valuestring)
            return sfail(s, "__metadata__ value of '%s' is not a string", e->string);
        /* the record's name, prefix and key, up to WP_MAX_NAME bytes (a key of exactly that was
           refused: sizeof counted the prefix's NUL, a mutation tester's find) */
        if (strlen(e->string) + sizeof WP_ST_META_PREFIX - 1 > WP_MAX_NAME)
            return sfail(s, "__metadata__ key '%.64s...' is too long", e->string);
        struct st_meta *m = &s->m[s->nm];
        m->key = strdup(e->string);
        m->value = strdup(e->valuestring);
        if (!m->key || !m->value) {
            free(m->key), free(m->value);
            return sfail(s, "out of memory");
        }
        m->value_len = strlen(m->value);
        s->nm++;
    }
    return 0;
}

static const char *find_duplicate(wp_st_in *s, const cJSON *obj, int *oom);

static int parse_tensor(wp_st_in *s, const cJSON *e, struct st_tensor *t)
{
    const char *name = e->string;
    if (!cJSON_IsObject(e))
        return sfail(s, "tensor '%s': not a JSON object", name);
    if (!name[0])
        return sfail(s, "tensor with an empty name");
    /* a field twice ("dtype" given two values): the first was taken, where the safetensors
       library (serde) refuses the file (a breaker's find) */
    int oom;
    const char *twice = find_duplicate(s, e, &oom);
    if (oom || twice)
        return oom ? sfail(s, "out of memory") : sfail(s, "tensor '%s': \"%s\" given twice", name, twice);
    if (strlen(name) > WP_MAX_NAME)
        return sfail(s, "tensor '%.64s...': name longer than %u bytes", name, WP_MAX_NAME);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt) || !dt->valuestring)
        return sfail(s, "tensor '%s': missing or bad \"dtype\"", name);
    if (!cJSON_IsArray(sh))
        return sfail(s, "tensor '%s': missing or bad \"shape\"", name);
    if (!cJSON_IsArray(of) || cJSON_GetArraySize(of) != 2 ||
        json_uint(of->child, &t->begin) || json_uint(of->child->next, &t->end))
        return sfail(s, "tensor '%s': \"data_offsets\" is not two non-negative integers", name);
    const int di = dtype_index(dt->valuestring);
    if (di < 0)
        return sfail(s, "tensor '%s': dtype %.32s is not supported (wpack reads F32, F16, BF16, F64, I8, I16, I32, "
                        "I64, and carries U8, U16, U32, U64, BOOL, F8_E4M3, F8_E5M2 and F8_E8M0 as bytes)",
                     name, dt->valuestring);
    t->type = dtypes[di].type;
    t->carried = dtypes[di].carried ? dtypes[di].name : NULL;
    int nd = cJSON_GetArraySize(sh);
    if (nd > WP_ST_MAX_DIMS)
        return sfail(s, "tensor '%s': %d dimensions (wpack reads at most %d)", name, nd, WP_ST_MAX_DIMS);
    /* Reverse: safetensors lists the outermost dimension first. */
    uint64_t dims[WP_ST_MAX_DIMS];
    int d = 0;
    for (const cJSON *x = sh->child; x; x = x->next, d++) {
        const int rc = json_uint(x, &dims[d]);
        if (rc > 0)
            return sfail(s, "tensor '%s': shape too large", name);
        if (rc)
            return sfail(s, "tensor '%s': shape is not a list of non-negative integers", name);
        if (dims[d] > WP_MAX_DIM)   /* as the GGUF reader says it: dimensions numbered innermost first */
            return sfail(s, "tensor '%s': dimension %d of %" PRIu64 " is implausible", name, nd - 1 - d, dims[d]);
    }
    for (int i = 0; i < WP_MAX_DIMS; i++)
        t->ne[i] = 1;
    t->n_dims = nd ? nd : 1;
    for (int i = 0; i < nd && i < WP_MAX_DIMS; i++)
        t->ne[i] = (int64_t)dims[nd - 1 - i];
    if (nd > WP_MAX_DIMS) {   /* (a Conv3d's 5-D weight refused the file whole: a publisher's trial) */
        /* the outer nd - 3 dimensions folded into the fourth, their product; the shape as the
           header writes it kept for the record (WP_ST_SHAPE_ATTR) */
        char buf[WP_ST_CARRIED_MAX];
        size_t k = 0;
        uint64_t outer = 1;
        for (int i = 0; i < nd; i++)
            k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%" PRIu64, i ? "," : "[", dims[i]);
        snprintf(buf + k, sizeof buf - k, "]");
        for (int i = 0; i < nd; i++)   /* no elements (a 0 anywhere): 0 (it was "too large" with the 0 last) */
            outer = dims[i] ? outer : 0;
        for (int i = 0; i <= nd - WP_MAX_DIMS && outer; i++) {
            if (outer > WP_MAX_DIM / dims[i])
                return sfail(s, "tensor '%s': shape too large", name);
            outer *= dims[i];
        }
        t->ne[WP_MAX_DIMS - 1] = (int64_t)outer;
        t->n_dims = WP_MAX_DIMS;
        if (!(t->shape = strdup(buf)))
            return sfail(s, "out of memory");
    }
    /* Bytes implied by dtype x shape. The product of the non-zero
     * dimensions times the element size must stay below 2^62 even when
     * another dimension is 0, so that no reader of the stream overflows
     * computing ne[0]*ne[1]*... */
    uint64_t bytes = wp_ggml_type_size(t->type), lim = UINT64_C(1) << 62;
    int zero = 0;
    for (int i = 0; i < nd; i++) {
        if (dims[i] == 0)
            zero = 1;
        else if (bytes > lim / dims[i])
            return sfail(s, "tensor '%s': shape too large", name);
        else
            bytes *= dims[i];
    }
    if (zero)
        bytes = 0;
    if (t->end < t->begin)
        return sfail(s, "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 ") end before they begin", name,
                     t->begin, t->end);
    if (t->end - t->begin != bytes)
        return sfail(s, "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 ") hold %" PRIu64
                     " bytes but %s x shape needs %" PRIu64, name, t->begin, t->end, t->end - t->begin,
                     dt->valuestring, bytes);
    if (t->end > s->data_size)
        return sfail(s, "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 ") run past the end of the %" PRIu64
                     "-byte data section (truncated file?)", name, t->begin, t->end, s->data_size);
    t->name = strdup(name);
    if (!t->name)
        return sfail(s, "out of memory");
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_offset(const void *a, const void *b)
{
    const struct st_tensor *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* The first name occurring twice among the children of obj, or NULL.
 * cJSON keeps duplicate keys as separate children. */
static const char *find_duplicate(wp_st_in *s, const cJSON *obj, int *oom)
{
    size_t n = (size_t)cJSON_GetArraySize(obj), i = 0;
    const char *dup = NULL;
    *oom = 0;
    if (n < 2)
        return NULL;
    const char **v = malloc(n * sizeof *v);
    if (!v) {
        *oom = 1;
        return NULL;
    }
    for (const cJSON *e = obj->child; e; e = e->next)
        v[i++] = e->string;
    qsort(v, n, sizeof *v, cmp_str);
    for (i = 1; i < n && !dup; i++)
        if (!strcmp(v[i - 1], v[i]))
            dup = v[i];
    free(v);
    return dup;
}

/* Length of the well-formed UTF-8 sequence at p (RFC 3629, table 3-7 of
 * the Unicode standard: no overlong forms, no surrogates U+D800..DFFF,
 * nothing past U+10FFFF), left bytes available; 0 if it is not one. */
static size_t utf8_len(const unsigned char *p, size_t left)
{
    unsigned char lo = 0x80, hi = 0xBF;   /* the second byte's range */
    size_t len;
    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xC2 && p[0] <= 0xDF)
        len = 2;
    else if (p[0] >= 0xE0 && p[0] <= 0xEF)
        len = 3, lo = p[0] == 0xE0 ? 0xA0 : 0x80, hi = p[0] == 0xED ? 0x9F : 0xBF;
    else if (p[0] >= 0xF0 && p[0] <= 0xF4)
        len = 4, lo = p[0] == 0xF0 ? 0x90 : 0x80, hi = p[0] == 0xF4 ? 0x8F : 0xBF;
    else
        return 0;   /* a continuation byte, C0/C1 (overlong) or F5..FF */
    if (left < len || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

/* Whether c may continue a JSON number token (cJSON's own set). */
static int number_byte(unsigned char c)
{
    return c && strchr("0123456789+-.eE", c);
}

/* What cJSON lets through but JSON (RFC 8259) and the safetensors reader
 * (serde_json) refuse, checked on the n header bytes before parsing: a NUL
 * byte anywhere; inside strings a raw byte below 0x20, bytes that are not
 * UTF-8, an escape other than \" \\ \/ \b \f \n \r \t \uXXXX (cJSON
 * reads \uZZZZ as a NUL) and \u0000, which a C string cannot carry (cJSON
 * refuses lone surrogates itself); outside them a byte below 0x20 that is
 * not whitespace and a number with a leading zero (02). 0, or -1 with the
 * message in s->err naming the byte offset in the header. */
static int check_lexical(wp_st_in *s, const char *json, size_t n)
{
    const unsigned char *b = (const unsigned char *)json;
    int in_string = 0;
    for (size_t i = 0; i < n; i++) {
        if (b[i] == 0)
            return sfail(s, "header holds a NUL byte at byte %zu", i);
        if (!in_string) {
            if (b[i] == '"')
                in_string = 1;
            else if (b[i] < 0x20 && !JSON_SPACE(b[i]))
                return sfail(s, "malformed JSON header (control byte 0x%02x at byte %zu)", b[i], i);
            else if (b[i] == '-' || isdigit(b[i])) {   /* a number: skip it whole */
                const size_t d = i + (b[i] == '-');
                if (d + 1 < n && b[d] == '0' && isdigit(b[d + 1]))
                    return sfail(s, "malformed JSON header (number with a leading zero at byte %zu)", d);
                while (i + 1 < n && number_byte(b[i + 1]))
                    i++;
            }
            continue;
        }
        if (b[i] == '"') {
            in_string = 0;
        } else if (b[i] < 0x20) {
            return sfail(s, "malformed JSON header (raw control byte 0x%02x in a string at byte %zu: "
                         "JSON needs it escaped)", b[i], i);
        } else if (b[i] >= 0x80) {
            const size_t len = utf8_len(b + i, n - i);
            if (!len)
                return sfail(s, "malformed JSON header (a string is not UTF-8 at byte %zu)", i);
            i += len - 1;
        } else if (b[i] == '\\') {
            const char *e = i + 1 < n ? strchr("\"\\/bfnrtu", b[i + 1]) : NULL;
            if (!e || !*e)
                return sfail(s, "malformed JSON header (bad escape at byte %zu)", i);
            if (*e == 'u') {
                size_t k = 0;
                while (k < 4 && i + 2 + k < n && isxdigit(b[i + 2 + k]))
                    k++;
                if (k < 4)
                    return sfail(s, "malformed JSON header (bad escape at byte %zu: \\u takes 4 hex digits)", i);
                if (!strncmp(json + i + 2, "0000", 4))
                    return sfail(s, "header holds the escape \\u0000 at byte %zu (a name or value with a NUL)", i);
                i += 4;
            }
            i++;   /* the escaped character */
        }
    }
    return 0;
}

/* The number token that starts at or after *pos in the n header bytes,
 * outside strings (the header passed check_lexical and cJSON): its start,
 * with *len its length and *pos moved past it; NULL when none is left. */
static const char *next_number(const char *json, size_t n, size_t *pos, size_t *len)
{
    for (size_t i = *pos; i < n; i++) {
        if (json[i] == '"') {
            while (++i < n && json[i] != '"')
                if (json[i] == '\\')
                    i++;
        } else if (json[i] == '-' || (json[i] >= '0' && json[i] <= '9')) {
            size_t k = i;
            while (k < n && number_byte((unsigned char)json[k]))
                k++;
            *len = k - i;
            *pos = k;
            return json + i;
        }
    }
    return NULL;
}

/* cJSON reads 2.0, 2e0 and 20e-1 as the double 2, which then passes for the
 * integer serde_json refuses in a shape or data_offsets (usize): mark every
 * number written with a fraction or an exponent NaN, for json_uint to refuse
 * where an integer is due (elsewhere, as in a key the format does not know,
 * it stays harmless). cJSON's tree in document order holds the header's
 * number tokens in text order, one node each; *pos walks the text. */
static void mark_fractions(cJSON *j, const char *json, size_t n, size_t *pos)
{
    for (; j; j = j->next) {
        size_t len = 0;
        const char *t;
        if (!cJSON_IsNumber(j))
            mark_fractions(j->child, json, n, pos);
        else if ((t = next_number(json, n, pos, &len)) &&
                 (memchr(t, '.', len) || memchr(t, 'e', len) || memchr(t, 'E', len)))
            j->valuedouble = NAN;
    }
}

static int parse_header(wp_st_in *s, const char *json, size_t n)
{
    const char *end = NULL;
    int oom, rc = -1;
    if (n == 0 || json[0] != '{')
        return sfail(s, "header is not a JSON object (it must start with '{')");
    if (check_lexical(s, json, n))
        return -1;
    cJSON *root = cJSON_ParseWithLengthOpts(json, n, &end, 0);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        size_t off = at && at >= json && at <= json + n ? (size_t)(at - json) : 0;
        return sfail(s, "malformed JSON header (near byte %zu of %zu)", off, n);
    }
    size_t text_pos = 0;
    mark_fractions(root, json, n, &text_pos);
    for (; end && end < json + n; end++)
        if (*end != ' ' && *end != '\t' && *end != '\n' && *end != '\r') {
            sfail(s, "malformed JSON header (trailing bytes after the object at byte %zu)",
                  (size_t)(end - json));
            goto out;
        }
    if (!cJSON_IsObject(root)) {
        sfail(s, "header is not a JSON object");
        goto out;
    }
    const char *dup = find_duplicate(s, root, &oom);
    if (oom || dup) {
        oom ? sfail(s, "out of memory") : sfail(s, "duplicate tensor name '%s' in the header", dup);
        goto out;
    }
    uint64_t n_entries = (uint64_t)cJSON_GetArraySize(root);
    s->t = calloc(n_entries ? n_entries : 1, sizeof *s->t);
    if (!s->t) {
        sfail(s, "out of memory");
        goto out;
    }
    for (const cJSON *e = root->child; e; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) {
            /* an object first: an array's elements have no names for find_duplicate to sort */
            if (!cJSON_IsObject(e)) {
                sfail(s, "__metadata__ is not a JSON object");
                goto out;
            }
            if ((dup = find_duplicate(s, e, &oom)) || oom) {
                oom ? sfail(s, "out of memory") : sfail(s, "duplicate __metadata__ key '%s'", dup);
                goto out;
            }
            if (parse_meta(s, e))
                goto out;
            continue;
        }
        struct st_tensor *t = &s->t[s->nt];
        t->order = (size_t)s->nt;
        if (parse_tensor(s, e, t))
            goto out;
        s->nt++;
    }
    qsort(s->t, s->nt, sizeof *s->t, cmp_offset);
    if (!s->f)   /* a header from a stream (wp_st_out): the data section ends with its last tensor */
        for (uint64_t i = s->data_size = 0; i < s->nt; i++)
            if (s->t[i].end > s->data_size)
                s->data_size = s->t[i].end;
    /* Overlap: each non-empty tensor must begin at or after the end of every
     * non-empty tensor before it in offset order. */
    const struct st_tensor *prev = NULL;
    for (uint64_t i = 0; i < s->nt; i++) {
        const struct st_tensor *t = &s->t[i];
        if (t->begin == t->end)
            continue;
        if (prev && t->begin < prev->end) {
            sfail(s, "tensors '%s' [%" PRIu64 ", %" PRIu64 ") and '%s' [%" PRIu64 ", %" PRIu64 ") overlap",
                  prev->name, prev->begin, prev->end, t->name, t->begin, t->end);
            goto out;
        }
        if (!prev || t->end > prev->end)
            prev = t;
    }
    /* Holes: the tensors cover the data section, no byte unclaimed (the format's
     * rule; the safetensors library refuses such files, this reader took them) */
    uint64_t pos = 0;
    for (uint64_t i = 0; i <= s->nt; i++) {
        const struct st_tensor *t = i < s->nt ? &s->t[i] : NULL;
        if (t && t->begin == t->end)
            continue;
        const uint64_t begin = t ? t->begin : s->data_size;
        if (begin > pos) {
            sfail(s, "bytes [%" PRIu64 ", %" PRIu64 ") of the %" PRIu64 "-byte data section belong to no tensor "
                  "(safetensors allows no holes)", pos, begin, s->data_size);
            goto out;
        }
        if (t)
            pos = t->end;
    }
    rc = 0;
out:
    cJSON_Delete(root);
    return rc;
}

wp_st_in *wp_st_open(const char *path, char *err, size_t errlen)
{
    if (!*path) {   /* (it said ": No such file or directory") */
        snprintf(err, errlen, "an empty file name (give the file's name)");
        return NULL;
    }
    wp_st_in *s = calloc(1, sizeof *s);
    struct stat st;
    uint8_t h8[8];
    char *json = NULL;
    if (!s) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    snprintf(s->path, sizeof s->path, "%s", path);
    if (!strcmp(path, "-")) {   /* (said "No such file or directory") */
        sfail(s, "not a regular file (standard input: give the file's name)");
        goto fail;
    }
    s->f = fopen(path, "rb");
    if (!s->f) {
        sfail(s, "%s", strerror(errno));
        goto fail;
    }
    if (fstat(fileno(s->f), &st) || !S_ISREG(st.st_mode)) {
        sfail(s, "not a regular file (a safetensors file is read by its offsets: give the file itself)");
        goto fail;
    }
    s->file_size = (uint64_t)st.st_size;
    const size_t got = fread(h8, 1, 8, s->f);
    if (got < 8 && wp_zframe_magic(h8, got)) {   /* as below, of a short frame */
        sfail(s, "not a safetensors file (%s)", wp_zframe_hint(s->f));
        goto fail;
    }
    if (s->file_size < 8 || got != 8) {
        sfail(s, "truncated file (shorter than the 8-byte header length)");
        goto fail;
    }
    s->header_len = rd64(h8);
    if (wp_gguf_magic(h8, 8) || !memcmp(h8, "WPACKSTR", 8) || wp_zframe_magic(h8, 8)) {
        sfail(s, "not a safetensors file (%s)", wp_gguf_magic(h8, 8) ? "a GGUF file: read it with ggufcat"
                                                : h8[0] == 'W' ? "a wpack stream"
                                                               : wp_zframe_hint(s->f));
        goto fail;
    }
    /* a header is JSON, '{' after the length: a file with neither a length it allows nor that
     * '{' is no safetensors file, named by its kind where it has one (a sharded model's index, a
     * PyTorch zip, a text), not a "truncated file?" of a length read from its text (a new user's
     * trial) */
    int c9 = s->file_size > 8 ? fgetc(s->f) : '{';
    if (c9 != '{' && (s->header_len < 2 || s->header_len > s->file_size - 8 || s->header_len > WP_ST_MAX_HEADER)) {
        char head[4096];
        size_t n = 0;
        if (!fseeko(s->f, 0, SEEK_SET))
            n = fread(head, 1, sizeof head - 1, s->f);
        head[n] = 0;
        sfail(s, "not a safetensors file (%s)",
              h8[0] == '{' && strstr(head, "\"weight_map\"")
                  ? "a sharded model's index, JSON: give its shards, safetensorscat model-*.safetensors"
              : h8[0] == '{' ? "a JSON file"
              : wp_foreign_kind(h8, 8) ? wp_foreign_kind(h8, 8)   /* a PyTorch .bin, a gzip'd file */
              : wp_text_like((const uint8_t *)head, n) ? "a text file"
                                        : "no header length, then a JSON header, at its start");
        goto fail;
    }
    if (fseeko(s->f, 8, SEEK_SET)) {   /* back to the header, after its '{' was read */
        sfail(s, "%s", strerror(errno));
        goto fail;
    }
    if (s->header_len > s->file_size - 8) {
        sfail(s, "header length %" PRIu64 " is larger than the file allows (%" PRIu64 " bytes; truncated file?)",
              s->header_len, s->file_size);
        goto fail;
    }
    if (s->header_len > WP_ST_MAX_HEADER) {
        sfail(s, "header length %" PRIu64 " is implausible (more than %u bytes)", s->header_len,
              WP_ST_MAX_HEADER);
        goto fail;
    }
    s->data_start = 8 + s->header_len;
    s->data_size = s->file_size - s->data_start;
    json = malloc(s->header_len ? (size_t)s->header_len : 1);
    if (!json) {
        sfail(s, "out of memory for a %" PRIu64 "-byte header", s->header_len);
        goto fail;
    }
    if (fread(json, 1, (size_t)s->header_len, s->f) != s->header_len) {
        sfail(s, "truncated file (in the header)");
        goto fail;
    }
    if (parse_header(s, json, (size_t)s->header_len))
        goto fail;
    s->json = json;   /* kept for its record (next_header) */
    return s;
fail:
    free(json);
    snprintf(err, errlen, "%s", s->err);
    wp_st_close(s);
    return NULL;
}

uint64_t wp_st_n_meta(const wp_st_in *s) { return s->nm; }
uint64_t wp_st_n_tensors(const wp_st_in *s) { return s->nt; }
const char *wp_st_error(const wp_st_in *s) { return s->err; }
const char *wp_st_path(const wp_st_in *s) { return s->path; }

const char *wp_st_meta(const wp_st_in *s, uint64_t i, const char **value, size_t *len)
{
    if (i >= s->nm)
        return NULL;
    if (value)
        *value = s->m[i].value;
    if (len)
        *len = s->m[i].value_len;
    return s->m[i].key;
}

const char *wp_st_tensor_name(const wp_st_in *s, uint64_t i)
{
    return i < s->nt ? s->t[i].name : NULL;
}

/* r a string key/value named name, its payload as GGUF serializes a string: u64 len, the bytes.
 * 0, or -1 out of memory. */
static int string_kv(wp_record *r, const char *name, const void *bytes, uint64_t len)
{
    r->kind = WP_REC_KV;
    r->type = WP_GGUF_STRING;
    uint8_t *p;
    if (wp_record_set_name(r, name) || !(p = wp_record_alloc(r, 8 + len)))
        return -1;
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(len >> 8 * i);
    memcpy(p + 8, bytes, (size_t)len);
    return 0;
}

static int next_meta(wp_st_in *s, wp_record *r)
{
    const struct st_meta *m = &s->m[s->next_m++];
    char name[WP_MAX_NAME + 1];
    snprintf(name, sizeof name, "%s%s", WP_ST_META_PREFIX, m->key);
    if (string_kv(r, name, m->value, m->value_len))
        return sfail(s, "__metadata__ key '%s': out of memory", m->key);
    return 1;
}

static int next_tensor(wp_st_in *s, wp_record *r)
{
    const struct st_tensor *t = &s->t[s->next_t++];
    uint64_t n = t->end - t->begin;
    r->kind = WP_REC_TENSOR;
    r->type = t->type;
    r->n_dims = t->n_dims;
    memcpy(r->ne, t->ne, sizeof r->ne);
    if (wp_record_set_name(r, t->name))
        return sfail(s, "tensor '%s': name too long", t->name);
    if ((t->carried && wp_attr_set(r, WP_ST_DTYPE_ATTR, t->carried)) ||
        (t->shape && wp_attr_set(r, WP_ST_SHAPE_ATTR, t->shape)))
        return sfail(s, "tensor '%s': out of memory", t->name);
    if ((uint64_t)(size_t)n != n || !wp_record_alloc(r, n))
        return sfail(s, "tensor '%s': out of memory for %" PRIu64 " bytes", t->name, n);
    if (fseeko(s->f, (off_t)(s->data_start + t->begin), SEEK_SET))
        return sfail(s, "tensor '%s': seek failed: %s", t->name, strerror(errno));
    if (n && fread(r->payload, 1, (size_t)n, s->f) != n)
        return sfail(s, "tensor '%s': %s", t->name,
                     ferror(s->f) ? "read error" : "truncated file (the data ends early)");
    return 1;
}

/* The header's record (safetensors.h, top). */
static int next_header(wp_st_in *s, wp_record *r)
{
    s->header_done = 1;
    if (string_kv(r, WP_ST_HEADER_KEY, s->json, s->header_len))
        return sfail(s, "out of memory for the %" PRIu64 "-byte header", s->header_len);
    return 1;
}

int wp_st_next(wp_st_in *s, wp_record *r)
{
    wp_record_init(r);
    if (!s->header_done)
        return next_header(s, r);
    if (s->next_m < s->nm)
        return next_meta(s, r);
    if (s->next_t < s->nt)
        return next_tensor(s, r);
    return 0;
}

void wp_st_close(wp_st_in *s)
{
    if (!s)
        return;
    if (s->f)
        fclose(s->f);
    for (uint64_t i = 0; i < s->nt; i++)
        free(s->t[i].name), free(s->t[i].shape);
    for (uint64_t i = 0; i < s->nm; i++)
        free(s->m[i].key), free(s->m[i].value);
    free(s->t);
    free(s->m);
    free(s->json);
    free(s->by_name);
    free(s);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp((*(struct st_tensor *const *)a)->name, (*(struct st_tensor *const *)b)->name);
}

int wp_st_read_tensor(wp_st_in *s, const char *name, wp_record *r)
{
    wp_record_init(r);
    if (!s->by_name) {
        if (!(s->by_name = malloc((s->nt ? s->nt : 1) * sizeof *s->by_name)))
            return sfail(s, "out of memory");
        for (uint64_t i = 0; i < s->nt; i++)
            s->by_name[i] = &s->t[i];
        qsort(s->by_name, s->nt, sizeof *s->by_name, cmp_name);
    }
    struct st_tensor key = {.name = (char *)name}, *kp = &key;
    struct st_tensor **hit = bsearch(&kp, s->by_name, s->nt, sizeof *s->by_name, cmp_name);
    if (!hit)
        return 0;
    const uint64_t saved = s->next_t;
    s->next_t = (uint64_t)(*hit - s->t);
    const int k = next_tensor(s, r);
    s->next_t = saved;
    return k;
}

/* ---- writing -------------------------------------------------------------- */

struct wp_st_out {
    wp_st_in *h;        /* the header, parsed (no file) */
    char      err[8192];
};

__attribute__((format(printf, 2, 3)))
static int wfail(wp_st_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->err, sizeof o->err, fmt, ap);
    va_end(ap);
    one_line(o->err);
    return -1;
}

wp_st_out *wp_st_out_new(void)
{
    return calloc(1, sizeof(wp_st_out));
}

int wp_st_carried(const wp_record *r, char *value, size_t n)
{
    return wp_attr_str(r, WP_ST_DTYPE_ATTR, value, n) > 0   ? 1
           : wp_attr_str(r, WP_ST_SHAPE_ATTR, value, n) > 0 ? 2
                                                            : 0;
}

int wp_st_is_header(const wp_record *r)
{
    return r->kind == WP_REC_KV && !strcmp(r->name, WP_ST_HEADER_KEY);
}

/* The header kv: parsed as wp_st_open parses a file's, then written. */
static int out_header(wp_st_out *o, const wp_record *r, FILE *f)
{
    if (o->h)
        return wfail(o, "a second %s (the stream holds several files' tensors; safetensorscat keeps the "
                        "header of one file given alone)", WP_ST_HEADER_KEY);
    uint64_t n = 0;
    if (r->type != WP_GGUF_STRING || r->payload_len < 8 || (n = rd64(r->payload)) != r->payload_len - 8)
        return wfail(o, "%s: not a string key/value", WP_ST_HEADER_KEY);
    if (n > WP_ST_MAX_HEADER)
        return wfail(o, "%s: %" PRIu64 " bytes is implausible (more than %u)", WP_ST_HEADER_KEY, n,
                     WP_ST_MAX_HEADER);
    wp_st_in *s = o->h = calloc(1, sizeof *s);
    if (!s)
        return wfail(o, "out of memory");
    snprintf(s->path, sizeof s->path, "%s", WP_ST_HEADER_KEY);
    s->header_len = n;
    s->data_size = UINT64_MAX;   /* parse_header sets it from the tensors */
    if (parse_header(s, (const char *)r->payload + 8, (size_t)n)) {
        wfail(o, "%s", s->err);
        wp_st_close(s);
        o->h = NULL;
        return -1;
    }
    if (fwrite(r->payload, 1, (size_t)r->payload_len, f) != r->payload_len)
        return wfail(o, "write error: %s", strerror(errno));
    return 1;
}

int wp_st_out_add(wp_st_out *o, const wp_record *r, FILE *f)
{
    if (wp_st_is_header(r))
        return out_header(o, r, f);
    if (!o->h)
        return wfail(o, "record '%s' before the %s key/value (not a stream of one safetensors file: "
                        "safetensorscat FILE makes one)", r->name, WP_ST_HEADER_KEY);
    wp_st_in *s = o->h;
    if (r->kind == WP_REC_KV) {
        if (!strncmp(r->name, WP_ST_META_PREFIX, sizeof WP_ST_META_PREFIX - 1))
            return 0;   /* __metadata__, which the header holds */
        return wfail(o, "key/value '%s' is not a safetensors file's (the stream is no longer the file's: ggufpack "
                        "makes a GGUF of it)", r->name);
    }
    if (r->kind != WP_REC_TENSOR)
        return 0;
    if (s->next_t >= s->nt)
        return wfail(o, "tensor '%s' is not in %s (it lists %" PRIu64 " tensors)", r->name, WP_ST_HEADER_KEY,
                     s->nt);
    const struct st_tensor *t = &s->t[s->next_t];
    if (strcmp(r->name, t->name))
        return wfail(o, "tensor '%s' where %s lists '%s' next (its data-offset order)", r->name,
                     WP_ST_HEADER_KEY, t->name);
    if (r->type != t->type) {
        const char *a = wp_ggml_type_name(r->type), *b = wp_ggml_type_name(t->type);
        return wfail(o, "tensor '%s' is %s, %s says %s (no longer the file's tensors: ggufpack writes a GGUF)",
                     r->name, a ? a : "?", WP_ST_HEADER_KEY, b ? b : "?");
    }
    if (r->n_dims != t->n_dims || memcmp(r->ne, t->ne, sizeof r->ne) || r->payload_len != t->end - t->begin)
        return wfail(o, "tensor '%s' has another shape than %s says", r->name, WP_ST_HEADER_KEY);
    if (r->payload_len && fwrite(r->payload, 1, (size_t)r->payload_len, f) != r->payload_len)
        return wfail(o, "write error: %s", strerror(errno));
    s->next_t++;
    return 1;
}

int wp_st_out_finish(wp_st_out *o)
{
    if (!o->h)
        return wfail(o, "no %s key/value (not a stream of one safetensors file: safetensorscat FILE makes one)",
                     WP_ST_HEADER_KEY);
    if (o->h->next_t < o->h->nt)
        return wfail(o, "the stream ends before tensor '%s' (%" PRIu64 " of the %" PRIu64 " tensors %s lists)",
                     o->h->t[o->h->next_t].name, o->h->next_t, o->h->nt, WP_ST_HEADER_KEY);
    return 0;
}

const char *wp_st_out_error(const wp_st_out *o) { return o->err; }

void wp_st_out_free(wp_st_out *o)
{
    if (!o)
        return;
    wp_st_close(o->h);
    free(o);
}
