/* model.c - coded matrices of a bundle or made up in memory (see wprun.h). */
#include "wprun.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "blocks.h"
#include "cli.h"
#include "ggml_type.h"
#include "gguf_file.h"
#include "half.h"
#include "huffman.h"
#include "rowmap.h"
#include "zframe.h"

static int fail(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}

double wr_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static wr_matrix *model_add(wr_model *md)
{
    if (md->n == md->cap) {
        int cap = md->cap ? 2 * md->cap : 16;
        wr_matrix *p = realloc(md->m, (size_t)cap * sizeof *p);
        if (!p)
            return NULL;
        md->m = p;
        md->cap = cap;
    }
    wr_matrix *m = &md->m[md->n];
    memset(m, 0, sizeof *m);
    wp_record_init(&m->aux);
    wp_record_init(&m->coded);
    wp_record_init(&m->rowmap);
    return m;
}

static void matrix_free(wr_matrix *m)
{
    free(m->load_err);
    wp_record_free(&m->aux);
    wp_record_free(&m->coded);
    wp_record_free(&m->rowmap);
    free(m->vrow);
    free(m->vcnt);
}

/* Whether the twin runs a tensor of type and shape rows x cols: a ggml
 * block type of the kernels (wr_geom_of) with a code view (cols a multiple
 * of its block), or BF16, F16, F32. When so and m is not NULL, m's kind (and
 * for a block type dg and g) are set. */
static int twin_takes(uint32_t type, int64_t rows, int64_t cols, wr_matrix *m)
{
    wp_codes_geom g;
    if (rows < 1 || cols < 1)
        return 0;
    if (wp_bf16_fields(type, NULL, NULL) > 0) {
        if (m)
            m->kind = WR_EXP;
        return 1;
    }
    const wr_geom dg = wr_geom_of((int)type);
    if (dg.n == 0 || wp_codes_geom_get((int)type, cols, (uint64_t)rows, &g))
        return 0;
    if (m) {
        m->kind = WR_Q;
        m->dg = dg;
        m->g = g;
    }
    return 1;
}

/* m->name: s, its control bytes as \xNN (wp_printable) where it has any: the report's
 * and FAIL lines print it, and a newline or escape sequence in a damaged bundle's name
 * split a line or drove the terminal (a breaker's find); matching uses the records' own. */
static void set_name(wr_matrix *m, const char *s)
{
    const char *p = s;
    while (*p && (unsigned char)*p >= 0x20 && *p != 0x7f)
        p++;
    if (*p)
        wp_printable(s, m->name, sizeof m->name);
    else
        snprintf(m->name, sizeof m->name, "%s", s);
}

/* m's fields from the header of h, a stored matrix's tensor record (name,
 * type, shape; kind, dg and g by twin_takes, which the caller has checked). */
static void stored_head(wr_matrix *m, int stored, const wp_record *h, const char *src)
{
    set_name(m, h->name ? h->name : "");
    m->src = src;
    m->stored = stored;
    m->type = h->type;
    m->cols = h->ne[0];
    m->rows = wp_record_nelem(h) / h->ne[0];
    twin_takes(m->type, m->rows, m->cols, m);
}

/* m (from model_add) as a matrix stored `stored` (WR_STORED_FIXED, ZSTD or UNCODED):
 * t, its restored TENSOR record, copied into m->aux. The caller has checked
 * twin_takes. Returns 0, or -1 (out of memory, m freed). */
static int stored_set(wr_matrix *m, int stored, const wp_record *t, const char *src)
{
    if (wp_record_copy(&m->aux, t)) {
        matrix_free(m);
        return -1;
    }
    stored_head(m, stored, t, src);
    return 0;
}

/* Whether name contains one of match's substrings (NULL: every name does). */
static int name_matches(const char *name, const char *const *match)
{
    if (!match)
        return 1;
    for (; *match; match++)
        if (strstr(name, *match))
            return 1;
    return 0;
}

void wr_model_keep(wr_model *md, const char *const *match)
{
    int k = 0;
    for (int i = 0; i < md->n; i++) {
        if (name_matches(md->m[i].name, match))
            md->m[k++] = md->m[i];
        else
            matrix_free(&md->m[i]);
    }
    md->n = k;
}

void wr_model_free(wr_model *md)
{
    for (int i = 0; i < md->n; i++)
        matrix_free(&md->m[i]);
    free(md->m);
    for (int i = 0; i < md->n_maps; i++)   /* after the records that borrowed from them */
        munmap(md->maps[i].p, md->maps[i].n);
    free(md->maps);
    memset(md, 0, sizeof *md);
}

/* Parse aux + coded of m (already read) into the matrix fields. */
static int matrix_setup(wr_matrix *m, char *err, size_t errlen)
{
    const wp_record *c = &m->coded, *a = &m->aux;
    char codec[16] = "";
    set_name(m, c->name);
    if (wp_coded_view_get(c, &m->v, err, errlen))
        return -1;
    /* the limit tables for the longest code actually used (canonical codes do not depend on the
       declared max_len; a table built for --max-len 15 whose codes stay within 11 bits is one the
       device decodes) */
    int used = 0;
    for (int s = 0; s < 256; s++)
        used = m->v.lengths[s] > used ? m->v.lengths[s] : used;
    wp_huf_table tab;
    if (used < 1 || used > m->v.max_len || wp_huf_table_init(&tab, m->v.lengths, 256, used))
        return fail(err, errlen, "%s: invalid code lengths", m->name);
    memset(&m->huf, 0, sizeof m->huf);
    for (int l = 0; l <= WP_HUF_MAX_LEN; l++) {
        m->huf.limit[l] = tab.limit[l];
        m->huf.first[l] = tab.first[l];
        m->huf.offset[l] = tab.offset[l];
    }
    memcpy(m->huf.symbols, tab.symbols, 256);
    m->huf.L = tab.max_len;
    m->type = c->type;
    m->cols = c->ne[0];
    m->rows = c->ne[0] ? wp_record_nelem(c) / c->ne[0] : 0;
    wp_attr_str(c, "codec", codec, sizeof codec);
    char cb[160];   /* (a side record as raw data said "unknown codec 'exp'": a breaker's find) */
    const char *why = wp_codec_problem(codec, a->kind, cb, sizeof cb);
    if (why)
        return fail(err, errlen, "%s: %s", m->name, why);
    if (!strcmp(codec, "q")) {
        m->kind = WR_Q;
        if (wp_codes_geom_get((int)m->type, m->cols, (uint64_t)m->rows, &m->g))
            return fail(err, errlen, "%s: not a coded block type", m->name);
        m->dg = wr_geom_of((int)m->type);
        if (a->payload_len != m->g.side_len || m->v.shape.rows != (uint64_t)m->rows ||
            m->v.shape.row_sym != m->g.row_sym || m->v.shape.tile_sym != m->g.tile_sym ||
            m->dg.n != m->g.bi.n || m->dg.side != m->g.bi.side_bytes)
            return fail(err, errlen, "%s: side data or coded shape does not match the type", m->name);
        if (m->dg.wps != m->g.wps || m->dg.bits != m->g.bi.code_bits)
            return fail(err, errlen, "%s: runtime and library disagree on the symbol grouping", m->name);
        for (uint32_t s = m->g.alphabet; s < 256; s++)
            if (m->v.lengths[s])   /* as wp_codes_join: no symbol beyond the codes' bits */
                return fail(err, errlen, "%s: code for symbol %u, outside the %u-symbol alphabet", m->name,
                            (unsigned)s, (unsigned)m->g.alphabet);
        return 0;
    }
    m->kind = WR_EXP;
    struct wp_bf16_split *s = &m->s;
    int exp_bits, raw_bits, esize = wp_bf16_fields(m->type, &exp_bits, &raw_bits);
    if (esize <= 0)
        return fail(err, errlen, "%s: exponent coding of a non-float type", m->name);
    if (wp_bf16_from_records(a, m->type, m->rows, m->cols, s))
        return fail(err, errlen, "%s: bad raw record attributes", m->name);
    /* tiles of 256 weights: 128 palette pairs or 256 exponent bytes a tile row (the kernels
       rely on it, as bf16split and laneinterleave write it) */
    const unsigned tile_sym = wp_bf16_tile_sym(s);
    if (m->v.shape.tile_sym != tile_sym)   /* said apart from the checks below (a reviewer's find) */
        return fail(err, errlen, "%s: %llu symbols a tile row, not the %u of 256 weights' %s", m->name,
                    (unsigned long long)m->v.shape.tile_sym, tile_sym, s->palette_n ? "palette pairs" : "exponents");
    if (m->v.shape.rows != (uint64_t)m->rows || m->v.shape.row_sym != (uint64_t)s->sym_per_row ||
        (uint64_t)s->vmap_bytes * 8 < (uint64_t)(m->rows * s->groups_per_row) ||
        (uint64_t)s->raw_bytes * 8 < (uint64_t)(m->rows * m->cols * raw_bits))
        return fail(err, errlen, "%s: raw record does not match the coded shape", m->name);
    /* Where each row's verbatim groups start in vbytes (a group is `group`
     * weights, the last of a row cols - (gpr - 1) * group). */
    m->vrow = calloc((size_t)m->rows + 1, sizeof *m->vrow);
    m->vcnt = calloc((size_t)m->rows + 1, sizeof *m->vcnt);
    if (!m->vrow || !m->vcnt)
        return fail(err, errlen, "out of memory");
    uint64_t off = 0, cnt = 0;
    for (int64_t r = 0; r < m->rows; r++) {
        m->vrow[r] = off;
        m->vcnt[r] = (uint32_t)cnt;
        for (int64_t gi = 0; gi < s->groups_per_row; gi++) {
            if (wp_bf16_verbatim(s, r, gi)) {
                int64_t len = gi == s->groups_per_row - 1 ? m->cols - gi * s->group : s->group;
                off += (uint64_t)len * (uint64_t)esize;
                cnt++;
            }
        }
    }
    m->vrow[m->rows] = off;
    m->vcnt[m->rows] = (uint32_t)cnt;
    if (off != s->vbytes_len || (int64_t)cnt != s->n_verbatim)
        return fail(err, errlen, "%s: verbatim map does not match its bytes", m->name);
    return 0;
}

/* Undo the zstd of record r (a zstd record or a kvpack) once, on a copy,
 * as verify's restore undoes it: 0, or -1 with "PATH: record 'NAME': ..."
 * in err (a corrupt payload whose checksums are good). */
static int zstd_undone(const wp_record *r, const char *path, char *err, size_t errlen)
{
    wp_restore *rs = wp_restore_new();
    wp_record c, *out = NULL;
    wp_record_init(&c);
    int rc = !rs || wp_record_copy(&c, r) ? fail(err, errlen, "out of memory") : 0;
    if (!rc && wp_restore_put(rs, &c, 0, &out) < 0)
        rc = fail(err, errlen, "%s: %s", path, wp_restore_error(rs));
    wp_record_free(&c);
    wp_restore_free(rs);
    return rc;
}

/* Add to md the matrix of tensor record t (or a zstd of one), stored
 * `stored`, restored as verify restores it (a zstd unwrapped; map, the
 * rowmap read last, expanding its rows when it is t's). One that does not
 * restore, or not to the bytes its type and shape need (a zstd's z_len, a
 * rowmap's rows, are the writer's word: a short one was read past its
 * end), is added with load_err set: its run fails. t and map may be
 * swapped with the restorer's records. Returns 0, or -1 (out of memory). */
static int load_stored(wr_model *md, int stored, wp_record *t, wp_record *map, const char *path, char *err,
                       size_t errlen)
{
    wp_restore *rs = wp_restore_new();
    wr_matrix *m = rs ? model_add(md) : NULL;
    if (!m) {
        wp_restore_free(rs);
        return fail(err, errlen, "out of memory");
    }
    stored_head(m, stored, t, path);   /* its name and shape, also when it does not restore */
    const int mapped = map->name && t->name && !strcmp(map->name, t->name);
    wp_record *out = NULL;
    char why[WP_MAX_NAME + 200] = "";
    if ((mapped && wp_restore_put(rs, map, 0, &out) != 0) || wp_restore_put(rs, t, 0, &out) != 1) {
        snprintf(why, sizeof why, "%s", wp_restore_error(rs));
    } else {
        const int64_t oc = out->ne[0], orows = oc > 0 ? wp_record_nelem(out) / oc : 0;
        const uint64_t need = oc > 0 ? (uint64_t)wp_ggml_row_size(out->type, oc) * (uint64_t)orows : 0;
        if (out->n_dims < 2 || !twin_takes(out->type, orows, oc, NULL) || out->payload_len != need)
            snprintf(why, sizeof why, "record '%s': restored to %" PRIu64 " bytes, but %s %" PRId64 "x%" PRId64
                     " (rows x columns) needs %" PRIu64, m->name, out->payload_len,
                     wp_ggml_type_name(out->type) ? wp_ggml_type_name(out->type) : "?", orows, oc, need);
    }
    const int rc = why[0] ? ((m->load_err = strdup(why)) ? 0 : -1) : stored_set(m, stored, out, path);
    wp_restore_free(rs);
    if (rc)
        return fail(err, errlen, "out of memory");
    md->n++;
    md->n_fixed += stored == WR_STORED_FIXED;
    md->n_zstd += stored == WR_STORED_ZSTD;
    md->n_uncoded += stored == WR_STORED_UNCODED;
    return 0;
}

/* The tensors of a bundle read so far (wr_model_load), by name, type and shape (a rowmap's
 * tensor: its distinct rows', as a ref to it records them: unbundle's resolve_ref). */
typedef struct {
    struct seen_tensor {
        char    *name;
        int      ref;       /* a ref itself: no tensor a ref may share (unbundle's resolve_ref) */
        uint32_t type;
        int      n_dims;
        int64_t  ne[WP_MAX_DIMS];
    } *t;
    size_t n;
} seen_set;

static const struct seen_tensor *seen_find(const seen_set *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->t[i].name, name))
            return &s->t[i];
    return NULL;
}

/* The tensor a ref may share: an earlier one of that name that is no ref itself. */
static const struct seen_tensor *seen_target(const seen_set *s, const char *name)
{
    const struct seen_tensor *t = seen_find(s, name);
    return t && !t->ref ? t : NULL;
}

/* Note tensor `name` of the type and shape of record h. -1 with a message for a second tensor
 * of that name, as a GGUF holds each once (a bundle with a tensor twice ran both, "ok", where
 * unbundle refuses it: a breaker's find), or when out of memory. */
static int seen_add(seen_set *s, const char *name, const wp_record *h, const char *path, char *err, size_t errlen)
{
    if (seen_find(s, name))
        return fail(err, errlen, "%s: record '%s': a second tensor of this name (a bundle holds each tensor once)",
                    path, name);
    struct seen_tensor *g = realloc(s->t, (s->n + 1) * sizeof *g);
    if (!g || !(g[s->n].name = strdup(name))) {
        if (g)
            s->t = g;
        return fail(err, errlen, "out of memory");
    }
    s->t = g;
    g[s->n].ref = h->kind == WP_REC_REF;
    g[s->n].type = h->type;
    g[s->n].n_dims = h->n_dims;
    memcpy(g[s->n].ne, h->ne, sizeof h->ne);
    s->n++;
    return 0;
}

static void seen_free(seen_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->t[i].name);
    free(s->t);
}

/* Whether ROWMAP record map (unwrapped) fits lane-coded matrix m, checked at load
 * (wp_rowmap_check: a map pointing past the distinct rows, or of another type, passed "ok",
 * as wprun runs the distinct rows alone: a breaker's and a reviewer's finds). 0, or -1 with
 * the message, naming path. */
static int rowmap_fits(const wp_record *map, const wr_matrix *m, const char *path, char *err, size_t errlen)
{
    char why[WP_MAX_NAME + 100];
    if (wp_rowmap_check(map, m->type, m->rows, m->cols, why, sizeof why) == 0)
        return 0;
    return fail(err, errlen, "%s: %s", path, why);
}

/* For a distribution bundle at path named NAME.dist.bundle, with the plain NAME.bundle beside
 * it (as lazyweights and unweight leave them): " (the inference bundle beside it: wprun
 * NAME.bundle)", else "" (the rebuild alone was said, a new user's trial). */
static const char *plain_beside(const char *path, char *buf, size_t n)
{
    static const char dist[] = ".dist.bundle";
    const size_t pl = strlen(path), dl = sizeof dist - 1;
    char plain[4096 + 8], word[4 * 4096 + 6];
    struct stat st;
    if (pl <= dl || pl - dl + 8 > sizeof plain || strcmp(path + pl - dl, dist))
        return "";
    snprintf(plain, sizeof plain, "%.*s.bundle", (int)(pl - dl), path);
    if (stat(plain, &st) || !S_ISREG(st.st_mode))
        return "";
    snprintf(buf, n, " (the inference bundle beside it: wprun %s)", wp_shell_word(plain, word, sizeof word));
    return buf;
}

int wr_model_load(wr_model *md, const char *path, const char *const *match, char *err, size_t errlen)
{
    if (!strcmp(path, "-"))   /* it said "-: No such file or directory" */
        return fail(err, errlen, "-: wprun reads a bundle from its index at the end, so not standard input: "
                                 "give the file's name");
    char word[4 * 4096 + 6];   /* path as a word of the commands suggested below */
    char beside[4 * 4096 + 64];   /* plain_beside's note */
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f)
        return fail(err, errlen, "%s: %s", path, strerror(errno));
    if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
        fclose(f);
        return fail(err, errlen, "%s: not a regular file (wprun reads a bundle from its index at the end: give a file)",
                    path);
    }
    if (wp_stream_framed(f) > 0) {   /* other zstd files: wp_index_read says what they are */
        fclose(f);
        return fail(err, errlen,
                    "%s: a zstd-framed wpack stream (laneinterleave --dist, or a stream zstd'd whole); wprun needs "
                    "an inference bundle: "
                    "unbundle --stream %s | [bf16split |] histogram | huffbuild | laneinterleave > FILE "
                    "(a plain bundle that was zstd'd whole: zstd -d it)%s",
                    path, wp_shell_word(path, word, sizeof word), plain_beside(path, beside, sizeof beside)),
               WR_LOAD_DIST;
    }
    /* a GGUF's way on is its bundle, not ggufcat alone ("a GGUF file: read it with ggufcat"),
       whose stream wprun refuses too (a fresh user's find) */
    uint8_t magic[4];
    if (wp_gguf_magic(magic, fread(magic, 1, 4, f))) {
        fclose(f);
        return fail(err, errlen, "%s: a GGUF file, not a bundle: ggufcat %s | [bf16split |] histogram | huffbuild | "
                    "laneinterleave > FILE makes its bundle", path, wp_shell_word(path, word, sizeof word));
    }
    wp_index ix;
    memset(&ix, 0, sizeof ix);
    if (wp_index_read(f, path, &ix, err, errlen)) {
        fclose(f);
        return -1;
    }
    /* A tensor stream (ggufcat's, gptq's, histogram's output) said "no coded matrices (every
       matrix is stored fixed-width or zstd'd, as laneinterleave --dist may choose, ...)"; the
       words are verify's (wp_index_not_bundle). */
    char why[WP_MAX_NAME + 200];
    if (wp_index_not_bundle(&ix, why, sizeof why)) {
        wp_index_free(&ix);
        fclose(f);
        return fail(err, errlen, "%s: %s", path, why);
    }
    /* A bundle with nothing lane-coded (floats through histogram --no-float, a stream
       laneinterleave took without huffbuild, a model none of whose matrices codes smaller, a
       --dist bundle after zstd -d of such matrices) is loaded as any other: the twin runs its stored matrices, and wprun's
       summary says none is lane-coded, and why. It was refused ("no coded matrices (...)",
       every cause in one line), where a bundle with one coded matrix beside 35 stored ran. */
    /* the file mapped whole: the coded pairs' payloads are read in place (wp_record_map_at), not
       copied; where it cannot be mapped, read as before */
    const uint64_t fsize = (uint64_t)st.st_size;
    void *mp = fsize && fsize <= SIZE_MAX ? mmap(NULL, (size_t)fsize, PROT_READ, MAP_PRIVATE, fileno(f), 0) : MAP_FAILED;
    struct wr_map *slot = mp == MAP_FAILED ? NULL : realloc(md->maps, (size_t)(md->n_maps + 1) * sizeof *slot);
    if (slot)
        md->maps = slot;   /* room for it, made before anything borrows from it */
    else if (mp != MAP_FAILED)
        munmap(mp, (size_t)fsize);
    const uint8_t *fmap = slot ? mp : NULL;
    int mapped_used = 0;
    int rc = 0;
    wp_record other, map;   /* a record read; the last rowmap read, for the tensor after it */
    wp_record_init(&other);
    wp_record_init(&map);
    /* the tensors read, for the refs after them and to refuse a name twice; a rowmap must come
       just before its tensor (one elsewhere was dropped unsaid, or taken by the wrong tensor:
       a breaker's find) */
    seen_set seen = {NULL, 0};
    char stray[WP_MAX_NAME + 1] = "";   /* a rowmap read whose tensor has not come */
    for (uint64_t i = 0; i < ix.count && rc == 0; i++) {
        const wp_index_entry *e = &ix.e[i];
        const int coded_next = i + 1 < ix.count && ix.e[i + 1].kind == WP_REC_CODED;
        if (!name_matches(e->name, match))
            continue;
        /* the rest read for their checksums (a corrupt zstd'd matrix passed "wprun --verify: ok",
           a fresh user's find); tensors stored fixed-width or zstd'd are run by the twin, the
           shared ones and those of other types counted */
        if (e->kind != WP_REC_CODED && e->kind != WP_REC_END &&
            !((e->kind == WP_REC_SIDE || e->kind == WP_REC_RAW) && coded_next)) {
            if (wp_record_read_at(f, path, e->offset, &other, err, errlen)) {
                rc = -1;
                break;
            }
            const int of = wp_record_kind_of(&other);
            /* (its own matrix's record zstd'd after it: another's was a side record moved away) */
            int z_next = i + 1 < ix.count && ix.e[i + 1].kind == WP_REC_Z && !strcmp(ix.e[i + 1].name, e->name);
            if (z_next && (of == WP_REC_SIDE || of == WP_REC_RAW)) {
                /* what that zstd record holds: the coded record or the symbols, as --dist writes them, or not (a
                   row map moved between side and coded data was called a --dist bundle's: a
                   breaker's find; unbundle's words) */
                wp_record nx;
                wp_record_init(&nx);
                if (wp_record_read_at(f, path, ix.e[i + 1].offset, &nx, err, errlen)) {
                    wp_record_free(&nx);
                    rc = -1;
                    break;
                }
                const int z_of = wp_record_kind_of(&nx);
                wp_record_free(&nx);
                if (z_of == WP_REC_ROWMAP) {
                    rc = fail(err, errlen, "%s: record '%s': a row map out of place", path, e->name);
                    break;
                }
                z_next = z_of == WP_REC_CODED || z_of == WP_REC_SYMBOLS;   /* (--dist keeps the smaller) */
            }
            if ((of == WP_REC_CODED || of == WP_REC_SIDE || of == WP_REC_RAW || of == WP_REC_SYMBOLS) &&
                (e->kind == WP_REC_Z || ((of == WP_REC_SIDE || of == WP_REC_RAW) && z_next))) {
                /* a lane-coded matrix zstd'd has no lanes or side data to read in place (it said
                   "symbols without their side or raw data" once bundles with nothing lane-coded ran;
                   "raw data without its coded record after it" of a float --dist bundle's raw
                   record, its coded record zstd'd after it: a new user's trial) */
                rc = fail(err, errlen,
                          "%s: record '%s': a lane-coded matrix zstd'd, as in laneinterleave --dist's "
                          "distribution bundle (also after zstd -d); wprun needs an inference bundle: "
                          "unbundle --stream %s | [bf16split |] histogram | huffbuild | laneinterleave > FILE%s",
                          path, e->name, wp_shell_word(path, word, sizeof word),
                          plain_beside(path, beside, sizeof beside));
                rc = WR_LOAD_DIST;
                break;
            }
            if (of == WP_REC_SIDE || of == WP_REC_RAW || of == WP_REC_SYMBOLS) {
                /* (a side record moved away from its lanes was called zstd'd: a breaker's find) */
                rc = fail(err, errlen, "%s: record '%s': %s data without its coded record after it", path, e->name,
                          of == WP_REC_SYMBOLS ? "symbols" : of == WP_REC_SIDE ? "side" : "raw");
                break;
            }
            const int64_t cols = other.ne[0], rows = cols ? wp_record_nelem(&other) / cols : 0;
            const int runs = of == WP_REC_TENSOR && other.n_dims >= 2 && twin_takes(other.type, rows, cols, NULL);
            /* every zstd payload not restored below (1-D and other-typed tensors too) undone here */
            if ((e->kind == WP_REC_Z || e->kind == WP_REC_KVPACK) && !runs &&
                zstd_undone(&other, path, err, errlen)) {
                rc = -1;   /* a corrupt zstd payload under good checksums (a breaker's find: wprun passed it) */
                break;
            }
            if (of == WP_REC_ROWMAP) {
                if (stray[0]) {
                    rc = fail(err, errlen, "%s: record '%s': a row map without its tensor after it", path, stray);
                    break;
                }
                if (wp_record_unwrap(&other, err, errlen)) {
                    rc = -1;
                    break;
                }
                snprintf(stray, sizeof stray, "%s", other.name);
                wp_record t = map;
                map = other;
                other = t;
                continue;
            }
            if (of != WP_REC_TENSOR && of != WP_REC_REF)
                continue;   /* metadata: read for its checksums */
            if (stray[0] && strcmp(stray, e->name)) {   /* (a ref may have one: its rows shared) */
                rc = fail(err, errlen, "%s: record '%s': a row map without its tensor after it", path, stray);
                break;
            }
            if (of == WP_REC_REF) {   /* (a ref to nothing before it, or to a tensor of another type or shape,
                                         passed "checksums ok": a breaker's find) */
                char same[WP_MAX_NAME + 1] = "";
                /* (a ref to a ref passed: a review) */
                const struct seen_tensor *t = wp_attr_str(&other, "same_as", same, sizeof same) ? seen_target(&seen, same)
                                                                                                 : NULL;
                if (same[0] && !t && !name_matches(same, match))
                    ;   /* its tensor not read (--match): what it shares is not known here */
                else if (!t || t->type != other.type || t->n_dims != other.n_dims ||
                         memcmp(t->ne, other.ne, sizeof other.ne)) {
                    rc = fail(err, errlen, "%s: record '%s': the tensor it shares, '%s', is missing or differs in shape",
                              path, e->name, same);
                    break;
                }
            }
            if (seen_add(&seen, e->name, &other, path, err, errlen)) {
                rc = -1;
                break;
            }
            if (of == WP_REC_REF && other.n_dims >= 2) {
                md->n_shared++;
            } else if (of == WP_REC_TENSOR && other.n_dims >= 2 && !runs && (!rows || !cols)) {
                md->n_empty++;   /* (counted as a type without a kernel: a breaker's find) */
            } else if (of == WP_REC_TENSOR && other.n_dims >= 2 && !runs) {
                md->n_other++;
            } else if (runs) {
                char st[8] = "";   /* laneinterleave's mark: it chose fixed-width over coded */
                const int chose = wp_attr_str(&other, "stored", st, sizeof st) && !strcmp(st, "fixed");
                if (load_stored(md, !chose ? WR_STORED_UNCODED : e->kind == WP_REC_Z ? WR_STORED_ZSTD : WR_STORED_FIXED,
                                &other, &map, path, err, errlen))
                    rc = -1;
            }
            stray[0] = 0;   /* the rowmap, if any, was this tensor's */
            continue;
        }
        if (e->kind != WP_REC_CODED)
            continue;
        const wp_index_entry *p = i ? &ix.e[i - 1] : NULL;
        if (!p || (p->kind != WP_REC_SIDE && p->kind != WP_REC_RAW) || strcmp(p->name, e->name)) {
            rc = fail(err, errlen, "%s: coded record '%s' without its side or raw record", path, e->name);
            break;
        }
        wr_matrix *m = model_add(md);
        if (!m) {
            rc = fail(err, errlen, "out of memory");
            break;
        }
        m->src = path;
        mapped_used |= fmap != NULL;
        if ((fmap ? wp_record_map_at(f, fmap, fsize, path, p->offset, &m->aux, err, errlen)
                  : wp_record_read_at(f, path, p->offset, &m->aux, err, errlen)) ||
            (fmap ? wp_record_map_at(f, fmap, fsize, path, e->offset, &m->coded, err, errlen)
                  : wp_record_read_at(f, path, e->offset, &m->coded, err, errlen)) ||
            matrix_setup(m, err, errlen)) {
            matrix_free(m);
            rc = -1;
            break;
        }
        md->n++;   /* (counted now: freed with md whatever follows) */
        if (stray[0] && strcmp(stray, e->name)) {
            rc = fail(err, errlen, "%s: record '%s': a row map without its tensor after it", path, stray);
            break;
        }
        if (stray[0]) {   /* the GEMV gives the distinct rows' outputs */
            if (rowmap_fits(&map, m, path, err, errlen)) {
                rc = -1;
                break;
            }
            m->rows_all = wp_record_nelem(&map) / map.ne[0];
            wp_record t = m->rowmap;
            m->rowmap = map;
            map = t;
        }
        if (seen_add(&seen, e->name, &m->coded, path, err, errlen)) {
            rc = -1;
            break;
        }
        stray[0] = 0;
    }
    if (rc == 0 && stray[0])
        rc = fail(err, errlen, "%s: record '%s': a row map without its tensor after it", path, stray);
    seen_free(&seen);
    wp_record_free(&map);
    wp_record_free(&other);
    wp_index_free(&ix);
    fclose(f);
    if (fmap && mapped_used) {   /* kept while md's matrices point into it (also after a failure:
                                    those loaded before it stay md's, freed by wr_model_free) */
        md->maps[md->n_maps].p = mp;
        md->maps[md->n_maps].n = (size_t)fsize;
        md->n_maps++;
    } else if (fmap) {
        munmap(mp, (size_t)fsize);
    }
    return rc;
}

/* ---- synthetic matrices ----------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}
static double urand(uint64_t *s) { return ((rng_next(s) >> 11) + 0.5) / 9007199254740992.0; }
static double gauss(uint64_t *s) { return sqrt(-2 * log(urand(s))) * cos(6.283185307179586 * urand(s)); }

/* Code lengths of a symbol stream (histogram | huffbuild --max-len 11). */
static int lengths_of(const uint8_t *sym, uint64_t n, uint8_t lengths[256])
{
    uint64_t counts[256] = {0};
    for (uint64_t i = 0; i < n; i++)
        counts[sym[i]]++;
    return wp_huf_lengths(counts, 256, WP_HUF_LEN, lengths);
}

static void set_shape(wp_record *r, unsigned kind, uint32_t type, const char *name, int64_t rows, int64_t cols)
{
    r->kind = (uint16_t)kind;
    r->type = type;
    r->n_dims = 2;
    r->ne[0] = cols;
    r->ne[1] = rows;
    wp_record_set_name(r, name);
}

/* m's side data (aux) and code symbols (*sym, *shape, lengths) from the
 * ggml blocks of a rows x cols matrix of quantized type `type`, as
 * wp_codes_split splits them. Returns 0, or -1 with a message, m and *sym
 * freed. */
static int q_symbols(wr_matrix *m, uint32_t type, const char *name, int64_t rows, int64_t cols,
                     const uint8_t *blocks, wp_record *sym, wp_lanes_shape *shape, uint8_t lengths[256],
                     char *err, size_t errlen)
{
    wp_codes_geom g;
    if (wp_codes_geom_get((int)type, cols, (uint64_t)rows, &g)) {
        matrix_free(m);
        return fail(err, errlen, "%s: type without a code view or cols not a multiple of the block", name);
    }
    /* the blocks as a tensor record, borrowed, split as histogram splits them */
    wp_record t;
    wp_record_init(&t);
    set_shape(&t, WP_REC_TENSOR, type, name, rows, cols);
    t.payload = (uint8_t *)blocks;
    t.payload_len = g.block_len;
    t.borrowed = 1;
    int rc = wp_q_records(&g, &t, &m->aux, sym);
    wp_record_free(&t);
    if (rc) {
        wp_record_free(sym);
        matrix_free(m);
        return fail(err, errlen, "out of memory");
    }
    if (lengths_of(sym->payload, sym->payload_len, lengths)) {
        wp_record_free(sym);
        matrix_free(m);
        return fail(err, errlen, "%s: no code", name);
    }
    memset(shape, 0, sizeof *shape);
    shape->rows = (uint64_t)rows;
    shape->row_sym = g.row_sym;
    shape->tile_sym = g.tile_sym;
    return 0;
}

/* Code *sym into m (laneinterleave: CODED with the symbols' attributes),
 * set m up and count it in md. *sym is freed. Returns 0, or -1 with a
 * message, m freed. */
static int add_coded(wr_model *md, wr_matrix *m, wp_record *sym, const wp_lanes_shape *shape,
                     const uint8_t lengths[256], uint32_t type, const char *name, int64_t rows, int64_t cols,
                     char *err, size_t errlen)
{
    char e2[256];
    set_shape(&m->coded, WP_REC_CODED, type, name, rows, cols);
    free(m->coded.attrs);
    m->coded.attrs = strdup(sym->attrs ? sym->attrs : "");
    int rc = m->coded.attrs ? wp_coded_encode(&m->coded, sym->payload, shape, lengths, WP_HUF_LEN, e2, sizeof e2) : -1;
    wp_record_free(sym);
    if (rc || matrix_setup(m, err, errlen)) {
        if (rc)
            fail(err, errlen, "%s: %s", name, e2);
        matrix_free(m);
        return -1;
    }
    md->n++;
    return 0;
}

int wr_model_add_blocks(wr_model *md, uint32_t type, const char *name, int64_t rows, int64_t cols,
                        const uint8_t *blocks, char *err, size_t errlen)
{
    wr_matrix *m = model_add(md);
    if (!m)
        return fail(err, errlen, "out of memory");
    wp_record sym;
    wp_record_init(&sym);
    wp_lanes_shape shape;
    uint8_t lengths[256];
    if (q_symbols(m, type, name, rows, cols, blocks, &sym, &shape, lengths, err, errlen))
        return -1;
    return add_coded(md, m, &sym, &shape, lengths, type, name, rows, cols, err, errlen);
}

int wr_model_add_stored(wr_model *md, uint32_t type, const char *name, int64_t rows, int64_t cols,
                        const uint8_t *data, char *err, size_t errlen)
{
    if (!twin_takes(type, rows, cols, NULL) || rows > INT64_MAX / cols / 4)
        return fail(err, errlen, "%s: the twin does not take %s %" PRId64 "x%" PRId64 " (a block type of the kernels "
                                 "in whole blocks, BF16, F16 or F32)", name,
                    wp_ggml_type_name(type) ? wp_ggml_type_name(type) : "this type", rows, cols);
    const uint64_t len = (uint64_t)wp_ggml_row_size(type, cols) * (uint64_t)rows;   /* as load_stored's need */
    wp_record t;
    wp_record_init(&t);
    set_shape(&t, WP_REC_TENSOR, type, name, rows, cols);
    wr_matrix *m = model_add(md);
    uint8_t *p = m && t.name ? wp_record_alloc(&t, len) : NULL;
    if (p)
        memcpy(p, data, (size_t)len);
    if (!p || stored_set(m, WR_STORED_FIXED, &t, NULL)) {
        wp_record_free(&t);
        return fail(err, errlen, "out of memory");
    }
    wp_record_free(&t);
    md->n++;
    return 0;
}

int wr_model_synth(wr_model *md, uint32_t type, int64_t rows, int64_t cols, uint64_t seed,
                   char *err, size_t errlen)
{
    const char *tn = wp_ggml_type_name(type);
    char name[256];
    snprintf(name, sizeof name, "synth.%s.%" PRId64 "x%" PRId64, tn ? tn : "?", rows, cols);
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + 12345;
    if (!st)
        st = 1;
    wp_record sym;
    wp_record_init(&sym);
    uint8_t lengths[256];
    wr_matrix *m = model_add(md);
    if (!m)
        return fail(err, errlen, "out of memory");
    wp_lanes_shape shape;
    if (type == WP_BF16 || type == WP_F16 || type == WP_F32) {
        size_t n = (size_t)(rows * cols), es = type == WP_F32 ? 4 : 2;
        uint8_t *w = malloc(n * es + 1);
        if (!w)
            return fail(err, errlen, "out of memory");
        for (size_t i = 0; i < n; i++) {
            double v = 0.02 * gauss(&st);
            if (i % 97 == 13)
                v *= 8;
            if (rng_next(&st) % 50000 == 0)
                v = 0;   /* a rare exponent: verbatim groups */
            else if (type != WP_BF16 && rng_next(&st) % 4000 == 0)
                v = ldexp(v, (int)(rng_next(&st) % 25) - 12);   /* F16/F32: rare outliers and tiny values
                                                                   (BF16's zeros alone fall in their palette) */
            if (type == WP_F32) {
                float f = (float)v;
                memcpy(w + 4 * i, &f, 4);
            } else {
                wp_wr16(w + 2 * i, type == WP_F16 ? wp_f32_to_fp16((float)v) : wp_f32_to_bf16((float)v));
            }
        }
        struct wp_bf16_split s;
        memset(&s, 0, sizeof s);
        wp_record t;
        wp_record_init(&t);
        set_shape(&t, WP_REC_TENSOR, type, name, rows, cols);
        int rc = wp_bf16_split(&s, type, w, rows, cols, 16, WP_BF16_GROUP_DEFAULT);
        /* (the weights' hash, which restorers require: t carries only the name and shape) */
        if (rc || wp_bf16_records(&s, &t, &m->aux, &sym) || wp_attr_set_hash(&sym, "xxh32", w, n * es) ||
            lengths_of(sym.payload, sym.payload_len, lengths)) {
            free(w);
            wp_bf16_split_free(&s);
            wp_record_free(&t);
            wp_record_free(&sym);
            matrix_free(m);
            return fail(err, errlen, "%s: cannot split", name);
        }
        shape.rows = (uint64_t)rows;
        shape.row_sym = (uint64_t)s.sym_per_row;
        shape.tile_sym = wp_bf16_tile_sym(&s);
        free(w);
        wp_bf16_split_free(&s);
        wp_record_free(&t);
    } else {
        wp_codes_geom g;
        if (wp_codes_geom_get((int)type, cols, (uint64_t)rows, &g)) {
            matrix_free(m);
            return fail(err, errlen, "%s: type without a code view or cols not a multiple of the block", name);
        }
        uint8_t *blocks = malloc(g.block_len + 1);
        if (!blocks) {
            matrix_free(m);
            return fail(err, errlen, "out of memory");
        }
        int maxq = (1 << g.bi.code_bits) - 1;
        double center = maxq / 2.0, spread = maxq / 6.0;
        if (type == WP_Q8_0)
            spread = 22;
        uint64_t nb = g.block_len / (uint64_t)g.bi.block_bytes;
        wp_block_parts p;
        for (uint64_t b = 0; b < nb; b++) {
            memset(&p, 0, sizeof p);
            p.n = g.bi.n;
            p.d = wp_f32_to_fp16((float)(0.0005 * (1 + urand(&st))));
            p.dmin = g.bi.has_min ? wp_f32_to_fp16((float)(0.0003 * (1 + urand(&st)))) : 0;
            for (int s = 0; s < 16; s++) {
                int v = (int)(rng_next(&st) % 64);
                switch (type) {
                case WP_Q2_K: p.sc[s] = (int16_t)(1 + v % 15); p.mn[s] = (int16_t)(v % 16); break;
                case WP_Q6_K: p.sc[s] = (int16_t)((v % 2 ? -1 : 1) * (1 + (int)(rng_next(&st) % 127))); break;
                default: p.sc[s] = (int16_t)v; p.mn[s] = (int16_t)(rng_next(&st) % 64); break;
                }
            }
            for (int i = 0; i < p.n; i++) {
                long q = lround(center + spread * gauss(&st));
                p.q[i] = (uint8_t)(q < 0 ? 0 : q > maxq ? maxq : q);
            }
            wp_block_pack((int)type, &p, blocks + b * (uint64_t)g.bi.block_bytes);
        }
        int rc = q_symbols(m, type, name, rows, cols, blocks, &sym, &shape, lengths, err, errlen);
        free(blocks);
        if (rc)
            return -1;
    }
    return add_coded(md, m, &sym, &shape, lengths, type, name, rows, cols, err, errlen);
}

/* ---- restoring and accounting ---------------------------------------- */

/* The tensor a lane-coded rowmap's matrix stands for, rebuilt from its restored distinct rows
 * (reduced) and checked against the rowmap's recorded hash, as unbundle checks it (a map whose
 * indices were changed within range passed "ok": a breaker's find). 0, or -1 with a message. */
static int rowmap_hash_check(const wr_matrix *m, const wp_record *reduced, char *err, size_t errlen)
{
    wp_record full;
    wp_record_init(&full);
    int rc = wp_rowmap_expand(&m->rowmap, reduced, &full, err, errlen);
    int h = rc == 0 ? wp_attr_check_hash(&m->rowmap, "xxh32", full.payload, full.payload_len) : 0;
    if (h)
        rc = fail(err, errlen, h > 0 ? "record '%s': row map without the xxh32 of its tensor" :
                                       "record '%s': the expanded tensor does not match its recorded hash", m->name);
    wp_record_free(&full);
    return rc;
}

int wr_restore_bytes(const wr_matrix *m, uint8_t **out, size_t *len, char *err, size_t errlen)
{
    wp_record a, c, *o = NULL;
    *out = NULL;
    *len = 0;
    if (m->load_err)   /* a stored matrix that did not restore at load */
        return fail(err, errlen, "%s", m->load_err);
    if (m->stored) {   /* restored at load */
        if (!(*out = malloc(m->aux.payload_len + 1)))
            return fail(err, errlen, "out of memory");
        memcpy(*out, m->aux.payload, (size_t)m->aux.payload_len);
        *len = (size_t)m->aux.payload_len;
        return 0;
    }
    wp_restore *rs = wp_restore_new();
    int rc = -1;
    wp_record_init(&a);
    wp_record_init(&c);
    if (!rs || wp_record_copy(&a, &m->aux) || wp_record_copy(&c, &m->coded)) {
        wp_record_free(&a);   /* a copy that failed half way holds its name or attributes */
        wp_record_free(&c);
        wp_restore_free(rs);
        return fail(err, errlen, "out of memory");
    }
    if (wp_restore_put(rs, &a, 0, &o) != 0 || wp_restore_put(rs, &c, 0, &o) != 1) {
        fail(err, errlen, "%s", wp_restore_error(rs));   /* the reason names the record */
    } else if (m->rowmap.kind && rowmap_hash_check(m, o, err, errlen)) {
        ;   /* the distinct rows restore, but not the tensor they stand for */
    } else if ((*out = malloc(o->payload_len + 1)) == NULL) {
        fail(err, errlen, "out of memory");
    } else {
        memcpy(*out, o->payload, (size_t)o->payload_len);
        *len = (size_t)o->payload_len;
        rc = 0;
    }
    wp_record_free(&a);
    wp_record_free(&c);
    wp_restore_free(rs);
    return rc;
}

uint64_t wr_coded_bytes(const wr_matrix *m)
{
    if (m->stored)
        return wr_fixed_bytes(m);
    return m->coded.payload_len + m->aux.payload_len;
}

uint64_t wr_fixed_bytes(const wr_matrix *m)
{
    if (m->kind == WR_Q)
        return m->g.block_len;
    int esize = wp_bf16_fields(m->type, NULL, NULL);
    return (uint64_t)(m->rows * m->cols) * (uint64_t)(esize > 0 ? esize : 0);
}
