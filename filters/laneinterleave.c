/* laneinterleave - Huffman-code each matrix into 64x256 tiles of 32 lanes:
 * the bundle. Usage: laneinterleave [-o OUT] [STREAM]   (see laneinterleave(1)) */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "bf16.h"
#include "bundle.h"
#include "cli.h"
#include "codes.h"
#include "distform.h"
#include "ggml_type.h"
#include "names.h"
#include "par.h"

static const char usage[] =
    "usage: laneinterleave [--dist] [--threads N] [--align N] [-o OUT] [STREAM]\n"
    "Encode the symbols of each matrix with its code table (huffbuild) into\n"
    "64x256 tiles, lane k holding rows 2k and 2k+1, the 32 lanes' 32-bit words\n"
    "interleaved, with per-tile offsets; keep side data and everything else.\n"
    "A matrix whose coded form is not smaller than its fixed-width form is\n"
    "stored fixed-width (attribute stored=fixed). The output, ending with its\n"
    "index, is the bundle (wpack-bundle(5)); unbundle restores the GGUF.\n"
    "Metadata key/values are zstd-compressed together, a tensor whose bytes\n"
    "equal an earlier one's is stored as a reference to it, and tensors left\n"
    "uncoded are zstd-compressed when that is smaller.\n"
    "--dist  distribution bundle: for each matrix keep the smallest of its\n"
    "        side data and symbols (each zstd'd or lane-coded) and its\n"
    "        fixed-width tensor (zstd'd or not), and write the whole\n"
    "        stream inside one zstd frame (smallest; every reader takes it;\n"
    "        `zstd -d` leaves a bundle with an index whose matrices stay as\n"
    "        --dist chose them, mostly zstd'd, so wprun needs a bundle made\n"
    "        without --dist).\n"
    "--threads N  --dist compresses N matrices at a time (1 to 512; default:\n"
    "        WPACK_THREADS, else the CPUs, at most 8; the output is the same\n"
    "        for any N).\n"
    "--align N aligns payloads to N bytes (a power of two from 4; default 8: the GPU\n"
    "runner copies each matrix into its own device buffer).\n";

/* --dist: the whole stream in one zstd frame at this level (zframe.h): record
 * headers, names and attributes shrink to a few bytes a record; level 9
 * passes incompressible payloads at ~250 MB/s where 19 crawls. */
#define DIST_FRAME_LEVEL 9

static const char *src = "stdin";

/* Tensors seen so far: their names, in order; name -> its index (duplicates), and content
 * hash (hex) -> the index of the first with that content (sharing identical tensors). Each
 * tensor was compared with every one before it (a breaker's find: 100,000 tensors took 16 s). */
static char **seen;
static size_t n_seen;
static wp_names *seen_names, *seen_hashes;

static XXH128_hash_t unit_hash(const wp_record *a, const wp_record *b)
{
    XXH3_state_t *st = XXH3_createState();
    XXH3_128bits_reset(st);
    for (const wp_record *r = a; r; r = (r == a ? b : NULL)) {
        uint64_t head[2 + WP_MAX_DIMS] = {r->type, (uint64_t)r->n_dims, 0, 0, 0, 0};
        for (int i = 0; i < WP_MAX_DIMS; i++)
            head[2 + i] = (uint64_t)r->ne[i];
        uint64_t kl[2] = {r->kind, r->payload_len};
        XXH3_128bits_update(st, head, sizeof head);
        XXH3_128bits_update(st, kl, sizeof kl);
        XXH3_128bits_update(st, r->payload_len ? r->payload : (const uint8_t *)"", (size_t)r->payload_len);
        /* attributes that decide how the bytes are read (palette, group,
         * codec ...) are part of the content; a file offset is not */
        for (const char *a = r->attrs ? r->attrs : ""; *a;) {
            const char *nl = strchr(a, '\n');
            size_t l = nl ? (size_t)(nl - a) + 1 : strlen(a);
            if (strncmp(a, "offset=", 7) && strncmp(a, "xxh32=", 6))
                XXH3_128bits_update(st, a, l);
            a += l;
        }
    }
    XXH128_hash_t h = XXH3_128bits_digest(st);
    XXH3_freeState(st);
    return h;
}

/* The name of the first earlier tensor with the same content, or NULL; this
 * one is remembered either way. A name seen before is an error: the bundle
 * could not be restored (a GGUF holds each name once). */
static const char *shared_with(XXH128_hash_t h, const char *name)
{
    char hex[40];
    snprintf(hex, sizeof hex, "%016" PRIx64 "%016" PRIx64, (uint64_t)h.high64, (uint64_t)h.low64);
    if ((!seen_names && !(seen_names = wp_names_new())) || (!seen_hashes && !(seen_hashes = wp_names_new())))
        wp_die("out of memory");
    const int64_t was = wp_names_put(seen_names, name, (int64_t)n_seen);
    if (was >= 0)
        wp_die("%s: tensor '%s' appears twice (a GGUF holds each name once)", src, name);
    const int64_t first = wp_names_get(seen_hashes, hex);
    char **p = realloc(seen, (n_seen + 1) * sizeof *seen);
    if (was == -2 || !p || !(p[n_seen] = strdup(name)))
        wp_die("out of memory");
    seen = p;
    /* a name holding a newline cannot be an attribute's value (same_as): that tensor is
       stored again (wp_ref_make failed, "out of memory"), and is no first of its content */
    if (first < 0 && !strchr(name, '\n') && wp_names_put(seen_hashes, hex, (int64_t)n_seen) == -2)
        wp_die("out of memory");
    n_seen++;
    return first >= 0 ? seen[first] : NULL;
}

/* --dist compresses each matrix's candidates at zstd level 19, its slowest
 * step by far, so it chooses the forms of several matrices at once, one a
 * thread, and writes every record in stream order. A record to write while
 * matrices are waiting joins the queue behind them (copied); the queue is
 * flushed (the matrices' forms chosen on the threads, then everything
 * written) when it holds 4 matrices a thread or DIST_QUEUE_BYTES of records,
 * and at the end. Each matrix's form depends on that matrix alone:
 * the output is the same bytes for any thread count. */
#define DIST_QUEUE_BYTES (1ull << 30)
/* The default thread count at most: each thread's zstd -19 context takes about 90 MB. */
#define DIST_THREADS 8

static int threads = 1;

/* A matrix waiting for its form: side data and symbols (each zstd'd when
 * smaller) or the fixed-width tensor (zstd'd when smaller), whichever is
 * smallest; out[0 .. n_out) then holds what to write. */
typedef struct {
    wp_record held, sym, coded;
    uint64_t  fixed;      /* fixed_bytes(sym), taken on the main thread (it dies on a bad codec) */
    wp_record out[2];
    int       n_out;
    char      err[1024];  /* why its form could not be made ("" when it was): said after the join */
} dist_unit;

typedef struct {
    wp_record  rec;    /* a record to write as it is, when unit is NULL */
    dist_unit *unit;
} queued;

static queued *queue;
static size_t n_queued, queue_cap, n_units;
static uint64_t queued_bytes;

static queued *queue_add(void)
{
    if (n_queued == queue_cap) {
        size_t cap = queue_cap ? 2 * queue_cap : 64;
        queued *q = realloc(queue, cap * sizeof *q);
        if (!q)
            wp_die("out of memory");
        queue = q;
        queue_cap = cap;
    }
    queued *e = &queue[n_queued++];
    memset(e, 0, sizeof *e);
    wp_record_init(&e->rec);
    return e;
}

static void queue_flush(wp_writer *w);

/* Write r now, or behind the matrices waiting for their forms (its bytes count toward
 * DIST_QUEUE_BYTES: a stream with one coded matrix first held the rest of it, a breaker's
 * find). */
static void out_put(wp_writer *w, const wp_record *r)
{
    if (!n_queued) {
        wp_cli_put(w, r);
        return;
    }
    if (wp_record_copy(&queue_add()->rec, r))
        wp_die("out of memory");
    queued_bytes += r->payload_len;
    if (queued_bytes >= DIST_QUEUE_BYTES)
        queue_flush(w);
}

static uint64_t fixed_bytes(const wp_record *sym);
static void dist_choose(dist_unit *u);

/* wp_cli_next, the queue flushed before a read error is said: a bad matrix waiting in it
 * comes first in the stream (a later cut said "truncated stream" instead, a breaker's find) */
static int next_record(wp_writer *w, wp_reader *rd, wp_record *r)
{
    int k = wp_reader_next(rd, r);
    if (k < 0) {
        char why[1024];
        snprintf(why, sizeof why, "%s", wp_reader_error(rd));
        queue_flush(w);
        wp_die("%s", why);
    }
    return k;
}

typedef struct {
    dist_unit  **u;
    size_t       n;
    atomic_size_t next;
} unit_work;

/* --dist's progress on a terminal (wp_progress): the matrices whose form is chosen and their
 * fixed-width bytes (minutes of silence on a 7B model: a new user's trial) */
static atomic_size_t n_chosen;
static atomic_uint_least64_t bytes_chosen;

static void unit_run(void *ctx, int64_t lo, int64_t hi, int part)
{
    unit_work *uw = ctx;
    for (size_t k; (k = atomic_fetch_add(&uw->next, 1)) < uw->n;) {
        char name[WP_MAX_NAME + 1];   /* (the symbols record is moved out by dist_choose) */
        snprintf(name, sizeof name, "%s", uw->u[k]->sym.name ? uw->u[k]->sym.name : "");
        dist_choose(uw->u[k]);
        const size_t nc = atomic_fetch_add(&n_chosen, 1) + 1;
        const uint64_t bc = atomic_fetch_add(&bytes_chosen, uw->u[k]->fixed) + uw->u[k]->fixed;
        wp_progress("--dist: %zu %s chosen, %.2f GiB (%s)", nc, nc == 1 ? "matrix" : "matrices", bc / 1073741824.0, name);
    }
}

/* Choose the waiting matrices' forms on the threads, then write the queue. */
static void queue_flush(wp_writer *w)
{
    if (!n_queued)
        return;
    dist_unit **u = malloc((n_units ? n_units : 1) * sizeof *u);
    if (!u)
        wp_die("out of memory");
    size_t n = 0;
    for (size_t i = 0; i < n_queued; i++)
        if (queue[i].unit)
            u[n++] = queue[i].unit;
    unit_work uw = {.u = u, .n = n};
    atomic_init(&uw.next, 0);
    wp_par_rows(threads, (int64_t)(n < (size_t)threads ? n : (size_t)threads), unit_run, &uw);
    /* the first failure in stream order, for any thread count (the workers died at once,
       one to seven lines, naming whichever came first: a breaker's find) */
    for (size_t i = 0; i < n; i++)
        if (u[i]->err[0])
            wp_die("%s", u[i]->err);
    free(u);
    for (size_t i = 0; i < n_queued; i++) {
        dist_unit *d = queue[i].unit;
        if (!d) {
            wp_cli_put(w, &queue[i].rec);
            wp_record_free(&queue[i].rec);
            continue;
        }
        for (int k = 0; k < d->n_out; k++) {
            wp_cli_put(w, &d->out[k]);
            wp_record_free(&d->out[k]);
        }
        free(d);
    }
    n_queued = n_units = 0;
    queued_bytes = 0;
}

/* Queue a matrix (its side/raw record, symbols and lane-coded symbols, moved
 * out of the caller's records, which are left empty) for its --dist form. */
static void queue_matrix(wp_writer *w, wp_record *held, wp_record *sym, wp_record *coded)
{
    dist_unit *d = calloc(1, sizeof *d);
    if (!d)
        wp_die("out of memory");
    wp_record_move(&d->held, held);
    wp_record_move(&d->sym, sym);
    wp_record_move(&d->coded, coded);
    d->fixed = fixed_bytes(&d->sym);
    queued_bytes += d->held.payload_len + d->sym.payload_len + d->coded.payload_len;
    queue_add()->unit = d;
    n_units++;
    if (n_units >= 4 * (size_t)threads || queued_bytes >= DIST_QUEUE_BYTES)
        queue_flush(w);
}

/* Write r, or its zstd form when that is smaller. */
static void put_smaller(wp_writer *w, const wp_record *r, unsigned group)
{
    wp_record z;
    wp_record_init(&z);
    out_put(w, wp_form_zstd_smaller(r, group, &z) ? &z : r);
    wp_record_free(&z);
}

/* Restore the tensor from its side/raw record and symbols and write it
 * fixed-width (zstd'd when smaller; attr stored=fixed). The records are
 * copied, not consumed. */
static void put_fixed(wp_writer *w, const wp_record *held, const wp_record *sym)
{
    wp_form_fixed f;
    char err[600];
    if (wp_form_fixed_open(&f, held, sym, err, sizeof err))
        wp_die("%s: '%s': %s", src, sym->name, err);
    wp_record z;
    wp_record_init(&z);
    wp_cli_put(w, wp_form_zstd_smaller(f.t, wp_form_group(f.t->type), &z) ? &z : f.t);
    wp_record_free(&z);
    wp_form_fixed_close(&f);
}

/* Choose a waiting matrix's --dist form (wp_form_dist) on a worker thread: it writes
 * nothing, and dies of nothing: what fails is said in u->err. */
static void dist_choose(dist_unit *u)
{
    char why[600], *name = strdup(u->sym.name ? u->sym.name : "");   /* (sym is consumed) */
    if (wp_form_dist(&u->held, &u->sym, &u->coded, u->fixed, u->out, &u->n_out, why, sizeof why) || !name)
        snprintf(u->err, sizeof u->err, "%s: '%s': %s", src, name ? name : "?", name ? why : "out of memory");
    free(name);
}

/* Bytes of the tensor a SYMBOLS record stands for, stored fixed-width. */
static uint64_t fixed_bytes(const wp_record *sym)
{
    uint64_t b;
    char err[64];
    if (wp_form_fixed_bytes(sym, &b, err, sizeof err))
        wp_die("%s: '%s': %s", src, sym->name, err);
    return b;
}

int main(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    char err[512];
    unsigned align = 8;
    int dist = 0;
    uint8_t *kvbuf = NULL;
    size_t kvlen = 0;
    uint64_t nkv = 0;
    wp_cli_init(argv[0]);
    threads = 0;   /* not given */
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (wp_cli_flag(argv[i], "--dist")) {
            dist = 1;
        } else if ((v = wp_cli_arg(argc, argv, &i, "--threads"))) {
            threads = (int)wp_arg_int("--threads", v, 1, 512);
        } else if ((v = wp_cli_arg(argc, argv, &i, "--align"))) {
            /* from 4: wprun reads the lanes' u32 words in place (1 and 2 were misaligned loads) */
            align = (unsigned)wp_arg_int("--align", v, 4, 4096);
            if (align & (align - 1))
                wp_die("--align: %u is not a power of two", align);
        } else {
            wp_cli_common(argc, argv, &i, usage, &in, &out);
        }
    }
    if (in && strcmp(in, "-"))
        src = in;
    if (!threads && dist)
        threads = wp_cli_threads(wp_par_cpus() < DIST_THREADS ? wp_par_cpus() : DIST_THREADS);
    if (!threads)
        threads = 1;

    wp_reader *rd = wp_cli_reader(in);
    wp_writer *w = wp_cli_writer_framed(out, align, dist ? DIST_FRAME_LEVEL : 0);
    wp_record r, table, held, coded;
    wp_record_init(&r);
    wp_record_init(&table);
    wp_record_init(&held);
    wp_record_init(&coded);
    int holding = 0, have_table = 0, packed = 0;
    uint64_t n_sym = 0, n_blocks = 0, n_hist = 0;   /* symbols, block-type tensors, hist records */
    double entropy = -1;
    char entropy_of[WP_MAX_NAME + 1] = "";
    for (;;) {
        int more = next_record(w, rd, &r);
        if (more && wp_rec_is_bundle(r.kind))   /* said "side data without its symbols" at the end */
            wp_cli_refuse_coded(in, &r, "huffbuild's output");
        if (more && r.kind == WP_REC_KV) {
            if (wp_kvpack_add(&kvbuf, &kvlen, &r))
                wp_die("out of memory");
            nkv++;
            continue;
        }
        /* the key/values run packed; every bundle has a kvpack record, empty without
           key/values, after the GGUF header: what shows verify and wprun a bundle */
        if (nkv || (!packed && !(more && r.kind == WP_REC_GGUF))) {
            if (wp_kvpack_finish(kvbuf, kvlen, nkv, WP_FORM_ZLEVEL, &coded))
                wp_die("out of memory");
            out_put(w, &coded);
            nkv = kvlen = 0;
            packed = 1;
        }
        if (!more)
            break;
        switch (r.kind) {
        case WP_REC_HIST:
            n_hist++;
            entropy = wp_attr_f64(&r, "entropy", -1);
            snprintf(entropy_of, sizeof entropy_of, "%s", r.name);
            continue;
        case WP_REC_TABLE: {
            wp_record t = table;
            table = r;
            r = t;
            have_table = 1;
            continue;
        }
        case WP_REC_SIDE:
        case WP_REC_RAW: {
            if (holding)
                wp_die("%s: '%s': %s data without its symbols", src, held.name, wp_rec_kind_name(held.kind));
            wp_record t = held;
            held = r;
            r = t;
            holding = 1;
            continue;
        }
        case WP_REC_SYMBOLS:
            break;
        default:
            if (holding)
                wp_die("%s: '%s': %s data without its symbols", src, held.name, wp_rec_kind_name(held.kind));
            if (r.kind == WP_REC_ROWMAP) {
                put_smaller(w, &r, 4);
                continue;
            }
            if (r.kind == WP_REC_TENSOR) {
                wp_codes_geom g;
                n_blocks += !wp_codes_geom_get((int)r.type, r.ne[0], 1, &g);
                const char *same = shared_with(unit_hash(&r, NULL), r.name);
                if (same) {
                    if (wp_ref_make(&r, same, &coded))
                        wp_die("out of memory");
                    out_put(w, &coded);
                } else {
                    put_smaller(w, &r, wp_form_group(r.type));
                }
                continue;
            }
            out_put(w, &r);
            continue;
        }

        /* A SYMBOLS record: code it, or store the tensor fixed-width. */
        n_sym++;
        if (!have_table || strcmp(table.name, r.name))
            wp_die("%s: '%s': no code table (run %s before laneinterleave)", src, r.name,
                   n_hist ? "huffbuild" : "histogram | huffbuild");
        if (!holding || strcmp(held.name, r.name))
            wp_die("%s: '%s': symbols without their side or raw data", src, r.name);
        if (table.payload_len != WP_TABLE_BYTES)
            wp_die("%s: '%s': bad code table", src, r.name);
        const char *same = shared_with(unit_hash(&held, &r), r.name);
        if (same) {
            wp_record t;
            wp_record_init(&t);
            t.type = r.type;
            t.n_dims = r.n_dims;
            memcpy(t.ne, r.ne, sizeof r.ne);
            wp_record_set_name(&t, r.name);
            int64_t off = wp_attr_i64(&r, "offset", -1);
            if (off >= 0)
                wp_attr_set_i64(&t, "offset", off);
            if (wp_ref_make(&t, same, &coded))
                wp_die("out of memory");
            out_put(w, &coded);
            wp_record_free(&t);
            holding = 0;
            continue;
        }
        wp_lanes_shape shape = {
            .rows = r.ne[0] ? (uint64_t)(wp_record_nelem(&r) / r.ne[0]) : 0,
            .row_sym = (uint64_t)wp_attr_i64(&r, "row_sym", -1),
            .tile_sym = (uint32_t)wp_attr_i64(&r, "tile_sym", 0),
        };
        if (shape.rows * shape.row_sym != r.payload_len)
            wp_die("%s: '%s': %" PRIu64 " symbols do not fill %" PRIu64 " rows of %" PRIu64, src, r.name,
                   r.payload_len, shape.rows, shape.row_sym);
        /* attributes for histogram's report only stay out of the bundle */
        wp_attr_del(&r, "h_exp");
        wp_attr_del(&r, "limit");
        wp_attr_del(&r, "verbatim_frac");
        free(coded.attrs);
        coded.attrs = strdup(r.attrs ? r.attrs : "");
        coded.type = r.type;
        coded.n_dims = r.n_dims;
        memcpy(coded.ne, r.ne, sizeof r.ne);
        if (!coded.attrs || wp_record_set_name(&coded, r.name))
            wp_die("out of memory");
        if (wp_coded_encode(&coded, r.payload, &shape, table.payload,
                            (int)wp_attr_i64(&table, "max_len", WP_HUF_LEN), err, sizeof err))
            wp_die("%s: '%s': %s", src, r.name, err);
        if (entropy >= 0 && !strcmp(entropy_of, r.name))
            wp_attr_set_f64(&coded, "entropy", entropy);
        holding = 0;
        if (!dist) {
            if (coded.payload_len + held.payload_len < fixed_bytes(&r)) {
                wp_cli_put(w, &held);
                wp_cli_put(w, &coded);
            } else {
                put_fixed(w, &held, &r);
            }
            continue;
        }
        /* Distribution bundle: the form is chosen on a thread (dist_choose) */
        queue_matrix(w, &held, &r, &coded);
    }
    queue_flush(w);
    wp_progress_end();
    if (holding)
        wp_die("%s: '%s': %s data without its symbols (truncated stream?)", src, held.name,
               wp_rec_kind_name(held.kind));
    /* histogram and huffbuild left out: a bundle with nothing coded passed silently,
     * and verify passed it (a new user's trial). Block-type tensors tell: histogram
     * codes those always (floats not with --no-float, 1-D tensors never) */
    if (!n_sym && n_blocks)
        wp_warn("%s: no symbols records: none of the %" PRIu64 " matrices of a coded type is coded, each is "
                "stored fixed-width or zstd'd (histogram | huffbuild come before laneinterleave)", src, n_blocks);
    wp_cli_writer_close(w);
    wp_record_free(&r);
    wp_record_free(&table);
    wp_record_free(&held);
    wp_record_free(&coded);
    free(kvbuf);
    for (size_t i = 0; i < n_seen; i++)
        free(seen[i]);
    free(seen);
    wp_names_free(seen_names);
    wp_names_free(seen_hashes);
    wp_reader_close(rd);
    return 0;
}
